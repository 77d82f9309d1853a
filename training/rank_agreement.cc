#include "training/rank_agreement.h"

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

namespace ort_train {

Result<std::map<std::string, std::string>> rank0_settings(Communicator& comm,
                                                          const std::map<std::string, std::string>& mine) {
  if (comm.size() <= 1) return mine;
  // Rank 0's map reaches every rank as int64 words (what every backend
  // broadcasts): first their length, then the bytes.
  std::string text = comm.rank() == 0 ? nlohmann::json(mine).dump() : std::string();
  Tensor length = Tensor::host(DType::kInt64, {1});
  length.data<int64_t>()[0] = static_cast<int64_t>(text.size());
  RETURN_IF_ERROR(comm.broadcast(length, 0));
  int64_t n = length.data<int64_t>()[0];
  if (n < 0 || n > (int64_t{1} << 24)) return invalid_argument("rank 0 sent settings of {} bytes", n);
  Tensor words = Tensor::host(DType::kInt64, {(n + 7) / 8});
  if (comm.rank() == 0) std::memcpy(words.raw(), text.data(), text.size());
  RETURN_IF_ERROR(comm.broadcast(words, 0));
  try {
    return nlohmann::json::parse(std::string(static_cast<const char*>(words.raw()), static_cast<size_t>(n)))
        .get<std::map<std::string, std::string>>();
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument("rank 0's settings did not arrive whole: {}", e.what());
  }
}

Status check_ranks_agree(Communicator& comm, const std::map<std::string, std::string>& settings) {
  if (comm.size() <= 1) return Status::Ok();
  ASSIGN_OR_RETURN(auto theirs, rank0_settings(comm, settings));
  std::string differs;
  for (const auto& [key, value] : settings) {
    auto it = theirs.find(key);
    std::string zero = it == theirs.end() ? "(none)" : it->second;
    if (zero != value) differs += fmt::format("{}{}: rank 0 has '{}', rank {} has '{}'", differs.empty() ? "" : "; ",
                                              key, zero, comm.rank(), value);
  }
  for (const auto& [key, value] : theirs)
    if (!settings.count(key))
      differs += fmt::format("{}{}: rank 0 has '{}', rank {} has none", differs.empty() ? "" : "; ", key, value,
                             comm.rank());
  // Every rank learns what differs where, so all stop here together and rank
  // 0's error names it all: its message must not hang on another rank's,
  // which the job's abort may cut before it is printed.
  ASSIGN_OR_RETURN(std::vector<std::string> all, every_ranks_text(comm, differs));
  std::string named;
  int differing = 0;
  for (int r = 1; r < comm.size(); ++r)
    if (!all[static_cast<size_t>(r)].empty()) {
      ++differing;
      named += fmt::format("{}{}", named.empty() ? "" : "; ", all[static_cast<size_t>(r)]);
    }
  if (differing == 0) return Status::Ok();
  if (!differs.empty())
    return invalid_argument("this rank was started with other settings than rank 0 ({}); every rank of a job must "
                            "be given the same model, description, flags and data",
                            differs);
  return invalid_argument("{} rank(s) of this job were started with other settings than rank 0 ({}); every rank "
                          "must be given the same model, description, flags and data",
                          differing, named);
}

Result<std::vector<std::string>> every_ranks_text(Communicator& comm, const std::string& mine) {
  const size_t ranks = static_cast<size_t>(comm.size());
  if (ranks == 1) return std::vector<std::string>{mine};
  Tensor lengths = Tensor::host(DType::kInt64, {comm.size()});
  std::fill(lengths.data<int64_t>(), lengths.data<int64_t>() + ranks, 0);
  lengths.data<int64_t>()[comm.rank()] = static_cast<int64_t>(mine.size());
  RETURN_IF_ERROR(comm.allgather(lengths, std::vector<int64_t>(ranks, 1)));
  // Each rank's bytes in int64 words (what every backend gathers), at least one.
  std::vector<int64_t> words(ranks), offset(ranks + 1, 0);
  for (size_t r = 0; r < ranks; ++r) {
    const int64_t n = lengths.data<int64_t>()[r];
    if (n < 0 || n > (int64_t{1} << 20)) return invalid_argument("rank {} sent a text of {} bytes", r, n);
    words[r] = n / 8 + 1;
    offset[r + 1] = offset[r] + words[r];
  }
  Tensor text = Tensor::host(DType::kInt64, {offset[ranks]});
  std::fill(text.data<int64_t>(), text.data<int64_t>() + offset[ranks], 0);
  std::memcpy(text.data<int64_t>() + offset[static_cast<size_t>(comm.rank())], mine.data(), mine.size());
  RETURN_IF_ERROR(comm.allgather(text, words));
  std::vector<std::string> all(ranks);
  for (size_t r = 0; r < ranks; ++r)
    all[r].assign(reinterpret_cast<const char*>(text.data<int64_t>() + offset[r]),
                  static_cast<size_t>(lengths.data<int64_t>()[r]));
  return all;
}

Result<std::string> every_rank(Communicator& comm, double mine, const char* unit, int decimals) {
  if (comm.size() == 1) return std::string();
  Tensor all = Tensor::host(DType::kDouble, {comm.size()});
  std::fill(all.data<double>(), all.data<double>() + comm.size(), 0.0);
  all.data<double>()[comm.rank()] = mine;
  RETURN_IF_ERROR(comm.allgather(all, std::vector<int64_t>(static_cast<size_t>(comm.size()), 1)));
  std::string list;
  for (int r = 0; r < comm.size(); ++r) list += fmt::format("{}{:.{}f}", r ? ", " : "", all.data<double>()[r], decimals);
  return fmt::format("; ranks 0-{}: {} {}", comm.size() - 1, list, unit);
}

}  // namespace ort_train

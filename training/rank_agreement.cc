#include "training/rank_agreement.h"

#include <cstring>

#include <nlohmann/json.hpp>

namespace ort_train {

Status check_ranks_agree(Communicator& comm, const std::map<std::string, std::string>& settings) {
  if (comm.size() <= 1) return Status::Ok();
  // Rank 0's settings reach every rank as int64 words (what every backend
  // broadcasts): first their length, then the bytes.
  std::string mine = nlohmann::json(settings).dump();
  Tensor length = Tensor::host(DType::kInt64, {1});
  length.data<int64_t>()[0] = static_cast<int64_t>(mine.size());
  RETURN_IF_ERROR(comm.broadcast(length, 0));
  int64_t n = length.data<int64_t>()[0];
  if (n < 0 || n > (int64_t{1} << 24)) return invalid_argument("rank 0 sent settings of {} bytes", n);
  Tensor words = Tensor::host(DType::kInt64, {(n + 7) / 8});
  if (comm.rank() == 0) std::memcpy(words.raw(), mine.data(), mine.size());
  RETURN_IF_ERROR(comm.broadcast(words, 0));
  std::map<std::string, std::string> theirs;
  try {
    theirs = nlohmann::json::parse(std::string(static_cast<const char*>(words.raw()), static_cast<size_t>(n)))
                 .get<std::map<std::string, std::string>>();
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument("rank 0's settings did not arrive whole: {}", e.what());
  }
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
  // Every rank learns how many differ, so all stop here together.
  Tensor count = Tensor::host(DType::kFloat, {1});
  count.data<float>()[0] = differs.empty() ? 0.f : 1.f;
  RETURN_IF_ERROR(comm.allreduce_sum(count));
  int differing = static_cast<int>(count.data<float>()[0] + 0.5f);
  if (differing == 0) return Status::Ok();
  if (!differs.empty())
    return invalid_argument("this rank was started with other settings than rank 0 ({}); every rank of a job must "
                            "be given the same model, description, flags and data",
                            differs);
  return invalid_argument("{} rank(s) of this job were started with other settings than rank 0 (their errors say "
                          "which); every rank must be given the same model, description, flags and data",
                          differing);
}

}  // namespace ort_train

// Token files read by window: each row is seq + 1 consecutive token ids,
// read with one pread and widened into the inputs' dtype.
#include <algorithm>
#include <limits>
#include <cstring>

#include "training/readable_bytes.h"
#include "training/row_dataset.h"

namespace ort_train {
namespace {

constexpr int32_t kLlmcMagic16 = 20240520, kLlmcMagic32 = 20240801;
constexpr uint64_t kLlmcHeaderBytes = 256 * 4;

struct TokenFile {
  std::shared_ptr<const ReadableBytes> bytes;
  uint64_t data_at = 0, tokens = 0, first_row = 0, rows = 0;
  int width = 2;  // bytes per token
};

// llm.c's header when the file starts with one whose token count matches the
// file's size (a raw file could start with the magic's bytes by chance, not
// also with its own length); else raw tokens of `raw_dtype`.
Result<TokenFile> token_file(std::shared_ptr<const ReadableBytes> bytes, DType raw_dtype) {
  TokenFile f;
  f.bytes = std::move(bytes);
  const std::string& path = f.bytes->name();
  const uint64_t size = f.bytes->size();
  if (size >= kLlmcHeaderBytes) {
    int32_t h[3];
    RETURN_IF_ERROR(f.bytes->read(0, sizeof h, h));
    if (h[0] == kLlmcMagic16 || h[0] == kLlmcMagic32) {
      int width = h[0] == kLlmcMagic16 ? 2 : 4, version = h[0] == kLlmcMagic16 ? 1 : 7;
      uint64_t count = static_cast<uint32_t>(h[2]);
      if (size == kLlmcHeaderBytes + count * static_cast<uint64_t>(width)) {
        if (h[1] != version)
          return unsupported("{}: llm.c token file version {} (this reader knows version {} for magic {})", path,
                             h[1], version, h[0]);
        f.data_at = kLlmcHeaderBytes;
        f.tokens = count;
        f.width = width;
        return f;
      }
    }
  }
  f.width = raw_dtype == DType::kUInt32 ? 4 : 2;
  if (size % static_cast<uint64_t>(f.width) != 0)
    return invalid_argument("{}: {} bytes is not a whole number of {}-bit tokens (and no llm.c header matches its "
                            "size)", path, size, 8 * f.width);
  f.tokens = size / static_cast<uint64_t>(f.width);
  return f;
}

template <typename T>
void put(Tensor& t, size_t at, uint64_t v) {
  t.data<T>()[at] = static_cast<T>(v);
}

// A uint32 token past int32's range would wrap to a negative id.
Status store(Tensor& t, size_t at, uint64_t v, const std::string& input) {
  if (t.dtype() == DType::kInt32) {
    if (v > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
      return invalid_argument("token data: token {} does not fit the int32 input '{}'", v, input);
    put<int32_t>(t, at, v);
  } else {
    put<int64_t>(t, at, v);
  }
  return Status::Ok();
}

class TokenShards : public RowDataset {
 public:
  uint64_t rows() const override { return rows_; }
  std::string describe() const override {
    return fmt::format("{} token file{}, {} tokens, {} windows of {}+1", files_.size(), files_.size() == 1 ? "" : "s",
                       tokens_, rows_, w_.seq);
  }
  Result<std::map<std::string, Tensor>> read(const std::vector<uint64_t>& rows) const override {
    const int64_t n = static_cast<int64_t>(rows.size()), seq = w_.seq;
    std::map<std::string, Tensor> out;
    Tensor ids = Tensor::host(w_.input_dtype, {n, seq});
    Tensor labels = w_.labels.empty() ? Tensor() : Tensor::host(w_.labels_dtype, {n, seq});
    std::vector<char> window(static_cast<size_t>(seq + 1) * 4);
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t r = rows[static_cast<size_t>(i)];
      if (r >= rows_) return invalid_argument("row {} of a data set of {} rows", r, rows_);
      const TokenFile& f = *(std::upper_bound(files_.begin(), files_.end(), r,
                                              [](uint64_t x, const TokenFile& tf) { return x < tf.first_row; }) - 1);
      const uint64_t first = (r - f.first_row) * static_cast<uint64_t>(seq);
      const size_t width = static_cast<size_t>(f.width);
      RETURN_IF_ERROR(f.bytes->read(f.data_at + first * width, static_cast<size_t>(seq + 1) * width, window.data()));
      auto token = [&](int64_t k) -> uint64_t {
        if (width == 2) {
          uint16_t v;
          std::memcpy(&v, window.data() + k * 2, 2);
          return v;
        }
        uint32_t v;
        std::memcpy(&v, window.data() + k * 4, 4);
        return v;
      };
      for (int64_t k = 0; k < seq; ++k) {
        RETURN_IF_ERROR(store(ids, static_cast<size_t>(i * seq + k), token(k), w_.input_ids));
        if (!w_.labels.empty())
          RETURN_IF_ERROR(store(labels, static_cast<size_t>(i * seq + k), token(w_.shift_labels ? k + 1 : k), w_.labels));
      }
    }
    out[w_.input_ids] = ids;
    if (!w_.labels.empty()) out[w_.labels] = labels;
    for (const auto& [name, fill] : w_.fill) {
      Tensor t = Tensor::host(fill.first, {n, seq});
      RETURN_IF_ERROR(fill_value(t, fill.second));
      out[name] = t;
    }
    return out;
  }

  static Status fill_value(Tensor& t, double v) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      switch (t.dtype()) {
        case DType::kInt64: t.data<int64_t>()[i] = static_cast<int64_t>(v); break;
        case DType::kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(v); break;
        case DType::kFloat: t.data<float>()[i] = static_cast<float>(v); break;
        case DType::kBool: t.data<bool>()[i] = v != 0; break;
        default: return unsupported("token data: cannot fill a {} input", dtype_name(t.dtype()));
      }
    }
    return Status::Ok();
  }

  TokenWindows w_;
  std::vector<TokenFile> files_;
  uint64_t rows_ = 0, tokens_ = 0;
};

}  // namespace

Result<std::unique_ptr<RowDataset>> open_token_shards(const std::vector<std::string>& files, const TokenWindows& w) {
  std::vector<std::shared_ptr<const ReadableBytes>> opened;
  for (const std::string& path : files) {
    ASSIGN_OR_RETURN(auto f, open_readable_file(path));
    opened.push_back(std::move(f));
  }
  return token_shards_of(opened, w);
}

Result<std::unique_ptr<RowDataset>> token_shards_of(const std::vector<std::shared_ptr<const ReadableBytes>>& files,
                                                    const TokenWindows& w) {
  if (w.seq <= 0) return invalid_argument("token data: the sequence length must be positive, got {}", w.seq);
  for (DType t : {w.input_dtype, w.labels_dtype})
    if (t != DType::kInt64 && t != DType::kInt32)
      return unsupported("token data: inputs and labels of token ids must be int64 or int32, not {}", dtype_name(t));
  auto ds = std::make_unique<TokenShards>();
  ds->w_ = w;
  for (const auto& bytes : files) {
    ASSIGN_OR_RETURN(TokenFile f, token_file(bytes, w.raw_dtype));
    f.first_row = ds->rows_;
    f.rows = f.tokens > static_cast<uint64_t>(w.seq) ? (f.tokens - 1) / static_cast<uint64_t>(w.seq) : 0;
    ds->rows_ += f.rows;
    ds->tokens_ += f.tokens;
    if (f.rows > 0) ds->files_.push_back(std::move(f));
  }
  return std::unique_ptr<RowDataset>(std::move(ds));
}

}  // namespace ort_train

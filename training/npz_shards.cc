// NPZ shards read by row: each shard's arrays located once (training/npz.h),
// rows read with pread where they lie.
#include <algorithm>

#include "training/npz.h"
#include "training/row_dataset.h"

namespace ort_train {
namespace {

struct Column {  // one array of one shard
  std::shared_ptr<const ReadableBytes> bytes;
  uint64_t data_at = 0;
};

struct Shard {
  std::string path;
  uint64_t first_row = 0, rows = 0;
  std::vector<Column> columns;  // by the dataset's name order
};

class NpzShards : public RowDataset {
 public:
  uint64_t rows() const override { return rows_; }
  std::string describe() const override {
    return fmt::format("{} NPZ shard{}, {} rows, {} bytes", shards_.size(), shards_.size() == 1 ? "" : "s", rows_,
                       file_bytes_);
  }
  Result<std::map<std::string, Tensor>> read(const std::vector<uint64_t>& rows) const override;

  std::vector<std::string> names_;
  std::vector<DType> dtypes_;
  std::vector<Dims> row_dims_;       // trailing dims, per name
  std::vector<size_t> row_bytes_;    // per name
  std::vector<Shard> shards_;
  uint64_t rows_ = 0, file_bytes_ = 0;
  std::shared_ptr<SpoolFile> spool_;  // deflated members, inflated
};

Result<std::map<std::string, Tensor>> NpzShards::read(const std::vector<uint64_t>& rows) const {
  std::vector<Tensor> out;
  for (size_t c = 0; c < names_.size(); ++c) {
    Dims dims = row_dims_[c];
    dims.insert(dims.begin(), static_cast<int64_t>(rows.size()));
    out.push_back(Tensor::host(dtypes_[c], dims));
  }
  for (size_t i = 0; i < rows.size();) {
    if (rows[i] >= rows_) return invalid_argument("row {} of a data set of {} rows", rows[i], rows_);
    auto s = std::upper_bound(shards_.begin(), shards_.end(), rows[i],
                              [](uint64_t r, const Shard& sh) { return r < sh.first_row; }) - 1;
    // Consecutive rows of one shard (unshuffled data) are one read.
    size_t n = 1;
    while (i + n < rows.size() && rows[i + n] == rows[i] + n && rows[i + n] < s->first_row + s->rows) ++n;
    const uint64_t local = rows[i] - s->first_row;
    for (size_t c = 0; c < names_.size(); ++c) {
      const Column& col = s->columns[c];
      char* dst = static_cast<char*>(out[c].raw()) + i * row_bytes_[c];
      RETURN_IF_ERROR(col.bytes->read(col.data_at + local * row_bytes_[c], n * row_bytes_[c], dst));
    }
    i += n;
  }
  std::map<std::string, Tensor> batch;
  for (size_t c = 0; c < names_.size(); ++c) {
    out[c].normalize_bools();  // a bool byte other than 0 or 1 is true, as numpy reads it, not 5
    batch[names_[c]] = out[c];
  }
  return batch;
}

}  // namespace

Result<std::unique_ptr<RowDataset>> open_npz_shards(const std::vector<std::string>& files,
                                                   const std::vector<std::string>& names) {
  auto ds = std::make_unique<NpzShards>();
  ds->names_ = names;
  for (const std::string& path : files) {
    ASSIGN_OR_RETURN(std::shared_ptr<const ReadableBytes> zip, open_readable_file(path));
    ASSIGN_OR_RETURN(std::vector<NpyArrayLocation> arrays, locate_npz_arrays(zip, ds->spool_));
    Shard shard{path, ds->rows_, 0, {}};
    for (size_t c = 0; c < names.size(); ++c) {
      auto it = std::find_if(arrays.begin(), arrays.end(), [&](const auto& a) { return a.name == names[c]; });
      if (it == arrays.end()) return invalid_argument("{}: no array named '{}'", path, names[c]);
      if (it->dims.empty()) return invalid_argument("{}: array '{}' has no sample axis", path, names[c]);
      Dims trailing(it->dims.begin() + 1, it->dims.end());
      uint64_t n = static_cast<uint64_t>(it->dims[0]);
      if (c > 0 && n != shard.rows)
        return invalid_argument("{}: array '{}' has {} samples, others {}", path, names[c], n, shard.rows);
      shard.rows = n;
      if (ds->shards_.empty()) {  // the first shard sets each array's layout
        ds->dtypes_.push_back(it->dtype);
        ds->row_dims_.push_back(trailing);
        ds->row_bytes_.push_back(static_cast<size_t>(*checked_nbytes(it->dtype, trailing)));
      } else if (it->dtype != ds->dtypes_[c] || trailing != ds->row_dims_[c]) {
        return invalid_argument("{}: array '{}' is {} {} per sample, the first shard's ({}) {} {}", path, names[c],
                                dtype_name(it->dtype), dims_to_string(trailing), files[0],
                                dtype_name(ds->dtypes_[c]), dims_to_string(ds->row_dims_[c]));
      }
      shard.columns.push_back(Column{it->bytes, it->data_at});
    }
    ds->rows_ += shard.rows;
    ds->file_bytes_ += zip->size();
    ds->shards_.push_back(std::move(shard));
  }
  // Rows no shard holds (an empty shard) are never looked up: keep only shards with rows.
  std::erase_if(ds->shards_, [](const Shard& s) { return s.rows == 0; });
  return std::unique_ptr<RowDataset>(std::move(ds));
}

}  // namespace ort_train

// The order rows are read in: for each epoch a seeded permutation of the
// global row index [0, n), computed per position (a Feistel network over the
// next power of two, cycle-walked back into range), so a billion rows cost no
// memory and any position of any epoch is found without the ones before it:
// what ranks reading disjoint rows and a resume at any step need.
#pragma once
#include <cstdint>

namespace ort_train {

class RowOrder {
 public:
  // `shuffle` false: row i at position i, every epoch.
  RowOrder(uint64_t rows, uint64_t seed, bool shuffle);
  // The row read at `position` (in [0, rows)) of `epoch`.
  uint64_t row(uint64_t epoch, uint64_t position) const;
  uint64_t rows() const { return rows_; }

 private:
  uint64_t permute(uint64_t key, uint64_t x) const;
  uint64_t rows_, seed_;
  bool shuffle_;
  int half_bits_ = 1;  // the network permutes 2 * half_bits_ bits
};

}  // namespace ort_train

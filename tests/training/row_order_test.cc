// The per-epoch row order (training/row_order.h): a permutation of every row
// count, different per epoch and seed, computed per position.
#include <algorithm>
#include <set>

#include "training/row_order.h"
#include "test_util.h"

namespace ort_train::testing {

TEST_CASE("row_order.is_a_permutation_of_every_row_each_epoch") {
  for (uint64_t n : {1ull, 2ull, 3ull, 5ull, 16ull, 17ull, 1000ull, 4097ull, 65537ull}) {
    RowOrder order(n, 7, true);
    std::vector<uint64_t> first;
    for (uint64_t epoch : {0ull, 1ull}) {
      std::vector<uint64_t> rows;
      for (uint64_t p = 0; p < n; ++p) rows.push_back(order.row(epoch, p));
      if (epoch == 0) first = rows;
      std::vector<uint64_t> sorted = rows;
      std::sort(sorted.begin(), sorted.end());
      INFO(n << " rows, epoch " << epoch);
      for (uint64_t i = 0; i < n; ++i) REQUIRE(sorted[i] == i);
    }
    if (n >= 16) {
      std::vector<uint64_t> second;
      for (uint64_t p = 0; p < n; ++p) second.push_back(order.row(1, p));
      CHECK(second != first);  // reshuffled per epoch
      std::vector<uint64_t> identity(n);
      for (uint64_t i = 0; i < n; ++i) identity[i] = i;
      CHECK(first != identity);
    }
  }
}

TEST_CASE("row_order.depends_on_the_seed_and_not_on_what_was_asked_before") {
  RowOrder a(1000, 1, true), b(1000, 2, true), a_again(1000, 1, true);
  int same = 0;
  for (uint64_t p = 0; p < 1000; ++p) same += a.row(3, p) == b.row(3, p);
  CHECK(same < 20);  // two seeds agree about as often as chance (1 in 1000 per position)
  // Any position alone, in any order: what a resumed run or another rank asks first.
  for (uint64_t p : {999ull, 0ull, 500ull, 1ull}) CHECK(a_again.row(3, p) == a.row(3, p));
  RowOrder plain(1000, 1, false);
  for (uint64_t p = 0; p < 1000; p += 37) CHECK(plain.row(5, p) == p);
}

TEST_CASE("row_order.spreads_rows_evenly") {
  // The first tenth of an epoch's positions draws rows from every tenth of the
  // rows about equally (a table-free shuffle that kept neighbours together
  // would fail this).
  const uint64_t n = 100000;
  RowOrder order(n, 11, true);
  std::vector<int> decile(10, 0);
  for (uint64_t p = 0; p < n / 10; ++p) ++decile[static_cast<size_t>(order.row(0, p) * 10 / n)];
  for (int d : decile) CHECK(std::abs(d - 1000) < 150);
  // Neighbouring positions land far apart.
  int near = 0;
  for (uint64_t p = 0; p + 1 < 10000; ++p) {
    uint64_t x = order.row(0, p), y = order.row(0, p + 1);
    near += (x > y ? x - y : y - x) < n / 100;
  }
  CHECK(near < 400);  // 2% expected by chance: 200
}

TEST_CASE("row_order.a_billion_rows_need_no_table") {
  const uint64_t n = 1000000007;  // prime: no power of two near it
  RowOrder order(n, 3, true);
  std::set<uint64_t> seen;
  for (uint64_t p = 0; p < 100000; ++p) {
    uint64_t r = order.row(2, p);
    REQUIRE(r < n);
    seen.insert(r);
  }
  CHECK(seen.size() == 100000);  // distinct: a permutation never repeats a row
}

}  // namespace ort_train::testing

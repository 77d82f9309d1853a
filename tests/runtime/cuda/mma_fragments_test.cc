// The tensor-core tile maps the flash attention kernel reads and writes
// through (cuda_kernels/mma_fragments.h), on the host: each map covers its
// tile once; the kernel's loads rely on value 2r+1 of A and values 1..3 of B
// lying next to value 0 (k + 1, k + 8, k + 9); reading a row of C tiles as A
// tiles keeps every element in place; and a product assembled through the
// maps is the matrix product.
#include <set>
#include <utility>
#include <vector>

#include "cuda_kernels/mma_fragments.h"
#include "test_util.h"

using namespace ort_train;

namespace {

std::set<std::pair<int, int>> covered(MmaIndex (*map)(int, int), int values) {
  std::set<std::pair<int, int>> seen;
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < values; ++i) seen.insert({map(lane, i).row, map(lane, i).col});
  return seen;
}

}  // namespace

TEST_CASE("mma fragments: A, B and C cover their tiles once", "[cuda][mma]") {
  auto a = covered(mma_a_index, 8), b = covered(mma_b_index, 4), c = covered(mma_c_index, 4);
  CHECK(a.size() == 16 * 16);
  CHECK(b.size() == 16 * 8);
  CHECK(c.size() == 16 * 8);
  for (auto [r, col] : a) CHECK((r >= 0 && r < 16 && col >= 0 && col < 16));
  for (auto [k, n] : b) CHECK((k >= 0 && k < 16 && n >= 0 && n < 8));
  for (auto [r, col] : c) CHECK((r >= 0 && r < 16 && col >= 0 && col < 8));
}

TEST_CASE("mma fragments: the pairs the kernel loads together are adjacent", "[cuda][mma]") {
  for (int lane = 0; lane < 32; ++lane) {
    for (int r = 0; r < 4; ++r) {
      MmaIndex lo = mma_a_index(lane, 2 * r), hi = mma_a_index(lane, 2 * r + 1);
      CHECK(hi.row == lo.row);
      CHECK(hi.col == lo.col + 1);
    }
    MmaIndex b0 = mma_b_index(lane, 0);
    const int dk[4] = {0, 1, 8, 9};
    for (int i = 0; i < 4; ++i) {
      CHECK(mma_b_index(lane, i).row == b0.row + dk[i]);
      CHECK(mma_b_index(lane, i).col == b0.col);
    }
  }
}

TEST_CASE("mma fragments: two C tiles side by side are read as one A tile in place", "[cuda][mma]") {
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 8; ++i) {
      MmaIndex a = mma_a_index(lane, i), c = mma_c_index(lane, mma_a_from_c_value(i));
      CHECK(a.row == c.row);
      CHECK(a.col == c.col + 8 * mma_a_from_c_tile(i));
    }
}

TEST_CASE("mma fragments: a product assembled through the maps is the matrix product", "[cuda][mma]") {
  // Integer-valued operands: every sum is exact in float.
  float A[16][16], B[16][8];
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 16; ++k) A[r][k] = static_cast<float>((r * 7 + k * 3) % 11 - 5);
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < 8; ++n) B[k][n] = static_cast<float>((k * 5 + n * 13) % 9 - 4);
  // The registers each lane holds, as the kernel fills them.
  float a_regs[32][8], b_regs[32][4];
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) a_regs[lane][i] = A[mma_a_index(lane, i).row][mma_a_index(lane, i).col];
    for (int i = 0; i < 4; ++i) b_regs[lane][i] = B[mma_b_index(lane, i).row][mma_b_index(lane, i).col];
  }
  // What the instruction computes, from the registers alone: C value i of a
  // lane is the dot of A's row and B's column at mma_c_index, each element
  // found in whichever lane and value hold it.
  auto a_at = [&](int r, int k) {
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < 8; ++i)
        if (mma_a_index(lane, i).row == r && mma_a_index(lane, i).col == k) return a_regs[lane][i];
    FAIL("no lane holds A[" << r << "][" << k << "]");
    return 0.f;
  };
  auto b_at = [&](int k, int n) {
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < 4; ++i)
        if (mma_b_index(lane, i).row == k && mma_b_index(lane, i).col == n) return b_regs[lane][i];
    FAIL("no lane holds B[" << k << "][" << n << "]");
    return 0.f;
  };
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      MmaIndex c = mma_c_index(lane, i);
      float got = 0, want = 0;
      for (int k = 0; k < 16; ++k) {
        got += a_at(c.row, k) * b_at(k, c.col);
        want += A[c.row][k] * B[k][c.col];
      }
      CHECK(got == want);
    }
}

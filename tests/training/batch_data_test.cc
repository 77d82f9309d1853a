// training/batch_data.h: synthetic data's integer ranges are whole numbers
// its dtype holds (issue 52, a further round: `range: [0.5, 1e300]` for an
// int64 input was cast to int64, undefined behaviour).
#include "training/batch_data.h"
#include "test_util.h"

namespace ort_train::testing {

TEST_CASE("batch_data.synthetic_integer_ranges_are_whole_numbers_the_dtype_holds") {
  auto decl = [](DType dtype, double lo, double hi) {
    TensorDecl d;
    d.name = "ids";
    d.dtype = dtype;
    d.shape = {Dim(int64_t{2}), Dim(int64_t{3})};
    d.range = std::make_pair(lo, hi);
    return std::vector<TensorDecl>{d};
  };
  auto ok = synthetic_batch(decl(DType::kInt64, 5, 9), {}, 1);
  REQUIRE(ok.ok());
  for (int64_t v : ok->at("ids").to_int64_vector()) CHECK((v >= 5 && v < 9));
  struct Bad {
    DType dtype;
    double lo, hi;
  };
  for (const Bad& b : {Bad{DType::kInt64, 0.5, 10}, Bad{DType::kInt64, 0, 1e300}, Bad{DType::kInt32, 0, 3e9},
                       Bad{DType::kInt64, 7, 7}}) {
    INFO(dtype_name(b.dtype) << " [" << b.lo << ", " << b.hi << ")");
    auto r = synthetic_batch(decl(b.dtype, b.lo, b.hi), {}, 1);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains("is not whole numbers that its"));
  }
  // Float ranges are any finite interval.
  CHECK(synthetic_batch(decl(DType::kFloat, 0.5, 1e30), {}, 1).ok());
}

}  // namespace ort_train::testing

// The wording of an index outside what it indexes (runtime/index_fault_error.h),
// which the CPU kernels return and the GPU reports from its recorded fault, and
// the wrap rule (numerics/index_fault.h) both devices' Gather kernels apply.
#include <catch2/catch.hpp>

#include "numerics/index_fault.h"
#include "runtime/index_fault_error.h"
#include "test_util.h"

namespace ort_train::testing {

TEST_CASE("wrap_axis_index counts negatives from the end and marks what lies outside -n..n-1", "[runtime][index_fault]") {
  CHECK(wrap_axis_index(0, 3) == 0);
  CHECK(wrap_axis_index(2, 3) == 2);
  CHECK(wrap_axis_index(-1, 3) == 2);
  CHECK(wrap_axis_index(-3, 3) == 0);
  CHECK(wrap_axis_index(3, 3) == -1);
  CHECK(wrap_axis_index(-4, 3) == -1);
  CHECK(wrap_axis_index(0, 0) == -1);
  CHECK(wrap_axis_index(INT64_MIN, INT64_MAX) == -1);
}

TEST_CASE("A recorded index fault reads as the CPU kernel's error, naming the node", "[runtime][index_fault]") {
  const std::string node = "node 'g' (Gather)";
  IndexFault f;
  f.tag = 1;
  f.kind = static_cast<int32_t>(IndexFaultKind::kAxisIndex);
  f.value = 5;
  f.high = 3;
  Status st = index_fault_error(node, f);
  CHECK(st.code() == ErrorCode::kInvalidArgument);
  CHECK(st.message() == "node 'g' (Gather): index 5 is out of range for an axis of size 3");
  CHECK(st.message() == axis_index_error(node, 5, 3).message());
  CHECK(label_error("node 'l' (NegativeLogLikelihoodLoss)", 7, 3).message() ==
        "node 'l' (NegativeLogLikelihoodLoss): label 7 is out of range for 3 classes");
  CHECK(plane_index_error("node 'p' (MaxPoolGrad)", 99999, 1, 0, 16).message() ==
        "node 'p' (MaxPoolGrad): index 99999 at position 1 is outside its plane of X [0, 16)");
  f.kind = 0;  // a record that is not one of the kinds: said so, not mistaken for one
  CHECK(index_fault_error(node, f).code() == ErrorCode::kInternal);
}

// Each CPU kernel that reads indices from data uses the wording above.
TEST_CASE("The CPU kernels' index errors are the shared wording", "[runtime][index_fault]") {
  Tensor x = make<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  CHECK(run_node_error({"Gather", {x, make<int64_t>({2}, {0, 5})}}).message() ==
        axis_index_error("node 'Gather_node' (Gather)", 5, 3).message());
  CHECK(run_node_error({"GatherGrad",
                        {make<float>({2, 2}, {1, 2, 3, 4}), make<int64_t>({2}, {3, 2}), make<int64_t>({2}, {0, -4})},
                        {},
                        1,
                        17,
                        {1},
                        std::string(kOrtTrainDomain)})
            .message() == axis_index_error("node 'GatherGrad_node' (com.ort_train.GatherGrad)", -4, 3).message());
  CHECK(run_node_error({"NegativeLogLikelihoodLoss", {make<float>({2, 3}, {-1, -2, -3, -1, -2, -3}),
                                                       make<int64_t>({2}, {0, 7})}})
            .message() == label_error("node 'NegativeLogLikelihoodLoss_node' (NegativeLogLikelihoodLoss)", 7, 3).message());
}

}  // namespace ort_train::testing

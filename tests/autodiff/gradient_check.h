// Finite-difference checks of gradient rules. Each op's cases are generators:
// given a seeded random source they return a node (random shapes, broadcast
// pairs, negative axes...), so every run of the suite checks the same points and
// a failure prints the seed that reproduces it. The harness builds
//   loss = sum_k sum(O_k * R_k)     (R_k fixed random weights)
// over the node's floating-point outputs, asks the autodiff driver for the
// gradient of each differentiable input, and compares it element by element with
// central differences of the loss, in double precision.
#pragma once
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "runtime/device.h"
#include "test_util.h"

namespace ort_train::testing {

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  int64_t integer(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen_); }
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(gen_); }
  // Random dims: rank in [min_rank, max_rank], each size in [1, max_dim].
  Dims shape(int min_rank, int max_rank, int max_dim = 4);
  // Two shapes that broadcast against each other (some dims 1, ranks may differ).
  std::pair<Dims, Dims> broadcast_pair(int max_rank = 4, int max_dim = 4);
  // An axis of `rank`, negative half of the time.
  int64_t axis(int64_t rank);
  // Double tensor uniform in [lo, hi).
  Tensor uniform(Dims dims, double lo = -1.0, double hi = 1.0);
  // Double tensor uniform in [lo, hi) with no value within `margin` of `kink`
  // (for Relu, Abs, Max... whose derivative jumps there).
  Tensor away_from(Dims dims, double kink, double margin, double lo = -1.0, double hi = 1.0);
  // Double tensor of distinct values (for Max/Min/TopK, where ties make the derivative undefined).
  Tensor distinct(Dims dims, double lo = -1.0, double hi = 1.0);
  // int64 tensor uniform in [lo, hi].
  Tensor indices(Dims dims, int64_t lo, int64_t hi);

 private:
  std::mt19937_64 gen_;
};

struct GradCase {
  std::string name;  // what the case exercises, e.g. "Add broadcast"
  std::function<NodeSpec(Rng&)> make;
  // Inputs to differentiate; empty = every floating-point input the rule treats as differentiable.
  std::vector<size_t> wrt = {};
  double rtol = 1e-5;
  double atol = 1e-6;
  double eps = 1e-6;
  int seeds = 3;  // how many random instances to check
};

// Checks one case for `seeds` seeds (REQUIREs; the seed is printed on failure).
void check_gradient(const GradCase& c);

// Cases register themselves per op so the coverage test can find an op without one.
struct GradCaseRegistry {
  static std::vector<std::pair<std::string, GradCase>>& all();  // (op_type, case)
};
struct GradCaseRegistrar {
  GradCaseRegistrar(const std::string& op, GradCase c) { GradCaseRegistry::all().emplace_back(op, std::move(c)); }
};

// Runs every registered case of the given ops.
void check_registered(const std::vector<std::string>& ops);

// Runs one seed of the case's loss-and-gradient graph, with float32 inputs,
// on the CPU and on `device`, and checks the loss and every gradient agree:
// max |device - cpu| <= rtol * max |cpu| + 1e-6 per tensor. Returns the worst
// relative deviation seen; a case that cannot run on either device records
// the failure and returns -1, so the caller goes on to the other cases.
double compare_with_cpu(const GradCase& c, const std::shared_ptr<Device>& device, double rtol);

}  // namespace ort_train::testing

#define GRAD_CASE(op, ...)                                                                  \
  static ::ort_train::testing::GradCaseRegistrar ORT_CONCAT(_grad_case_, __LINE__)(op, \
                                                                                     ::ort_train::testing::GradCase __VA_ARGS__)

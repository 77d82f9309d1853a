// The index maps CUDA kernels walk tensors with (runtime/cuda/kernels/index_maps.h),
// evaluated on the host with the same offset functions the kernels call
// (cuda_kernels/tensor_map.h) and compared with the CPU kernels on random
// shapes: Transpose, Expand, Tile, Slice, Concat, Split, Pad, broadcasting
// binary ops and reductions. Needs only a CUDA build, no GPU.
#ifdef ORT_TRAIN_HAVE_CUDA
#include <numeric>

#include "autodiff/gradient_check.h"
#include "graph/ops/slice.h"
#include "runtime/cuda/kernels/index_maps.h"
#include "test_util.h"

namespace ort_train::testing {
namespace {

using cuda::copy_map_offset;
using cuda::CopyMap;
using cuda::index_map_offset;

// dst[i] = src[map(i)] over dst's elements.
Tensor host_gather(const Tensor& src, const CopyMap& m, const Dims& out_dims) {
  Tensor out = Tensor::host(DType::kFloat, out_dims);
  for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] = src.data<float>()[copy_map_offset(m, i)];
  return out;
}

// dst[map(i)] = src[i] over src's elements.
void host_scatter(const Tensor& src, const CopyMap& m, Tensor& dst) {
  for (int64_t i = 0; i < src.numel(); ++i) dst.data<float>()[copy_map_offset(m, i)] = src.data<float>()[i];
}

Tensor ints(const std::vector<int64_t>& v) { return make<int64_t>({static_cast<int64_t>(v.size())}, v); }

constexpr int kSeeds = 20;

}  // namespace

TEST_CASE("cuda_maps.transpose_expand_tile_match_the_cpu") {
  for (int seed = 0; seed < kSeeds; ++seed) {
    Rng rng(static_cast<uint64_t>(seed));
    INFO("seed " << seed);
    Dims dims = rng.shape(1, 5);
    Tensor x = random_tensor(dims, seed);
    // Transpose with a random permutation.
    std::vector<int64_t> perm(dims.size());
    std::iota(perm.begin(), perm.end(), 0);
    for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[static_cast<size_t>(rng.integer(0, i - 1))]);
    Tensor t = run_node({"Transpose", {x}, {Attribute::make_ints("perm", perm)}})[0];
    auto tm = cuda::transpose_map(dims, perm, t.dims());
    REQUIRE(tm.ok());
    require_close(host_gather(x, *tm, t.dims()), t, 0, 0);
    // Expand to a broadcast shape.
    auto [a, b] = rng.broadcast_pair();
    Tensor xa = random_tensor(a, seed);
    Dims target = b;
    Tensor e = run_node({"Expand", {xa, ints(target)}, {}, 1, 17, {1}})[0];
    auto em = cuda::expand_map(a, e.dims());
    REQUIRE(em.ok());
    require_close(host_gather(xa, *em, e.dims()), e, 0, 0);
    // Tile with random repeats.
    std::vector<int64_t> reps;
    for (size_t d = 0; d < dims.size(); ++d) reps.push_back(rng.integer(1, 3));
    Tensor tl = run_node({"Tile", {x, ints(reps)}, {}, 1, 17, {1}})[0];
    auto lm = cuda::tile_map(dims, tl.dims());
    REQUIRE(lm.ok());
    require_close(host_gather(x, *lm, tl.dims()), tl, 0, 0);
  }
}

TEST_CASE("cuda_maps.slice_and_its_gradient_match_the_cpu") {
  for (int seed = 0; seed < kSeeds; ++seed) {
    Rng rng(static_cast<uint64_t>(seed));
    INFO("seed " << seed);
    Dims dims = rng.shape(1, 4, 6);
    Tensor x = random_tensor(dims, seed);
    std::vector<int64_t> starts, ends, axes, steps;
    for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
      if (rng.integer(0, 1) == 0) continue;
      int64_t n = dims[static_cast<size_t>(d)];
      int64_t step = rng.integer(0, 1) ? rng.integer(1, 2) : -rng.integer(1, 2);
      starts.push_back(step > 0 ? rng.integer(-n, n - 1) : rng.integer(0, n));
      ends.push_back(step > 0 ? rng.integer(0, n + 1) : rng.integer(-n - 1, n - 1));
      axes.push_back(rng.integer(0, 1) ? d : d - static_cast<int64_t>(dims.size()));
      steps.push_back(step);
    }
    if (axes.empty()) continue;
    Tensor y = run_node({"Slice", {x, ints(starts), ints(ends), ints(axes), ints(steps)}, {}, 1, 17, {1, 2, 3, 4}})[0];
    Node n;
    n.op_type = "Slice";
    n.name = "slice";
    auto r = resolve_slice(n, dims, starts, ends, axes, steps);
    REQUIRE(r.ok());
    auto m = cuda::slice_map(*r, dims, y.dims());
    REQUIRE(m.ok());
    require_close(host_gather(x, *m, y.dims()), y, 0, 0);
    // SliceGrad writes dY back through the same map into zeros.
    Tensor dx = Tensor::host(DType::kFloat, dims);
    host_scatter(y, *m, dx);
    Tensor want = Tensor::host(DType::kFloat, dims);
    for (int64_t i = 0; i < y.numel(); ++i) want.data<float>()[copy_map_offset(*m, i)] = y.data<float>()[i];
    require_close(dx, want, 0, 0);
  }
}

TEST_CASE("cuda_maps.concat_split_and_pad_match_the_cpu") {
  for (int seed = 0; seed < kSeeds; ++seed) {
    Rng rng(static_cast<uint64_t>(seed));
    INFO("seed " << seed);
    Dims dims = rng.shape(1, 4);
    int64_t axis = rng.integer(0, static_cast<int64_t>(dims.size()) - 1);
    std::vector<Tensor> parts;
    for (int k = 0; k < 3; ++k) {
      Dims d = dims;
      d[static_cast<size_t>(axis)] = rng.integer(1, 3);
      parts.push_back(random_tensor(d, seed * 10 + k));
    }
    Tensor cat = run_node({"Concat", parts, {Attribute::make_int("axis", axis)}})[0];
    Tensor mine = Tensor::host(DType::kFloat, cat.dims());
    int64_t offset = 0;
    for (const Tensor& p : parts) {
      auto m = cuda::axis_map(p.dims(), cat.dims(), axis, offset);
      REQUIRE(m.ok());
      host_scatter(p, *m, mine);
      // Split reads the same view back.
      require_close(host_gather(cat, *m, p.dims()), p, 0, 0);
      offset += p.dims()[static_cast<size_t>(axis)];
    }
    require_close(mine, cat, 0, 0);
    // Pad, constant mode, with negative pads (crops) too.
    std::vector<int64_t> pads;
    for (size_t k = 0; k < 2 * dims.size(); ++k) pads.push_back(rng.integer(-1, 2));
    bool ok = true;
    for (size_t d = 0; d < dims.size(); ++d) ok = ok && dims[d] + pads[d] + pads[d + dims.size()] >= 0;
    if (!ok) continue;
    Tensor x = random_tensor(dims, seed);
    Tensor padded = run_node({"Pad", {x, ints(pads), make<float>({}, {0.5f})}, {}, 1, 17, {1, 2}})[0];
    Tensor got = Tensor::host(DType::kFloat, padded.dims());
    for (int64_t i = 0; i < got.numel(); ++i) got.data<float>()[i] = 0.5f;
    auto p = cuda::pad_interior(dims, padded.dims(), pads);
    REQUIRE(p.ok());
    if (!p->empty) host_scatter(host_gather(x, p->in_view, p->part), p->out_view, got);
    require_close(got, padded, 0, 0);
  }
}

TEST_CASE("cuda_maps.broadcasting_and_reductions_match_the_cpu") {
  for (int seed = 0; seed < kSeeds; ++seed) {
    Rng rng(static_cast<uint64_t>(seed));
    INFO("seed " << seed);
    auto [a, b] = rng.broadcast_pair();
    Tensor ta = random_tensor(a, seed), tb = random_tensor(b, seed + 100);
    Tensor sum = run_node({"Add", {ta, tb}})[0];
    auto am = cuda::broadcast_map(a, sum.dims());
    auto bm = cuda::broadcast_map(b, sum.dims());
    REQUIRE(am.ok());
    REQUIRE(bm.ok());
    Tensor mine = Tensor::host(DType::kFloat, sum.dims());
    for (int64_t i = 0; i < mine.numel(); ++i)
      mine.data<float>()[i] = ta.data<float>()[index_map_offset(*am, i)] + tb.data<float>()[index_map_offset(*bm, i)];
    require_close(mine, sum, 0, 0);
    // ReduceSum over a random set of axes (kept dims, so the output order is the CPU's).
    Dims dims = rng.shape(1, 5);
    Tensor x = random_tensor(dims, seed);
    std::vector<bool> reduced(dims.size());
    std::vector<int64_t> axes;
    for (size_t d = 0; d < dims.size(); ++d)
      if ((reduced[d] = rng.integer(0, 1) == 1)) axes.push_back(static_cast<int64_t>(d));
    if (axes.empty()) continue;
    Tensor want = run_node({"ReduceSum", {x, ints(axes)}, {Attribute::make_int("keepdims", 1)}, 1, 17, {1}})[0];
    auto r = cuda::reduce_maps(dims, reduced);
    REQUIRE(r.ok());
    Tensor got = Tensor::host(DType::kFloat, want.dims());
    for (int64_t o = 0; o < got.numel(); ++o) {
      double acc = 0;
      for (int64_t k = 0; k < r->count; ++k)
        acc += x.data<float>()[index_map_offset(r->kept, o) + index_map_offset(r->reduced, k)];
      got.data<float>()[o] = static_cast<float>(acc);
    }
    require_close(got, want, 1e-6, 1e-6);
  }
}

TEST_CASE("cuda_maps.pooling_windows_match_the_cpu") {
  for (int seed = 0; seed < kSeeds; ++seed) {
    Rng rng(static_cast<uint64_t>(seed));
    INFO("seed " << seed);
    int64_t spatial = rng.integer(1, 3);
    Dims dims = {rng.integer(1, 2), rng.integer(1, 3)};
    std::vector<int64_t> kernel, strides, pads(2 * static_cast<size_t>(spatial)), dilations;
    for (int64_t d = 0; d < spatial; ++d) {
      dims.push_back(rng.integer(3, 6));
      kernel.push_back(rng.integer(1, 3));
      strides.push_back(rng.integer(1, 2));
      dilations.push_back(rng.integer(1, 2));
    }
    for (int64_t d = 0; d < spatial; ++d) {  // pads smaller than the kernel, as ONNX requires
      pads[static_cast<size_t>(d)] = rng.integer(0, kernel[static_cast<size_t>(d)] - 1);
      pads[static_cast<size_t>(d + spatial)] = rng.integer(0, kernel[static_cast<size_t>(d)] - 1);
    }
    int64_t ceil_mode = rng.integer(0, 1);
    Tensor x = rng.distinct(dims);  // distinct values: no ties in the argmax
    Tensor xf = Tensor::host(DType::kFloat, dims);
    for (int64_t i = 0; i < x.numel(); ++i) xf.data<float>()[i] = static_cast<float>(x.data<double>()[i]);
    for (bool average : {false, true}) {
      for (int64_t include_pad : {0, 1}) {
        if (!average && include_pad) continue;
        std::vector<Attribute> attrs = {Attribute::make_ints("kernel_shape", kernel), Attribute::make_ints("strides", strides),
                                        Attribute::make_ints("pads", pads), Attribute::make_int("ceil_mode", ceil_mode),
                                        Attribute::make_ints("dilations", dilations)};
        if (average) attrs.push_back(Attribute::make_int("count_include_pad", include_pad));
        NodeSpec spec{average ? "AveragePool" : "MaxPool", {xf}, attrs, average ? 1u : 2u, 19};
        INFO(spec.op << " count_include_pad " << include_pad);
        auto want = run_node(spec);
        Model model = single_node_model(spec);
        auto g = cuda::pool_geometry(model.graph.nodes[0], dims);
        INFO(g.status().message());
        REQUIRE(g.ok());
        int64_t planes = dims[0] * dims[1], in_size = xf.numel() / planes;
        int64_t out_size = g->out[0] * g->out[1] * g->out[2];
        REQUIRE(want[0].numel() == planes * out_size);
        for (int64_t pl = 0; pl < planes; ++pl)
          for (int64_t p = 0; p < out_size; ++p) {
            int64_t o[3] = {p / (g->out[1] * g->out[2]), (p / g->out[2]) % g->out[1], p % g->out[2]};
            const float* plane = xf.data<float>() + pl * in_size;
            int64_t e = pl * out_size + p;
            if (average) {
              CHECK(cuda::average_pool_at(plane, *g, o, include_pad != 0) == Approx(want[0].data<float>()[e]).epsilon(1e-6));
            } else {
              float best;
              int64_t idx;
              cuda::max_pool_at(plane, *g, o, false, &best, &idx);
              CHECK(best == want[0].data<float>()[e]);
              CHECK(pl * in_size + idx == want[1].data<int64_t>()[e]);
            }
          }
      }
    }
    for (int64_t p : {1, 2, 3}) {  // LpPool: the same window walk with |x|^p terms
      std::vector<Attribute> attrs = {Attribute::make_ints("kernel_shape", kernel), Attribute::make_ints("strides", strides),
                                      Attribute::make_ints("pads", pads), Attribute::make_int("ceil_mode", ceil_mode),
                                      Attribute::make_ints("dilations", dilations), Attribute::make_int("p", p)};
      NodeSpec spec{"LpPool", {xf}, attrs, 1u, 18};
      INFO("LpPool p " << p);
      auto want = run_node(spec);
      Model model = single_node_model(spec);
      auto g = cuda::pool_geometry(model.graph.nodes[0], dims);
      REQUIRE(g.ok());
      int64_t planes = dims[0] * dims[1], in_size = xf.numel() / planes;
      int64_t out_size = g->out[0] * g->out[1] * g->out[2];
      REQUIRE(want[0].numel() == planes * out_size);
      for (int64_t pl = 0; pl < planes; ++pl)
        for (int64_t q = 0; q < out_size; ++q) {
          int64_t o[3] = {q / (g->out[1] * g->out[2]), (q / g->out[2]) % g->out[1], q % g->out[2]};
          CHECK(cuda::lp_pool_at(xf.data<float>() + pl * in_size, *g, o, p) ==
                Approx(want[0].data<float>()[pl * out_size + q]).epsilon(1e-6));
        }
    }
  }
}

}  // namespace ort_train::testing
#endif  // ORT_TRAIN_HAVE_CUDA

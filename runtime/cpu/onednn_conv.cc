#include "runtime/cpu/onednn_conv.h"

#include <atomic>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "graph/ops/window_geometry.h"

namespace ort_train {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using Dims = dnnl::memory::dims;

std::atomic<int64_t> g_convolutions{0};

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// One convolution's sizes, from the node and its operands' dims.
struct Geometry {
  int64_t N = 0, C = 0, M = 0, group = 1;
  std::vector<WindowDim> dims;
  bool bias = false;

  std::string key(const char* kind) const {
    std::string k = fmt::format("{} {} {} {} {} {}", kind, N, C, M, group, bias);
    for (const WindowDim& w : dims)
      k += fmt::format(" {}/{}/{}/{}/{}/{}/{}", w.in, w.kernel, w.stride, w.dilation, w.pad_begin, w.pad_end, w.out);
    return k;
  }
  // `leading`, then `field` of each spatial dim less `minus`.
  Dims each(int64_t WindowDim::*field, Dims leading = {}, int64_t minus = 0) const {
    for (const WindowDim& w : dims) leading.push_back(w.*field - minus);
    return leading;
  }
  Dims src() const { return each(&WindowDim::in, {N, C}); }
  Dims dst() const { return each(&WindowDim::out, {N, M}); }
  Dims weights() const {
    return each(&WindowDim::kernel, group > 1 ? Dims{group, M / group, C / group} : Dims{M, C});
  }
  Dims strides() const { return each(&WindowDim::stride); }
  Dims dilates() const { return each(&WindowDim::dilation, {}, 1); }  // oneDNN counts the gaps: ONNX's 1 is its 0
  Dims pads_begin() const { return each(&WindowDim::pad_begin); }
  Dims pads_end() const { return each(&WindowDim::pad_end); }
  dnnl::memory::desc bias_desc() const { return {{M}, dt::f32, tag::x}; }
  // NCHW and OIHW (GOIHW grouped), as ONNX stores them.
  dnnl::memory::desc plain_activation(const Dims& d) const {
    static const tag tags[] = {tag::ncw, tag::nchw, tag::ncdhw};
    return {d, dt::f32, tags[dims.size() - 1]};
  }
  dnnl::memory::desc plain_weights() const {
    static const tag plain[] = {tag::oiw, tag::oihw, tag::oidhw};
    static const tag grouped[] = {tag::goiw, tag::goihw, tag::goidhw};
    return {weights(), dt::f32, (group > 1 ? grouped : plain)[dims.size() - 1]};
  }
  // What the primitive may pick: oneDNN's blocked layouts.
  dnnl::memory::desc any(const Dims& d) const { return {d, dt::f32, tag::any}; }
};

Result<Geometry> geometry(const KernelContext& ctx, const Tensor& X, const Tensor& W, bool bias) {
  Geometry g;
  if (X.dtype() != DType::kFloat || W.dtype() != DType::kFloat)
    return unsupported("{}: oneDNN's convolution here is float32 only", ctx.node().describe());
  if (X.rank() < 3 || X.rank() > 5 || W.rank() != X.rank())
    return unsupported("{}: oneDNN's convolution takes 1-D to 3-D inputs", ctx.node().describe());
  g.N = X.dims()[0];
  g.C = X.dims()[1];
  g.M = W.dims()[0];
  ASSIGN_OR_RETURN(g.group, conv_group(ctx.node()));
  std::vector<int64_t> spatial(X.dims().begin() + 2, X.dims().end());
  std::vector<int64_t> kernel(W.dims().begin() + 2, W.dims().end());
  ASSIGN_OR_RETURN(g.dims, window_geometry(ctx.node(), spatial, kernel, false));
  g.bias = bias;
  bool empty = g.N == 0 || g.C == 0 || g.M == 0;
  for (const WindowDim& w : g.dims) empty = empty || w.out <= 0 || w.in <= 0;
  if (empty || g.C % g.group != 0 || g.M % g.group != 0 || W.dims()[1] != g.C / g.group)
    return unsupported("{}: no oneDNN convolution for X {} and W {} (group {})", ctx.node().describe(),
                       dims_to_string(X.dims()), dims_to_string(W.dims()), g.group);
  return g;
}

// The primitives of one shape. Making them costs milliseconds (oneDNN picks
// and JITs an implementation), so each shape is made once per process.
struct Made {
  dnnl::convolution_forward::primitive_desc forward_pd;
  dnnl::convolution_forward forward;
  std::optional<dnnl::convolution_backward_data::primitive_desc> data_pd;
  std::optional<dnnl::convolution_backward_data> data;
  std::optional<dnnl::convolution_backward_weights::primitive_desc> weights_pd;
  std::optional<dnnl::convolution_backward_weights> weights;
};

dnnl::primitive_attr user_scratchpad() {
  // Each call brings its own scratchpad (run's thread_local buffer): calls
  // from several threads must not share the library's.
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

Result<const Made*> made(const Geometry& g, bool backward, const std::string& node) {
  static std::mutex mu;
  static std::map<std::string, Made> cache;
  std::lock_guard<std::mutex> lock(mu);
  const std::string key = g.key(backward ? "backward" : "forward");
  if (auto it = cache.find(key); it != cache.end()) return &it->second;
  try {
    const auto src = g.any(g.src()), dst = g.any(g.dst()), wei = g.any(g.weights());
    const dnnl::memory::desc bias = g.bias_desc(), no_bias;
    dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, src,
                                       wei, g.bias ? bias : no_bias, dst, g.strides(), g.dilates(), g.pads_begin(),
                                       g.pads_end());
    dnnl::convolution_forward::primitive_desc fpd(fd, user_scratchpad(), cpu_engine());
    Made m{fpd, dnnl::convolution_forward(fpd), {}, {}, {}, {}};
    if (backward) {
      dnnl::convolution_backward_data::desc dd(dnnl::algorithm::convolution_direct, src, wei, dst, g.strides(),
                                               g.dilates(), g.pads_begin(), g.pads_end());
      m.data_pd.emplace(dd, user_scratchpad(), cpu_engine(), fpd);
      m.data.emplace(*m.data_pd);
      dnnl::convolution_backward_weights::desc wd(dnnl::algorithm::convolution_direct, src, wei, bias, dst,
                                                  g.strides(), g.dilates(), g.pads_begin(), g.pads_end());
      m.weights_pd.emplace(wd, user_scratchpad(), cpu_engine(), fpd);
      m.weights.emplace(*m.weights_pd);
    }
    return &cache.emplace(key, std::move(m)).first->second;
  } catch (const dnnl::error& e) {
    return unsupported("{}: oneDNN made no convolution ({}): {}", node, key, e.what());
  }
}

// Runs one primitive with its arguments in the layouts it chose: each plain
// input is reordered in where the layouts differ, each output computed into
// the primitive's layout and reordered out.
class Call {
 public:
  explicit Call(const dnnl::memory::desc& scratchpad) {
    thread_local std::vector<uint8_t> buffer;
    buffer.resize(std::max<size_t>(scratchpad.get_size(), 1));
    args_.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratchpad, cpu_engine(), buffer.data()));
  }
  void in(int arg, const dnnl::memory::desc& plain, const void* data, const dnnl::memory::desc& want) {
    dnnl::memory user(plain, cpu_engine(), const_cast<void*>(data));
    if (want == plain) {
      args_.emplace(arg, user);
      return;
    }
    dnnl::memory m(want, cpu_engine());
    dnnl::reorder(user, m).execute(stream(), user, m);
    args_.emplace(arg, m);
  }
  void out(int arg, const dnnl::memory::desc& plain, void* data, const dnnl::memory::desc& have) {
    dnnl::memory user(plain, cpu_engine(), data);
    if (have == plain) {
      args_.emplace(arg, user);
      return;
    }
    dnnl::memory m(have, cpu_engine());
    args_.emplace(arg, m);
    outs_.emplace_back(m, user);
  }
  void run(const dnnl::primitive& p) {
    g_convolutions.fetch_add(1, std::memory_order_relaxed);
    p.execute(stream(), args_);
    for (auto& [from, to] : outs_) dnnl::reorder(from, to).execute(stream(), from, to);
    stream().wait();
  }

 private:
  static dnnl::stream& stream() {
    thread_local dnnl::stream s(cpu_engine());  // a stream per thread: kernels may run on several at once
    return s;
  }
  std::unordered_map<int, dnnl::memory> args_;
  std::vector<std::pair<dnnl::memory, dnnl::memory>> outs_;
};

}  // namespace

Status onednn_conv_forward(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const bool bias = ctx.has_input(2);
  ASSIGN_OR_RETURN(Geometry g, geometry(ctx, X, W, bias));
  ASSIGN_OR_RETURN(const Made* m, made(g, false, ctx.node().describe()));
  Tensor& Y = ctx.output(0);
  try {
    Call call(m->forward_pd.scratchpad_desc());
    call.in(DNNL_ARG_SRC, g.plain_activation(g.src()), X.raw(), m->forward_pd.src_desc());
    call.in(DNNL_ARG_WEIGHTS, g.plain_weights(), W.raw(), m->forward_pd.weights_desc());
    if (bias) call.in(DNNL_ARG_BIAS, g.bias_desc(), ctx.input(2).raw(), g.bias_desc());
    call.out(DNNL_ARG_DST, g.plain_activation(g.dst()), Y.raw(), m->forward_pd.dst_desc());
    call.run(m->forward);
  } catch (const dnnl::error& e) {
    return make_error(ErrorCode::kInternal, "{}: oneDNN's convolution failed: {}", ctx.node().describe(), e.what());
  }
  return Status::Ok();
}

Status onednn_conv_backward(KernelContext& ctx) {
  const Tensor& dY = ctx.input(0);
  const Tensor& X = ctx.input(1);
  const Tensor& W = ctx.input(2);
  const bool want_dx = ctx.has_output(0), want_dw = ctx.num_outputs() > 1 && ctx.has_output(1);
  const bool want_db = ctx.num_outputs() > 2 && ctx.has_output(2);
  ASSIGN_OR_RETURN(Geometry g, geometry(ctx, X, W, /*bias=*/true));
  if (dY.dtype() != DType::kFloat || dY.dims() != g.dst())
    return unsupported("{}: dY {} is not the convolution's output {}", ctx.node().describe(),
                       dims_to_string(dY.dims()), dims_to_string(g.dst()));
  ASSIGN_OR_RETURN(const Made* m, made(g, true, ctx.node().describe()));
  try {
    if (want_dx) {
      Call call(m->data_pd->scratchpad_desc());
      call.in(DNNL_ARG_DIFF_DST, g.plain_activation(g.dst()), dY.raw(), m->data_pd->diff_dst_desc());
      call.in(DNNL_ARG_WEIGHTS, g.plain_weights(), W.raw(), m->data_pd->weights_desc());
      call.out(DNNL_ARG_DIFF_SRC, g.plain_activation(g.src()), ctx.output(0).raw(), m->data_pd->diff_src_desc());
      call.run(*m->data);
    }
    if (want_dw || want_db) {
      // dW and dB come together; the one not asked for goes to a scratch buffer.
      std::vector<float> unused_dw(want_dw ? 0 : static_cast<size_t>(W.numel()));
      std::vector<float> unused_db(want_db ? 0 : static_cast<size_t>(g.M));
      void* dw = want_dw ? ctx.output(1).raw() : unused_dw.data();
      void* db = want_db ? ctx.output(2).raw() : unused_db.data();
      Call call(m->weights_pd->scratchpad_desc());
      call.in(DNNL_ARG_SRC, g.plain_activation(g.src()), X.raw(), m->weights_pd->src_desc());
      call.in(DNNL_ARG_DIFF_DST, g.plain_activation(g.dst()), dY.raw(), m->weights_pd->diff_dst_desc());
      call.out(DNNL_ARG_DIFF_WEIGHTS, g.plain_weights(), dw, m->weights_pd->diff_weights_desc());
      call.out(DNNL_ARG_DIFF_BIAS, g.bias_desc(), db, m->weights_pd->diff_bias_desc());
      call.run(*m->weights);
    }
  } catch (const dnnl::error& e) {
    return make_error(ErrorCode::kInternal, "{}: oneDNN's convolution backward failed: {}", ctx.node().describe(),
                      e.what());
  }
  return Status::Ok();
}

int64_t onednn_convolutions() { return g_convolutions.load(std::memory_order_relaxed); }

}  // namespace ort_train

#include <cctype>
#include "graph/onnx_io.h"

#include "graph/atomic_file.h"
#include "graph/confined_path.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <charconv>
#include <fstream>
#include <functional>
#include <sstream>
#include <unordered_set>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/unknown_field_set.h>
#include <onnx/onnx_pb.h>
#include <spdlog/spdlog.h>

#include "graph/control_flow.h"
#include "graph/function_inlining.h"
#include "graph/mapped_external_data.h"
#include "graph/node_arity.h"
#include "graph/onnx_metadata.h"
#include "graph/op_schema.h"
#include "graph/regular_file.h"
#include "graph/sequence_lowering.h"
#include "graph/topo_sort.h"

namespace ort_train {
namespace fs = std::filesystem;

namespace {

Result<std::string> read_range(const RegularFile& f, const std::string& path, uint64_t offset, uint64_t length) {
  std::string bytes;
  try {
    bytes.resize(static_cast<size_t>(length));
  } catch (const std::exception&) {  // bad_alloc, length_error
    return io_error("{}: {} bytes do not fit in memory", path, length);
  }
  RETURN_IF_ERROR(read_range_into(f, path, offset, length, bytes.data()));
  return bytes;
}

// Where write_file_atomic writes before its rename (check_can_write probes it).
fs::path temporary_sibling(const std::string& path) {
  fs::path tmp(path);
  tmp += ".tmp." + std::to_string(::getpid());
  return tmp;
}

}  // namespace

bool path_present(const std::string& path) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(path, ec));
}

Result<std::string> read_file(const std::string& path, uint64_t max_bytes) {
  RegularFile f;
  RETURN_IF_ERROR(open_regular(path, f));
  if (max_bytes && f.size > max_bytes)
    return io_error("{} is {} bytes, more than the {} this kind of file may have", path, f.size, max_bytes);
  return read_range(f, path, 0, f.size);
}

Status check_can_write(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return io_error("cannot write {}: it is a folder", path);
    if (!S_ISREG(st.st_mode)) {  // written through where it is (write_file_atomic)
      int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
      if (fd < 0) return io_error("cannot write {}: {}", path, std::strerror(errno));
      ::close(fd);
      return Status::Ok();
    }
  }
  fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  if (ec) return io_error("cannot write {}: cannot make its folder: {}", path, ec.message());
  fs::path probe = temporary_sibling(path);
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return io_error("cannot write {}: {}", path, std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::Ok();
}

Status write_file_atomic(const std::string& path, const std::string& bytes, OutputName name) {
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> f, AtomicFileWriter::open(path, name));
  RETURN_IF_ERROR(f->write(bytes.data(), bytes.size()));
  return f->commit();
}

namespace {

bool parse_limited(google::protobuf::MessageLite* msg, const std::string& bytes) {
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream in(&raw);
  in.SetTotalBytesLimit(INT_MAX);
  return msg->ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
}

template <typename Src, typename Dst>
void copy_cast(const Src& src, Dst* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = static_cast<Dst>(src[static_cast<int>(i)]);
}

// The external data file of `p`, confined to the model's folder as ONNX
// Runtime does: a file from a stranger must not make ort_train read
// /etc/passwd or ~/.ssh as weights. Absolute locations, `..` that leaves the
// folder and symlinks that point out of it are refused.
Result<fs::path> external_file(const onnx::TensorProto& p, const std::string& location, const std::string& base_dir) {
  if (location.empty()) return io_error("initializer '{}' has external data without a location", p.name());
  ConfinedPath c = confine_path(base_dir, location);
  if (c.absolute)
    return invalid_argument("initializer '{}': external data location '{}' is an absolute path; it must be a file in "
                            "the model's folder",
                            p.name(), location);
  if (!c.error.empty()) return io_error("initializer '{}': external data location '{}': {}", p.name(), location, c.error);
  if (!c.inside)
    return invalid_argument("initializer '{}': external data location '{}' leads out of the model's folder {} (to {})",
                            p.name(), location, c.folder.string(), c.resolved.string());
  return c.resolved;
}

// Reads `expected` bytes of `p`'s external data into the buffer `allocate`
// returns (the tensor's own: no second copy of a large model's weights),
// called only after the location, offset and length are checked against the
// file, so a file claiming any size allocates nothing it does not hold. With
// `mapped`, the range is mapped into it instead where that works
// (graph/mapped_external_data.h), and nothing is read.
Status read_external(const onnx::TensorProto& p, const std::string& base_dir, uint64_t expected,
                     const std::function<char*()>& allocate, std::shared_ptr<Storage>* mapped) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    int64_t* field = kv.key() == "offset" ? &offset : kv.key() == "length" ? &length : nullptr;
    if (kv.key() == "location") location = kv.value();
    if (!field) continue;
    const std::string& v = kv.value();
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), *field);
    if (ec != std::errc() || end != v.data() + v.size() || *field < 0)
      return invalid_argument("initializer '{}': external data {} '{}' is not a non-negative integer", p.name(),
                              kv.key(), v);
  }
  ASSIGN_OR_RETURN(fs::path file, external_file(p, location, base_dir));
  RegularFile f;
  Status opened = open_regular(file.string(), f);
  if (!opened.ok()) return opened.with_context(fmt::format("initializer '{}': external data", p.name()));
  const int64_t size = static_cast<int64_t>(f.size);
  if (offset > size)
    return io_error("initializer '{}': external data offset {} is past the end of {} ({} bytes)", p.name(), offset,
                    file.string(), size);
  if (length < 0) length = static_cast<int64_t>(expected);
  if (static_cast<uint64_t>(length) != expected)
    return invalid_argument("initializer '{}': external data length {} but its dims need {} bytes", p.name(), length,
                            expected);
  if (length > size - offset)
    return io_error("initializer '{}': external data {} is truncated (needs {} bytes at offset {}, file has {})",
                    p.name(), file.string(), length, offset, size);
  if (mapped) {
    auto storage = map_external_range(f, file.string(), static_cast<uint64_t>(offset),
                                      static_cast<uint64_t>(length), p.name());
    if (storage.ok()) {
      *mapped = std::move(storage).value();
      return Status::Ok();
    }
    spdlog::debug("{}; reading it instead", storage.status().message());
  }
  return read_range_into(f, file.string(), static_cast<uint64_t>(offset), static_cast<uint64_t>(length), allocate());
}

}  // namespace

// `map_from`: external float data of this many bytes or more is mapped, not
// read (0: none is).
static Result<Tensor> tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir, uint64_t map_from) {
  DType dt = dtype_from_onnx(p.data_type());
  Dims dims(p.dims().begin(), p.dims().end());
  for (int64_t d : dims)
    if (d < 0) return invalid_argument("tensor '{}' has a negative dimension", p.name());
  size_t esize = dtype_size(dt);
  if (esize == 0)
    return unsupported("tensor '{}' has dtype {}, which this runtime does not store", p.name(), dtype_name(dt));
  // Check the element count against the bytes present before allocating, so a
  // corrupt file with absurd dims is an error rather than a huge allocation.
  size_t n = 1;
  for (int64_t d : dims) {
    if (d != 0 && n > (size_t{1} << 40) / static_cast<size_t>(d))
      return invalid_argument("tensor '{}' has implausible dims {}", p.name(), dims_to_string(dims));
    n *= static_cast<size_t>(d);
  }
  size_t have = 0;
  if (p.data_location() == onnx::TensorProto::EXTERNAL) have = n;  // checked against the file below
  else if (p.has_raw_data()) have = p.raw_data().size() / esize;
  else have = static_cast<size_t>(std::max({p.float_data_size(), p.double_data_size(), p.int64_data_size(),
                                            p.uint64_data_size(), p.int32_data_size()}));
  if (have != n)
    return invalid_argument("tensor '{}' holds {} values but dims {} need {}", p.name(), have, dims_to_string(dims), n);
  const std::string* raw = nullptr;
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    Tensor t;
    const uint64_t bytes = static_cast<uint64_t>(n) * esize;
    std::shared_ptr<Storage> mapped;
    const bool map = map_from && bytes >= map_from && dtype_is_float(dt);
    RETURN_IF_ERROR(read_external(p, base_dir, bytes, [&]() {
      t = Tensor::host(dt, dims);
      return static_cast<char*>(t.raw());
    }, map ? &mapped : nullptr));
    if (mapped) return Tensor(dt, dims, std::move(mapped));
    t.normalize_bools();
    return t;
  }
  if (p.has_raw_data()) raw = &p.raw_data();
  Tensor t = Tensor::host(dt, dims);
  if (raw) {
    if (raw->size() != t.nbytes())
      return invalid_argument("tensor '{}' holds {} bytes but dims {} of {} need {}", p.name(), raw->size(),
                              dims_to_string(dims), dtype_name(dt), t.nbytes());
    if (n) std::memcpy(t.raw(), raw->data(), raw->size());
    t.normalize_bools();
    return t;
  }
  auto check = [&](size_t have) -> Status {
    if (have != n)
      return invalid_argument("tensor '{}' holds {} values but dims {} need {}", p.name(), have,
                              dims_to_string(dims), n);
    return Status::Ok();
  };
  switch (dt) {
    case DType::kFloat: RETURN_IF_ERROR(check(p.float_data_size())); copy_cast(p.float_data(), t.data<float>(), n); break;
    case DType::kDouble: RETURN_IF_ERROR(check(p.double_data_size())); copy_cast(p.double_data(), t.data<double>(), n); break;
    case DType::kInt64: RETURN_IF_ERROR(check(p.int64_data_size())); copy_cast(p.int64_data(), t.data<int64_t>(), n); break;
    case DType::kUInt32: RETURN_IF_ERROR(check(p.uint64_data_size())); copy_cast(p.uint64_data(), t.data<uint32_t>(), n); break;
    case DType::kUInt64: RETURN_IF_ERROR(check(p.uint64_data_size())); copy_cast(p.uint64_data(), t.data<uint64_t>(), n); break;
    case DType::kInt32: RETURN_IF_ERROR(check(p.int32_data_size())); copy_cast(p.int32_data(), t.data<int32_t>(), n); break;
    case DType::kInt16: RETURN_IF_ERROR(check(p.int32_data_size())); copy_cast(p.int32_data(), t.data<int16_t>(), n); break;
    case DType::kInt8: RETURN_IF_ERROR(check(p.int32_data_size())); copy_cast(p.int32_data(), t.data<int8_t>(), n); break;
    case DType::kUInt16: case DType::kFloat16: case DType::kBFloat16:
      // float16/bfloat16 bit patterns travel in int32_data.
      RETURN_IF_ERROR(check(p.int32_data_size())); copy_cast(p.int32_data(), t.data<uint16_t>(), n); break;
    case DType::kUInt8: RETURN_IF_ERROR(check(p.int32_data_size())); copy_cast(p.int32_data(), t.data<uint8_t>(), n); break;
    case DType::kBool: RETURN_IF_ERROR(check(p.int32_data_size())); copy_cast(p.int32_data(), t.data<bool>(), n); break;
    default: return unsupported("tensor '{}' has unsupported dtype {}", p.name(), dtype_name(dt));
  }
  return t;
}

void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* p) {
  p->set_name(name);
  p->set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.dims()) p->add_dims(d);
  p->set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
}

Result<NamedTensor> read_tensor_file(const std::string& path) {
  ASSIGN_OR_RETURN(std::string bytes, read_file(path, kMaxProtobufBytes));
  return parse_tensor_file(bytes, fs::path(path).parent_path().string(), path);
}

Result<Tensor> tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir) {
  return tensor_from_proto(p, base_dir, 0);
}

Result<NamedTensor> parse_tensor_file(const std::string& bytes, const std::string& base_dir, const std::string& path) {
  onnx::TensorProto p;
  if (!parse_limited(&p, bytes)) return io_error("{} is not a valid ONNX TensorProto file", path);
  ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(p, base_dir));
  return NamedTensor{p.name(), std::move(t)};
}

// Every caller names the file after a tensor inside a folder the user named
// (--dump-gradients, run --outputs): ort_train chose the name, so whatever
// was planted at it (a link out of the folder) is replaced, never followed.
Status write_tensor_file(const Tensor& t, const std::string& name, const std::string& path) {
  onnx::TensorProto p;
  tensor_to_proto(t, name, &p);
  return write_file_atomic(path, p.SerializeAsString(), OutputName::kChosen);
}

// ---------------------------------------------------------------------------
namespace {

// metadata_props (ONNX 1.16+; unknown fields to onnx 1.12): their field numbers.
constexpr int kValueInfoMetadataField = 4;
constexpr int kNodeMetadataField = 9;
constexpr int kGraphMetadataField = 16;

ValueInfo value_info_from_proto(const onnx::ValueInfoProto& v) {
  ValueInfo info;
  info.name = v.name();
  info.doc_string = v.doc_string();
  info.metadata = read_metadata_props(v, kValueInfoMetadataField);
  if (v.has_type() && !v.type().has_tensor_type()) info.non_tensor_type = v.type().SerializeAsString();
  if (v.type().has_tensor_type()) {
    const auto& tt = v.type().tensor_type();
    info.dtype = dtype_from_onnx(tt.elem_type());
    if (tt.has_shape()) {
      Shape s;
      for (const auto& d : tt.shape().dim()) {
        if (d.has_dim_value()) s.emplace_back(d.dim_value());
        else if (d.has_dim_param()) s.emplace_back(d.dim_param());
        else s.emplace_back();
      }
      info.shape = std::move(s);
    }
  }
  return info;
}

void value_info_to_proto(const ValueInfo& info, onnx::ValueInfoProto* v) {
  v->set_name(info.name);
  if (!info.doc_string.empty()) v->set_doc_string(info.doc_string);
  write_metadata_props(info.metadata, kValueInfoMetadataField, v);
  if (!info.non_tensor_type.empty()) {
    v->mutable_type()->ParseFromString(info.non_tensor_type);
    return;
  }
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(info.dtype));
  if (info.shape) {
    auto* sh = tt->mutable_shape();
    for (const Dim& d : *info.shape) {
      auto* pd = sh->add_dim();
      if (d.known()) pd->set_dim_value(d.value);
      else if (!d.symbol.empty()) pd->set_dim_param(d.symbol);
    }
  }
}

// What parsing a (sub)graph needs: where external data lives, the model's
// opset imports (a node's arity and a subgraph's opset), and how deep it is.
struct ParseScope {
  const std::string& base_dir;
  const Model& model;  // its opset imports
  int depth = 0;
  uint64_t map_from = 0;  // LoadOptions::map_external_from_bytes, for the main graph's initializers only
};

Result<Graph> subgraph_from_proto(const onnx::GraphProto& gp, const ParseScope& scope);

Result<Attribute> attribute_from_proto(const onnx::AttributeProto& a, const ParseScope& scope) {
  const std::string& base_dir = scope.base_dir;
  Attribute out;
  out.name = a.name();
  out.ref_attr_name = a.ref_attr_name();
  out.doc_string = a.doc_string();
  auto type = static_cast<Attribute::Type>(a.type());
  if (type == Attribute::Type::kUndefined) {  // very old files leave `type` unset
    if (a.has_f()) type = Attribute::Type::kFloat;
    else if (a.has_i()) type = Attribute::Type::kInt;
    else if (a.has_s()) type = Attribute::Type::kString;
    else if (a.has_t()) type = Attribute::Type::kTensor;
    else if (a.floats_size()) type = Attribute::Type::kFloats;
    else if (a.ints_size()) type = Attribute::Type::kInts;
    else if (a.strings_size()) type = Attribute::Type::kStrings;
  }
  out.type = type;
  switch (type) {
    case Attribute::Type::kFloat: out.f = a.f(); break;
    case Attribute::Type::kInt: out.i = a.i(); break;
    case Attribute::Type::kString: out.s = a.s(); break;
    case Attribute::Type::kTensor: {
      auto t = tensor_from_proto(a.t(), base_dir);
      if (t.ok()) out.t = std::move(t).value();
      else out.opaque_proto = a.SerializeAsString();  // e.g. a string tensor: kept, not interpreted
      break;
    }
    case Attribute::Type::kFloats: out.floats.assign(a.floats().begin(), a.floats().end()); break;
    case Attribute::Type::kInts: out.ints.assign(a.ints().begin(), a.ints().end()); break;
    case Attribute::Type::kStrings: out.strings.assign(a.strings().begin(), a.strings().end()); break;
    case Attribute::Type::kGraph: {
      ASSIGN_OR_RETURN(Graph g, subgraph_from_proto(a.g(), scope));
      out.g = std::make_shared<const Graph>(std::move(g));
      break;
    }
    case Attribute::Type::kGraphs: {
      for (const auto& gp : a.graphs()) {
        ASSIGN_OR_RETURN(Graph g, subgraph_from_proto(gp, scope));
        out.graphs.push_back(std::make_shared<const Graph>(std::move(g)));
      }
      break;
    }
    case Attribute::Type::kTensors: {
      for (const auto& tp : a.tensors()) {
        ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(tp, base_dir));
        out.tensors.push_back(std::move(t));
      }
      break;
    }
    default: out.opaque_proto = a.SerializeAsString(); break;
  }
  return out;
}

void graph_to_proto(const Graph& g, onnx::GraphProto* gp);

void attribute_to_proto(const Attribute& a, onnx::AttributeProto* p) {
  if (!a.opaque_proto.empty()) {
    p->ParseFromString(a.opaque_proto);
    return;
  }
  p->set_name(a.name);
  if (!a.ref_attr_name.empty()) p->set_ref_attr_name(a.ref_attr_name);
  if (!a.doc_string.empty()) p->set_doc_string(a.doc_string);
  p->set_type(static_cast<onnx::AttributeProto::AttributeType>(a.type));
  switch (a.type) {
    case Attribute::Type::kFloat: p->set_f(a.f); break;
    case Attribute::Type::kInt: p->set_i(a.i); break;
    case Attribute::Type::kString: p->set_s(a.s); break;
    case Attribute::Type::kTensor: tensor_to_proto(a.t, "", p->mutable_t()); break;
    case Attribute::Type::kFloats: for (float f : a.floats) p->add_floats(f); break;
    case Attribute::Type::kInts: for (int64_t i : a.ints) p->add_ints(i); break;
    case Attribute::Type::kStrings: for (const auto& s : a.strings) p->add_strings(s); break;
    case Attribute::Type::kTensors: for (const auto& t : a.tensors) tensor_to_proto(t, "", p->add_tensors()); break;
    case Attribute::Type::kGraph: if (a.g) graph_to_proto(*a.g, p->mutable_g()); break;
    case Attribute::Type::kGraphs: for (const auto& g : a.graphs) graph_to_proto(*g, p->add_graphs()); break;
    default: break;
  }
}

void node_to_proto(const Node& node, onnx::NodeProto* np) {
  if (is_control_flow(node)) return node_to_proto(with_implicit_captures(node), np);
  np->set_name(node.name);
  np->set_op_type(node.op_type);
  if (!node.domain.empty()) np->set_domain(node.domain);
  for (const auto& i : node.inputs) np->add_input(i);
  for (const auto& o : node.outputs) np->add_output(o);
  if (!node.doc_string.empty()) np->set_doc_string(node.doc_string);
  for (const Attribute& a : node.attributes) attribute_to_proto(a, np->add_attribute());
  write_metadata_props(node.metadata, kNodeMetadataField, np);
}

// Initializer names in the file's order, then those a pass added.
std::vector<std::string> initializer_write_order(const Graph& g) {
  std::vector<std::string> order;
  std::unordered_set<std::string> listed;
  for (const std::string& name : g.initializer_order)
    if (g.initializers.count(name) && listed.insert(name).second) order.push_back(name);
  for (const auto& [name, t] : g.initializers)
    if (listed.insert(name).second) order.push_back(name);
  return order;
}

// Every field of a graph but its initializers (which the main graph streams).
void graph_fields_to_proto(const Graph& g, const char* unnamed, onnx::GraphProto* gp) {
  gp->set_name(g.name.empty() ? unnamed : g.name);
  if (!g.doc_string.empty()) gp->set_doc_string(g.doc_string);
  write_metadata_props(g.metadata, kGraphMetadataField, gp);
  for (const ValueInfo& v : g.inputs) value_info_to_proto(v, gp->add_input());
  for (const ValueInfo& v : g.outputs) value_info_to_proto(v, gp->add_output());
  for (const std::string& name : g.declared_value_infos)
    if (const ValueInfo* v = g.value(name)) value_info_to_proto(*v, gp->add_value_info());
  for (const Node& n : g.nodes) node_to_proto(n, gp->add_node());
}

// A subgraph: small, so its initializers are written inline.
void graph_to_proto(const Graph& g, onnx::GraphProto* gp) {
  graph_fields_to_proto(g, "subgraph", gp);
  for (const std::string& name : initializer_write_order(g))
    tensor_to_proto(g.initializers.at(name), name, gp->add_initializer());
}

}  // namespace

namespace {

// One node: its fields, its metadata (less the exporter's stack traces), its
// arity checked against onnx's schema at the model's opset, its attributes.
Result<Node> node_from_proto(const onnx::NodeProto& np, const ParseScope& scope, int index) {
  Node n;
  n.name = np.name().empty() ? np.op_type() + "_" + std::to_string(index) : np.name();
  n.op_type = np.op_type();
  n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
  n.inputs.assign(np.input().begin(), np.input().end());
  n.outputs.assign(np.output().begin(), np.output().end());
  n.doc_string = np.doc_string();
  n.metadata = read_metadata_props(np, kNodeMetadataField);
  // The exporter's Python stack traces are most of a node's metadata and
  // nothing here reads them: not kept (every pass copies nodes).
  std::erase_if(n.metadata, [](const auto& kv) { return kv.first == "pkg.torch.onnx.stack_trace"; });
  RETURN_IF_ERROR(check_node_arity(n, scope.model.opset(n.domain)));
  for (const auto& ap : np.attribute()) {
    auto a = attribute_from_proto(ap, scope);
    if (!a.ok()) return a.status().with_context(n.describe());
    n.attributes.push_back(std::move(a).value());
  }
  return n;
}

// A model-local function, for inlining (graph/function_inlining.h).
Result<FunctionDef> function_from_proto(const onnx::FunctionProto& fp, const ParseScope& scope) {
  FunctionDef f;
  f.domain = fp.domain() == "ai.onnx" ? "" : fp.domain();
  f.name = fp.name();
  f.inputs.assign(fp.input().begin(), fp.input().end());
  f.outputs.assign(fp.output().begin(), fp.output().end());
  f.attributes.assign(fp.attribute().begin(), fp.attribute().end());
  // attribute_proto (field 11, IR 9): attributes with defaults; an unknown field to onnx 1.12.
  const google::protobuf::UnknownFieldSet& unknown = fp.GetReflection()->GetUnknownFields(fp);
  for (int i = 0; i < unknown.field_count(); ++i) {
    if (unknown.field(i).number() != 11 || unknown.field(i).type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    onnx::AttributeProto ap;
    if (!ap.ParseFromString(unknown.field(i).length_delimited()))
      return invalid_argument("function {}.{}: an attribute default does not parse", f.domain, f.name);
    ASSIGN_OR_RETURN(Attribute a, attribute_from_proto(ap, scope));
    f.attributes.push_back(a.name);
    f.attribute_defaults.push_back(std::move(a));
  }
  for (const auto& o : fp.opset_import()) f.opset_imports.push_back({o.domain() == "ai.onnx" ? "" : o.domain(), o.version()});
  int index = 0;
  for (const auto& np : fp.node()) {
    auto n = node_from_proto(np, scope, index++);
    if (!n.ok()) return n.status().with_context(fmt::format("function {}.{}", f.domain, f.name));
    f.nodes.push_back(std::move(n).value());
  }
  return f;
}

// A graph's fields. `owned`, when given, is `gp` itself: each initializer's
// bytes are freed once copied (the main graph's weights are never held three
// times over). A subgraph is left unsorted: its reads of outer values become
// inputs first (make_captures_explicit), then it is sorted.
Result<Graph> graph_from_proto(const onnx::GraphProto& gp, const ParseScope& scope, onnx::GraphProto* owned) {
  Graph g;
  g.name = gp.name();
  g.doc_string = gp.doc_string();
  g.metadata = read_metadata_props(gp, kGraphMetadataField);
  for (int i = 0; i < gp.initializer_size(); ++i) {
    const onnx::TensorProto& init = gp.initializer(i);
    auto t = tensor_from_proto(init, scope.base_dir, owned ? scope.map_from : 0);
    if (!t.ok()) return t.status();
    if (owned) owned->mutable_initializer(i)->clear_raw_data();  // copied into the tensor; free it now
    if (g.initializers.count(init.name())) return invalid_argument("initializer '{}' is defined twice", init.name());
    g.initializers[init.name()] = std::move(t).value();
    g.initializer_order.push_back(init.name());
  }
  if (gp.sparse_initializer_size())
    return unsupported("sparse initializers are not supported (first: '{}')",
                       gp.sparse_initializer(0).values().name());
  for (const auto& v : gp.input()) g.inputs.push_back(value_info_from_proto(v));
  for (const auto& v : gp.output()) g.outputs.push_back(value_info_from_proto(v));
  for (const auto& v : gp.value_info()) {
    ValueInfo info = value_info_from_proto(v);
    g.declared_value_infos.push_back(info.name);
    g.values[info.name] = std::move(info);
  }
  for (const ValueInfo& v : g.inputs) g.values[v.name] = v;
  for (const ValueInfo& v : g.outputs) g.values[v.name] = v;
  for (const auto& [name, t] : g.initializers) {
    ValueInfo& info = g.values[name];
    info.name = name;
    info.dtype = t.dtype();
    info.shape = shape_from_dims(t.dims());
  }
  int index = 0;
  for (const auto& np : gp.node()) {
    ASSIGN_OR_RETURN(Node n, node_from_proto(np, scope, index++));
    // The explicit form is ort_train's in memory only (files hold ONNX's,
    // which saving writes): a file's com.ort_train If could claim any captures.
    if (is_control_flow(n))
      return invalid_argument("{}: {} {} is ort_train's in-memory form; a file holds ONNX's {}", n.describe(),
                              n.domain, n.op_type, n.op_type);
    if (is_onnx_control_flow(n)) RETURN_IF_ERROR(make_captures_explicit(n, scope.model.opset("")));
    g.nodes.push_back(std::move(n));
  }
  return g;
}

Result<Graph> subgraph_from_proto(const onnx::GraphProto& gp, const ParseScope& scope) {
  if (scope.depth >= kMaxSubgraphDepth)
    return invalid_argument("subgraphs are nested more than {} deep", kMaxSubgraphDepth);
  ParseScope inner{scope.base_dir, scope.model, scope.depth + 1};
  return graph_from_proto(gp, inner, nullptr);
}

// Converts a parsed model, consuming its initializer bytes as it goes so the
// weights are never held three times over (file bytes, proto, tensors).
Result<Model> model_from_proto(onnx::ModelProto& mp, const std::string& base_dir, const LoadOptions& options) {
  if (!mp.has_graph()) return io_error("not a valid ONNX model (it has no graph)");
  Model m;
  m.ir_version = mp.ir_version();
  m.producer_name = mp.producer_name();
  m.producer_version = mp.producer_version();
  m.domain = mp.domain();
  m.model_version = mp.model_version();
  m.doc_string = mp.doc_string();
  for (const auto& o : mp.opset_import()) m.opset_imports.push_back({o.domain() == "ai.onnx" ? "" : o.domain(), o.version()});
  if (m.opset_imports.empty()) m.opset_imports.push_back({"", 1});  // IR < 3 files have no import: opset 1
  for (const auto& kv : mp.metadata_props()) m.metadata_props.emplace_back(kv.key(), kv.value());
  for (const auto& f : mp.functions()) m.opaque_functions.push_back(f.SerializeAsString());

  ParseScope scope{base_dir, m, 0, options.map_external_from_bytes};
  ASSIGN_OR_RETURN(m.graph, graph_from_proto(*mp.mutable_graph(), scope, mp.mutable_graph()));
  // If/Loop/Scan are held as com.ort_train nodes (graph/control_flow.h); a
  // nested one is always inside a top-level one.
  bool control_flow = std::any_of(m.graph.nodes.begin(), m.graph.nodes.end(), is_control_flow);
  if (control_flow && m.opset(kOrtTrainDomain) == 0) m.opset_imports.push_back({kOrtTrainDomain, 1});
  // Calls of the file's own functions are replaced by their bodies, so every
  // later stage sees ONNX ops only (the dynamo exporter writes some
  // decompositions as functions); the functions themselves are kept for the round trip.
  if (mp.functions_size()) {
    std::vector<FunctionDef> functions;
    for (const auto& fp : mp.functions()) {
      ASSIGN_OR_RETURN(FunctionDef f, function_from_proto(fp, scope));
      functions.push_back(std::move(f));
    }
    RETURN_IF_ERROR(inline_functions(m, functions).status());
  }
  RETURN_IF_ERROR(topological_sort(m.graph));
  RETURN_IF_ERROR(lower_sequences(m).status());
  return m;
}

}  // namespace

Result<Model> load_model_from_bytes(const std::string& bytes, const std::string& base_dir) {
  onnx::ModelProto mp;
  if (bytes.empty() || !parse_limited(&mp, bytes))
    return io_error("not a valid ONNX model (the protobuf does not parse; is the file truncated?)");
  return model_from_proto(mp, base_dir, LoadOptions{});
}

Result<Model> load_model(const std::string& path, const LoadOptions& options) {
  onnx::ModelProto mp;
  {
    ASSIGN_OR_RETURN(std::string bytes, read_file(path, kMaxProtobufBytes));
    if (bytes.empty() || !parse_limited(&mp, bytes))
      return io_error("{}: not a valid ONNX model (the protobuf does not parse; is the file truncated?)", path);
  }  // the file's bytes are freed before the weights are copied out of the proto
  auto m = model_from_proto(mp, fs::path(path).parent_path().string(), options);
  if (!m.ok()) return m.status().with_context(path);
  return m;
}

Status save_model(const Model& m, const std::string& path) {
  onnx::ModelProto mp;
  mp.set_ir_version(m.ir_version);
  if (!m.producer_name.empty()) mp.set_producer_name(m.producer_name);
  if (!m.producer_version.empty()) mp.set_producer_version(m.producer_version);
  if (!m.domain.empty()) mp.set_domain(m.domain);
  if (m.model_version) mp.set_model_version(m.model_version);
  if (!m.doc_string.empty()) mp.set_doc_string(m.doc_string);
  for (const auto& o : m.opset_imports) {
    auto* op = mp.add_opset_import();
    op->set_domain(o.domain);
    op->set_version(o.version);
  }
  for (const auto& [k, v] : m.metadata_props) {
    auto* kv = mp.add_metadata_props();
    kv->set_key(k);
    kv->set_value(v);
  }
  for (const auto& f : m.opaque_functions) mp.add_functions()->ParseFromString(f);
  const Graph& g = m.graph;
  auto* gp = mp.mutable_graph();
  graph_fields_to_proto(g, "graph", gp);

  // Past ~1.8 GB protobuf cannot serialize one message: large initializers go
  // to a side file `<name>.data`, as ONNX's external-data convention says.
  size_t total = 0;
  for (const auto& [name, t] : g.initializers) total += t.nbytes();
  const bool external = total > (size_t{1800} << 20);
  std::string data_name = fs::path(path).filename().string() + ".data";
  std::string data_bytes_path = (fs::path(path).parent_path() / data_name).string();
  std::unique_ptr<AtomicFileWriter> data_out;
  int64_t data_offset = 0;
  if (external) { ASSIGN_OR_RETURN(data_out, AtomicFileWriter::open(data_bytes_path)); }
  // Each initializer's TensorProto without its bytes, and the tensor whose
  // bytes follow it in the file (null: external, or no bytes): the weights are
  // streamed from the tensors, never copied into the message.
  std::vector<std::pair<std::string, const Tensor*>> initializers;
  for (const std::string& name : initializer_write_order(g)) {
    const Tensor& t = g.initializers.at(name);
    onnx::TensorProto tp;
    tp.set_name(name);
    tp.set_data_type(static_cast<int32_t>(t.dtype()));
    for (int64_t d : t.dims()) tp.add_dims(d);
    const Tensor* inline_bytes = &t;
    if (external && t.nbytes() >= 1024) {
      tp.set_data_location(onnx::TensorProto::EXTERNAL);
      auto add_kv = [&](const char* k, const std::string& v) {
        auto* kv = tp.add_external_data();
        kv->set_key(k);
        kv->set_value(v);
      };
      add_kv("location", data_name);
      add_kv("offset", std::to_string(data_offset));
      add_kv("length", std::to_string(t.nbytes()));
      RETURN_IF_ERROR(data_out->write(t.raw(), t.nbytes()));
      data_offset += static_cast<int64_t>(t.nbytes());
      inline_bytes = nullptr;
    }
    initializers.emplace_back(tp.SerializeAsString(), inline_bytes);
  }
  if (external) RETURN_IF_ERROR(data_out->commit());
  // The message written as protobuf's wire format lays it out, in pieces: the
  // model's other fields, then its graph (field 7) as the graph's other
  // fields followed by each initializer (field 5), a TensorProto whose
  // raw_data (field 9) is written from the tensor itself. Fields may come in
  // any order on the wire; repeated ones keep theirs.
  std::string graph_rest, model_rest;
  if (!gp->SerializeToString(&graph_rest)) return io_error("cannot serialize the model for {}", path);
  mp.clear_graph();
  if (!mp.SerializeToString(&model_rest)) return io_error("cannot serialize the model for {}", path);
  auto varint = [](uint64_t v) {
    std::string out;
    do {
      out += static_cast<char>((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
      v >>= 7;
    } while (v);
    return out;
  };
  constexpr char kGraphKey = (7 << 3) | 2, kInitializerKey = (5 << 3) | 2, kRawDataKey = (9 << 3) | 2;
  std::vector<std::string> heads;  // per initializer: its key, length and fields before raw_data
  uint64_t graph_bytes = graph_rest.size();
  for (const auto& [proto, tensor] : initializers) {
    const uint64_t raw = tensor ? tensor->nbytes() : 0;
    std::string raw_head = raw ? std::string(1, kRawDataKey) + varint(raw) : std::string();
    const uint64_t body = proto.size() + raw_head.size() + raw;
    heads.push_back(std::string(1, kInitializerKey) + varint(body) + proto + raw_head);
    graph_bytes += heads.back().size() + raw;
  }
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> out, AtomicFileWriter::open(path));
  RETURN_IF_ERROR(out->write(model_rest.data(), model_rest.size()));
  std::string graph_head = std::string(1, kGraphKey) + varint(graph_bytes);
  RETURN_IF_ERROR(out->write(graph_head.data(), graph_head.size()));
  RETURN_IF_ERROR(out->write(graph_rest.data(), graph_rest.size()));
  for (size_t i = 0; i < initializers.size(); ++i) {
    RETURN_IF_ERROR(out->write(heads[i].data(), heads[i].size()));
    if (const Tensor* t = initializers[i].second; t && t->nbytes()) RETURN_IF_ERROR(out->write(t->raw(), t->nbytes()));
  }
  return out->commit();
}

std::string tensor_file_name(const std::string& tensor_name) {
  std::string out;
  for (size_t i = 0; i < tensor_name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(tensor_name[i]);
    bool safe = std::isalnum(c) || c == '_' || c == '-' || (c == '.' && i > 0);
    if (safe) out += static_cast<char>(c);
    else out += fmt::format("%{:02X}", c);
  }
  return out + ".pb";
}

}  // namespace ort_train

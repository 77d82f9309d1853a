// Kernel choice by measurement (what cudnn.benchmark does for convolutions):
// an op with more than one implementation registers one kernel that, the
// first time it meets a key (op, device, input dtypes and dims, attributes),
// runs every candidate on the real inputs into scratch outputs, times it,
// keeps the fastest for the rest of the process and logs the choice. Later
// calls with that key run the kept candidate directly, so results are
// bit-identical to that candidate's. A candidate that fails while timed (out
// of memory, a size it refuses) is dropped from that key.
//
// The mechanism knows no device: the registering file passes how to wait for
// queued work (a GPU stream) and how to read an output on the host, nothing
// else. So a hand-written kernel that has never run on a card can never make
// a run slower there: it is measured against the library path and dropped
// when slower. Nor can it make a run wrong in a gross way: while timed, every
// candidate's outputs are compared with the first candidate's (the library
// path), and one that disagrees by more than kernel_choice_agreement(dtype)
// of the outputs' largest magnitude is dropped from that key and the log
// says so: for 16-bit outputs 2% (their rounding), for float32 and float64
// 1e-5 (a few hundred units of float32 rounding: a wrong index, layout or
// missing term, or a kernel 0.1% off, but not another summation order; a
// TF32 candidate measured against a float32 library path is dropped).
//
// A key can be measured two ways (Measuring). At once: on the first call
// every candidate runs 1 + kKernelChoiceRuns times into scratch outputs, so
// a CNN's first step with three convolution candidates costs several steps.
// In situ (the CPU's GEMM library, runtime/cpu/gemm_backend.h): the calls
// themselves are the timings. Each call runs one candidate as the real
// computation: a key's first two calls the first candidate (the reference;
// its first run is cold), so a first step measures nothing and pays nothing.
// A candidate's first run is its gate, into scratch outputs,
// with the reference computing the real ones beside it; the key is decided
// once every candidate left has kKernelChoiceRuns real runs. What measuring
// adds (gate runs, and the time a candidate takes beyond the reference's) is
// kept within kInSituBudget of the time the measured calls took so far:
// a call runs the reference, or the fastest so far, when trying another
// would pass it; a candidate's first gate in the process is guessed 30 ms
// dearer (its library's start). So no step is slower than ~10% for it, and a
// short run may end before every key is decided (it then ran the reference).
//
// --deterministic (the train command sets KernelChoices::set_deterministic)
// pins every op to its first candidate marked deterministic, without timing.
// Choices can be kept in a file (--kernel-choices, and the checkpoint
// folder's kernel_choices.json) so a resumed run makes the same choices as
// the run it continues.
#pragma once
#include <functional>

#include "graph/atomic_file.h"
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/kernel.h"

namespace ort_train {

struct KernelCandidate {
  std::string name;   // "flash", "gemm", "cublas", ...: logged and kept in files
  KernelFn fn;
  bool deterministic = true;  // gives the same bits every run (no float atomics)
};

class KernelChoices {
 public:
  static KernelChoices& instance();
  // Pin every op to its first deterministic candidate (no timing).
  void set_deterministic(bool on);
  bool deterministic() const;
  // Measure every key at once, in situ or not (rank 0's agreement run,
  // training/kernel_choice_agreement.h: its choices must be made in that run).
  void set_measure_at_once(bool on);
  bool measure_at_once() const;
  // The kept choice for `key`, else the one kept under the key's op alone
  // ("com.ort_train.Attention": every shape; how a file or a test forces a
  // candidate), or "" when none was made yet.
  std::string find(const std::string& key) const;
  void keep(const std::string& key, const std::string& candidate);
  // Every choice made or loaded so far.
  std::map<std::string, std::string> all() const;
  bool empty() const;
  // Whether any choice is kept for `op` (kernel_choice_op's form), for any
  // shape or for the op alone: a hot path's cheap test before it builds a key.
  bool holds_op(const std::string& op) const;
  // Choices read from `path` (JSON object key -> candidate name; missing file:
  // nothing). Entries written for another device description are ignored.
  Status load(const std::string& path, const std::string& device);
  // Writes every choice to `path` (a temporary file renamed over it; a name
  // ort_train chose, as a checkpoint folder's, is never written through).
  Status save(const std::string& path, const std::string& device, OutputName name = OutputName::kUserNamed) const;
  // Forgets every choice, and the in-situ ledger (tests).
  void clear();

 private:
  mutable std::mutex mu_;
  bool deterministic_ = false;
  bool measure_at_once_ = false;
  std::map<std::string, std::string> chosen_;
};

// The key a choice is kept under: the op, the device, every input's dtype and
// dims, the outputs asked for and the node's attributes (but its seed).
std::string kernel_choice_key(const KernelContext& ctx, DeviceKind device);
// The key's op part: "MatMul", "com.ort_train.ConvGrad".
std::string kernel_choice_op(const Node& n);

// How many times each candidate runs when timed; the fastest run counts.
inline constexpr int kKernelChoiceRuns = 3;
// How far a candidate's output of `dtype` may be from the first candidate's:
// the largest difference over the largest magnitude of that output.
inline double kernel_choice_agreement(DType dtype) { return dtype_is_half(dtype) ? 2e-2 : 1e-5; }

// In-situ measuring may add this much, over the time its calls took so far.
inline constexpr double kInSituBudget = 0.10;

// What in-situ measuring has cost so far in this process: the time of the
// calls of keys being measured, and what measuring added to it (tests, the
// debug log).
struct InSituLedger {
  double calls_ms = 0;
  double added_ms = 0;
  int64_t shapes_measuring = 0;  // keys whose measuring has begun and not ended
};
InSituLedger in_situ_ledger();

enum class Measuring : uint8_t { kAtOnce, kInSitu };

// A host copy of a device tensor (the identity on the CPU).
using HostCopyFn = std::function<Result<Tensor>(const Tensor&)>;

// The kernel an op registers: chooses among `candidates` by measurement
// (first candidate: the default, and the one kept on a tie within 3%).
// `wait` (may be empty) waits for the device's queued work before a clock
// reads; `host_copy` (empty: outputs are host tensors) reads outputs to
// compare them with the first candidate's.
// Each choice is logged at info level, or at debug with `log_at_debug` (an
// op met in many shapes: MatMul's GEMM library).
KernelFn measured_choice(DeviceKind device, std::vector<KernelCandidate> candidates,
                         std::function<Status()> wait = {}, HostCopyFn host_copy = {}, bool log_at_debug = false,
                         Measuring measuring = Measuring::kAtOnce);

// The largest |a - b| over the largest |b| of two outputs of one dtype and
// dims, widened to double (0 when both are all zeros; infinity when NaN or
// infinity sits in one but not the other, or the dims differ).
double relative_disagreement(const Tensor& a, const Tensor& b);

}  // namespace ort_train

// The problem model every chapter declares its work in, and everything else iterates: the
// benchmark, the GPU tests, the exercise grader, the profiler and the sweep.
//
//   Problem    what is computed: a name, a dtype, its cases, the floor (fewest bytes and FLOPs)
//              of each case, how to build an instance of a case, and its versions.
//   Case       one shape and its parameters: "n=268435456", or [2, 64, 16, 56, 56] with a
//              kernel, stride and padding per axis.
//   Instance   one case's device buffers: inputs, named outputs and their CPU reference. Built
//              lazily, one case at a time, and freed after it (it owns its memory).
//   Version    one way to compute it: any callable that enqueues work on a stream, as many
//              kernels as it likes, optional scratch memory sized from the instance, and an
//              optional reset run before every launch. A library call is a version whose kind is
//              `peer`; the student's stub is one whose kind is `exercise`.
//
// common/README.md walks through declaring a problem; tut/elementwise_problem.cuh builds the
// per-element problems of chapters 01 and 02.
#pragma once

#include "tut/buffer.hpp"
#include "tut/verify.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tut {

using ParamValue = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>>;
std::string to_string(const ParamValue& v);  // 3, 0.5, NCHW, [3, 3, 3]

// A case's named parameters, in the order they were set.
class Params {
 public:
  Params& set(std::string key, ParamValue value);
  const ParamValue* find(const std::string& key) const;
  template <class T>
  const T& get(const std::string& key) const {
    const ParamValue* v = find(key);
    if (!v || !std::holds_alternative<T>(*v)) missing(key);
    return std::get<T>(*v);
  }
  const std::vector<std::pair<std::string, ParamValue>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }

 private:
  [[noreturn]] void missing(const std::string& key) const;
  std::vector<std::pair<std::string, ParamValue>> items_;
};

struct Case {
  std::string name;                 // unique within its problem
  std::vector<std::int64_t> shape;  // [n] for flat problems
  Params params;

  std::int64_t numel() const;       // the product of the shape
  std::string shape_text() const;   // "268435456" or "2x64x16x56x56"
};

// A one-dimensional case of n elements, named "n=<n>".
Case flat_case(std::int64_t n);

// "268435456", "2^28", "2x64x16x56x56" -> the dimensions. Throws std::invalid_argument saying
// what is wrong with the text.
std::vector<std::int64_t> parse_shape(const std::string& text);

// The fewest bytes a case must move through device memory (each input read once, each output
// written once) and the arithmetic it must do: the same for every version.
struct Floor {
  std::uint64_t bytes = 0;
  std::uint64_t flops = 0;
};

enum class Kind { own, peer, exercise };
const char* kind_name(Kind k);

// Device memory a version asks for, sized from the instance. Allocated (and zeroed) once before the
// version's first launch on an instance and kept through the timing loop; never part of the timed
// region. State a launch leaves behind in it (a tile counter, say) is the version's reset's job.
class Scratch {
 public:
  Scratch() = default;
  explicit Scratch(std::size_t bytes) : buf_(bytes) { buf_.fill_bytes(0); }
  std::size_t bytes() const { return buf_.size(); }
  void* data() { return buf_.data(); }
  // A typed view `byte_offset` bytes in; throws when it does not fit or is misaligned for T.
  template <class T>
  T* as(std::size_t byte_offset = 0, std::size_t count = 1) {
    check_view(byte_offset, count * sizeof(T), alignof(T));
    return reinterpret_cast<T*>(buf_.data() + byte_offset);
  }
  void zero(cudaStream_t stream) { buf_.fill_bytes(0, stream); }

 private:
  void check_view(std::size_t offset, std::size_t bytes, std::size_t align) const;
  DeviceBuffer<unsigned char> buf_;
};

// Where an output lives on the device, for comparisons that need not go through the host.
struct OutputView {
  std::string name;
  const void* data = nullptr;
  std::size_t bytes = 0;
  Rule rule;
};

// One case's buffers. Chapters derive from this (or use tut::ElementwiseInstance).
class Instance {
 public:
  virtual ~Instance() = default;
  // Fills every output with the poison byte, so an element no version wrote fails the check.
  virtual void poison(cudaStream_t stream) = 0;
  // Restores state a launch updates in place (running statistics, say). Runs before every launch,
  // outside the timed region. Most instances have none.
  virtual void reset(cudaStream_t) {}
  // Downloads every output and compares it with the CPU reference. Synchronizes the device.
  virtual CheckResult check() = 0;
  // Bytes a launch touches, to decide whether the L2 must be flushed between repetitions.
  virtual std::size_t working_set() const = 0;
  // The outputs on the device. Optional: it lets the > 2^31-element tests compare a version with
  // another on the device (tut/grading.hpp) instead of downloading every output.
  virtual std::vector<OutputView> output_views() const { return {}; }
};

// Bytes that differ between two device buffers of `bytes` bytes (a kernel; synchronizes).
std::uint64_t count_different_bytes(const void* a, const void* b, std::size_t bytes);

// How an instance is built: the seed its inputs come from, whether float inputs carry the special
// values (the tests want them, the benchmarks do not), and how far each operand is moved from an
// aligned address (the tests move every input and output by its own 0..7 elements).
struct InstanceOptions {
  std::uint64_t seed = 0;
  bool specials = false;
  std::vector<int> input_offsets;   // per input, in elements; missing entries are 0
  std::vector<int> output_offsets;  // per output

  int input_offset(std::size_t k) const { return k < input_offsets.size() ? input_offsets[k] : 0; }
  int output_offset(std::size_t k) const { return k < output_offsets.size() ? output_offsets[k] : 0; }
};

template <class Inst>
struct Version {
  using Launch = std::function<void(Inst&, Scratch&, cudaStream_t)>;

  std::string name;                  // "v2_waves": the order is in the prefix
  std::string summary;               // what changed since the previous version, in one line
  Launch launch;                     // enqueues the work; throws tut::CudaError on failure
  std::vector<const void*> kernels;  // the kernels it launches, for the registers column
  Kind kind = Kind::own;
  std::string library;               // for peers: "CUDA runtime", "CUB"
  bool any_alignment = true;         // correct for operands moved off their vector alignment
  std::function<std::size_t(const Inst&)> scratch_bytes;  // none when empty
  Launch reset;                      // before every launch, untimed (zero a counter, say)
};

template <class Inst>
struct Problem {
  std::string name;         // "relu_f32": the key in the results
  std::string description;  // one line for the table header
  std::string dtype;        // "f32", "f16", "i32"
  Case default_case;
  std::vector<Case> suite;  // the built-in list that --suite runs
  std::function<Case(const std::vector<std::int64_t>& shape)> case_for_shape;  // --shape; throws if invalid
  std::function<Floor(const Case&)> floor;
  std::function<std::unique_ptr<Inst>(const Case&, const InstanceOptions&)> make;
  std::vector<Version<Inst>> versions;

  std::vector<std::string> version_names() const {
    std::vector<std::string> out;
    for (const auto& v : versions) out.push_back(v.name);
    return out;
  }
};

// One version on one instance, as the runner and the graders drive it.
struct Trial {
  std::function<void(cudaStream_t)> before;  // untimed, before every launch: instance and version resets
  std::function<void(cudaStream_t)> launch;  // the timed region
  std::function<void(cudaStream_t)> poison;  // every output to the poison byte
  std::function<CheckResult()> check;        // every output against the reference
};

// Version `v` on `inst`, with its scratch memory allocated now and owned by the trial. `inst` must
// outlive the trial.
template <class Inst>
Trial make_trial(const Version<Inst>& v, Inst& inst) {
  auto scratch = std::make_shared<Scratch>(v.scratch_bytes ? v.scratch_bytes(inst) : 0);
  Trial t;
  t.before = [&v, &inst, scratch](cudaStream_t s) {
    inst.reset(s);
    if (v.reset) v.reset(inst, *scratch, s);
  };
  t.launch = [&v, &inst, scratch](cudaStream_t s) { v.launch(inst, *scratch, s); };
  t.poison = [&inst](cudaStream_t s) { inst.poison(s); };
  t.check = [&inst] { return inst.check(); };
  return t;
}

// One checked launch: outputs poisoned, resets, the launch, a synchronization, the comparison.
CheckResult checked_run(const Trial& t, cudaStream_t stream = nullptr);

// The same for version `v` on `inst`, or on a fresh instance of case `c`.
template <class Inst>
CheckResult run_once(const Version<Inst>& v, Inst& inst) {
  return checked_run(make_trial(v, inst));
}
template <class Inst>
CheckResult grade(const Problem<Inst>& p, const Version<Inst>& v, const Case& c, const InstanceOptions& opt) {
  const auto inst = p.make(c, opt);
  return run_once(v, *inst);
}

// ---- A problem with its instance type erased: what the runner, the tools and the race library hold.

struct VersionInfo {
  std::string name, summary;
  Kind kind = Kind::own;
  std::string library;
  std::vector<const void*> kernels;
};

// One case's instance, as the runner sees it.
class CaseSession {
 public:
  virtual ~CaseSession() = default;
  virtual std::size_t working_set() const = 0;
  virtual Trial trial(std::size_t version) = 0;  // allocates the version's scratch
};

// A problem with its instance type erased.
struct ProblemEntry {
  std::string name, description, dtype;
  Case default_case;
  std::vector<Case> suite;
  std::function<Case(const std::vector<std::int64_t>&)> case_for_shape;
  std::function<Floor(const Case&)> floor;
  std::vector<VersionInfo> versions;
  std::function<std::unique_ptr<CaseSession>(const Case&, std::uint64_t seed)> open;
};

template <class Inst>
class TypedSession : public CaseSession {
 public:
  TypedSession(const Problem<Inst>& p, const Case& c, std::uint64_t seed) : p_(p) {
    InstanceOptions opt;
    opt.seed = seed;
    inst_ = p.make(c, opt);
  }
  std::size_t working_set() const override { return inst_->working_set(); }
  Trial trial(std::size_t v) override { return make_trial(p_.versions.at(v), *inst_); }

 private:
  const Problem<Inst>& p_;
  std::unique_ptr<Inst> inst_;
};

// `p` must outlive the entry: chapters keep their problems in function-local statics.
template <class Inst>
ProblemEntry erase(const Problem<Inst>& p) {
  ProblemEntry e{p.name, p.description, p.dtype, p.default_case, p.suite, p.case_for_shape, p.floor, {}, {}};
  for (const auto& v : p.versions) e.versions.push_back({v.name, v.summary, v.kind, v.library, v.kernels});
  e.open = [&p](const Case& c, std::uint64_t seed) { return std::make_unique<TypedSession<Inst>>(p, c, seed); };
  return e;
}

// Problems, cases and versions as JSON, for tools (bench --list-json, the race library).
std::string problems_json(const std::vector<ProblemEntry>& problems);

}  // namespace tut

// The address of a kernel (template instantiations included) for Version::kernels:
//   TUT_KERNEL(v0_naive_kernel<Relu, float, float>)
#define TUT_KERNEL(...) reinterpret_cast<const void*>(&__VA_ARGS__)

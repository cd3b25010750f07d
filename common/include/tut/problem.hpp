// The problem model every chapter declares its work in, and everything else iterates: the
// benchmark, the GPU tests, the exercise grader, the race module, the profiler and the sweep.
//
//   Problem    what is computed: a name, a dtype, the parameters a case may set, its cases, the
//              floor (fewest bytes and FLOPs) of each case, how to build an instance of a case, its
//              versions, and for a backward, the forward whose outputs it reads (a Chain).
//   Case       one shape and its parameters: "n=268435456", or [2, 64, 16, 56, 56] with
//              kernel=3x3x3 stride=2. Problem::case_for checks both and names what is wrong.
//   Instance   one case's device buffers, declared once as named operands (inputs, saved inputs
//              a forward wrote, outputs, state updated in place), each with its type, count,
//              alignment offset and, for outputs, the rule and reference it is checked against.
//              Poison, reset, check, working set and the tests' offsets all follow from that list.
//   Version    one way to compute it: a launch (any callable that enqueues work on a stream, as
//              many kernels as it likes), the outputs it writes, an optional setup run once per
//              instance (a library's handle and descriptors), scratch memory, and a reset.
//
// common/README.md walks from `bench --n` to a kernel launch, and declares chapters 05's and 06's
// problems on paper; tut/elementwise_problem.cuh builds the per-element problems of 01 and 02.
#pragma once

#include "tut/buffer.hpp"
#include "tut/random.hpp"
#include "tut/verify.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tut {

// ---- Cases ---------------------------------------------------------------------------------------

using ParamValue = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>>;
std::string to_string(const ParamValue& v);  // 3, 0.5, NCHW, 3x3x3

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

// A parameter a problem's cases may set, with its default. Its type is the default's type: a
// whole number, a real number, a word (from `choices` when given), or a list of whole numbers
// written 3x3x3 or 3,3,3.
struct ParamSpec {
  std::string key;
  ParamValue default_value;
  std::string help;
  std::vector<std::string> choices;  // for words; empty: any word
};

// `text` (from --param key=text) as a value of the spec's type. Throws std::invalid_argument naming
// the key, the text, and what it should have been.
ParamValue parse_param(const ParamSpec& spec, const std::string& text);

struct Case {
  std::string name;                 // unique within its problem
  std::vector<std::int64_t> shape;  // [n] for flat problems
  Params params;

  std::int64_t numel() const;       // the product of the shape
  std::string shape_text() const;   // "268435456" or "2x64x16x56x56"
};

// The name a case gets from its shape and parameters: "n=1000" for one dimension, else
// "2x64x16x56x56", then " key=value" for each parameter. parse_case_text reads it back.
std::string case_name(const std::vector<std::int64_t>& shape, const Params& params);

// A one-dimensional case of n elements, named "n=<n>".
Case flat_case(std::int64_t n);

// "268435456", "2^28", "2x64x16x56x56" -> the dimensions. Throws std::invalid_argument saying
// what is wrong with the text (negative, not a number, too large).
std::vector<std::int64_t> parse_shape(const std::string& text);

// The fewest bytes a case must move through device memory (each input read once, each output
// written once) and the arithmetic it must do: the same for every version.
struct Floor {
  std::uint64_t bytes = 0;
  std::uint64_t flops = 0;
  // Other byte counts of the same case, reported beside the floor ("two_pass": x read twice).
  std::vector<std::pair<std::string, std::uint64_t>> models;
};

enum class Kind { own, peer, exercise };
const char* kind_name(Kind k);

// Thrown by a version's setup (or launch) when it cannot run this case: a library refusing the
// shape, layout or type. The benchmark shows the row as "unsupported" with the reason; the tests
// report it and go on. Anything else thrown is an error.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- Operands ------------------------------------------------------------------------------------

// input   drawn from (seed, name, index), read by every launch
// saved   what a forward wrote (a mask, statistics, indices): a backward's input, filled by running
//         a forward version (tut::Chain), and read back by its reference
// output  poisoned before a checked launch, compared with its reference after it
// state   drawn like an input, updated in place by a launch (running statistics), restored before
//         every launch and checked like an output
enum class Role { input, saved, output, state };
const char* role_name(Role r);

// One declared array of an instance, its type erased. tut/arrays.cuh has the typed Array<T>.
class Operand {
 public:
  Operand(std::string name, Role role) : name_(std::move(name)), role_(role) {}
  virtual ~Operand() = default;
  Operand(const Operand&) = delete;
  Operand& operator=(const Operand&) = delete;

  const std::string& name() const { return name_; }
  Role role() const { return role_; }
  bool checked() const { return role_ == Role::output || role_ == Role::state; }

  virtual const char* dtype() const = 0;
  virtual std::int64_t count() const = 0;
  virtual std::size_t element_bytes() const = 0;
  std::size_t bytes() const { return static_cast<std::size_t>(count()) * element_bytes(); }
  virtual void* device() = 0;  // element 0
  virtual const void* device() const = 0;
  virtual int offset() const = 0;        // elements past its aligned position
  virtual const Rule& rule() const = 0;  // outputs and state

  virtual void poison(cudaStream_t s) = 0;  // every byte, the guards around it included
  virtual void refill(cudaStream_t s) = 0;  // inputs and state: back to the drawn values
  virtual void download() = 0;              // to the host view (synchronizes)
  virtual VerifyResult verify() const = 0;  // the host view against the reference, guards included

 private:
  std::string name_;
  Role role_;
};

// How an instance is built: the seed its inputs come from, whether float inputs carry the special
// values (the tests want them, the benchmarks do not), and how far each operand is moved from an
// aligned address (the tests move each by its own 0..7 elements).
struct InstanceOptions {
  std::uint64_t seed = 0;
  bool specials = false;
  std::map<std::string, int> offsets;  // by operand name, in elements; missing: 0

  int offset(const std::string& name) const;
  // The seed of operand `name`: the same name draws the same values in every instance built with
  // these options, so a backward's x is its forward's x.
  std::uint64_t seed_of(const std::string& name) const;
};

template <class T>
class Array;

// One case's buffers. A chapter's instance derives from this and declares its operands in its
// constructor with input<T>(), saved<T>(), output<T>() and state<T>() (defined in tut/arrays.cuh).
class Instance {
 public:
  explicit Instance(InstanceOptions options) : opt_(std::move(options)) {}
  virtual ~Instance() = default;
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  const InstanceOptions& options() const { return opt_; }
  const std::vector<std::unique_ptr<Operand>>& operands() const { return ops_; }
  // Throws std::out_of_range naming the operand and the ones declared.
  Operand& operand(const std::string& name) const;
  std::vector<std::string> names(Role role) const;

  // Every output and state array to the poison byte.
  void poison(cudaStream_t s);
  // Before every launch, untimed: state back to its drawn values, then restore().
  void reset(cudaStream_t s);
  // Downloads the outputs in `written` (empty: every output and state) and every saved input, then
  // compares each of those outputs with its reference, guards included. Synchronizes the device.
  CheckResult check(const std::vector<std::string>& written = {});
  // Bytes a launch may touch, to decide whether the L2 must be flushed between repetitions.
  std::size_t working_set() const;

  template <class T>
  Array<T>& input(std::string name, std::int64_t count, InputSpec spec);
  template <class T>
  Array<T>& saved(std::string name, std::int64_t count);
  template <class T>
  Array<T>& output(std::string name, std::int64_t count, Rule rule);
  template <class T>
  Array<T>& state(std::string name, std::int64_t count, InputSpec spec, Rule rule);

 protected:
  // More state to restore before every launch, beyond the declared state arrays (rarely needed).
  virtual void restore(cudaStream_t) {}
  // Runs once per check, before anything is compared, on one thread: a reference computed whole
  // (a scan's) is computed here, so the comparisons can read it from every core.
  virtual void prepare_reference() {}

 private:
  Operand& add(std::unique_ptr<Operand> op);
  InstanceOptions opt_;
  std::vector<std::unique_ptr<Operand>> ops_;
};

// Bytes that differ between two device buffers of `bytes` bytes (a kernel; synchronizes).
std::uint64_t count_different_bytes(const void* a, const void* b, std::size_t bytes);

// ---- Versions ------------------------------------------------------------------------------------

// A version's own memory and objects on one instance: scratch bytes (zeroed when allocated), and
// whatever its setup made (a library handle, descriptors). Kept from the setup to the end of the
// instance; never part of the timed region. State a launch leaves in the scratch (a tile counter)
// is the version's reset's job.
class Workspace {
 public:
  explicit Workspace(std::size_t bytes = 0) { resize(bytes); }
  std::size_t bytes() const { return buf_.size(); }
  void* data() { return buf_.data(); }
  // Reallocates (zeroed) to `bytes`: a setup that learns its workspace size from the library.
  void resize(std::size_t bytes);
  // A typed view `byte_offset` bytes in; throws when it does not fit or is misaligned for T.
  template <class T>
  T* as(std::size_t byte_offset = 0, std::size_t count = 1) {
    check_view(byte_offset, count * sizeof(T), alignof(T));
    return reinterpret_cast<T*>(buf_.data() + byte_offset);
  }
  void zero(cudaStream_t stream) { buf_.fill_bytes(0, stream); }
  // The object a setup made, destroyed with the workspace.
  template <class S, class... Args>
  S& emplace(Args&&... args) {
    auto p = std::make_shared<S>(std::forward<Args>(args)...);
    S& ref = *p;
    held_ = std::move(p);
    return ref;
  }
  template <class S>
  S& get() {
    if (!held_) throw std::logic_error("the version's launch asks for an object its setup did not make");
    return *static_cast<S*>(held_.get());
  }

 private:
  void check_view(std::size_t offset, std::size_t bytes, std::size_t align) const;
  DeviceBuffer<unsigned char> buf_;
  std::shared_ptr<void> held_;
};

template <class Inst>
struct Version {
  using Launch = std::function<void(Inst&, Workspace&, cudaStream_t)>;

  std::string name;                  // "v2_waves": the order is in the prefix
  std::string summary;               // what changed since the previous version, in one line
  Launch launch;                     // enqueues the work; throws tut::CudaError on failure
  std::vector<const void*> kernels;  // the kernels it launches, for the registers column
  Kind kind = Kind::own;
  std::string library;               // for peers: "CUDA runtime", "CUB", "cuDNN"
  bool any_alignment = true;         // correct for operands moved off their vector alignment
  std::vector<std::string> writes;   // the outputs it writes; empty: every output and state
  std::vector<std::string> reads;    // the inputs it reads; empty: all (a chain pairs versions by it)
  bool dispatcher = false;           // picks one of the other versions per case (a chapter's `auto`):
                                     // the benchmark races it against the case's fastest other version
  std::function<std::size_t(const Inst&)> scratch_bytes;  // zeroed device memory; none when empty
  std::function<void(Inst&, Workspace&)> setup;  // once per instance, untimed; may throw Unsupported
  Launch reset;                      // before every launch, untimed (zero a counter, say)
};

// ---- One version on one instance, as the runner, the race module and the graders drive it --------

struct Trial {
  std::function<void(cudaStream_t)> before;  // untimed, before every launch: instance and version resets
  std::function<void(cudaStream_t)> launch;  // the timed region
  std::function<void(cudaStream_t)> poison;  // every output to the poison byte
  std::function<CheckResult()> check;        // the outputs the version writes, against the reference
  std::vector<std::string> writes;           // those outputs' names
};

// Version `v` on `inst`: its workspace is allocated and its setup run now (which may throw
// Unsupported), both owned by the trial. `inst` must outlive the trial.
template <class Inst>
Trial make_trial(const Version<Inst>& v, Inst& inst) {
  auto ws = std::make_shared<Workspace>(v.scratch_bytes ? v.scratch_bytes(inst) : 0);
  if (v.setup) v.setup(inst, *ws);
  Trial t;
  t.writes = v.writes.empty() ? inst.names(Role::output) : v.writes;
  if (v.writes.empty())
    for (const auto& s : inst.names(Role::state)) t.writes.push_back(s);
  for (const auto& w : t.writes) inst.operand(w);  // a misspelt name fails here, not at the check
  t.before = [&v, &inst, ws](cudaStream_t s) {
    inst.reset(s);
    if (v.reset) v.reset(inst, *ws, s);
  };
  t.launch = [&v, &inst, ws](cudaStream_t s) { v.launch(inst, *ws, s); };
  t.poison = [&inst](cudaStream_t s) { inst.poison(s); };
  t.check = [&inst, w = t.writes] { return inst.check(w); };
  return t;
}

// One checked launch: outputs poisoned, resets, the launch, a synchronization, the comparison.
CheckResult checked_run(const Trial& t, cudaStream_t stream = nullptr);

// The same for version `v` on `inst`.
template <class Inst>
CheckResult run_once(const Version<Inst>& v, Inst& inst) {
  return checked_run(make_trial(v, inst));
}

// ---- A problem with its instance type erased: what the runner, the tools and the race module hold.

struct VersionInfo {
  std::string name, summary;
  Kind kind = Kind::own;
  std::string library;
  std::vector<const void*> kernels;
  bool any_alignment = true;
  std::vector<std::string> writes, reads;
  bool dispatcher = false;
};

// One case's instance, as the runner sees it.
class CaseSession {
 public:
  virtual ~CaseSession() = default;
  virtual Instance& instance() = 0;
  virtual Trial trial(std::size_t version) = 0;  // allocates the version's workspace, runs its setup
};

struct ProblemEntry;

// Where a backward's saved inputs come from: the forward problem (of the same cases), and which of
// its outputs each saved input is. The instance is filled by running, for each saved input, the
// first own forward version that writes it, on the same case and seed, and checking that run.
struct Chain {
  std::function<const ProblemEntry&()> forward;
  std::vector<std::pair<std::string, std::string>> links;  // {backward's saved input, forward's output}
  explicit operator bool() const { return static_cast<bool>(forward); }
};

template <class Inst>
struct Problem {
  std::string name;         // "relu_f32": the key in the results
  std::string description;  // one line for the table header
  std::string dtype;        // "f32", "f16", "i32"
  std::vector<ParamSpec> params;  // what --param may set; a case always carries all of them
  Case default_case;
  std::vector<Case> suite;  // the built-in list that --suite runs
  // A shape and a complete set of parameters -> the case, named; throws std::invalid_argument
  // naming the bad dimension or value. Use tut::make_case to start from --param text.
  std::function<Case(const std::vector<std::int64_t>& shape, const Params& params)> case_for;
  std::function<Floor(const Case&)> floor;
  std::function<std::unique_ptr<Inst>(const Case&, const InstanceOptions&)> make;
  std::vector<Version<Inst>> versions;
  Chain chain;  // a backward's forward; empty otherwise

  std::vector<std::string> version_names() const {
    std::vector<std::string> out;
    for (const auto& v : versions) out.push_back(v.name);
    return out;
  }
};

struct ProblemEntry {
  std::string name, description, dtype;
  std::vector<ParamSpec> params;
  Case default_case;
  std::vector<Case> suite;
  std::function<Case(const std::vector<std::int64_t>&, const Params&)> case_for;
  std::function<Floor(const Case&)> floor;
  std::vector<VersionInfo> versions;
  std::function<std::unique_ptr<CaseSession>(const Case&, const InstanceOptions&)> open;
  std::function<std::vector<std::string>(const Case&)> operand_names;  // every operand, in declared order

  std::size_t version_index(const std::string& name) const;  // throws naming the problem's versions
};

// A case of `p` from a shape and parameter overrides as text (--param key=value): each key must be
// one of p's parameters and each text a value of its type; the others take their defaults. Then
// p's case_for checks the whole. Throws std::invalid_argument naming what is wrong.
Case make_case(const std::string& problem, const std::vector<ParamSpec>& specs,
               const std::function<Case(const std::vector<std::int64_t>&, const Params&)>& case_for,
               const std::vector<std::int64_t>& shape, const std::vector<std::pair<std::string, std::string>>& overrides);
Case make_case(const ProblemEntry& p, const std::vector<std::int64_t>& shape,
               const std::vector<std::pair<std::string, std::string>>& overrides = {});
// `c` with overrides applied (the benchmark's --param on a suite case).
Case with_params(const ProblemEntry& p, const Case& c, const std::vector<std::pair<std::string, std::string>>& overrides);
// A case of `p` by text: "" (the default case), a case's name, or a shape and parameters
// ("n=1000 segment=256", "2x64x16x56x56 kernel=3x3x3 stride=2"): what case_name writes.
Case parse_case_text(const ProblemEntry& p, const std::string& text);

// The saved inputs of `into` (an instance of a case of a backward problem), filled from the
// forward: for each link, by the first own forward version that writes it, each run checked.
// Throws std::runtime_error when a forward run fails its check: the backward would read garbage.
void fill_saved(const Chain& chain, const Case& c, const InstanceOptions& opt, Instance& into,
                const ProblemEntry* forward = nullptr);
// The same from one forward version `fv`, for the links whose output it writes; returns how many.
int fill_saved_from(const Chain& chain, const ProblemEntry& forward, std::size_t fv, const Case& c,
                    const InstanceOptions& opt, Instance& into);

// An instance of case `c` of `p`, its saved inputs filled through p's chain (if any).
template <class Inst>
std::unique_ptr<Inst> instantiate(const Problem<Inst>& p, const Case& c, const InstanceOptions& opt,
                                  const ProblemEntry* forward = nullptr) {
  auto inst = p.make(c, opt);
  if (p.chain) fill_saved(p.chain, c, opt, *inst, forward);
  return inst;
}

template <class Inst>
class TypedSession : public CaseSession {
 public:
  TypedSession(const Problem<Inst>& p, const Case& c, const InstanceOptions& opt) : p_(p), inst_(instantiate(p, c, opt)) {}
  Instance& instance() override { return *inst_; }
  Trial trial(std::size_t v) override { return make_trial(p_.versions.at(v), *inst_); }

 private:
  const Problem<Inst>& p_;
  std::unique_ptr<Inst> inst_;
};

// `p` must outlive the entry: chapters keep their problems in function-local statics.
template <class Inst>
ProblemEntry erase(const Problem<Inst>& p) {
  ProblemEntry e;
  e.name = p.name;
  e.description = p.description;
  e.dtype = p.dtype;
  e.params = p.params;
  e.default_case = p.default_case;
  e.suite = p.suite;
  e.case_for = p.case_for;
  e.floor = p.floor;
  for (const auto& v : p.versions)
    e.versions.push_back({v.name, v.summary, v.kind, v.library, v.kernels, v.any_alignment, v.writes, v.reads, v.dispatcher});
  e.open = [&p](const Case& c, const InstanceOptions& opt) { return std::make_unique<TypedSession<Inst>>(p, c, opt); };
  e.operand_names = [&p](const Case& c) {
    const auto inst = p.make(c, InstanceOptions{});
    std::vector<std::string> out;
    for (const auto& op : inst->operands()) out.push_back(op->name());
    return out;
  };
  return e;
}

// Problems, parameters, cases (with their floors) and versions as JSON, for tools (bench
// --list-json, the race module).
std::string problems_json(const std::vector<ProblemEntry>& problems);
// One case as JSON: name, shape, params, floor.
std::string case_json(const ProblemEntry& p, const Case& c);

}  // namespace tut

// The address of a kernel (template instantiations included) for Version::kernels:
//   TUT_KERNEL(v0_naive_kernel<Relu, float, float>)
#define TUT_KERNEL(...) reinterpret_cast<const void*>(&__VA_ARGS__)

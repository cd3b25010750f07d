// The benchmark runner every chapter's bench hands its registry to.
//
// It parses the common options (CLI11), measures the copy ceiling in the same process, times
// every selected version with events (warm-up, repetitions, median [min-max], L2 flushed when
// the working set could fit in it), checks each output against the CPU reference before and
// after the timing loop, prints the table and writes the results JSON.
//
// Exit codes: 0 all checks passed, 1 a check failed or CUDA failed, 2 bad options,
// 77 no CUDA device (Meson's "skipped").
#pragma once

#include "tut/device.hpp"
#include "tut/registry.hpp"
#include "tut/timing.hpp"
#include "tut/verify.hpp"

#include <CLI/CLI.hpp>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tut {

// One row of the table.
struct BenchCase {
  std::string problem, version, summary;
  std::string size;                 // "n=268435456"
  std::uint64_t bytes = 0, flops = 0;
  std::size_t working_set = 0;      // bytes the launch touches; 0 means `bytes`
  int regs = -1;                    // registers/thread; -1 for library calls
  std::function<void(cudaStream_t)> run;
  std::function<void(cudaStream_t)> poison;  // overwrite the outputs before a checked run
  std::function<VerifyResult()> check;       // compare the outputs with the reference
};

struct RunResult {
  BenchCase c;
  Stats stats;
  double GBps = 0, fraction_of_copy = 0, speedup_vs_first = 0;
  std::string check;  // "pass", "FAIL", "skipped"
  std::string check_detail;
};

class BenchApp {
 public:
  BenchApp(std::string chapter, std::string description);

  CLI::App& cli() { return app_; }
  // Declares a problem and its versions, so --list and --version/--problem can be validated
  // before any memory is allocated.
  void add_problem(const std::string& problem, const std::vector<std::string>& versions);

  // Parses the command line. Returns an exit code to return immediately (0 after --list or
  // --help, 2 for a bad option, 77 without a CUDA device), or nullopt to continue. On success
  // the copy ceiling has been measured.
  std::optional<int> parse(int argc, char** argv);

  bool wants(const std::string& problem) const;
  bool wants(const std::string& problem, const std::string& version) const;
  const DeviceInfo& device() const { return device_; }
  std::uint64_t seed() const { return seed_; }

  void add(BenchCase c) { cases_.push_back(std::move(c)); }

  // Adds every selected version of a ladder. `instance` owns the problem's buffers and provides
  //   std::string size() const;  void run(const Launch&, cudaStream_t);
  //   void poison(cudaStream_t);  VerifyResult check();  std::size_t working_set() const;
  // and `n` is the problem size the ladder's byte and FLOP models take.
  template <class Launch, class Instance>
  void add_ladder(const Ladder<Launch>& ladder, std::int64_t n, Instance& instance) {
    for (const auto& v : ladder.versions) {
      if (!wants(ladder.problem.name, v.name)) continue;
      BenchCase c;
      c.problem = ladder.problem.name;
      c.version = v.name;
      c.summary = v.summary;
      c.size = instance.size();
      c.bytes = ladder.problem.bytes(n);
      c.flops = ladder.problem.flops(n);
      c.working_set = instance.working_set();
      c.regs = registers_per_thread(v.kernel);
      auto launch = v.launch;
      c.run = [&instance, launch](cudaStream_t s) { instance.run(launch, s); };
      c.poison = [&instance](cudaStream_t s) { instance.poison(s); };
      c.check = [&instance] { return instance.check(); };
      add(std::move(c));
    }
  }

  // When the ladder's problem is selected: builds its instance in `slot` from (n, seed, args...)
  // and adds the ladder's selected versions.
  template <class Instance, class Launch, class... Args>
  void add_instance(std::optional<Instance>& slot, const Ladder<Launch>& ladder, std::int64_t n, Args&&... args) {
    if (!wants(ladder.problem.name)) return;
    slot.emplace(n, seed_, std::forward<Args>(args)...);
    add_ladder(ladder, n, *slot);
  }

  // Times every case, prints the table, writes JSON. Returns the process exit code.
  int run();

 private:
  RunResult run_case(const BenchCase& c, double ceiling_GBps);
  void print_table(const std::vector<RunResult>& results) const;
  void write_json(const std::vector<RunResult>& results, const std::string& path) const;

  std::string chapter_, description_;
  CLI::App app_;
  std::vector<std::pair<std::string, std::vector<std::string>>> problems_;
  std::string problem_sel_ = "all", version_sel_ = "all";
  bool list_ = false, no_check_ = false;
  int reps_ = 50, warmup_ = 5;
  std::string json_path_, results_dir_;
  std::uint64_t seed_ = 0;
  DeviceInfo device_;
  CopyCeiling ceiling_;
  std::vector<BenchCase> cases_;
};

// The commit the results come from: $TUT_COMMIT if set, else `git describe` at build time.
std::string build_commit();

}  // namespace tut

// The benchmark runner every chapter's bench hands its problems to.
//
//   int main(int argc, char** argv) {
//     tut::BenchApp app("01_elementwise", "Element-wise kernels: ReLU on float32, multiply on half");
//     app.add(ch01::problems());   // versions.cuh: {tut::erase(relu_problem()), tut::erase(mul_problem())}
//     return app.main(argc, argv);
//   }
//
// Per selected problem, case by case (one instance alive at a time, freed after its case):
//   1. the instance is built (inputs filled, outputs allocated);
//   2. per selected version: its scratch is allocated; one checked run (outputs poisoned, resets,
//      launch, every output compared with the CPU reference); then the timing loop of
//      tut::time_kernel: warm-up launches, then for each repetition the resets and an L2 flush
//      (untimed), then start event, the launch, stop event. Only the launch is timed. The last
//      timed launch's outputs are checked again.
//   3. "of copy" divides the floor's bytes per second by the copy ceiling measured at start-up in
//      the same process; "vs first" is the speedup over the case's first version that ran.
//
// Exit codes: 0 every check passed, 1 a check or CUDA failed, 2 bad options, 77 no CUDA device
// (Meson's "skipped").
#pragma once

#include "tut/device.hpp"
#include "tut/problem.hpp"
#include "tut/timing.hpp"

#include <CLI/CLI.hpp>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tut {

struct RunResult {
  std::string problem, dtype, version, summary, library, baseline;
  Case c;
  Kind kind = Kind::own;
  Floor floor;
  std::vector<int> regs;  // per kernel; empty for library calls
  Stats stats;
  double GBps = 0, GFLOPs = 0, fraction_of_copy = 0, speedup_vs_first = 0;
  std::string check;  // "pass", "FAIL", "skipped"
  std::string check_detail;
};

class BenchApp {
 public:
  BenchApp(std::string chapter, std::string description);

  // Extra options of the chapter's own (its problem parameters, say).
  CLI::App& cli() { return app_; }
  template <class Inst>
  void add(const Problem<Inst>& p) {
    problems_.push_back(erase(p));
  }
  void add(std::vector<ProblemEntry> problems) {
    problems_.insert(problems_.end(), problems.begin(), problems.end());
  }
  // Parses the command line, measures the copy ceiling, runs, prints the tables, writes the JSON.
  // Returns the process exit code; never throws.
  int main(int argc, char** argv);

 private:
  std::optional<int> parse(int argc, char** argv);
  std::vector<Case> cases_for(const ProblemEntry& p) const;
  bool wants(const ProblemEntry& p) const;
  bool wants(const VersionInfo& v) const;
  int run();
  RunResult run_version(const ProblemEntry& p, const Case& c, CaseSession& session, std::size_t v);
  void profile_version(CaseSession& session, std::size_t v);
  void print_header() const;
  void print_case(const std::vector<RunResult>& rows) const;
  void write_json(const std::vector<RunResult>& results, const std::string& path) const;
  bool has_exercises() const;

  std::string chapter_, description_;
  CLI::App app_;
  std::vector<ProblemEntry> problems_;
  std::string problem_sel_ = "all", version_sel_ = "all", type_sel_, case_sel_, shape_sel_, l2_mode_ = "flush";
  std::int64_t n_sel_ = 0;
  bool list_ = false, list_json_ = false, no_check_ = false, suite_ = false, profile_ = false;
  int reps_ = 50, warmup_ = 5;
  std::string json_path_, results_dir_;
  std::uint64_t seed_ = 0;
  DeviceInfo device_;
  CopyCeiling ceiling_;
};

// The commit the results come from: $TUT_COMMIT if set, else `git describe` at build time.
std::string build_commit();

}  // namespace tut

// The benchmark every chapter builds: common/src/bench_main.cpp's main() hands the chapter's
// problems (tut::chapter(), from its problems.cu) to BenchApp.
//
// Per selected problem, case by case (one instance alive at a time, freed after its case):
//   1. the case: the default one, --case NAME, --suite, or --n/--shape; then --param key=value on it;
//   2. the instance is built (inputs filled, outputs allocated; a backward's saved inputs from its
//      forward);
//   3. per selected version: its workspace and setup (untimed; a library may refuse the case:
//      "unsupported"); one checked run (outputs poisoned, resets, launch, every output it writes
//      compared with the CPU reference); then tut::time_kernel: warm-up launches, then for each
//      repetition the resets, an L2 flush and a spin of the GPU (--busy-cycles; all untimed), start
//      event, the launch, stop event. Only the launch is timed. The last timed launch's outputs are
//      checked again.
//   4. "of copy" divides the floor's bytes per second by the copy ceiling measured at start-up in
//      the same process; "vs first" is the speedup over the case's first version that ran.
//   5. a dispatcher (a version that picks another per case, such as a chapter's `auto`) is then
//      raced against the case's fastest other own version: --versus-rounds rounds (7 unless set; 0
//      skips it), each timing both as in step 3 with the order swapped every round: the median over
//      rounds of the dispatcher's median over the other's. Rows are timed one after another; the
//      rounds put the two side by side, so that what differs is the kernels. (Without the spin,
//      two trials of the same kernels raced 2.5 to 4.1 % apart; with it, within half a percent:
//      06_maxpool3d/results/forms/bench_spin.*.)
//
// Exit codes: 0 every check passed, 1 a check or CUDA failed, 2 bad options, 77 no CUDA device
// (Meson's "skipped").
#pragma once

#include "tut/chapter.hpp"
#include "tut/device.hpp"
#include "tut/problem.hpp"
#include "tut/timing.hpp"

#include <CLI/CLI.hpp>
#include <cuda_runtime.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tut {

// A dispatcher against the case's fastest other version, timed in alternating rounds.
struct Versus {
  std::string version;  // the other version
  int rounds = 0, reps_per_round = 0;
  double ms_median = 0, other_ms_median = 0;          // medians over the rounds' medians
  double time_ratio = 0, time_ratio_min = 0, time_ratio_max = 0;  // over rounds: ours / the other's
};

struct RunResult {
  std::string problem, dtype, version, summary, library, baseline;
  Case c;
  Kind kind = Kind::own;
  Floor floor;
  std::vector<int> regs;  // per kernel; empty for library calls
  Stats stats;
  double GBps = 0, GFLOPs = 0, fraction_of_copy = 0, speedup_vs_first = 0;
  std::string check;  // "pass", "FAIL", "skipped", "unsupported"
  std::string check_detail;
  std::optional<Versus> versus_best;  // dispatchers only
};

class BenchApp {
 public:
  explicit BenchApp(const Chapter& chapter);

  // Parses the command line, measures the machine's ceilings, runs, prints the tables, writes the
  // JSON. Returns the process exit code; never throws.
  int main(int argc, char** argv);

 private:
  std::optional<int> parse(int argc, char** argv);
  std::vector<Case> cases_for(const ProblemEntry& p) const;
  bool wants(const ProblemEntry& p) const;
  bool wants(const VersionInfo& v) const;
  int run();
  RunResult run_version(const ProblemEntry& p, const Case& c, CaseSession& session, std::size_t v);
  void profile_version(CaseSession& session, std::size_t v);
  void race_dispatchers(const ProblemEntry& p, CaseSession& session, const std::vector<std::size_t>& selected,
                        std::vector<RunResult>& rows);
  TimingOptions timing_options(CaseSession& session) const;
  void list(bool json) const;
  void print_header() const;
  void print_case(const std::vector<RunResult>& rows) const;
  void write_json(const std::vector<RunResult>& results, const std::string& path) const;
  std::vector<std::string> output_paths() const;
  bool has_exercises() const;

  const Chapter& chapter_;
  CLI::App app_;
  std::vector<std::string> problem_sel_, version_sel_;  // --problem, --version, repeatable; empty or "all": every one
  std::string type_sel_, shape_sel_, n_sel_, l2_mode_ = "flush";
  std::vector<std::string> case_sel_;  // --case, repeatable: the suite cases (by name) to run
  std::vector<std::string> param_text_;
  std::vector<std::pair<std::string, std::string>> params_;
  bool list_ = false, list_json_ = false, no_check_ = false, suite_ = false, profile_ = false;
  int reps_ = 50, warmup_ = 5, versus_rounds_ = 7;
  long long busy_cycles_ = 200000;  // about 100 us at the H100's and H200's 1.98 GHz
  std::string json_path_, results_dir_, seed_text_;
  std::uint64_t seed_ = 0;
  DeviceInfo device_;
  CopyCeiling ceiling_;
  ComputeCeiling compute_;
};

// main() of every chapter's benchmark: BenchApp(chapter()).main(argc, argv), with an error from
// building the chapter's problems reported instead of thrown.
int bench_main(int argc, char** argv);

// The commit the results come from: $TUT_COMMIT if set, else `git describe` at build time.
std::string build_commit();

}  // namespace tut

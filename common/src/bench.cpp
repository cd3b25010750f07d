#include "tut/bench.hpp"

#include "json.hpp"

#include "tut/check.hpp"
#include "tut/random.hpp"

#include <cuda_profiler_api.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <sstream>

extern "C" const char* tut_build_commit_string();

namespace tut {

std::string build_commit() {
  if (const char* env = std::getenv("TUT_COMMIT"); env && *env) return env;
  return tut_build_commit_string();
}

namespace {
// A whole number in [lo, hi], with a message that says which of the two is wrong.
CLI::Validator whole_number(std::int64_t lo, std::int64_t hi) {
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& in) -> std::string {
        std::size_t used = 0;
        long long v = 0;
        try {
          v = std::stoll(in, &used, 10);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != in.size()) return "'" + in + "' is not a whole number";
        if (v < lo || v > hi) return in + " is not in " + range;
        return {};
      },
      "INT in " + range);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string pad(const std::string& s, std::size_t w, bool right = false) {
  if (s.size() >= w) return s;
  return right ? std::string(w - s.size(), ' ') + s : s + std::string(w - s.size(), ' ');
}
std::string regs_text(const std::vector<int>& regs) {
  if (regs.empty()) return "-";
  std::string s;
  for (std::size_t k = 0; k < regs.size(); ++k) s += (k ? "/" : "") + std::to_string(regs[k]);
  return s;
}
// A repeatable selector (--problem, --version): nothing given, or "all" among the names, takes every one.
bool selects(const std::vector<std::string>& sel, const std::string& name) {
  return sel.empty() || std::find(sel.begin(), sel.end(), "all") != sel.end() ||
         std::find(sel.begin(), sel.end(), name) != sel.end();
}
// The names a selector must find ("all" is not one).
std::vector<std::string> named(const std::vector<std::string>& sel) {
  std::vector<std::string> out;
  for (const auto& s : sel)
    if (s != "all") out.push_back(s);
  return out;
}
}  // namespace

BenchApp::BenchApp(const Chapter& chapter) : chapter_(chapter), app_(chapter.description, chapter.name) {
  app_.option_defaults()->always_capture_default();
  app_.add_option("--problem", problem_sel_,
                  "Problem to run (see --list), or 'all' (the default); repeatable: --problem A --problem B runs both")
      ->take_all();
  app_.add_option("--version", version_sel_,
                  "Version to run (see --list), or 'all' (the default); repeatable: --version A --version B runs both")
      ->take_all();
  app_.add_option("--type", type_sel_, "Only the problems on this element type: f32, f16, i32, ... (see --list)");
  auto* c = app_.add_option("--case", case_sel_,
                            "A case of the built-in suite, by name (see --list); repeatable: --case A --case B runs both")
                ->take_all();
  auto* s = app_.add_option("--shape", shape_sel_, "A shape such as 1000, 2^28 or 2x64x16x56x56 (default: each problem's default case)");
  auto* suite = app_.add_flag("--suite", suite_, "Run every case of each problem's built-in suite");
  c->excludes(s)->excludes(suite);
  s->excludes(suite);
  app_.add_option("--param", param_text_,
                  "key=value for the cases' parameters, repeatable: --param segment=256, --param kernel=3x3x3 "
                  "(see --list for each problem's parameters and defaults)")
      ->take_all();
  app_.add_flag("--list", list_, "List the problems, their parameters, cases (with floors) and versions, then exit");
  app_.add_flag("--list-json", list_json_, "The same as JSON, for tools");
  app_.add_option("--reps", reps_, "Timed repetitions per version")->check(whole_number(1, 100000));
  app_.add_option("--warmup", warmup_, "Untimed launches before timing")->check(whole_number(0, 100000));
  app_.add_option("--busy-cycles", busy_cycles_,
                  "SM clock cycles one GPU thread spins before each timed repetition (untimed), so the host has "
                  "enqueued the launch before the GPU reaches it; 0: none")
      ->check(whole_number(0, 1000000000));
  app_.add_option("--versus-rounds", versus_rounds_,
                  "Alternating rounds in which a dispatcher (auto) is raced against the case's fastest other version; 0: none")
      ->check(whole_number(0, 1000));
  app_.add_option("--l2", l2_mode_, "flush: read a buffer of twice the L2 before each repetition when the data could fit in it "
                                     "(clean lines, none of the case's data: tut::L2Flush); "
                                     "warm: leave it (measures the cache for small sizes)")
      ->check(CLI::IsMember({"flush", "warm"}));
  app_.add_option("--json", json_path_, "Write the results to this JSON file");
  app_.add_option("--results-dir", results_dir_, "Write the results to DIR/<gpu>.json");
  app_.add_flag("--no-check", no_check_, "Skip the comparisons with the CPU reference");
  app_.add_flag("--profile", profile_,
                "One launch per version between cudaProfilerStart/Stop, nothing timed (for ncu --profile-from-start off)");
  app_.add_option("--seed", seed_text_, "Seed for the random inputs (default: $TUT_SEED, else 20261121)");
  const bool flat = std::all_of(chapter_.problems.begin(), chapter_.problems.end(),
                                [](const ProblemEntry& p) { return p.default_case.shape.size() == 1; });
  if (flat) {
    auto* n = app_.add_option("--n", n_sel_, "Elements per array, such as 1000 or 2^28 (the same as --shape N)");
    for (auto* other : {"--shape", "--case", "--suite"}) n->excludes(app_.get_option(other));
  }
}

namespace {
// Whether `path` can be written, tried before any timing: its folder is created if need be, and a
// file that did not exist is removed again.
std::string unwritable(const std::filesystem::path& path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) return "cannot create the folder " + path.parent_path().string() + ": " + ec.message();
  const bool existed = std::filesystem::exists(path, ec);
  {
    std::ofstream probe(path, std::ios::app);
    if (!probe) return "cannot write " + path.string();
  }
  if (!existed) std::filesystem::remove(path, ec);
  return {};
}
}  // namespace

std::vector<std::string> BenchApp::output_paths() const {
  std::vector<std::string> out;
  if (!json_path_.empty()) out.push_back(json_path_);
  if (!results_dir_.empty()) out.push_back((std::filesystem::path(results_dir_) / ".write-probe.json").string());
  return out;
}

std::optional<int> BenchApp::parse(int argc, char** argv) {
  app_.name(std::filesystem::path(argc > 0 ? argv[0] : chapter_.name).filename().string());
  try {
    app_.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app_.exit(e);
  } catch (const CLI::ParseError& e) {
    app_.exit(e);  // prints CLI11's message and usage hint
    return 2;
  }
  auto fail = [](const std::string& msg) {
    std::cerr << "error: " << msg << "\n";
    return 2;
  };
  try {
    seed_ = seed_text_.empty() ? test_seed() : parse_seed(seed_text_.c_str());
  } catch (const std::invalid_argument& e) {
    return fail(std::string("--seed: ") + e.what());
  }
  if (!n_sel_.empty()) {
    if (n_sel_.find('x') != std::string::npos)
      return fail("--n takes one number of elements, such as 1000 or 2^28; '" + n_sel_ + "' is not one (--shape takes AxBxC)");
    shape_sel_ = n_sel_;
  }
  for (const auto& kv : param_text_) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) return fail("--param takes key=value, such as segment=256; got '" + kv + "'");
    params_.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  if (list_json_ || list_) {
    list(list_json_);
    return 0;
  }
  // Each --problem must name a problem, and each --version a version of a selected problem.
  std::vector<std::string> problems_missing = named(problem_sel_), versions_missing = named(version_sel_);
  std::vector<std::string> cases_missing = case_sel_;  // each --case must name a case of a selected problem
  std::vector<std::string> case_names;                  // the selected problems' default and suite cases
  bool type_ok = type_sel_.empty();
  std::vector<std::string> keys_taken;
  const auto drop = [](std::vector<std::string>& from, const std::string& name) {
    from.erase(std::remove(from.begin(), from.end(), name), from.end());
  };
  for (const auto& p : chapter_.problems) {
    drop(problems_missing, p.name);
    if (p.dtype == type_sel_) type_ok = true;
    if (!wants(p)) continue;
    for (const auto& v : p.versions) drop(versions_missing, v.name);
    case_names.push_back(p.default_case.name);
    for (const auto& c : p.suite) case_names.push_back(c.name);
    for (const auto& s : p.params) keys_taken.push_back(s.key);
  }
  for (const auto& name : case_names) drop(cases_missing, name);
  if (!problems_missing.empty())
    return fail("no problem '" + problems_missing.front() + "' in " + chapter_.name + " (see --list)");
  if (!type_ok) return fail("no problem on type '" + type_sel_ + "' in " + chapter_.name + " (see --list)");
  if (!versions_missing.empty())
    return fail("no version '" + versions_missing.front() + "' in the selected problems (see --list)");
  if (!cases_missing.empty()) {
    // A case is named by its whole name, every parameter included; offer the names that hold each word
    // of the one given ("64x1024x7x7 layout=NHWC" finds "64x1024x7x7 layout=NHWC eps=1e-05 ...").
    std::istringstream words_in(cases_missing.front());
    const std::vector<std::string> words{std::istream_iterator<std::string>(words_in), {}};
    std::vector<std::string> near;
    for (const auto& name : case_names) {
      const bool holds = std::all_of(words.begin(), words.end(), [&](const std::string& w) {
        return (" " + name + " ").find(" " + w + " ") != std::string::npos;
      });
      if (holds && std::find(near.begin(), near.end(), name) == near.end()) near.push_back(name);
    }
    std::string hint;
    for (std::size_t i = 0; i < near.size() && i < 3; ++i) hint += (i ? "', '" : "; did you mean '") + near[i];
    if (!hint.empty()) hint += near.size() > 3 ? "' (or " + std::to_string(near.size() - 3) + " more)" : "'";
    return fail("no case '" + cases_missing.front() + "' in the selected problems' suites" + hint + " (see --list)");
  }
  for (const auto& [k, v] : params_)
    if (std::find(keys_taken.begin(), keys_taken.end(), k) == keys_taken.end())
      return fail("--param " + k + "=" + v + ": no selected problem has a parameter '" + k + "' (see --list)");
  for (const auto& p : chapter_.problems) {
    if (!wants(p)) continue;
    try {
      cases_for(p);
    } catch (const std::exception& e) {
      const char* what = !shape_sel_.empty() ? (n_sel_.empty() ? "--shape: " : "--n: ") : "--param: ";
      return fail(what + std::string(e.what()));
    }
  }
  for (const auto& path : output_paths())
    if (const std::string why = unwritable(path); !why.empty())
      return fail((path == json_path_ ? "--json: " : "--results-dir: ") + why);
  if (!has_cuda_device()) {
    std::cout << "no CUDA device: skipping the " << chapter_.name << " benchmark\n";
    return 77;
  }
  return std::nullopt;
}

void BenchApp::list(bool json) const {
  if (json) {
    std::cout << problems_json(chapter_.problems) << "\n";
    return;
  }
  // 1234567 -> "1.235 M": the floor of a small case is not 0.000 GB.
  const auto scaled = [](double v) {
    const char* units[] = {" ", " k", " M", " G", " T"};
    int u = 0;
    while (v >= 1000 && u < 4) v /= 1000, ++u;
    return fmt(u ? "%.3f" : "%.0f", v) + units[u];
  };
  const auto floor_text = [&](const Floor& f) {
    std::string s = scaled(static_cast<double>(f.bytes)) + "B";
    if (f.flops) s += ", " + scaled(static_cast<double>(f.flops)) + "FLOP";
    for (const auto& [k, v] : f.models) s += "; " + k + " " + scaled(static_cast<double>(v)) + "B";
    return s;
  };
  for (const auto& p : chapter_.problems) {
    std::cout << p.name << " [" << p.dtype << "]: " << p.description << "\n";
    for (const auto& s : p.params) {
      std::cout << "  --param " << s.key << "=" << to_string(s.default_value) << "  " << s.help;
      if (!s.choices.empty()) {
        std::cout << " (";
        for (std::size_t k = 0; k < s.choices.size(); ++k) std::cout << (k ? "|" : "") << s.choices[k];
        std::cout << ")";
      }
      std::cout << "\n";
    }
    std::cout << "  default case: " << p.default_case.name << " [shape " << p.default_case.shape_text() << "]  floor "
              << floor_text(p.floor(p.default_case)) << "\n  suite:\n";
    for (const auto& c : p.suite)
      std::cout << "    " << pad(c.name, 34) << " floor " << floor_text(p.floor(c)) << "\n";
    for (const auto& v : p.versions)
      std::cout << "  " << pad(v.name, 26) << " " << pad(kind_name(v.kind), 8) << " " << v.summary << "\n";
  }
}

bool BenchApp::wants(const ProblemEntry& p) const {
  return selects(problem_sel_, p.name) && (type_sel_.empty() || type_sel_ == p.dtype);
}
bool BenchApp::wants(const VersionInfo& v) const { return selects(version_sel_, v.name); }

std::vector<Case> BenchApp::cases_for(const ProblemEntry& p) const {
  std::vector<std::pair<std::string, std::string>> mine;  // the --param keys this problem takes
  for (const auto& kv : params_)
    if (std::any_of(p.params.begin(), p.params.end(), [&](const ParamSpec& s) { return s.key == kv.first; }))
      mine.push_back(kv);
  std::vector<Case> base;
  if (suite_) {
    base = p.suite;
  } else if (!case_sel_.empty()) {
    for (const auto& name : case_sel_) {  // in the order given; the default case first if it is also in the suite
      if (p.default_case.name == name) {
        base.push_back(p.default_case);
        continue;
      }
      for (const auto& c : p.suite)
        if (c.name == name) {
          base.push_back(c);
          break;
        }
    }
  } else if (!shape_sel_.empty()) {
    return {make_case(p, parse_shape(shape_sel_), mine)};
  } else {
    base = {p.default_case};
  }
  for (auto& c : base) c = with_params(p, c, mine);
  return base;
}

bool BenchApp::has_exercises() const {
  for (const auto& p : chapter_.problems)
    for (const auto& v : p.versions)
      if (v.kind == Kind::exercise) return true;
  return false;
}

int BenchApp::main(int argc, char** argv) {
  try {
    if (auto rc = parse(argc, argv)) return *rc;
    device_ = query_device();
    if (!profile_) {
      ceiling_ = measure_copy_ceiling();
      compute_ = measure_compute_ceiling();
    }
    return run();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}

int bench_main(int argc, char** argv) {
  try {
    return BenchApp(chapter()).main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}

void BenchApp::profile_version(CaseSession& session, std::size_t v) {
  Trial t;
  try {
    t = session.trial(v);
  } catch (const Unsupported& e) {
    std::cout << "not profiled, unsupported: " << e.what() << "\n";
    return;
  }
  t.poison(nullptr);
  t.before(nullptr);
  TUT_CUDA(cudaDeviceSynchronize());
  TUT_CUDA(cudaProfilerStart());
  t.launch(nullptr);
  TUT_CUDA(cudaDeviceSynchronize());
  TUT_CUDA(cudaProfilerStop());
}

RunResult BenchApp::run_version(const ProblemEntry& p, const Case& c, CaseSession& session, std::size_t v) {
  const VersionInfo& info = p.versions[v];
  RunResult r;
  r.problem = p.name;
  r.dtype = p.dtype;
  r.c = c;
  r.version = info.name;
  r.summary = info.summary;
  r.kind = info.kind;
  r.library = info.library;
  r.floor = p.floor(c);
  for (const void* k : info.kernels) r.regs.push_back(registers_per_thread(k));
  Trial t;
  try {
    t = session.trial(v);
  } catch (const Unsupported& e) {
    r.check = "unsupported";
    r.check_detail = e.what();
    return r;
  }
  const bool check = !no_check_;
  r.check = check ? "pass" : "skipped";
  auto verify = [&](const char* when, bool launch_first) {
    const CheckResult res = launch_first ? checked_run(t) : (TUT_CUDA(cudaDeviceSynchronize()), t.check());
    if (!res.ok() && r.check != "FAIL") {
      r.check = "FAIL";
      r.check_detail = std::string(when) + ": " + res.summary();
    }
  };
  if (check) verify("first run", true);
  r.stats = time_kernel(t.launch, timing_options(session), nullptr, t.before);
  if (check) verify("after timing", false);  // the last timed launch's outputs
  const double s = r.stats.median * 1e-3;
  r.GBps = s > 0 ? static_cast<double>(r.floor.bytes) / s / 1e9 : 0;
  r.GFLOPs = s > 0 ? static_cast<double>(r.floor.flops) / s / 1e9 : 0;
  r.fraction_of_copy = ceiling_.GBps > 0 ? r.GBps / ceiling_.GBps : 0;
  return r;
}

TimingOptions BenchApp::timing_options(CaseSession& session) const {
  TimingOptions opt;
  opt.warmup = warmup_;
  opt.reps = reps_;
  opt.flush_bytes = l2_mode_ == "flush" ? l2_flush_bytes(session.instance().working_set(), device_.l2_bytes) : 0;
  opt.busy_cycles = busy_cycles_;
  return opt;
}

void BenchApp::race_dispatchers(const ProblemEntry& p, CaseSession& session, const std::vector<std::size_t>& selected,
                                std::vector<RunResult>& rows) {
  if (versus_rounds_ < 1) return;
  const auto timed = [](const RunResult& r) { return r.check == "pass" || r.check == "skipped"; };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!p.versions[selected[i]].dispatcher || !timed(rows[i])) continue;
    std::optional<std::size_t> best;
    for (std::size_t j = 0; j < rows.size(); ++j)
      if (j != i && rows[j].kind == Kind::own && !p.versions[selected[j]].dispatcher && timed(rows[j]) &&
          (!best || rows[j].stats.median < rows[*best].stats.median))
        best = j;
    if (!best) continue;
    const Trial ours = session.trial(selected[i]);
    const Trial other = session.trial(selected[*best]);
    const TimingOptions opt = timing_options(session);
    std::vector<double> ratio, ms_ours, ms_other;
    for (int round = 0; round < versus_rounds_; ++round) {
      Stats a, b;
      if (round % 2 == 0) {
        a = time_kernel(ours.launch, opt, nullptr, ours.before);
        b = time_kernel(other.launch, opt, nullptr, other.before);
      } else {
        b = time_kernel(other.launch, opt, nullptr, other.before);
        a = time_kernel(ours.launch, opt, nullptr, ours.before);
      }
      ms_ours.push_back(a.median);
      ms_other.push_back(b.median);
      ratio.push_back(b.median > 0 ? a.median / b.median : 0);
    }
    Versus v;
    v.version = rows[*best].version;
    v.rounds = versus_rounds_;
    v.reps_per_round = opt.reps;
    v.ms_median = summarize(ms_ours).median;
    v.other_ms_median = summarize(ms_other).median;
    const Stats rs = summarize(ratio);
    v.time_ratio = rs.median;
    v.time_ratio_min = rs.min;
    v.time_ratio_max = rs.max;
    rows[i].versus_best = v;
  }
}

int BenchApp::run() {
  if (!profile_) print_header();
  std::vector<RunResult> results;
  for (const auto& p : chapter_.problems) {
    if (!wants(p)) continue;
    for (const Case& c : cases_for(p)) {
      std::vector<std::size_t> selected;
      for (std::size_t v = 0; v < p.versions.size(); ++v)
        if (wants(p.versions[v])) selected.push_back(v);
      if (selected.empty()) continue;
      InstanceOptions opt;
      opt.seed = seed_;
      const auto session = p.open(c, opt);  // this case's buffers, freed at the end of the iteration
      std::vector<RunResult> rows;
      for (std::size_t v : selected) {
        if (profile_) {
          profile_version(*session, v);
          continue;
        }
        RunResult r = run_version(p, c, *session, v);
        const RunResult* first = nullptr;
        for (const auto& row : rows)
          if (!first && row.check != "unsupported") first = &row;
        r.baseline = first ? first->version : r.version;
        const double base = first ? first->stats.median : r.stats.median;
        r.speedup_vs_first = r.stats.median > 0 ? base / r.stats.median : 0;
        if (r.check == "FAIL") std::cerr << p.name << " " << c.name << " " << r.version << ": check FAILED: " << r.check_detail << "\n";
        rows.push_back(std::move(r));
      }
      if (!profile_) race_dispatchers(p, *session, selected, rows);
      if (!profile_) print_case(rows);
      results.insert(results.end(), rows.begin(), rows.end());
    }
  }
  if (profile_) return 0;
  if (!json_path_.empty()) write_json(results, json_path_);
  if (!results_dir_.empty()) write_json(results, results_dir_ + "/" + gpu_slug(device_.name) + ".json");
  const bool failed = std::any_of(results.begin(), results.end(), [](const RunResult& r) { return r.check == "FAIL"; });
  return failed ? 1 : 0;
}

void BenchApp::print_header() const {
  std::cout << "\n" << chapter_.name << " on " << device_.name << " (" << device_.sm_count << " SMs, L2 "
            << device_.l2_bytes / (1 << 20) << " MiB, datasheet DRAM " << fmt("%.0f", device_.theoretical_dram_GBps())
            << " GB/s), commit " << build_commit() << ", seed " << seed_ << "\n";
  std::cout << "copy ceiling, measured now over " << ceiling_.bytes / (1 << 20) << " MiB read+written: "
            << fmt("%.1f", ceiling_.GBps) << " GB/s (" << ceiling_.shape << ")\n";
  for (const auto& c : ceiling_.candidates)
    std::cout << "  " << pad(fmt("%.1f", c.GBps), 8, true) << " GB/s  " << fmt("%.3f", c.GBps / ceiling_.GBps) << "  "
              << c.name << "\n";
  std::cout << "  read-only stream " << fmt("%.1f", ceiling_.read_GBps) << " GB/s, write-only stream "
            << fmt("%.1f", ceiling_.write_GBps) << " GB/s\n"
            << "FP32 FMA " << fmt("%.0f", compute_.fp32_fma_GFLOPs) << " GFLOP/s, FP16 HFMA2 "
            << fmt("%.0f", compute_.fp16_hfma2_GFLOPs) << " GFLOP/s, SM clock " << fmt("%.0f", compute_.sm_clock_MHz)
            << " MHz (measured now)\n"
            << warmup_ << " warm-up launches, " << reps_ << " timed repetitions, L2 " << l2_mode_;
  if (busy_cycles_) std::cout << ", a spin of " << busy_cycles_ << " cycles before each";
  std::cout << "\n";
}

void BenchApp::print_case(const std::vector<RunResult>& rows) const {
  if (rows.empty()) return;
  const RunResult& h = rows.front();
  const double floor_ms = ceiling_.GBps > 0 ? h.floor.bytes / (ceiling_.GBps * 1e9) * 1e3 : 0;
  std::cout << "\n" << h.problem << " [" << h.dtype << "]  " << h.c.name;
  for (const auto& [k, v] : h.c.params.items()) {
    const std::string kv = k + "=" + to_string(v);
    if (h.c.name.find(kv) == std::string::npos) std::cout << " " << kv;  // unless the name says it
  }
  std::cout << "  floor: " << fmt("%.3f", h.floor.bytes / 1e9) << " GB";
  if (h.floor.flops) std::cout << ", " << fmt("%.3f", h.floor.flops / 1e9) << " GFLOP";
  std::cout << " -> " << fmt("%.4f", floor_ms) << " ms at the copy ceiling";
  for (const auto& [k, v] : h.floor.models) std::cout << "; " << k << " model " << fmt("%.3f", v / 1e9) << " GB";
  std::cout << "\n";
  std::size_t vw = 7, sw = 7;
  for (const auto& r : rows) {
    vw = std::max(vw, r.version.size());
    sw = std::min<std::size_t>(std::max(sw, r.summary.size()), 56);
  }
  std::cout << pad("version", vw) << "  kind  " << pad("summary", sw) << "  " << pad("regs", 5, true) << "  "
            << pad("ms median [min-max]", 28) << "  " << pad("GB/s", 7, true) << "  " << pad("GFLOP/s", 8, true) << "  "
            << pad("of copy", 7, true) << "  " << pad("vs first", 8, true) << "  check\n";
  for (const auto& r : rows) {
    const std::string summary = r.summary.size() > sw ? r.summary.substr(0, sw - 3) + "..." : r.summary;
    if (r.check == "unsupported") {
      std::cout << pad(r.version, vw) << "  " << pad(std::string(kind_name(r.kind)).substr(0, 4), 4) << "  "
                << pad(summary, sw) << "  unsupported: " << r.check_detail << "\n";
      continue;
    }
    std::cout << pad(r.version, vw) << "  " << pad(std::string(kind_name(r.kind)).substr(0, 4), 4) << "  "
              << pad(summary, sw) << "  " << pad(regs_text(r.regs), 5, true) << "  "
              << pad(fmt("%.4f", r.stats.median) + " [" + fmt("%.4f", r.stats.min) + "-" + fmt("%.4f", r.stats.max) + "]", 28)
              << "  " << pad(fmt("%.1f", r.GBps), 7, true) << "  " << pad(fmt("%.1f", r.GFLOPs), 8, true) << "  "
              << pad(fmt("%.3f", r.fraction_of_copy), 7, true) << "  "
              << pad(fmt("%.2fx", r.speedup_vs_first), 8, true) << "  " << r.check << "\n";
  }
  for (const auto& r : rows)
    if (r.versus_best) {
      const Versus& v = *r.versus_best;
      std::cout << r.version << " against " << v.version << ", the fastest other, in " << v.rounds
                << " alternating rounds of " << v.reps_per_round << ": " << fmt("%.3f", v.time_ratio) << "x its time ["
                << fmt("%.3f", v.time_ratio_min) << "-" << fmt("%.3f", v.time_ratio_max) << "], medians "
                << fmt("%.4f", v.ms_median) << " and " << fmt("%.4f", v.other_ms_median) << " ms\n";
    }
  std::cout << std::flush;
}

void BenchApp::write_json(const std::vector<RunResult>& results, const std::string& path) const {
  using nlohmann::json;
  json runs = json::array();
  for (const auto& r : results) {
    json run = {{"problem", r.problem},
                {"case", r.c.name},
                {"shape", r.c.shape},
                {"params", to_json(r.c.params)},
                {"dtype", r.dtype},
                {"version", r.version},
                {"summary", r.summary},
                {"kind", kind_name(r.kind)},
                {"bytes", r.floor.bytes},
                {"flops", r.floor.flops},
                {"ms_median", r.stats.median},
                {"ms_min", r.stats.min},
                {"ms_max", r.stats.max},
                {"reps", r.stats.reps},
                {"GBps", r.GBps},
                {"GFLOPs", r.GFLOPs},
                {"fraction_of_copy", r.fraction_of_copy},
                {"speedup_vs_first", r.speedup_vs_first},
                {"baseline", r.baseline},
                {"regs_per_kernel", r.regs},
                {"check", r.check}};
    if (!r.floor.models.empty()) run["models"] = to_json(r.floor)["models"];
    if (!r.library.empty()) run["library"] = r.library;
    if (!r.check_detail.empty()) run["check_detail"] = r.check_detail;
    if (r.versus_best) {
      const Versus& v = *r.versus_best;
      run["versus_best"] = {{"version", v.version},           {"rounds", v.rounds},
                            {"reps_per_round", v.reps_per_round}, {"ms_median", v.ms_median},
                            {"best_ms_median", v.other_ms_median}, {"time_ratio", v.time_ratio},
                            {"time_ratio_min", v.time_ratio_min}, {"time_ratio_max", v.time_ratio_max}};
    }
    runs.push_back(run);
  }
  json candidates = json::array();
  for (const auto& c : ceiling_.candidates)
    candidates.push_back({{"shape", c.name}, {"own", c.own}, {"GBps", c.GBps}, {"ms_median", c.stats.median},
                          {"ms_min", c.stats.min}, {"ms_max", c.stats.max}});
  const CopyShape* own = ceiling_.best_own();
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  json doc = {{"schema_version", 3},
              {"chapter", chapter_.name},
              {"gpu", device_.name},
              {"commit", build_commit()},
              {"date", date},
              {"exercises", has_exercises()},
              {"copy_ceiling",
               {{"GBps", ceiling_.GBps},
                {"bytes", ceiling_.bytes},
                {"winner", ceiling_.shape},
                {"best_own", own ? json(own->name) : json(nullptr)},
                {"best_own_GBps", own ? own->GBps : 0.0},
                {"candidates", candidates},
                {"read_only_GBps", ceiling_.read_GBps},
                {"write_only_GBps", ceiling_.write_GBps}}},
              {"compute_ceiling",
               {{"fp32_fma_GFLOPs", compute_.fp32_fma_GFLOPs},
                {"fp16_hfma2_GFLOPs", compute_.fp16_hfma2_GFLOPs},
                {"sm_clock_MHz", compute_.sm_clock_MHz}}},
              {"device",
               {{"compute_capability", std::to_string(device_.cc_major) + "." + std::to_string(device_.cc_minor)},
                {"sm_count", device_.sm_count},
                {"l2_bytes", device_.l2_bytes},
                {"max_threads_per_sm", device_.max_threads_per_sm},
                {"datasheet_dram_GBps", device_.theoretical_dram_GBps()}}},
              {"cuda_runtime", CUDART_VERSION},
              {"seed", seed_},
              {"warmup", warmup_},
              {"reps", reps_},
              {"l2", l2_mode_},
              {"l2_flush", "read"},
              {"busy_cycles", busy_cycles_},
              {"runs", runs}};
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << doc.dump(2) << "\n";
  std::cout << "wrote " << path << "\n";
}

}  // namespace tut

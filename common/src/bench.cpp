#include "tut/bench.hpp"

#include "tut/check.hpp"
#include "tut/random.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

extern "C" const char* tut_build_commit_string();

namespace tut {

std::string build_commit() {
  if (const char* env = std::getenv("TUT_COMMIT"); env && *env) return env;
  return tut_build_commit_string();
}

BenchApp::BenchApp(std::string chapter, std::string description)
    : chapter_(std::move(chapter)), description_(std::move(description)), app_(description_, chapter_) {
  app_.add_option("--problem", problem_sel_, "Problem to run, or 'all'");
  app_.add_option("--version", version_sel_, "Version to run (see --list), or 'all'");
  app_.add_flag("--list", list_, "List the problems and versions, then exit");
  app_.add_option("--reps", reps_, "Timed repetitions per version")->check(CLI::Range(1, 100000));
  app_.add_option("--warmup", warmup_, "Untimed launches before timing")->check(CLI::Range(0, 100000));
  app_.add_option("--json", json_path_, "Write the results to this JSON file");
  app_.add_option("--results-dir", results_dir_,
                  "Write the results to DIR/<gpu>.json (what the Meson benchmark target does)");
  app_.add_flag("--no-check", no_check_, "Skip the comparisons with the CPU reference");
  seed_ = test_seed();
  app_.add_option("--seed", seed_, "Seed for the random inputs (default: $TUT_SEED or fixed)");
}

void BenchApp::add_problem(const std::string& problem, const std::vector<std::string>& versions) {
  problems_.emplace_back(problem, versions);
}

bool BenchApp::wants(const std::string& problem) const {
  return problem_sel_ == "all" || problem_sel_ == problem;
}

bool BenchApp::wants(const std::string& problem, const std::string& version) const {
  return wants(problem) && (version_sel_ == "all" || version_sel_ == version);
}

std::optional<int> BenchApp::parse(int argc, char** argv) {
  try {
    app_.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app_.exit(e);
  } catch (const CLI::ParseError& e) {
    app_.exit(e);  // prints CLI11's message and usage hint
    return 2;
  }
  if (list_) {
    for (const auto& [p, versions] : problems_) {
      std::cout << p << "\n";
      for (const auto& v : versions) std::cout << "  " << v << "\n";
    }
    return 0;
  }
  bool problem_ok = problem_sel_ == "all", version_ok = version_sel_ == "all";
  for (const auto& [p, versions] : problems_) {
    if (p == problem_sel_) problem_ok = true;
    if (wants(p) && std::find(versions.begin(), versions.end(), version_sel_) != versions.end()) version_ok = true;
  }
  if (!problem_ok || !version_ok) {
    std::cerr << "error: no " << (problem_ok ? "version '" + version_sel_ + "'" : "problem '" + problem_sel_ + "'")
              << " in " << chapter_ << " (see --list)\n";
    return 2;
  }
  if (!has_cuda_device()) {
    std::cout << "no CUDA device: skipping the " << chapter_ << " benchmark\n";
    return 77;
  }
  device_ = query_device();
  ceiling_ = measure_copy_ceiling();
  return std::nullopt;
}

RunResult BenchApp::run_case(const BenchCase& c, double ceiling_GBps) {
  RunResult r;
  r.c = c;
  const bool check = !no_check_ && c.check;
  auto verify_now = [&](const char* when) {
    TUT_CUDA(cudaDeviceSynchronize());
    const VerifyResult v = c.check();
    if (!v.ok() && r.check != "FAIL") {
      r.check = "FAIL";
      r.check_detail = std::string(when) + ": " + v.summary();
    }
  };
  r.check = check ? "pass" : "skipped";
  if (check) {
    c.poison(nullptr);
    c.run(nullptr);
    verify_now("first run");
  }
  TimingOptions opt;
  opt.warmup = warmup_;
  opt.reps = reps_;
  opt.flush_bytes = l2_flush_bytes(c.working_set ? c.working_set : c.bytes, device_.l2_bytes);
  r.stats = time_kernel(c.run, opt);
  if (check) verify_now("after timing");  // the last timed launch's output
  r.GBps = r.stats.median > 0 ? static_cast<double>(c.bytes) / (r.stats.median * 1e-3) / 1e9 : 0;
  r.fraction_of_copy = ceiling_GBps > 0 ? r.GBps / ceiling_GBps : 0;
  return r;
}

int BenchApp::run() {
  std::vector<RunResult> results;
  std::map<std::string, double> first_ms;  // speedup is relative to each problem's first version
  for (const auto& c : cases_) {
    RunResult r = run_case(c, ceiling_.GBps);
    auto [it, inserted] = first_ms.emplace(c.problem, r.stats.median);
    r.speedup_vs_first = r.stats.median > 0 ? it->second / r.stats.median : 0;
    if (r.check == "FAIL") std::cerr << c.problem << " " << c.version << ": check FAILED: " << r.check_detail << "\n";
    results.push_back(std::move(r));
  }
  print_table(results);
  if (!json_path_.empty()) write_json(results, json_path_);
  if (!results_dir_.empty()) write_json(results, results_dir_ + "/" + gpu_slug(device_.name) + ".json");
  const bool failed = std::any_of(results.begin(), results.end(), [](const RunResult& r) { return r.check == "FAIL"; });
  return failed ? 1 : 0;
}

namespace {
std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string pad(const std::string& s, std::size_t w, bool right = false) {
  if (s.size() >= w) return s;
  return right ? std::string(w - s.size(), ' ') + s : s + std::string(w - s.size(), ' ');
}
}  // namespace

void BenchApp::print_table(const std::vector<RunResult>& results) const {
  std::cout << "\n" << chapter_ << " on " << device_.name << " (" << device_.sm_count << " SMs, L2 "
            << device_.l2_bytes / (1 << 20) << " MiB, datasheet DRAM " << fmt("%.0f", device_.theoretical_dram_GBps())
            << " GB/s)\n"
            << "copy ceiling, measured now: " << fmt("%.1f", ceiling_.GBps) << " GB/s (16-byte copy, "
            << ceiling_.bytes / (1 << 20) << " MiB read+written; best shape: " << ceiling_.shape << "), " << warmup_ << " warm-up, " << reps_
            << " timed reps, seed " << seed_ << ", commit " << build_commit() << "\n";
  std::size_t vw = 7, sw = 7;
  for (const auto& r : results) {
    vw = std::max(vw, r.c.version.size());
    sw = std::min<std::size_t>(std::max(sw, r.c.summary.size()), 60);
  }
  std::string current;
  for (const auto& r : results) {
    if (r.c.problem != current) {
      current = r.c.problem;
      const double floor_ms = ceiling_.GBps > 0 ? r.c.bytes / (ceiling_.GBps * 1e9) * 1e3 : 0;
      std::cout << "\n" << current << "  " << r.c.size << "  floor: " << fmt("%.3f", r.c.bytes / 1e9) << " GB -> "
                << fmt("%.4f", floor_ms) << " ms at the copy ceiling\n"
                << pad("version", vw) << "  " << pad("summary", sw) << "  regs  " << pad("ms median [min-max]", 28)
                << "  " << pad("GB/s", 7, true) << "  " << pad("of copy", 7, true) << "  " << pad("vs v0", 6, true)
                << "  check\n";
    }
    std::string summary = r.c.summary.size() > sw ? r.c.summary.substr(0, sw - 3) + "..." : r.c.summary;
    std::cout << pad(r.c.version, vw) << "  " << pad(summary, sw) << "  " << pad(r.c.regs < 0 ? "-" : std::to_string(r.c.regs), 4, true)
              << "  "
              << pad(fmt("%.4f", r.stats.median) + " [" + fmt("%.4f", r.stats.min) + "-" + fmt("%.4f", r.stats.max) + "]", 28)
              << "  " << pad(fmt("%.1f", r.GBps), 7, true) << "  " << pad(fmt("%.3f", r.fraction_of_copy), 7, true) << "  "
              << pad(fmt("%.2fx", r.speedup_vs_first), 6, true) << "  " << r.check << "\n";
  }
  std::cout << std::flush;
}

void BenchApp::write_json(const std::vector<RunResult>& results, const std::string& path) const {
  using nlohmann::json;
  json runs = json::array();
  for (const auto& r : results) {
    runs.push_back({{"problem", r.c.problem},
                    {"size", r.c.size},
                    {"version", r.c.version},
                    {"summary", r.c.summary},
                    {"bytes", r.c.bytes},
                    {"flops", r.c.flops},
                    {"ms_median", r.stats.median},
                    {"ms_min", r.stats.min},
                    {"ms_max", r.stats.max},
                    {"reps", r.stats.reps},
                    {"GBps", r.GBps},
                    {"fraction_of_copy", r.fraction_of_copy},
                    {"speedup_vs_first", r.speedup_vs_first},
                    {"regs", r.c.regs < 0 ? json(nullptr) : json(r.c.regs)},
                    {"check", r.check}});
  }
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  json doc = {{"chapter", chapter_},
              {"gpu", device_.name},
              {"commit", build_commit()},
              {"date", date},
              {"copy_ceiling_GBps", ceiling_.GBps},
              {"copy_ceiling_bytes", ceiling_.bytes},
              {"copy_ceiling_shape", ceiling_.shape},
              {"device",
               {{"compute_capability", std::to_string(device_.cc_major) + "." + std::to_string(device_.cc_minor)},
                {"sm_count", device_.sm_count},
                {"l2_bytes", device_.l2_bytes},
                {"max_threads_per_sm", device_.max_threads_per_sm},
                {"datasheet_dram_GBps", device_.theoretical_dram_GBps()}}},
              {"cuda_runtime", CUDART_VERSION},
              {"seed", seed_},
              {"warmup", warmup_},
              {"runs", runs}};
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << doc.dump(2) << "\n";
  std::cout << "wrote " << path << "\n";
}

}  // namespace tut

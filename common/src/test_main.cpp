// main() for every doctest executable in the tutorial.
//
// It prints the seed (set TUT_SEED to replay a failure), then runs doctest. When every test case
// was skipped (no CUDA device for GPU tests, no cuobjdump for SASS tests) and nothing failed, it
// exits 77 so Meson reports SKIP instead of a silent OK. A test case that ran but made no assertion
// fails the executable: a test must be able to fail.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "tut/device.hpp"
#include "tut/gpu_test.hpp"
#include "tut/random.hpp"
#include "tut/sass.hpp"

#include <iostream>
#include <string>
#include <vector>

namespace tut {

doctest::skip needs_gpu_memory(std::size_t bytes) {
  if (!has_cuda_device()) return doctest::skip(true);
  try {
    return doctest::skip(query_device().total_mem_bytes < bytes);
  } catch (...) {
    return doctest::skip(true);
  }
}

namespace {
doctest::TestRunStats g_stats{};
std::string g_current;
std::vector<std::string> g_no_asserts;  // test cases that ran and asserted nothing

struct RunStatsListener : doctest::IReporter {
  explicit RunStatsListener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& s) override { g_stats = s; }
  void test_case_start(const doctest::TestCaseData& d) override { g_current = d.m_name; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& s) override {
    if (s.numAssertsCurrentTest == 0) g_no_asserts.push_back(g_current);
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
}  // namespace
}  // namespace tut

REGISTER_LISTENER("tut_run_stats", 1, tut::RunStatsListener);

int main(int argc, char** argv) {
  const bool gpu = tut::has_cuda_device();
  const auto cuobjdump = tut::find_cuobjdump();
  std::uint64_t seed = 0;
  try {
    seed = tut::test_seed();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  std::cout << "seed " << seed << " (set TUT_SEED to replay); device: "
            << (gpu ? tut::query_device().name : std::string("none"))
            << "; cuobjdump: " << cuobjdump.value_or("not found") << "\n";
  doctest::Context ctx(argc, argv);
  const int rc = ctx.run();
  if (ctx.shouldExit() || rc != 0) return rc;
  const auto& s = tut::g_stats;
  if (s.numTestCases > 0 && s.numTestCasesPassingFilters == 0) {
    std::cout << "every test case was skipped (each needs a CUDA device or cuobjdump, see above): reporting SKIP\n";
    return 77;
  }
  if (!tut::g_no_asserts.empty()) {
    for (const auto& name : tut::g_no_asserts)
      std::cout << "test case \"" << name << "\" ran but made no assertion: a test that cannot fail proves nothing\n";
    return 1;
  }
  return 0;
}

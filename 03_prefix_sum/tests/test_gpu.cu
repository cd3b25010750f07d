// Every registered version against the CPU reference on the GPU; the single-pass scan under
// repeated launches; NaN and infinities; the grader against known-wrong kernels; past 2^31.
#include <doctest/doctest.h>

#include "tests/wrong_solutions.cuh"
#include "tut/gpu_test.hpp"
#include "tut/grading.hpp"
#include "versions.cuh"

#include <string>
#include <vector>

namespace {

using ch03::kTile;

// Sizes around a segment of 1024, with 2^26 + 3 outside the sanitizer runs (the `large` suite goes
// past 2^31). Segments of 128, 256, 512 and 1024 run v1-v3's compiled forms, the others their
// run-time form.
std::vector<tut::Case> segmented_cases() {
  std::vector<tut::Case> cases;
  std::vector<std::int64_t> sizes = {0, 1, 31, 33, 1000, 1023, 1024, 1025, 4099, (1 << 20) + 1};
  if (!tut::under_sanitizer()) sizes.push_back((std::int64_t{1} << 26) + 3);
  for (std::int64_t n : sizes) cases.push_back(ch03::segmented_case(n, 1024));
  // Other segments: the other compiled ones (128, 256, 512), and for the run-time form one element,
  // one warp, a neighbour of each compiled segment, not a multiple of 32 or of 4, just below a block.
  // n: shorter than a segment, a partial last segment, whole segments only (2^20). Under a sanitizer,
  // 2^20 + 1 for the first four segments only.
  const bool quick = tut::under_sanitizer();
  int k = 0;
  for (std::int64_t segment : {1, 32, 100, 1000, 128, 256, 512, 127, 129, 255, 257, 511, 513}) {
    std::vector<std::int64_t> ns = {1, 33, 4099};
    if (!quick) ns.insert(ns.end(), {std::int64_t{1} << 20, (1 << 20) + 1});
    else if (k++ < 4) ns.push_back((1 << 20) + 1);
    for (std::int64_t n : ns) cases.push_back(ch03::segmented_case(n, segment));
  }
  return cases;
}

// v1-v3 in their run-time form (SEG = 0) at every segment, the compiled ones included: the ladder
// itself launches that form only where no compiled one exists.
template <class T>
tut::Problem<ch03::ScanInstance<T>> runtime_forms() {
  auto p = ch03::segscan_problem<T>();
  p.versions = {
      ch03::segmented_version<T>("v1_shared<0>", "", &ch03::v1_shared_form<0, T>, {}),
      ch03::segmented_version<T>("v2_double_buffer<0>", "", &ch03::v2_double_buffer_form<0, T>, {}),
      ch03::segmented_version<T>("v3_warp_shuffle<0>", "", &ch03::v3_warp_shuffle_form<0, T>, {}),
  };
  return p;
}

std::vector<tut::Case> compiled_segment_cases() {
  std::vector<tut::Case> cases;
  for (std::int64_t segment : ch03::kCompiledSegments)
    for (std::int64_t n : {std::int64_t{33}, segment, 3 * segment + 7, std::int64_t{(1 << 20) + 1}})
      if (n < (1 << 20) || !tut::under_sanitizer()) cases.push_back(ch03::segmented_case(n, segment));
  return cases;
}

std::vector<tut::Case> device_cases() {
  std::vector<tut::Case> cases;
  // Around v6's tiles (4096) and v7's (V7Config::tile, 28672), and enough tiles for look-backs of
  // several steps.
  const std::int64_t v7_tile = ch03::V7Config::tile;
  std::vector<std::int64_t> sizes = {0,           1,           31,          33,          1000,
                                     kTile - 1,   kTile,       kTile + 1,   v7_tile - 1, v7_tile + 1,
                                     33 * kTile + 7, 70 * v7_tile + 5, (1 << 20) + 1};
  if (!tut::under_sanitizer()) sizes.push_back((std::int64_t{1} << 26) + 3);
  for (std::int64_t n : sizes) cases.push_back(tut::flat_case(n));
  return cases;
}

tut::CheckResult grade_segmented(ch03::SegmentedLaunch launch, std::int64_t n, std::int64_t segment) {
  const auto v = ch03::segmented_version<int>("wrong", "", launch, {});
  return tut::grade(ch03::segscan_problem<int>(), v, ch03::segmented_case(n, segment));
}

// Launches every device-wide version `launches` times on one instance, each into a poisoned
// output, and compares each launch with the reference on the device: a look-back that reads a stale
// or half-written flag shows up as a wrong element in some launch.
template <class T>
void stress(const tut::Problem<ch03::ScanInstance<T>>& p, std::int64_t n, int launches) {
  const auto inst = p.make(tut::flat_case(n), tut::test_options(p.name, tut::flat_case(n)));
  const std::vector<T>& ref = inst->reference();
  tut::DeviceBuffer<T> expected(ref);
  for (const auto& v : p.versions) {
    const tut::Trial t = tut::make_trial(v, *inst);
    int bad_launches = 0;
    for (int k = 0; k < launches; ++k) {
      t.poison(nullptr);
      t.before(nullptr);
      t.launch(nullptr);
      bad_launches += tut::count_different_bytes(inst->y(), expected.data(), n * sizeof(T)) != 0;
    }
    CHECK_MESSAGE(bad_launches == 0, p.name, " ", v.name, ": ", bad_launches, " of ", launches, " launches differ at n=", n);
  }
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("segscan_i32: every version matches the reference, any n, any segment" * tut::needs_gpu()) {
    tut::check_cases(ch03::segscan_problem<int>(), segmented_cases());
  }

  TEST_CASE("segscan_f32: every version matches, NaN and infinities included" * tut::needs_gpu()) {
    tut::check_cases(ch03::segscan_problem<float>(), segmented_cases());
  }

  TEST_CASE("segscan: v1-v3's run-time form at the segments the ladder runs compiled" * tut::needs_gpu()) {
    tut::check_cases(runtime_forms<int>(), compiled_segment_cases());
    tut::check_cases(runtime_forms<float>(), compiled_segment_cases());
  }

  TEST_CASE("a compiled form refuses any other segment" * tut::needs_gpu()) {
    tut::DeviceBuffer<int> buf(1024);
    buf.fill_bytes(0);  // the run-time form below reads it
    const auto v1_256 = &ch03::v1_shared_form<256, int>;
    const auto v3_1024 = &ch03::v3_warp_shuffle_form<1024, int>;
    const auto v2_runtime = &ch03::v2_double_buffer_form<0, int>;
    CHECK_THROWS_WITH_AS(v1_256(nullptr, 1024, 128, buf.data(), buf.data()),
                         doctest::Contains("compiled for segments of 256 got 128"), std::invalid_argument);
    CHECK_THROWS_AS(v3_1024(nullptr, 1024, 1000, buf.data(), buf.data()), std::invalid_argument);
    CHECK_NOTHROW(v2_runtime(nullptr, 1024, 256, buf.data(), buf.data()));
    TUT_CUDA(cudaDeviceSynchronize());
  }

  TEST_CASE("device-wide scans: every version and CUB match the reference" * tut::needs_gpu()) {
    tut::check_cases(ch03::scan_problem<int>(), device_cases());
    tut::check_cases(ch03::exclusive_scan_problem<int>(), device_cases());
    tut::check_cases(ch03::scan_problem<float>(), device_cases());
    tut::check_cases(ch03::exclusive_scan_problem<float>(), device_cases());
  }

  TEST_CASE("every version with x and y moved 0-7 elements off their alignment" * tut::needs_gpu()) {
    tut::check_offsets(ch03::segscan_problem<int>(), {ch03::segmented_case(33, 1024), ch03::segmented_case(1000, 1024),
                                                      ch03::segmented_case(4099, 1024), ch03::segmented_case(4099, 256),
                                                      ch03::segmented_case(4099, 100)});
    tut::check_offsets(runtime_forms<int>(), {ch03::segmented_case(4099, 256)});
    tut::check_offsets(ch03::scan_problem<int>(), {33, 4099, 3 * kTile + 5});
    tut::check_offsets(ch03::exclusive_scan_problem<float>(), {33, 4099, 3 * kTile + 5});
  }

  TEST_CASE("device-wide float scans carry NaN and infinities across tiles" * tut::needs_gpu()) {
    // The first elements hold ±0, +inf, -inf and NaN, so every later sum is NaN: each tile must
    // receive it through the look-back (v7) or the partials (v6).
    for (const auto* p : {&ch03::scan_problem<float>(), &ch03::exclusive_scan_problem<float>()}) {
      const bool exclusive = p->name.rfind("exclusive", 0) == 0;
      for (std::int64_t n : {std::int64_t{1000}, 5 * kTile + 3}) {
        tut::InstanceOptions o = tut::test_options(p->name, tut::flat_case(n));
        ch03::ScanInstance<float> inst(tut::flat_case(n), o, false, exclusive,
                                       ch03::input_spec<float>().with_specials());
        CHECK(std::isnan(inst.reference().back()));
        for (const auto& v : p->versions) {
          const tut::CheckResult r = tut::run_once(v, inst);
          CHECK_MESSAGE(r.ok(), p->name, " ", v.name, " n=", n, ": ", r.summary());
        }
      }
    }
  }

  TEST_CASE("v7 stays right over many launches with thousands of tiles" * tut::needs_gpu()) {
    // No reset between launches: each launch's epoch must hide the previous launch's flags.
    const bool quick = tut::under_sanitizer();
    // 2^26 + 17 elements are 2341 of v7's tiles (28672 elements each) and 16385 of v6's.
    const std::int64_t n = quick ? 40 * kTile + 3 : (std::int64_t{1} << 26) + 17;
    const int launches = quick ? 3 : 300;
    stress(ch03::scan_problem<int>(), n, launches);
    stress(ch03::exclusive_scan_problem<int>(), n, launches / 3);
    stress(ch03::scan_problem<float>(), n, launches / 3);
  }

  TEST_CASE("the grader rejects known-wrong block scans" * tut::needs_gpu()) {
    // Without bounds checks: right when n is a multiple of the segment, writes past y otherwise.
    CHECK(grade_segmented(ch03::wrong::unguarded_v0, 4096, 1024).ok());
    const auto past = grade_segmented(ch03::wrong::unguarded_v0, 1000, 1024);
    CHECK_FALSE(past.ok());
    CHECK(past.summary().find("outside [0, n)") != std::string::npos);
    // Warp scans without the scan of warp totals: right for segments of 32, wrong for 1024.
    CHECK(grade_segmented(ch03::wrong::warps_only, 4099, 32).ok());
    CHECK_FALSE(grade_segmented(ch03::wrong::warps_only, 4099, 1024).ok());
  }

  TEST_CASE("launchers reject bad arguments with a clear error" * tut::needs_gpu()) {
    tut::DeviceBuffer<int> buf(16);
    CHECK_THROWS_WITH_AS(ch03::v3_warp_shuffle<int>(nullptr, 16, 2048, buf.data(), buf.data()),
                         doctest::Contains("segment must hold 1 to 1024"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(ch03::v7_decoupled_lookback<int>(nullptr, 16, false, buf.data(), buf.data(), nullptr, 0),
                         doctest::Contains("needs 136 bytes of scratch"), std::invalid_argument);
  }
}

// More than 2^31 elements: 32-bit indexing would wrap here. Each case needs about 26 GB of device
// memory and 17 GB of host memory; run with `meson test -C build --suite large`.
TEST_SUITE("large") {
  const std::int64_t kHuge = (std::int64_t{1} << 31) + 9;

  TEST_CASE("segscan_i32: every version past 2^31 elements" * tut::needs_gpu_memory(std::size_t{30} << 30)) {
    tut::check_all_at(ch03::segscan_problem<int>(), ch03::segmented_case(kHuge, 1024));
  }

  TEST_CASE("segscan_i32: v1-v3's run-time form past 2^31 elements" * tut::needs_gpu_memory(std::size_t{30} << 30)) {
    tut::check_all_at(runtime_forms<int>(), ch03::segmented_case(kHuge, 1000));
  }

  TEST_CASE("scan_i32: every version past 2^31 elements" * tut::needs_gpu_memory(std::size_t{30} << 30)) {
    tut::check_all_at(ch03::scan_problem<int>(), tut::flat_case(kHuge));
  }
}

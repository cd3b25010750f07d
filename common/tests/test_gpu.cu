// common on a real device: buffers, error reporting, device info, timing, the copy ceiling, and the
// problem model's machinery (arrays with guards, named outputs, scratch memory and resets) on a
// small problem with two outputs.
#include <doctest/doctest.h>

#include "tut/arrays.cuh"
#include "tut/buffer.hpp"
#include "tut/check.hpp"
#include "tut/device.hpp"
#include "tut/gpu_test.hpp"
#include "tut/grading.hpp"
#include "tut/problem.hpp"
#include "tut/timing.hpp"

#include <cstdint>
#include <numeric>
#include <vector>

namespace {
__global__ void add_one(int* p, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1;
}

// A problem with two outputs of different types and lengths: y[i] = 2 x[i] (int32) and a mask of
// ceil(n/32) words whose bit j of word w says x[32w + j] > 0.
class TwoOutputs : public tut::Instance {
 public:
  TwoOutputs(const tut::Case& c, const tut::InstanceOptions& o)
      : n(c.numel()),
        x(n, o.seed, tut::InputSpec::uniform(-3, 3), o.input_offset(0)),
        y("y", n, tut::Rule::exact(), o.output_offset(0)),
        mask("mask", (n + 31) / 32, tut::Rule::bitwise(), o.output_offset(1)) {}
  void poison(cudaStream_t s) override {
    y.poison(s);
    mask.poison(s);
  }
  tut::CheckResult check() override {
    tut::CheckResult r;
    r.add("y", y.check([&](std::int64_t i) { return 2 * x.at(i); }));
    r.add("mask", mask.check([&](std::int64_t w) {
      std::uint32_t bits = 0;
      for (std::int64_t j = 0; j < 32 && 32 * w + j < n; ++j) bits |= std::uint32_t{x.at(32 * w + j) > 0} << j;
      return bits;
    }));
    return r;
  }
  std::size_t working_set() const override { return x.bytes() + y.bytes() + mask.bytes(); }

  std::int64_t n;
  tut::InputArray<std::int32_t> x;
  tut::OutputArray<std::int32_t> y;
  tut::OutputArray<std::uint32_t> mask;
};

// Blocks take their tile from a counter in scratch memory, in the order they start (as a
// single-pass scan does): correct only if the counter is zero before every launch.
__global__ void two_outputs_kernel(const std::int32_t* x, std::int32_t* y, std::uint32_t* mask, std::int64_t n,
                                   unsigned* tile_counter, bool flip_a_bit) {
  __shared__ unsigned tile;
  if (threadIdx.x == 0) tile = atomicAdd(tile_counter, 1u);
  __syncthreads();
  const std::int64_t i = static_cast<std::int64_t>(tile) * blockDim.x + threadIdx.x;
  const bool in = i < n;
  const bool positive = in && x[i] > 0;
  const unsigned bits = __ballot_sync(0xffffffffu, positive);
  if (!in) return;
  y[i] = 2 * x[i];
  if (threadIdx.x % 32 == 0) mask[i / 32] = bits ^ (flip_a_bit && i == 64 ? 2u : 0u);
}

tut::Version<TwoOutputs> two_outputs_version(const char* name, bool flip_a_bit, bool with_reset) {
  tut::Version<TwoOutputs> v;
  v.name = name;
  v.summary = "tiles from a counter in scratch memory";
  v.scratch_bytes = [](const TwoOutputs&) { return sizeof(unsigned); };
  if (with_reset) v.reset = [](TwoOutputs&, tut::Scratch& s, cudaStream_t st) { s.zero(st); };
  v.launch = [flip_a_bit](TwoOutputs& t, tut::Scratch& s, cudaStream_t st) {
    if (t.n == 0) return;
    const unsigned blocks = static_cast<unsigned>((t.n + 255) / 256);
    two_outputs_kernel<<<blocks, 256, 0, st>>>(t.x.data(), t.y.data(), t.mask.data(), t.n, s.as<unsigned>(),
                                               flip_a_bit);
    TUT_CHECK_LAUNCH("two_outputs_kernel");
  };
  v.kernels = {TUT_KERNEL(two_outputs_kernel)};
  return v;
}

const tut::Problem<TwoOutputs>& two_outputs() {
  static const auto p = [] {
    tut::Problem<TwoOutputs> p;
    p.name = "two_outputs";
    p.dtype = "i32";
    p.default_case = tut::flat_case(1000);
    p.floor = [](const tut::Case& c) { return tut::Floor{static_cast<std::uint64_t>(c.numel()) * 8, 0}; };
    p.make = [](const tut::Case& c, const tut::InstanceOptions& o) { return std::make_unique<TwoOutputs>(c, o); };
    p.versions = {two_outputs_version("right", false, true)};
    return p;
  }();
  return p;
}
}  // namespace

TEST_CASE("DeviceBuffer round-trips, poisons and moves" * tut::needs_gpu()) {
  std::vector<int> host(1000);
  std::iota(host.begin(), host.end(), -500);
  tut::DeviceBuffer<int> d(host);
  CHECK(d.size() == 1000);
  CHECK(d.bytes() == 4000);
  CHECK(d.to_host() == host);
  d.poison();
  const auto poisoned = d.to_host();
  CHECK(poisoned[0] == static_cast<int>(0xCDCDCDCDu));
  CHECK(poisoned[999] == static_cast<int>(0xCDCDCDCDu));
  tut::DeviceBuffer<int> moved(std::move(d));
  CHECK(d.data() == nullptr);
  CHECK(moved.size() == 1000);
  CHECK_THROWS_AS(moved.upload(host.data(), 10, 995), std::out_of_range);
  tut::DeviceBuffer<int> empty(0);
  CHECK(empty.to_host().empty());
}

// compute-sanitizer reports the deliberate API errors below as findings, so this case is skipped there.
TEST_CASE("a failing call throws with the expression and CUDA's reason" * tut::needs_gpu(tut::under_sanitizer())) {
  try {
    TUT_CUDA(cudaSetDevice(4096));
    FAIL("cudaSetDevice(4096) should have thrown");
  } catch (const tut::CudaError& e) {
    const std::string what = e.what();
    CHECK(e.code() == cudaErrorInvalidDevice);
    CHECK(what.find("cudaSetDevice(4096)") != std::string::npos);
    CHECK(what.find("test_gpu.cu") != std::string::npos);
  }
  // A launch with an impossible block size is reported at the launch site, then cleared.
  tut::DeviceBuffer<int> d(std::vector<int>(10, 0));
  add_one<<<1, 4096>>>(d.data(), 10);
  CHECK_THROWS_AS(TUT_CHECK_LAUNCH("add_one"), tut::CudaError);
  add_one<<<1, 32>>>(d.data(), 10);
  CHECK_NOTHROW(TUT_CHECK_LAUNCH("add_one"));
  CHECK_NOTHROW(TUT_CUDA(cudaDeviceSynchronize()));
}

TEST_CASE("device info is plausible" * tut::needs_gpu()) {
  const auto d = tut::query_device();
  CHECK(!d.name.empty());
  CHECK(d.sm_count > 0);
  CHECK(d.max_threads_per_sm >= 1024);
  CHECK(d.l2_bytes > 0);
  CHECK(d.theoretical_dram_GBps() > 50);
  CHECK(d.total_mem_bytes > (std::size_t{1} << 30));
  CHECK(tut::registers_per_thread(reinterpret_cast<const void*>(&add_one)) > 0);
  CHECK(tut::registers_per_thread(nullptr) == -1);
}

TEST_CASE("time_kernel runs before+launch warmup+reps times and times only the launch" * tut::needs_gpu()) {
  tut::DeviceBuffer<int> d(std::vector<int>(1 << 20, 0));
  tut::DeviceBuffer<int> other(std::vector<int>(1 << 20, 0));
  tut::TimingOptions opt;
  opt.warmup = 2;
  opt.reps = 7;
  opt.flush_bytes = 1 << 20;
  const auto s = tut::time_kernel(
      [&](cudaStream_t st) {
        add_one<<<(1 << 20) / 256, 256, 0, st>>>(d.data(), 1 << 20);
        TUT_CHECK_LAUNCH("add_one");
      },
      opt, nullptr,
      [&](cudaStream_t st) {
        add_one<<<(1 << 20) / 256, 256, 0, st>>>(other.data(), 1 << 20);
        TUT_CHECK_LAUNCH("add_one");
      });
  CHECK(s.reps == 7);
  CHECK(s.min > 0);
  CHECK(s.min <= s.median);
  CHECK(s.median <= s.max);
  CHECK(d.to_host().back() == 9);
  CHECK(other.to_host().front() == 9);
}

TEST_CASE("the copy ceiling is the best of our copies and the driver's, with read and write streams" * tut::needs_gpu()) {
  const auto d = tut::query_device();
  const auto c = tut::measure_copy_ceiling(6, std::size_t{256} << 20);
  MESSAGE("copy ceiling " << c.GBps << " GB/s (" << c.shape << "); read " << c.read_GBps << ", write " << c.write_GBps
                          << "; datasheet " << d.theoretical_dram_GBps() << " GB/s");
  CHECK(c.bytes >= std::size_t{128} << 20);
  REQUIRE(c.candidates.size() == 6);
  double best = 0;
  int driver = 0;
  for (const auto& k : c.candidates) {
    best = std::max(best, k.GBps);
    driver += !k.own;
    CHECK(k.stats.reps == 6);
  }
  CHECK(driver == 1);
  CHECK(c.GBps == best);
  REQUIRE(c.best_own() != nullptr);
  CHECK(c.best_own()->own);
  CHECK(c.read_GBps > 0);
  CHECK(c.write_GBps > 0);
  if (!tut::under_sanitizer()) {  // instrumented kernels run far slower
    CHECK(c.GBps > 0.2 * d.theoretical_dram_GBps());
    CHECK(c.GBps < 1.05 * d.theoretical_dram_GBps());
  }
}

TEST_CASE("a load that misses the caches takes hundreds of nanoseconds" * tut::needs_gpu(tut::under_sanitizer())) {
  const double ns = tut::measure_dram_latency_ns(std::size_t{256} << 20, 2000);
  MESSAGE("DRAM latency " << ns << " ns");
  CHECK(ns > 100);
  CHECK(ns < 5000);
}

TEST_CASE("inputs filled on the device equal their host regeneration, guards poisoned" * tut::needs_gpu()) {
  for (int off : {0, 3}) {
    tut::InputArray<float> x(1000, 99, tut::InputSpec::uniform(-1, 1).with_specials(), off);
    CHECK(reinterpret_cast<std::uintptr_t>(x.data()) % 16 == static_cast<std::uintptr_t>(off) * 4);
    std::vector<float> got(1000);
    TUT_CUDA(cudaMemcpy(got.data(), x.data(), 4000, cudaMemcpyDeviceToHost));
    int same = 0;
    for (int i = 0; i < 1000; ++i) {
      const float want = x.at(i);
      same += std::memcmp(&got[i], &want, 4) == 0;
    }
    CHECK(same == 1000);
    float before = 0;
    TUT_CUDA(cudaMemcpy(&before, x.data() - 1, 4, cudaMemcpyDeviceToHost));
    std::uint32_t bits = 0;
    std::memcpy(&bits, &before, 4);
    CHECK(bits == 0xCDCDCDCDu);
  }
}

TEST_CASE("named outputs: each with its rule, a failure names the output, guards catch overruns" * tut::needs_gpu()) {
  const auto& p = two_outputs();
  for (std::int64_t n : {0, 1, 31, 33, 1000, 4099}) {
    const auto r = tut::grade(p, p.versions[0], tut::flat_case(n), tut::test_options("two_outputs", n, {1}, {2, 5}));
    CHECK_MESSAGE(r.ok(), "n=", n, ": ", r.summary());
    CHECK(r.outputs.size() == 2);
  }
  const auto wrong = two_outputs_version("wrong_mask", true, true);
  const auto r = tut::grade(p, wrong, tut::flat_case(1000), tut::test_options("two_outputs", 1000));
  CHECK_FALSE(r.ok());
  CHECK(r["y"].ok());
  CHECK(r["mask"].mismatches == 1);
  CHECK(r.summary().find("mask: 1 of 32 elements differ; [2]") != std::string::npos);
}

TEST_CASE("count_different_bytes counts differing bytes, aligned or not" * tut::needs_gpu()) {
  std::vector<unsigned char> h(1000, 7);
  tut::DeviceBuffer<unsigned char> a(h), b(h);
  CHECK(tut::count_different_bytes(a.data(), b.data(), 1000) == 0);
  h[0] = 1, h[17] = 2, h[999] = 3;
  b.upload(h);
  CHECK(tut::count_different_bytes(a.data(), b.data(), 1000) == 3);
  CHECK(tut::count_different_bytes(a.data() + 1, b.data() + 1, 999) == 2);  // not 16-byte aligned
  CHECK(tut::count_different_bytes(a.data(), b.data(), 0) == 0);
}

TEST_CASE("scratch memory and resets: a counter reset before every launch, untimed" * tut::needs_gpu()) {
  const auto& p = two_outputs();
  const auto inst = p.make(tut::flat_case(4099), tut::test_options("two_outputs", 4099));
  for (bool with_reset : {true, false}) {
    const auto v = two_outputs_version("counter", false, with_reset);
    const tut::Trial t = tut::make_trial(v, *inst);
    CHECK(tut::checked_run(t).ok());  // the first launch finds the counter zeroed by allocation... or reset
    tut::time_kernel(t.launch, tut::TimingOptions{1, 3, 0}, nullptr, t.before);
    t.poison(nullptr);
    t.before(nullptr);
    t.launch(nullptr);
    TUT_CUDA(cudaDeviceSynchronize());
    // Without the reset, the counter has moved past the last tile and nothing is written.
    CHECK(t.check().ok() == with_reset);
  }
  tut::Scratch s(16);
  CHECK(s.bytes() == 16);
  CHECK_NOTHROW(s.as<unsigned>(12));
  CHECK_THROWS_AS(s.as<unsigned>(16), std::out_of_range);
  CHECK_THROWS_AS(s.as<unsigned>(2), std::invalid_argument);
}

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

#include <chrono>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace {
__global__ void add_one(int* p, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1;
}

// A problem with two outputs of different types and lengths: y[i] = 2 x[i] (int32) and a mask of
// ceil(n/32) words whose bit j of word w says y[32w + j] > 0, judged against the kernel's own y (a
// host view of another output); and a state operand, a running sum that each launch adds
// x[0] + 100 to, restored before every launch.
class TwoOutputs : public tut::Instance {
 public:
  TwoOutputs(const tut::Case& c, const tut::InstanceOptions& o)
      : Instance(o),
        n(c.numel()),
        x(input<std::int32_t>("x", n, tut::InputSpec::uniform(-3, 3))),
        y(output<std::int32_t>("y", n, tut::Rule::exact()).expect([this](std::int64_t i) { return 2 * x.at(i); })),
        mask(output<std::uint32_t>("mask", (n + 31) / 32, tut::Rule::bitwise()).judge([this](std::int64_t w, std::uint32_t got) {
          std::uint32_t bits = 0;
          for (std::int64_t j = 0; j < 32 && 32 * w + j < n; ++j) bits |= std::uint32_t{y.host(32 * w + j) > 0} << j;
          return got == bits ? std::string() : std::to_string(bits) + " (the bits of the kernel's own y)";
        })),
        total(state<std::int32_t>("total", 1, tut::InputSpec::uniform(-100, 100), tut::Rule::exact()).expect([this](std::int64_t) {
          return total.at(0) + (n > 0 ? x.at(0) + 100 : 0);
        })) {}

  std::int64_t n;
  tut::Array<std::int32_t>& x;
  tut::Array<std::int32_t>& y;
  tut::Array<std::uint32_t>& mask;
  tut::Array<std::int32_t>& total;
};

// Blocks take their tile from a counter in scratch memory, in the order they start (as a
// single-pass scan does): correct only if the counter is zero before every launch.
__global__ void two_outputs_kernel(const std::int32_t* x, std::int32_t* y, std::uint32_t* mask, std::int32_t* total,
                                   std::int64_t n, unsigned* tile_counter, bool flip_a_bit) {
  __shared__ unsigned tile;
  if (threadIdx.x == 0) tile = tile_counter ? atomicAdd(tile_counter, 1u) : blockIdx.x;  // null: block order
  __syncthreads();
  const std::int64_t i = static_cast<std::int64_t>(tile) * blockDim.x + threadIdx.x;
  const bool in = i < n;
  const bool positive = in && 2 * x[i] > 0;
  const unsigned bits = __ballot_sync(0xffffffffu, positive);
  if (!in) return;
  y[i] = 2 * x[i];
  if (threadIdx.x % 32 == 0) mask[i / 32] = bits ^ (flip_a_bit && i == 64 ? 2u : 0u);
  if (i == 0) *total += x[0] + 100;
}

tut::Version<TwoOutputs> two_outputs_version(const char* name, bool flip_a_bit, bool with_reset) {
  tut::Version<TwoOutputs> v;
  v.name = name;
  v.summary = "tiles from a counter in scratch memory";
  v.scratch_bytes = [](const TwoOutputs&) { return sizeof(unsigned); };
  if (with_reset) v.reset = [](TwoOutputs&, tut::Workspace& s, cudaStream_t st) { s.zero(st); };
  v.launch = [flip_a_bit](TwoOutputs& t, tut::Workspace& s, cudaStream_t st) {
    if (t.n == 0) return;
    const unsigned blocks = static_cast<unsigned>((t.n + 255) / 256);
    two_outputs_kernel<<<blocks, 256, 0, st>>>(t.x.data(), t.y.data(), t.mask.data(), t.total.data(), t.n,
                                               s.as<unsigned>(), flip_a_bit);
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
    p.case_for = [](const std::vector<std::int64_t>& shape, const tut::Params& params) {
      return tut::Case{tut::case_name(shape, params), shape, params};
    };
    p.default_case = tut::flat_case(1000);
    p.floor = [](const tut::Case& c) { return tut::Floor{static_cast<std::uint64_t>(c.numel()) * 8, 0, {}}; };
    p.make = [](const tut::Case& c, const tut::InstanceOptions& o) { return std::make_unique<TwoOutputs>(c, o); };
    p.versions = {two_outputs_version("right", false, true)};
    return p;
  }();
  return p;
}

// A backward of two_outputs: dx = dy where the forward's saved mask has the bit, else 0. Its saved
// input comes from the forward through a chain.
class MaskBackward : public tut::Instance {
 public:
  MaskBackward(const tut::Case& c, const tut::InstanceOptions& o)
      : Instance(o),
        n(c.numel()),
        dy(input<std::int32_t>("dy", n, tut::InputSpec::uniform(-9, 9))),
        mask(saved<std::uint32_t>("mask", (n + 31) / 32)),
        dx(output<std::int32_t>("dx", n, tut::Rule::exact()).expect([this](std::int64_t i) {
          return ((mask.host(i / 32) >> (i % 32)) & 1u) ? dy.at(i) : 0;
        })) {}
  std::int64_t n;
  tut::Array<std::int32_t>& dy;
  tut::Array<std::uint32_t>& mask;
  tut::Array<std::int32_t>& dx;
};

__global__ void mask_backward_kernel(const std::int32_t* dy, const std::uint32_t* mask, std::int32_t* dx, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) dx[i] = ((mask[i / 32] >> (i % 32)) & 1u) ? dy[i] : 0;
}

// `refuse_above`: the setup refuses cases larger than this, the way a library refuses a shape.
tut::Version<MaskBackward> mask_backward_version(std::int64_t refuse_above) {
  tut::Version<MaskBackward> v;
  v.name = "from_mask";
  v.reads = {"dy", "mask"};
  v.setup = [refuse_above](MaskBackward& b, tut::Workspace& ws) {
    if (b.n > refuse_above) throw tut::Unsupported("n above " + std::to_string(refuse_above));
    ws.emplace<std::int64_t>(b.n);  // what a library's handle would be
  };
  v.launch = [](MaskBackward& b, tut::Workspace& ws, cudaStream_t st) {
    if (b.n == 0) return;
    REQUIRE(ws.get<std::int64_t>() == b.n);
    mask_backward_kernel<<<static_cast<unsigned>((b.n + 255) / 256), 256, 0, st>>>(b.dy.data(), b.mask.data(), b.dx.data(), b.n);
    TUT_CHECK_LAUNCH("mask_backward_kernel");
  };
  return v;
}

const tut::Problem<MaskBackward>& mask_backward() {
  static const auto p = [] {
    tut::Problem<MaskBackward> p;
    p.name = "mask_backward";
    p.dtype = "i32";
    p.case_for = two_outputs().case_for;
    p.default_case = tut::flat_case(1000);
    p.floor = [](const tut::Case& c) { return tut::Floor{static_cast<std::uint64_t>(c.numel()) * 8, 0, {}}; };
    p.make = [](const tut::Case& c, const tut::InstanceOptions& o) { return std::make_unique<MaskBackward>(c, o); };
    p.chain.forward = []() -> const tut::ProblemEntry& {
      static const tut::ProblemEntry e = tut::erase(two_outputs());
      return e;
    };
    p.chain.links = {{"mask", "mask"}};
    p.versions = {mask_backward_version(1 << 20)};
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

TEST_CASE("time_kernel's spin runs before every launch and stays outside the timed interval" *
          tut::needs_gpu(tut::under_sanitizer())) {  // times, which a sanitizer stretches
  tut::DeviceBuffer<int> d(std::vector<int>(1 << 20, 0));
  tut::TimingOptions opt;
  opt.warmup = 2;
  opt.reps = 3;
  opt.busy_cycles = 20'000'000;  // 10 ms at 2 GHz, at least 9.5 ms at any clock up to 2.1 GHz
  const auto start = std::chrono::steady_clock::now();
  const auto s = tut::time_kernel(
      [&](cudaStream_t st) {
        add_one<<<(1 << 20) / 256, 256, 0, st>>>(d.data(), 1 << 20);
        TUT_CHECK_LAUNCH("add_one");
      },
      opt);
  const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  CHECK(d.to_host().front() == 5);
  CHECK(wall_ms >= 5 * 9.5);  // five spins, one before each warm-up and timed launch
  CHECK(s.max < 5.0);         // a launch on 4 MB, without the spin's 10 ms
  opt.busy_cycles = -1;
  CHECK_THROWS_AS(tut::time_kernel([](cudaStream_t) {}, opt), std::invalid_argument);
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
    auto x = tut::random_input<float>(1000, 99, tut::InputSpec::uniform(-1, 1).with_specials(), off);
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

TEST_CASE("declared operands: each output with its rule, a judge reading another output, state restored" * tut::needs_gpu()) {
  const auto& p = two_outputs();
  for (std::int64_t n : {0, 1, 31, 33, 1000, 4099}) {
    const auto c = tut::flat_case(n);
    const auto r = tut::grade(p, p.versions[0], c, tut::test_options("two_outputs", c, {{"x", 1}, {"y", 2}, {"mask", 5}}));
    CHECK_MESSAGE(r.ok(), "n=", n, ": ", r.summary());
    CHECK(r.outputs.size() == 3);  // y, mask and the state
  }
  const auto wrong = two_outputs_version("wrong_mask", true, true);
  const auto r = tut::grade(p, wrong, tut::flat_case(1000));
  CHECK_FALSE(r.ok());
  CHECK(r["y"].ok());
  CHECK(r["total"].ok());
  CHECK(r["mask"].mismatches == 1);
  CHECK(r.summary().find("mask: 1 of 32 elements differ; [2]") != std::string::npos);
  // Operands by name; offsets by name; the working set counts all four.
  const auto inst = p.make(tut::flat_case(100), tut::test_options("two_outputs", tut::flat_case(100), {{"y", 3}}));
  CHECK(inst->operand("y").offset() == 3);
  CHECK(inst->operand("x").offset() == 0);
  CHECK(inst->working_set() == 100 * 4 + 100 * 4 + 4 * 4 + 4);
  CHECK_THROWS_WITH_AS(inst->operand("z"), "no operand 'z' (declared: x, y, mask, total)", std::out_of_range);
  CHECK(inst->names(tut::Role::state) == std::vector<std::string>{"total"});
  // A version that writes less is checked on what it writes only.
  auto y_only = two_outputs_version("y_only", true, true);
  y_only.writes = {"y"};
  const auto ry = tut::grade(p, y_only, tut::flat_case(1000));
  CHECK(ry.ok());
  CHECK(ry.outputs.size() == 1);
  y_only.writes = {"yy"};
  CHECK_THROWS_AS(tut::grade(p, y_only, tut::flat_case(1000)), std::out_of_range);
}

TEST_CASE("state is restored before every launch: a launch that adds to it passes after many" * tut::needs_gpu()) {
  const auto& p = two_outputs();
  const auto inst = p.make(tut::flat_case(4099), tut::test_options("two_outputs", tut::flat_case(4099)));
  const tut::Trial t = tut::make_trial(p.versions[0], *inst);
  tut::time_kernel(t.launch, tut::TimingOptions{2, 5, 0}, nullptr, t.before);
  TUT_CUDA(cudaDeviceSynchronize());
  CHECK(t.check().ok());  // the last timed launch started from the restored total
  // A version that only adds to the total, launched twice with no reset between: it has moved twice.
  tut::Version<TwoOutputs> adds;
  adds.name = "adds";
  adds.writes = {"total"};
  adds.launch = [](TwoOutputs& o, tut::Workspace&, cudaStream_t st) {
    two_outputs_kernel<<<1, 32, 0, st>>>(o.x.data(), o.y.data(), o.mask.data(), o.total.data(), 1, nullptr, false);
    TUT_CHECK_LAUNCH("two_outputs_kernel");
  };
  const tut::Trial twice = tut::make_trial(adds, *inst);
  CHECK(tut::checked_run(twice).ok());
  twice.launch(nullptr);
  CHECK_FALSE(twice.check()["total"].ok());
}

TEST_CASE("chains: a backward's saved input comes from the forward, and check_chains pairs versions" * tut::needs_gpu()) {
  const auto& b = mask_backward();
  for (std::int64_t n : {1, 33, 1000}) {
    const auto c = tut::flat_case(n);
    const auto r = tut::grade(b, b.versions[0], c);
    CHECK_MESSAGE(r.ok(), "n=", n, ": ", r.summary());
  }
  CHECK(tut::check_chains(b, {tut::flat_case(33), tut::flat_case(1000)}) == 2);
  // A forward that writes a wrong mask cannot feed the backward: the chain says which and why.
  tut::Problem<TwoOutputs> bad = two_outputs();
  bad.versions = {two_outputs_version("wrong_mask", true, true)};
  const tut::ProblemEntry bad_entry = tut::erase(bad);
  const auto c = tut::flat_case(1000);
  CHECK_THROWS_WITH_AS(tut::instantiate(b, c, tut::test_options("mask_backward", c), &bad_entry),
                       doctest::Contains("two_outputs wrong_mask failed its check on n=1000"), std::runtime_error);
}

TEST_CASE("a version's setup runs once per instance, and may refuse a case" * tut::needs_gpu()) {
  const auto& b = mask_backward();
  const auto big = tut::flat_case((1 << 20) + 1);
  CHECK_THROWS_AS(tut::grade(b, b.versions[0], big), tut::Unsupported);
  tut::check_cases(b, {tut::flat_case(1000), big});  // the big case is reported, not graded
  const tut::ProblemEntry e = tut::erase(b);
  tut::InstanceOptions o;
  const auto session = e.open(big, o);
  CHECK_THROWS_WITH_AS(session->trial(0), "n above 1048576", tut::Unsupported);
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
  const auto inst = p.make(tut::flat_case(4099), tut::test_options("two_outputs", tut::flat_case(4099)));
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
    CHECK(t.check()["y"].ok() == with_reset);
  }
  tut::Workspace s(16);
  CHECK(s.bytes() == 16);
  CHECK_NOTHROW(s.as<unsigned>(12));
  CHECK_THROWS_AS(s.as<unsigned>(16), std::out_of_range);
  CHECK_THROWS_AS(s.as<unsigned>(2), std::invalid_argument);
  CHECK_THROWS_AS(s.get<int>(), std::logic_error);
}

TEST_CASE("the SM's FMA throughput and clock are measured, and plausible" * tut::needs_gpu(tut::under_sanitizer())) {
  const auto d = tut::query_device();
  const auto c = tut::measure_compute_ceiling(3);
  MESSAGE("FP32 FMA " << c.fp32_fma_GFLOPs << " GFLOP/s, FP16 HFMA2 " << c.fp16_hfma2_GFLOPs << " GFLOP/s, SM clock "
                      << c.sm_clock_MHz << " MHz");
  CHECK(c.sm_clock_MHz > 300);
  CHECK(c.sm_clock_MHz < 4000);
  // At most 128 FP32 lanes per SM on any architecture so far, two FLOPs each per clock.
  CHECK(c.fp32_fma_GFLOPs > 0.1 * d.sm_count * 64 * 2 * c.sm_clock_MHz * 1e-3);
  CHECK(c.fp32_fma_GFLOPs < 1.05 * d.sm_count * 128 * 2 * c.sm_clock_MHz * 1e-3);
  CHECK(c.fp16_hfma2_GFLOPs > c.fp32_fma_GFLOPs * 0.9);
}

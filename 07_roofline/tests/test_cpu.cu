// Host-only tests: the roofline model against cases worked by hand, the sweep's reference and cases,
// and the exercise's answers. No GPU needed.
#include <doctest/doctest.h>

#include "roofline.hpp"
#include "versions.cuh"

#include <cmath>

using doctest::Approx;

TEST_CASE("element-wise counts: a binary operation moves 3 x BPE bytes per operation") {
  // c = a + b on float32: 2 inputs and 1 output of 4 bytes, one operation each: 1 / (3 x 4).
  const auto w = ch07::elementwise(1e9, 1, 2, 1, 4);
  CHECK(w.flops == 1e9);
  CHECK(w.bytes == 12e9);
  CHECK(w.intensity() == Approx(1.0 / 12));
  // ReLU on half: 1 in, 1 out, 2 bytes each.
  CHECK(ch07::elementwise(1000, 1, 1, 1, 2).intensity() == Approx(0.25));
  CHECK_THROWS_AS(ch07::elementwise(10, 1, 0, 0, 4).intensity(), std::invalid_argument);
}

TEST_CASE("matrix product: 2MNK operations over (MK + KN + MN) x BPE bytes") {
  // 1024 x 1024 x 1024 in fp16: 2^31 operations, 3 x 2^20 x 2 bytes: 341.33 FLOP per byte.
  const auto w = ch07::matmul(1024, 1024, 1024, 2);
  CHECK(w.flops == Approx(2.0 * 1024 * 1024 * 1024));
  CHECK(w.bytes == Approx(3.0 * 1024 * 1024 * 2));
  CHECK(w.intensity() == Approx(1024.0 / 3));
  // A thin product is memory-bound: M = 8 rows against a 4096 x 4096 weight, fp16.
  const auto thin = ch07::matmul(8, 4096, 4096, 2);
  CHECK(thin.intensity() == Approx(2.0 * 8 * 4096 * 4096 / ((8.0 * 4096 + 4096.0 * 4096 + 8.0 * 4096) * 2)));
  CHECK(thin.intensity() < 8);
  // B read twice (it did not stay in cache): its bytes count twice.
  CHECK(ch07::matmul(1024, 1024, 1024, 2, 2).bytes == Approx(4.0 * 1024 * 1024 * 2));
}

TEST_CASE("convolution forward: 2 N Ho Wo Ci Co R S operations, input + weights + output bytes") {
  // ResNet-50's first layer: 224 x 224 x 3 in, 64 filters of 7 x 7, stride 2: 112 x 112 out, N = 1, fp16.
  const auto w = ch07::conv2d_forward(1, 3, 224, 224, 64, 7, 7, 112, 112, 2);
  CHECK(w.flops == Approx(2.0 * 112 * 112 * 3 * 64 * 7 * 7));  // 236 MFLOP
  CHECK(w.bytes == Approx((3.0 * 224 * 224 + 64.0 * 3 * 7 * 7 + 64.0 * 112 * 112) * 2));
  CHECK(w.intensity() == Approx(w.flops / w.bytes));
  CHECK(ch07::conv2d_forward(1, 3, 224, 224, 64, 7, 7, 112, 112, 2, 3).bytes > w.bytes);
}

TEST_CASE("ridge, attainable rate, bound, predicted time and fraction of the roof") {
  const ch07::Machine h100{65.2e12, 3.02e12};  // FP32 FMA and copy ceiling
  CHECK(h100.ridge() == Approx(65.2 / 3.02));
  CHECK(h100.attainable(1) == Approx(3.02e12));
  CHECK(h100.attainable(1000) == Approx(65.2e12));
  const auto relu = ch07::elementwise(1 << 28, 1, 1, 1, 4);  // 1/8 FLOP per byte
  CHECK(ch07::classify(relu, h100) == ch07::Bound::memory);
  CHECK(ch07::predicted_time(relu, h100) == Approx(relu.bytes / 3.02e12));
  const auto big = ch07::matmul(8192, 8192, 8192, 4);
  CHECK(ch07::classify(big, h100) == ch07::Bound::math);
  CHECK(ch07::predicted_time(big, h100) == Approx(big.flops / 65.2e12));
  // At the ridge both times are equal; it counts as memory-bound.
  const ch07::Work at_ridge{h100.ridge() * 1e9, 1e9};
  CHECK(ch07::memory_time(at_ridge, h100) == Approx(ch07::math_time(at_ridge, h100)));
  CHECK(ch07::classify(at_ridge, h100) == ch07::Bound::memory);
  // A kernel at 80 % of the memory roof.
  CHECK(ch07::fraction_of_roof(relu, h100, relu.bytes / (0.8 * 3.02e12)) == Approx(0.8));
  CHECK_THROWS_AS(ch07::fraction_of_roof(relu, h100, 0), std::invalid_argument);
  CHECK_THROWS_AS((ch07::Machine{0, 1}.ridge()), std::invalid_argument);
}

TEST_CASE("theoretical rates: a small table by architecture, and the clock") {
  const auto h = ch07::lanes_of(9, 0);
  CHECK(h.fp32_per_sm == 128);
  CHECK(h.fp16_per_fp32 == 2);
  // An H100 SXM at 1980 MHz: 132 x 128 x 2 x 1.98e9 = 66.9 TFLOP/s.
  CHECK(ch07::fp32_peak(132, h, 1.98e9) == Approx(66.9e12).epsilon(0.001));
  CHECK(ch07::fp16_peak(132, h, 1.98e9) == Approx(2 * 66.9e12).epsilon(0.001));
  CHECK(ch07::lanes_of(8, 0).fp32_per_sm == 64);  // A100: 64 lanes, FP16 at four times
  CHECK(ch07::lanes_of(8, 0).fp16_per_fp32 == 4);
  CHECK(ch07::lanes_of(8, 6).fp16_per_fp32 == 1);
  CHECK(ch07::lanes_of(12, 0).fp32_per_sm == 0);  // not in the table: no theoretical value
  // 5.2 Gbit/s per pin on a 5120-bit bus: 2 x 2.6 GHz x 640 bytes.
  CHECK(ch07::dram_peak(2.6e9, 5120) == Approx(3.328e12));
}

TEST_CASE("the sweep: intensity F / 8, the reference applies F FLOPs, F must be a power of two") {
  CHECK(ch07::sweep_ref(1.0f, 1) == 1.25f);   // one FADD
  CHECK(ch07::sweep_ref(1.0f, 2) == 0.75f);   // one FFMA: 1 x 0.5 + 0.25
  CHECK(ch07::sweep_ref(1.0f, 4) == 0.625f);  // two
  CHECK(ch07::sweep_ref(2048.0f, 2048) == doctest::Approx(0.5f));  // 1024 FMAs converge to b / (1 - a)
  CHECK(__half2float(ch07::sweep_ref_half(__float2half(1.0f), true, 4)) == 0.75f);
  CHECK(__half2float(ch07::sweep_ref_half(__float2half(1.0f), false, 1)) == 1.0f);  // F = 1: the low half only
  const auto p = tut::erase(ch07::sweep_f32_problem());
  CHECK(p.suite.size() == 12);
  const auto c = tut::make_case(p, {1000}, {{"flops", "64"}});
  CHECK(p.floor(c).bytes == 8000);
  CHECK(p.floor(c).flops == 64000);
  CHECK(static_cast<double>(p.floor(c).flops) / p.floor(c).bytes == 8);
  CHECK_THROWS_WITH_AS(tut::make_case(p, {1000}, {{"flops", "3"}}), doctest::Contains("power of two"),
                       std::invalid_argument);
  CHECK_THROWS_AS(tut::make_case(p, {1000}, {{"flops", "4096"}}), std::invalid_argument);
  CHECK_THROWS_AS(ch07::sweep_f32<0>(nullptr, 10, 6, nullptr, nullptr), std::invalid_argument);
}

#if TUT_EXERCISES
#include "exercises/answers.hpp"
#include "tut/exercise.hpp"

TEST_CASE("exercise: the three roofline answers") {
  const ch07::Work w{48e9, 6e9};
  const ch07::Machine h100{65.2e12, 3.02e12}, other{19.0e12, 1.8e12};
  // 1. 8 FLOP per byte against a ridge of 21.6: memory-bound.
  tut::grade_answer(1, exercise::kBoundOnH100, ch07::classify(w, h100) == ch07::Bound::math ? 1 : 0,
                    "intensity = FLOPs / bytes; compare it with peak / bandwidth");
  // 2. max(6 GB / 1.8 TB/s, 48 GFLOP / 19 TFLOP/s) = max(3333, 2526) microseconds.
  tut::grade_answer(2, exercise::kPredictedMicrosecondsOnOther, std::llround(ch07::predicted_time(w, other) * 1e6),
                    "the larger of bytes / bandwidth and FLOPs / peak, on the other GPU's ceilings");
  // 3. 48 GFLOP / 2.5 ms = 19.2 TFLOP/s against min(65.2, 3.02 x 8 = 24.16) TFLOP/s: 79 %.
  tut::grade_answer(3, exercise::kPercentOfRoofOnH100,
                    static_cast<long long>(std::floor(ch07::fraction_of_roof(w, h100, 2.5e-3) * 100)),
                    "the attained FLOP/s over the lower roof at the kernel's intensity");
}
#endif

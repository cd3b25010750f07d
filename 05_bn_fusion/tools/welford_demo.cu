// The lesson's table of float32 variances (results/welford_float32.txt): one channel of
// 16x32x112x112 (200704 values) drawn uniform in [shift - 3, shift + 3), its variance computed in
// float32 four ways (float_stats.cuh) against the exact one. No GPU needed:
//   build/welford_demo > results/welford_float32.txt
#include "float_stats.cuh"
#include "tut/random.hpp"

#include <cstdio>

int main() {
  const std::int64_t n = 16 * 112 * 112;
  std::printf("variance of %lld float32 values uniform in [shift - 3, shift + 3), exact value 3 up to sampling:\n",
              static_cast<long long>(n));
  std::printf("%8s %12s %14s %14s %14s %14s\n", "shift", "exact", "naive", "two_pass", "welford", "welford_gpu");
  for (double shift : {0.0, 10.0, 100.0, 1000.0, 10000.0}) {
    const auto x = ch05::channel_values(n, shift, 20261121);
    const double exact = ch05::exact_var(x);
    std::printf("%8.0f %12.6f %14.6f %14.6f %14.6f %14.6f\n", shift, exact, ch05::naive_float(x).var,
                ch05::two_pass_float(x).var, ch05::welford_float(x).var, ch05::welford_gpu_float(x, 256).var);
  }
  std::printf("relative error of each:\n");
  std::printf("%8s %12s %14s %14s %14s %14s\n", "shift", "", "naive", "two_pass", "welford", "welford_gpu");
  for (double shift : {0.0, 10.0, 100.0, 1000.0, 10000.0}) {
    const auto x = ch05::channel_values(n, shift, 20261121);
    const double exact = ch05::exact_var(x);
    const auto rel = [&](float v) { return (v - exact) / exact; };
    std::printf("%8.0f %12s %14.2e %14.2e %14.2e %14.2e\n", shift, "", rel(ch05::naive_float(x).var),
                rel(ch05::two_pass_float(x).var), rel(ch05::welford_float(x).var), rel(ch05::welford_gpu_float(x, 256).var));
  }
  return 0;
}

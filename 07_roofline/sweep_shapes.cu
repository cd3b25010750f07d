// sweep_shapes: the sweep's pack kernel in every shape kernels/sweep_shape.hpp could take, and the
// kernel it replaced, timed in one process against the ceilings measured there.
//
//   sweep_shapes [--rounds R]
//
// Shapes: P = 1 or 2 packs per thread (4 or 8 chains) x K = 1, 2, 4, 8, 16 tiles per block, or a
// resident grid (every block on the GPU at once, each taking tiles / blocks tiles: K = -1); P = 0 is
// the previous kernel. F = 1 ... 2048 at n = 2^26, both precisions, the fully unrolled form. Every
// output is compared word for word with the previous kernel's. Prints one line per point,
// `shape,precision,P,K,F,ms,ratio` (ratio: GFLOP/s over min(copy x F / 8, peak)), the median over
// the rounds; exits 1 if an output differs. Exits 77 without a CUDA device.
#include "kernels/sweep.cuh"
#include "kernels/sweep_previous.cuh"
#include "tut/buffer.hpp"
#include "tut/check.hpp"
#include "tut/device.hpp"
#include "tut/timing.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <vector>

namespace {

constexpr std::int64_t kN = std::int64_t{1} << 26;

template <class T, int F>
auto op_of() {
  if constexpr (std::is_same_v<T, float>) return ch07::OpF32<F>{ch07::kA, ch07::kB};
  else return ch07::OpF16<F>{__floats2half2_rn(ch07::kA, ch07::kA), __floats2half2_rn(ch07::kB, ch07::kB)};
}

// One launch of the shape (P, K) at F on n values; P = 0: the previous kernel.
template <class T, int F>
void launch(int P, std::int64_t K, const void* xv, void* yv) {
  const T* x = static_cast<const T*>(xv);
  T* y = static_cast<T*>(yv);
  if (P == 0) {
    const std::int64_t packs = kN / 4;
    ch07_previous::sweep_pack_kernel<F, 0><<<static_cast<unsigned>((packs + 255) / 256), 256>>>(packs, x, y,
                                                                                                   op_of<T, F>());
    TUT_CHECK_LAUNCH("previous sweep_pack_kernel");
    return;
  }
  auto go = [&](auto kernel, int packs) {
    std::int64_t per = K;
    const std::int64_t tiles = kN / (4 * packs * ch07::kBlock);
    if (K <= 0) {
      int resident = 0, dev = 0, sms = 0;
      TUT_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, ch07::kBlock, 0));
      TUT_CUDA(cudaGetDevice(&dev));
      TUT_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
      per = (tiles + std::int64_t{resident} * sms - 1) / (std::int64_t{resident} * sms);
    }
    kernel<<<static_cast<unsigned>((tiles + per - 1) / per), ch07::kBlock>>>(tiles, per, x, y, op_of<T, F>());
    TUT_CHECK_LAUNCH("sweep_pack_kernel");
  };
  if (P == 1) go(&ch07::sweep_pack_kernel<F, 0, 1, T, decltype(op_of<T, F>())>, 1);
  else go(&ch07::sweep_pack_kernel<F, 0, 2, T, decltype(op_of<T, F>())>, 2);
}

template <class T>
void launch_at(int F, int P, std::int64_t K, const void* x, void* y) {
  ch07::detail::with_flops(F, [&](auto f) { launch<T, decltype(f)::value>(P, K, x, y); });
}

__global__ void fill_inputs(unsigned* p, std::int64_t n, bool half) {  // whole numbers in [-2048, 2048]
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n; i += std::int64_t{gridDim.x} * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ 0x9e3779b9u;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
    const float a = static_cast<float>(static_cast<int>(h % 4097) - 2048);
    const float b = static_cast<float>(static_cast<int>((h >> 12) % 4097) - 2048);
    if (half) {
      const __half2 v = __floats2half2_rn(a, b);
      memcpy(&p[i], &v, 4);
    } else {
      p[i] = __float_as_uint(a);
    }
  }
}
__global__ void count_differences(const unsigned* a, const unsigned* b, std::int64_t n, unsigned long long* out) {
  unsigned long long c = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n; i += std::int64_t{gridDim.x} * blockDim.x)
    c += a[i] != b[i];
  if (c) atomicAdd(out, c);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("The sweep's pack kernel in every shape, timed against the ceilings", "sweep_shapes");
  int rounds = 3;
  app.add_option("--rounds", rounds, "Rounds over every shape (the median is printed)")->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);
  if (!tut::has_cuda_device()) {
    std::cout << "no CUDA device: nothing measured\n";
    return 77;
  }
  try {
    tut::DeviceBuffer<unsigned> x(kN), y(kN), ref(kN);
    tut::DeviceBuffer<unsigned long long> differences(1);
    const tut::CopyCeiling copy = tut::measure_copy_ceiling();
    const tut::ComputeCeiling peak = tut::measure_compute_ceiling();
    std::printf("ceilings,copy %.1f GB/s,FP32 %.1f GFLOP/s,FP16 %.1f GFLOP/s,SM clock %.0f MHz\n", copy.GBps,
                peak.fp32_fma_GFLOPs, peak.fp16_hfma2_GFLOPs, peak.sm_clock_MHz);
    const std::vector<std::pair<int, std::int64_t>> shapes = {{0, 1}, {1, 1}, {1, 2}, {1, 4}, {1, 8}, {1, 16}, {1, -1},
                                                              {2, 1}, {2, 2}, {2, 4}, {2, 8}, {2, 16}, {2, -1}};
    std::map<std::vector<std::int64_t>, std::vector<double>> ms;
    unsigned long long differing = 0;
    cudaEvent_t start, stop;
    TUT_CUDA(cudaEventCreate(&start));
    TUT_CUDA(cudaEventCreate(&stop));
    for (int r = 0; r < rounds; ++r)
      for (int half = 0; half < 2; ++half) {
        fill_inputs<<<1024, 256>>>(x.data(), kN, half);
        TUT_CHECK_LAUNCH("fill_inputs");
        for (int F = ch07::kMinFlops; F <= ch07::kMaxFlops; F *= 2) {
          auto run = [&](int P, std::int64_t K, void* out) {
            if (half) launch_at<__half2>(F, P, K, x.data(), out);
            else launch_at<float>(F, P, K, x.data(), out);
          };
          run(0, 1, ref.data());
          for (const auto& [P, K] : shapes) {
            for (int w = 0; w < 2; ++w) run(P, K, y.data());
            std::vector<double> t;
            for (int rep = 0; rep < (F >= 1024 ? 7 : 15); ++rep) {
              TUT_CUDA(cudaEventRecord(start));
              run(P, K, y.data());
              TUT_CUDA(cudaEventRecord(stop));
              TUT_CUDA(cudaEventSynchronize(stop));
              float e = 0;
              TUT_CUDA(cudaEventElapsedTime(&e, start, stop));
              t.push_back(e);
            }
            ms[{half, P, K, F}].push_back(tut::summarize(t).median);
            differences.fill_bytes(0);
            count_differences<<<1024, 256>>>(y.data(), ref.data(), kN, differences.data());
            TUT_CHECK_LAUNCH("count_differences");
            unsigned long long d = 0;
            differences.download(&d, 1);
            differing += d;
          }
        }
      }
    for (const auto& [key, t] : ms) {
      const double s = tut::summarize(t).median * 1e-3, F = static_cast<double>(key[3]);
      const double peak_flops = (key[0] ? peak.fp16_hfma2_GFLOPs : peak.fp32_fma_GFLOPs) * 1e9;
      const double model = std::min(copy.GBps * 1e9 * F / 8, peak_flops);
      std::printf("shape,%s,%lld,%lld,%lld,%.4f,%.4f\n", key[0] ? "f16" : "f32", static_cast<long long>(key[1]),
                  static_cast<long long>(key[2]), static_cast<long long>(key[3]), s * 1e3, kN * F / s / model);
    }
    std::printf("words differing from the previous kernel's output: %llu\n", differing);
    return differing == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}

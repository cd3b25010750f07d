// What a second sweep finds in the L2 after a first one, and whether eviction hints make it more:
// the two-pass versions' pattern (v17, v19, v20) stripped to its memory traffic. The first kernel
// reads the streams front to back and sums them (the statistics); the second reads them back to
// front and writes one stream of the same size with evict-first stores (the pass, y or dx). Each
// case is one of the chapter's large NHWC tensors:
//   fwd_f32  64x64x112x112 float:  x, then x -> y       (205.5 MB a stream)
//   fwd_f16  64x64x112x112 half:   x, then x -> y       (102.8 MB)
//   bwd_f16  128x64x56x56 half:    x, dy, then x, dy -> dx (51.4 MB each)
//   bwd_f32  64x64x112x112 float:  x, dy, then x, dy -> dx (205.5 MB each)
// Each variant changes one hint:
//   plain       the chapter's: plain loads in both sweeps, the second's stores st.global.cs
//   pass_first  the second sweep's loads evict-first too (ld.global.cs), so that a line it has
//               read goes before one it has still to read
//   keep_last   as pass_first, and the first sweep's loads carry an L2 policy: evict-first before
//               its last `--keep` MB, evict-last on them, the part the second sweep reads first
//   read_only   plain, with the second sweep storing nothing: all the L2 can give back
//   held        one cooperative kernel, one block of 1024 threads an SM, in the pattern of a
//               semi-persistent kernel (cuDNN's fused NHWC ones): the first sweep keeps each
//               thread's first rounds on chip (kHeldRegs a stream in registers, then as many as
//               the shared memory takes), a grid barrier, then the second sweep reads only the
//               rounds not held, last first, and writes every one. A round is a grid's width of
//               16-byte packs, so the blocks' loads interleave as in the sweeps above.
//   held_chunks the same, but block b owns one contiguous chunk of the streams, read front to back,
//               and holds the chunk's front (the layout of the trial fwd v25_part_resident).
// The held variants ask whether reading fewer bytes pays at all in this pattern, before any of a
// kernel's arithmetic. Prediction (before any run): on the H200, 4 + 14 rounds of 1024 x 16 bytes
// a block (132 blocks) hold 38.9 MB of one stream; at 64x64x112x112 half the held kernel moves
// about 102.8 + 63.9 + 102.8 MB where plain moves 308.4, so at plain's rate about 0.074 ms against
// plain's 0.0849, under cuDNN's fused forward (0.0889 in the suite); held_chunks the same bytes,
// so the same time unless the chunk layout itself is what held v25.
// Measured on the H200 (results/NVIDIA_H200.l2_sweeps_held.txt, ncu_l2_held.csv; README "What holding
// part of x on chip is worth"): held 0.0747 ms in half against plain's 0.0868 (141.2 MB read from
// DRAM), held_chunks 0.0768; held below cuDNN's fused path, timed in the benchmark's process of the
// same call, in all four cases.
// It prints each kernel's median time by events over --reps pairs (the first 5 not counted) and
// their sum. What the second sweep reads from DRAM comes from Nsight Compute with the L2 left as
// the first kernel left it:
//   ncu --cache-control none --kernel-name regex:second_sweep --launch-skip 6 --launch-count 1
//       --metrics dram__bytes_read.sum,gpu__time_duration.sum build/l2_sweeps --case fwd_f32 --variant plain
// (one command line).
// --block and --per-sm set the grids (by default blocks of 512, as many as are resident): with
// --variant read_only the first sweep is a plain read of the streams at that occupancy, to set the
// chapter's statistics kernels against (v17 to v20: 3 blocks of 256 an SM, 4 packs a thread).
// Nothing is checked: the data is zeros and only its movement counts. Needs a GPU.
#include "tut/check.hpp"
#include "tut/timing.hpp"

#include <CLI/CLI.hpp>
#include <cooperative_groups.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace {

enum class Variant { plain, pass_first, keep_last, read_only, held, held_chunks };

__device__ __forceinline__ std::uint64_t policy_evict_first() {
  std::uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ std::uint64_t policy_evict_last() {
  std::uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ float4 load_with(const float4* p, std::uint64_t policy) {
  float4 v;
  asm volatile("ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p), "l"(policy));
  return v;
}

// Each thread takes kUnroll elements a round, a grid's width apart, and issues all their loads
// before it uses one: 64 bytes a stream in flight per thread, as the chapter's passes have.
inline constexpr int kUnroll = 4;

// Sums the streams front to back, 16 bytes a load.
template <int kStreams>
__global__ void first_sweep(const float4* a, const float4* b, std::int64_t n, std::int64_t keep, Variant v,
                            float* sink) {
  const std::uint64_t first = policy_evict_first(), last = policy_evict_last();
  const std::int64_t width = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  float s = 0.f;
  for (std::int64_t i0 = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i0 < n;
       i0 += kUnroll * width) {
    float4 x[kUnroll], y[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t i = i0 + u * width;
      x[u] = y[u] = make_float4(0.f, 0.f, 0.f, 0.f);
      if (i >= n) continue;
      if (v == Variant::keep_last) {
        const std::uint64_t p = i < n - keep ? first : last;
        x[u] = load_with(a + i, p);
        if (kStreams == 2) y[u] = load_with(b + i, p);
      } else {
        x[u] = a[i];
        if (kStreams == 2) y[u] = b[i];
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) s += x[u].x + x[u].y + x[u].z + x[u].w + y[u].x * y[u].y + y[u].z * y[u].w;
  }
  if (s == 1234.5f) *sink = s;  // never true on zeros; keeps the loads
}

// Reads the streams back to front and writes out[i] from them.
template <int kStreams>
__global__ void second_sweep(const float4* a, const float4* b, float4* out, std::int64_t n, Variant v, float* sink) {
  const std::int64_t width = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const bool streaming = v == Variant::pass_first || v == Variant::keep_last;
  float s = 0.f;
  for (std::int64_t i0 = n - 1 - (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x); i0 >= 0;
       i0 -= kUnroll * width) {
    float4 x[kUnroll], y[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t i = i0 - u * width;
      x[u] = y[u] = make_float4(0.f, 0.f, 0.f, 0.f);
      if (i < 0) continue;
      if (streaming) {
        x[u] = __ldcs(a + i);
        if (kStreams == 2) y[u] = __ldcs(b + i);
      } else {
        x[u] = a[i];
        if (kStreams == 2) y[u] = b[i];
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t i = i0 - u * width;
      if (i < 0) continue;
      const float4 r = make_float4(fmaxf(x[u].x + y[u].x, 0.f), fmaxf(x[u].y + y[u].y, 0.f),
                                   fmaxf(x[u].z + y[u].z, 0.f), fmaxf(x[u].w + y[u].w, 0.f));
      if (v == Variant::read_only)
        s += r.x + r.y + r.z + r.w;
      else
        __stcs(out + i, r);
    }
  }
  if (s == 1234.5f) *sink = s;
}

// held and held_chunks: both sweeps in one cooperative kernel. Thread t of block b takes, in round
// r, the pack at(r) of each stream: r * width + b * blockDim + t interleaved (width = the grid's
// threads), b * chunk + r * blockDim + t in chunks. Rounds [0, kHeldRegs) stay in registers,
// [kHeldRegs, kHeldRegs + smem_rounds) in shared memory (a round's packs of a stream side by
// side), the rest are read again after the barrier, last first, 4 rounds in flight.
inline constexpr int kHeldRegs = 4;
inline constexpr int kHeldBlock = 1024;

template <int kStreams, bool kChunks>
__global__ void __launch_bounds__(kHeldBlock, 1) held_sweeps(const float4* a, const float4* b, float4* out,
                                                             std::int64_t n, int smem_rounds, float* sink) {
  extern __shared__ float4 held[];  // [round][stream][thread]
  const std::int64_t width = static_cast<std::int64_t>(gridDim.x) * kHeldBlock;
  const std::int64_t chunk = (n + gridDim.x - 1) / gridDim.x;
  const std::int64_t base = kChunks ? static_cast<std::int64_t>(blockIdx.x) * chunk : static_cast<std::int64_t>(blockIdx.x) * kHeldBlock;
  const std::int64_t end = kChunks ? (n < base + chunk ? n : base + chunk) : n;
  const std::int64_t step = kChunks ? kHeldBlock : width;
  const std::int64_t rounds = end > base ? (end - base + step - 1) / step : 0;  // this block's rounds
  const auto at = [&](std::int64_t r) { return base + r * step + threadIdx.x; };
  const auto load = [&](const float4* s, std::int64_t i) { return i < end ? s[i] : make_float4(0.f, 0.f, 0.f, 0.f); };
  float acc = 0.f;
  const auto add = [&](const float4& x, const float4& y) { acc += x.x + x.y + x.z + x.w + y.x * y.y + y.z * y.w; };
  // the first sweep
  float4 rx[kHeldRegs], ry[kHeldRegs];
#pragma unroll
  for (int r = 0; r < kHeldRegs; ++r) {
    rx[r] = load(a, at(r));
    ry[r] = kStreams == 2 ? load(b, at(r)) : make_float4(0.f, 0.f, 0.f, 0.f);
  }
#pragma unroll
  for (int r = 0; r < kHeldRegs; ++r) add(rx[r], ry[r]);
  for (std::int64_t r0 = kHeldRegs; r0 < rounds; r0 += 4) {
    float4 x[4], y[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      x[u] = r0 + u < rounds ? load(a, at(r0 + u)) : make_float4(0.f, 0.f, 0.f, 0.f);
      y[u] = kStreams == 2 && r0 + u < rounds ? load(b, at(r0 + u)) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      add(x[u], y[u]);
      const std::int64_t slot = r0 + u - kHeldRegs;
      if (slot < smem_rounds) {
        held[(slot * kStreams) * kHeldBlock + threadIdx.x] = x[u];
        if (kStreams == 2) held[(slot * kStreams + 1) * kHeldBlock + threadIdx.x] = y[u];
      }
    }
  }
  cooperative_groups::this_grid().sync();
  const auto put = [&](std::int64_t i, const float4& x, const float4& y) {
    if (i < end)
      __stcs(out + i, make_float4(fmaxf(x.x + y.x, 0.f), fmaxf(x.y + y.y, 0.f), fmaxf(x.z + y.z, 0.f), fmaxf(x.w + y.w, 0.f)));
  };
  // the second sweep: the rounds not held, last first, then those in shared memory, then registers
  const std::int64_t first_read = kHeldRegs + smem_rounds;
  for (std::int64_t r0 = rounds - 1; r0 >= first_read; r0 -= 4) {
    float4 x[4], y[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      x[u] = r0 - u >= first_read ? load(a, at(r0 - u)) : make_float4(0.f, 0.f, 0.f, 0.f);
      y[u] = kStreams == 2 && r0 - u >= first_read ? load(b, at(r0 - u)) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (r0 - u >= first_read) put(at(r0 - u), x[u], y[u]);
  }
  for (std::int64_t slot = (smem_rounds < rounds - kHeldRegs ? smem_rounds : rounds - kHeldRegs) - 1; slot >= 0; --slot) {
    const float4 x = held[(slot * kStreams) * kHeldBlock + threadIdx.x];
    const float4 y = kStreams == 2 ? held[(slot * kStreams + 1) * kHeldBlock + threadIdx.x] : make_float4(0.f, 0.f, 0.f, 0.f);
    put(at(kHeldRegs + slot), x, y);
  }
#pragma unroll
  for (int r = kHeldRegs - 1; r >= 0; --r)
    if (r < rounds) put(at(r), rx[r], ry[r]);
  if (acc == 1234.5f) *sink = acc;
}

struct Case {
  const char* what;
  std::int64_t bytes;  // one stream
  int streams;
};

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string, Case> cases = {
      {"fwd_f32", {"64x64x112x112 float forward", 64LL * 64 * 112 * 112 * 4, 1}},
      {"fwd_f16", {"64x64x112x112 half forward", 64LL * 64 * 112 * 112 * 2, 1}},
      {"bwd_f16", {"128x64x56x56 half backward", 128LL * 64 * 56 * 56 * 2, 2}},
      {"bwd_f32", {"64x64x112x112 float backward", 64LL * 64 * 112 * 112 * 4, 2}},
  };
  const std::map<std::string, Variant> variants = {{"plain", Variant::plain},
                                                   {"pass_first", Variant::pass_first},
                                                   {"keep_last", Variant::keep_last},
                                                   {"read_only", Variant::read_only},
                                                   {"held", Variant::held},
                                                   {"held_chunks", Variant::held_chunks}};
  CLI::App app{"Two sweeps over the chapter's large tensors, with and without L2 eviction hints"};
  std::vector<std::string> which_cases, which_variants;
  double keep_mb = 40.0;
  int reps = 25, block = 512, per_sm = 0;
  app.add_option("--case", which_cases, "cases to run (all if none)")->check(CLI::IsMember(cases));
  app.add_option("--variant", which_variants, "variants to run (all if none)")->check(CLI::IsMember(variants));
  app.add_option("--keep", keep_mb, "keep_last: MB of the streams marked evict-last")->check(CLI::Range(0.0, 1e5));
  app.add_option("--reps", reps, "pairs of launches per variant; the first 5 are not counted")
      ->check(CLI::Range(6, 100000));
  app.add_option("--block", block, "threads a block")->check(CLI::IsMember({128, 256, 512, 1024}));
  app.add_option("--per-sm", per_sm, "blocks an SM (0: as many as are resident)")->check(CLI::Range(0, 32));
  CLI11_PARSE(app, argc, argv);
  if (which_cases.empty())
    for (const auto& c : cases) which_cases.push_back(c.first);
  if (which_variants.empty()) which_variants = {"plain", "pass_first", "keep_last", "read_only", "held", "held_chunks"};

  try {
    std::int64_t most = 0;
    for (const auto& c : which_cases) most = std::max(most, cases.at(c).bytes);
    float4 *a = nullptr, *b = nullptr, *out = nullptr;
    float* sink = nullptr;
    TUT_CUDA(cudaMalloc(&a, most));
    TUT_CUDA(cudaMalloc(&b, most));
    TUT_CUDA(cudaMalloc(&out, most));
    TUT_CUDA(cudaMalloc(&sink, sizeof(float)));
    TUT_CUDA(cudaMemset(a, 0, most));
    TUT_CUDA(cudaMemset(b, 0, most));
    int device = 0, sms = 0, l2 = 0;
    TUT_CUDA(cudaGetDevice(&device));
    TUT_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    TUT_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    cudaDeviceProp prop{};
    TUT_CUDA(cudaGetDeviceProperties(&prop, device));
    std::printf("%s: %d SMs, L2 %.1f MB; keep_last marks the last %.1f MB of the first sweep evict-last\n", prop.name,
                sms, l2 / 1e6, keep_mb);
    // As many blocks as are resident at once, so that every block runs from the start, or --per-sm
    // an SM where that is fewer.
    const auto resident = [&](const void* kernel) {
      int fits = 0;
      TUT_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fits, kernel, block, 0));
      return sms * (per_sm > 0 ? std::min(per_sm, fits) : fits);
    };
    // The median of the samples after the first 5, as the benchmark takes it (tut::summarize).
    const auto median = [](const std::vector<float>& t) {
      return tut::summarize(std::vector<double>(t.begin() + 5, t.end())).median;
    };
    cudaEvent_t e0, e1, e2;
    TUT_CUDA(cudaEventCreate(&e0));
    TUT_CUDA(cudaEventCreate(&e1));
    TUT_CUDA(cudaEventCreate(&e2));
    {  // the copy these sweeps are set against, in this process: cudaMemcpy of the largest stream
      std::vector<float> t;
      for (int rep = 0; rep < reps; ++rep) {
        TUT_CUDA(cudaEventRecord(e0));
        TUT_CUDA(cudaMemcpyAsync(out, a, most, cudaMemcpyDeviceToDevice));
        TUT_CUDA(cudaEventRecord(e1));
        TUT_CUDA(cudaEventSynchronize(e1));
        float m = 0.f;
        TUT_CUDA(cudaEventElapsedTime(&m, e0, e1));
        t.push_back(m);
      }
      const double ms = median(t);
      std::printf("copy     %.1f MB  %.4f ms  %.1f GB/s read + write\n", most / 1e6, ms, 2.0 * most / (ms * 1e6));
    }
    for (const auto& cn : which_cases) {
      const Case& c = cases.at(cn);
      const std::int64_t n = c.bytes / 16;
      const std::int64_t keep = std::min<std::int64_t>(n, static_cast<std::int64_t>(keep_mb * 1e6 / 16 / c.streams));
      for (const auto& vn : which_variants) {
        const Variant v = variants.at(vn);
        if (v == Variant::held || v == Variant::held_chunks) {
          // One cooperative kernel a rep, a block an SM, the shared memory filled with held rounds.
          std::vector<float> t;
          int rounds_smem = 0;
          const auto run_held = [&](auto streams, auto chunks) {
            constexpr int kStreams = decltype(streams)::value;
            const void* kernel = reinterpret_cast<const void*>(&held_sweeps<kStreams, decltype(chunks)::value>);
            cudaFuncAttributes fa{};
            TUT_CUDA(cudaFuncGetAttributes(&fa, kernel));
            rounds_smem = static_cast<int>((prop.sharedMemPerBlockOptin - fa.sharedSizeBytes) / (16 * kHeldBlock * kStreams));
            const int dyn = rounds_smem * 16 * kHeldBlock * kStreams;
            TUT_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn));
            int fits = 0;
            TUT_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fits, kernel, kHeldBlock, dyn));
            if (fits < 1) throw std::runtime_error("held_sweeps: a block of 1024 threads does not fit an SM");
            std::int64_t nn = n;
            void* args[] = {&a, &b, &out, &nn, &rounds_smem, &sink};
            for (int rep = 0; rep < reps; ++rep) {
              TUT_CUDA(cudaEventRecord(e0));
              TUT_CUDA(cudaLaunchCooperativeKernel(kernel, sms, kHeldBlock, args, dyn, 0));
              TUT_CUDA(cudaEventRecord(e1));
              TUT_CUDA(cudaEventSynchronize(e1));
              float m = 0.f;
              TUT_CUDA(cudaEventElapsedTime(&m, e0, e1));
              t.push_back(m);
            }
          };
          const bool chunks = v == Variant::held_chunks;
          if (c.streams == 1 && !chunks) run_held(std::integral_constant<int, 1>{}, std::false_type{});
          else if (c.streams == 1) run_held(std::integral_constant<int, 1>{}, std::true_type{});
          else if (!chunks) run_held(std::integral_constant<int, 2>{}, std::false_type{});
          else run_held(std::integral_constant<int, 2>{}, std::true_type{});
          const double held_mb = static_cast<double>(sms) * kHeldBlock * 16 * c.streams * (kHeldRegs + rounds_smem) / 1e6;
          std::printf("%-8s %-11s one kernel %.4f ms  (%s, %d x %.1f MB; %d blocks of %d; %.1f MB held on chip, %d rounds a stream: %d in registers, %d in shared memory)\n",
                      cn.c_str(), vn.c_str(), median(t), c.what, c.streams, c.bytes / 1e6, sms, kHeldBlock,
                      std::min(held_mb, static_cast<double>(c.streams) * c.bytes / 1e6), kHeldRegs + rounds_smem,
                      kHeldRegs, rounds_smem);
          continue;
        }
        std::vector<float> t1, t2, sum;
        int g1 = 0, g2 = 0;
        // The pairs of launches over kStreams streams, each sweep timed by events.
        const auto run = [&](auto streams) {
          constexpr int kStreams = decltype(streams)::value;
          g1 = resident(reinterpret_cast<const void*>(&first_sweep<kStreams>));
          g2 = resident(reinterpret_cast<const void*>(&second_sweep<kStreams>));
          for (int rep = 0; rep < reps; ++rep) {
            TUT_CUDA(cudaEventRecord(e0));
            first_sweep<kStreams><<<g1, block>>>(a, b, n, keep, v, sink);
            TUT_CHECK_LAUNCH("first_sweep");
            TUT_CUDA(cudaEventRecord(e1));
            second_sweep<kStreams><<<g2, block>>>(a, b, out, n, v, sink);
            TUT_CHECK_LAUNCH("second_sweep");
            TUT_CUDA(cudaEventRecord(e2));
            TUT_CUDA(cudaEventSynchronize(e2));
            float m1 = 0.f, m2 = 0.f;
            TUT_CUDA(cudaEventElapsedTime(&m1, e0, e1));
            TUT_CUDA(cudaEventElapsedTime(&m2, e1, e2));
            t1.push_back(m1);
            t2.push_back(m2);
            sum.push_back(m1 + m2);
          }
        };
        if (c.streams == 1)
          run(std::integral_constant<int, 1>{});
        else
          run(std::integral_constant<int, 2>{});
        std::printf("%-8s %-11s first %.4f ms  second %.4f ms  both %.4f ms  (%s, %d x %.1f MB; %d and %d blocks of %d)\n",
                    cn.c_str(), vn.c_str(), median(t1), median(t2), median(sum), c.what, c.streams, c.bytes / 1e6, g1,
                    g2, block);
      }
    }
    TUT_CUDA(cudaFree(a));
    TUT_CUDA(cudaFree(b));
    TUT_CUDA(cudaFree(out));
    TUT_CUDA(cudaFree(sink));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "l2_sweeps: %s\n", e.what());
    return 1;
  }
  return 0;
}

// fwd v13_arrivals: v12 without its grid barrier. Each block publishes its partials with a flag of
// its own; each thread merges its share of the blocks' partials as their flags come up, in a fixed
// order, so that by the time the last block publishes, the others have merged everything but it.
// And half's pass in packs of 4 (8 bytes), so that a thread's 4 channels' parameters stay in
// registers, as float's do.
//
// What changed since v12. v12's phase timeline (results/NVIDIA_H200.v12_phases.txt, float,
// 16x32x112x112 NHWC) has the blocks end phase 1 between 8.8 and 11.0 us; they leave the grid
// barrier at 11.9 to 12.1 us, and only then does every block load the 132 partials and merge them,
// 3.4 to 4.2 us more. The early blocks spend 2 us waiting for the last, with nothing to do.
//   The flags. Block b writes its partials, fences, and sets flag b (one 128-byte line per flag).
//   Thread t of row group g owns blocks g, g + G, g + 2G, ... (as in v12) and merges them in that
//   order: it waits for the next one's flag, checks in one round of loads which of the following
//   flags are up too, fences (the acquire), loads the partials of that run at once and merges
//   them. The order of the merges is v12's, so the statistics have v12's bits. After the last
//   flag, a thread has one partial or a few left, then the tree, where v12 had the barrier, all
//   the loads and the tree.
//   The flags clean themselves: each block counts itself out after its phase 2, and the last block
//   out sets every flag and the count back to zero (the scratch starts zeroed), so a launch needs
//   no reset and no second barrier. The launch is still cooperative: a block that waits on a flag
//   needs the block that sets it to be resident.
//   Half's pass. v12's half pass took about 14 us in the timeline against float's 7: its threads
//   each have 8 channels, and read the parameters from shared memory for every element. In packs
//   of 4 (8-byte loads and stores), a thread has 4 channels, their parameters in 12 registers.
// Prediction: at 16x32x112x112 NHWC float, the end of the merge from 15.3 to 16.3 us (v12) to
// about 1.5 us after the last block's phase 1 (12 to 13 us), about 3 us off v12's 27; half's pass
// near float's 7 us, its kernel near float's time.
// Evidence: tools/phase_timeline.cu v13 (v12 and v13 in one run); the benchmark and the race
// against PyTorch; the GPU test that v13's outputs and statistics have v12's bits.
#pragma once

#include "kernels/fwd_v12_resident.cuh"

namespace ch05 {

inline constexpr int kArrStride = 32;      // unsigneds from one flag to the next: a 128-byte line each
inline constexpr unsigned kArrPollNs = 128;  // a waiting warp's sleep between two looks at a flag

// Strong (L2) loads and stores of a flag, without ordering: the fences around them order the partials.
__device__ __forceinline__ unsigned arr_load(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void arr_store(unsigned* p, unsigned v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// After phase 1: this block's partials are written (by threads t < C); flag blockIdx.x says so.
__device__ __forceinline__ void arr_publish(unsigned* flags, int C) {
  if (static_cast<int>(threadIdx.x) < C) asm volatile("fence.acq_rel.gpu;" ::: "memory");  // the partial before the flag
  __syncthreads();
  if (threadIdx.x == 0) arr_store(flags + static_cast<std::int64_t>(blockIdx.x) * kArrStride, 1u);
}

// Phase 2's loads: thread t's share of channel c = t % C, blocks g + j G for j < J in that order,
// each merged once its flag is up. Then v12's tree (res_finish). (The phase timeline also runs it
// with other sleeps, and without the acquire fence, to measure what each costs.)
template <unsigned kPollNs = kArrPollNs, bool kAcquire = true>
__device__ __forceinline__ Welford arr_gather(const ResPlan& plan, const float4* partials, const unsigned* flags) {
  const int t = static_cast<int>(threadIdx.x), C = plan.C, G = plan.G, c = t % C, g = t / C;
  Welford acc{0.0f, 0.0f, 0.0f};
  const int J = g < G && g < plan.blocks ? (plan.blocks - g + G - 1) / G : 0;
  const auto flag = [&](int j) { return flags + static_cast<std::int64_t>(g + j * G) * kArrStride; };
  for (int j = 0; j < J;) {
    while (arr_load(flag(j)) == 0u) __nanosleep(kPollNs);
    // The run of flags up from j on, one round of loads.
    bool up[kResMaxLoads];
    up[0] = true;
#pragma unroll
    for (int i = 1; i < kResMaxLoads; ++i) up[i] = j + i < J && arr_load(flag(j + i)) != 0u;
    int m = 1;
#pragma unroll
    for (int i = 1; i < kResMaxLoads; ++i) m += (m == i && up[i]) ? 1 : 0;
    if constexpr (kAcquire) asm volatile("fence.acq_rel.gpu;" ::: "memory");  // the flags seen before the partials they guard
    float4 v[kResMaxLoads];
#pragma unroll
    for (int i = 0; i < kResMaxLoads; ++i)
      v[i] = i < m ? __ldcg(partials + static_cast<std::int64_t>(g + (j + i) * G) * C + c) : make_float4(0, 0, 0, 0);
#pragma unroll
    for (int i = 0; i < kResMaxLoads; ++i)
      if (i < m) acc = merge_fast(acc, Welford{v[i].x, v[i].y, v[i].z});
    j += m;
  }
  return acc;
}

// After phase 2 (every thread of the block is past its last look at a flag): the block counts itself
// out; the last block out sets the flags and the count back to zero for the next launch.
__device__ __forceinline__ void arr_leave(unsigned* flags, int blocks) {
  if (threadIdx.x != 0) return;
  unsigned* out = flags + static_cast<std::int64_t>(blocks) * kArrStride;
  if (atomicAdd(out, 1u) == static_cast<unsigned>(blocks) - 1) {
    for (int b = 0; b < blocks; ++b) flags[static_cast<std::int64_t>(b) * kArrStride] = 0u;
    *out = 0u;
  }
}

template <class T, bool kAdd>
__global__ void __launch_bounds__(kResBlock, 1)
    fwd_v13_arrivals_kernel(FwdArgs<T> a, ChannelParams p, float4* partials, unsigned* flags, ResPlan plan) {
  extern __shared__ __align__(128) unsigned char ch05_resident[];
  T* xs = reinterpret_cast<T*>(ch05_resident);
  __shared__ ResShared sh;
  const int t = static_cast<int>(threadIdx.x);
  const ResChunk k = res_chunk<T>(plan);
  const float gamma = t < plan.C ? a.gamma[t] : 0.0f, beta = t < plan.C ? a.beta[t] : 0.0f;
  res_phase1<T, kAdd>(a, plan, k, xs, sh, partials);
  arr_publish(flags, plan.C);
  res_finish(a, p, plan, sh, arr_gather(plan, partials, flags), gamma, beta);
  res_phase3<T, kAdd, 4>(a, plan, k, xs, sh);
  arr_leave(flags, plan.blocks);
}

// ---- Launcher -----------------------------------------------------------------------------------------

template <class T, bool kAdd>
const void* fwd_v13_kernel() {
  return reinterpret_cast<const void*>(&fwd_v13_arrivals_kernel<T, kAdd>);
}

// The flags (one line each, up to one per SM) and the count of blocks out, after everything v5 and
// v12 use of the scratch (where v13 runs v5, v5's state cannot land on a flag).
template <class T>
std::size_t arr_flags_offset(const Shape4& s) {
  return Scratch::up(std::max(fwd_v5_scratch_bytes<T>(s), Scratch(s.C, res_partial_bytes(s), 0).total));
}
inline std::size_t arr_flags_bytes() { return static_cast<std::size_t>(device_limits().sm_count + 1) * kArrStride * sizeof(unsigned); }

template <class T, bool kAdd>
void fwd_v13_arrivals(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v13_arrivals");
  ResPlan plan;
  if (!resident_fits<T, kAdd>(a, plan, res_smem_limit<fwd_v13_kernel<T, kAdd>>())) return fwd_v5_onchip_cache<T, kAdd>(st, a, ws);
  const Scratch sc(a.s.C, res_partial_bytes(a.s), 0);
  const void* kernel = fwd_v13_kernel<T, kAdd>();
  const std::size_t dyn = static_cast<std::size_t>(plan.chunk) * sizeof(T);
  res_check_fits(kernel, dyn, "fwd_v13_arrivals");
  FwdArgs<T> args = a;
  ChannelParams p = sc.params_at(ws);
  float4* partials = sc.partials_at<float4>(ws);
  unsigned* flags = reinterpret_cast<unsigned*>(static_cast<unsigned char*>(ws) + arr_flags_offset<T>(a.s));
  void* kargs[] = {&args, &p, &partials, &flags, &plan};
  TUT_CUDA(cudaLaunchCooperativeKernel(kernel, plan.blocks, kResBlock, kargs, dyn, st));
}

template <class T>
std::size_t fwd_v13_scratch_bytes(const Shape4& s) {
  return arr_flags_offset<T>(s) + arr_flags_bytes();
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v13_kernels() {
  auto k = fwd_v5_kernels<T, kAdd>();
  k.push_back(fwd_v13_kernel<T, kAdd>());
  return k;
}

}  // namespace ch05

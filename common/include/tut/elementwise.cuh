// The element-wise toolkit every chapter uses, and the generic template chapter 01 builds up to.
//
// The pieces, each usable alone:
//   Packed<T, N>        N elements read or written as one access (alignas(sizeof(T) * N)).
//   pack_size<T...>()   the widest pack every operand type allows: 16 bytes, at most 8 elements.
//   all_aligned<N>(p..) every pointer aligned for packs of N of its own type.
//   waves_grid_size()   the grid rule: enough blocks for `waves` full waves of resident threads
//                       (SMs x max threads per SM / block size), never more than the work needs.
//
// The generic template (OneFlow's elementwise.cuh, rewritten), and launch_tiles(), the same with one
// pack per thread and one block per tile instead of a grid-stride loop:
//   tut::ew::launch(factory, stream, n, out, in0 [, in1 [, in2]])
// applies the functor that `factory()` builds on the device to 1-3 inputs. Everything known at
// compile time is a template parameter (pack width, block size); what every thread shares (pack
// count, tail length, tail pointers) is computed once on the host and passed in.
//   - A pack is read as one aligned 16-byte value, so every pointer must be aligned to the pack's
//     size; when one is not, the same kernel runs with N = 1, which is always correct.
//   - The n % N elements after the last whole pack are handled by the first threads.
//   - A functor with an Apply2(out*, in*...) member processes element pairs, so half arithmetic
//     uses the paired instructions (__hmul2 is one HMUL2 for two products).
//   - Errors are returned (cudaError_t), never swallowed.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace tut::ew {

inline constexpr int kBlockSize = 256;
inline constexpr int kNumWaves = 32;
inline constexpr int kMaxPackBytes = 16;
inline constexpr int kMaxPackSize = 8;

template <class T>
constexpr int pack_size_of() {
  return std::max(1, std::min(static_cast<int>(kMaxPackBytes / sizeof(T)), kMaxPackSize));
}

template <class T, class... Ts>
constexpr int pack_size() {
  if constexpr (sizeof...(Ts) == 0) return pack_size_of<T>();
  else return std::min(pack_size_of<T>(), pack_size<Ts...>());
}

// Copying a whole Packed is one LDG/STG of sizeof(T) * N bytes: alignas tells the compiler the
// address is a multiple of the access width, and the struct is trivially copyable.
template <class T, int N>
struct alignas(sizeof(T) * N) Packed {
  T elem[N];
};

template <int pack, class... Ptrs>
bool all_aligned(const Ptrs*... ptrs) {
  return ((reinterpret_cast<std::uintptr_t>(ptrs) % (sizeof(Ptrs) * pack) == 0) && ...);
}

inline std::int64_t waves_grid_size(std::int64_t work, int block_size, int sm_count, int threads_per_sm,
                                    int waves = kNumWaves) {
  const std::int64_t by_work = (work + block_size - 1) / block_size;
  const std::int64_t by_device = static_cast<std::int64_t>(sm_count) * (threads_per_sm / block_size) * waves;
  return std::max<std::int64_t>(1, std::min(by_work, by_device));
}

// The same, reading the current device's attributes.
inline cudaError_t waves_grid_size(std::int64_t work, int block_size, std::int64_t* blocks) {
  int dev = 0, sm_count = 0, threads_per_sm = 0;
  if (cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) return e;
  if (cudaError_t e = cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, dev); e != cudaSuccess) return e;
  if (cudaError_t e = cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, dev);
      e != cudaSuccess)
    return e;
  *blocks = waves_grid_size(work, block_size, sm_count, threads_per_sm);
  return cudaSuccess;
}

template <class F, class = void>
struct HasApply2 : std::false_type {};
template <class F>
struct HasApply2<F, std::void_t<decltype(&F::Apply2)>> : std::true_type {};

// The packs come in by value: the caller's `pack_in[i]` is copied into registers with one 16-byte
// load each, and the functor works on the copy.
template <int N, class F, class R, class... IN>
__device__ __forceinline__ Packed<R, N> apply_pack(const F& f, const Packed<IN, N>... in) {
  Packed<R, N> out;
  if constexpr (HasApply2<F>::value && N % 2 == 0) {
#pragma unroll
    for (int j = 0; j < N; j += 2) f.Apply2(out.elem + j, (in.elem + j)...);
  } else {
#pragma unroll
    for (int j = 0; j < N; ++j) out.elem[j] = f(in.elem[j]...);
  }
  return out;
}

template <int N, class FactoryT, class R, class... IN>
__global__ void __launch_bounds__(kBlockSize)
    apply_generic(FactoryT factory, std::int64_t n_pack, Packed<R, N>* __restrict__ pack_out,
                  const Packed<IN, N>* __restrict__... pack_in, std::int64_t n_tail, R* __restrict__ tail_out,
                  const IN* __restrict__... tail_in) {
  auto f = factory();
  const std::int64_t tid = blockIdx.x * static_cast<std::int64_t>(kBlockSize) + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kBlockSize;
  for (std::int64_t i = tid; i < n_pack; i += stride) pack_out[i] = apply_pack<N, decltype(f), R, IN...>(f, pack_in[i]...);
  if (tid < n_tail) tail_out[tid] = f(tail_in[tid]...);  // n_tail < N <= kBlockSize: one pass is enough
}

template <int N, class FactoryT, class R, class... IN>
cudaError_t launch_packed(FactoryT factory, cudaStream_t stream, std::int64_t n, R* out, const IN*... in) {
  const std::int64_t n_pack = n / N;
  const std::int64_t tail_offset = n_pack * N;
  const std::int64_t n_tail = n - tail_offset;
  std::int64_t blocks = 0;
  if (cudaError_t e = waves_grid_size(std::max<std::int64_t>(n_pack, 1), kBlockSize, &blocks); e != cudaSuccess)
    return e;
  apply_generic<N, FactoryT, R, IN...><<<static_cast<unsigned>(blocks), kBlockSize, 0, stream>>>(
      factory, n_pack, reinterpret_cast<Packed<R, N>*>(out), reinterpret_cast<const Packed<IN, N>*>(in)..., n_tail,
      out + tail_offset, (in + tail_offset)...);
  return cudaPeekAtLastError();
}

// The same work with no loop: one pack per thread, one tile of Threads packs per block, as many
// blocks as tiles (the shape PyTorch's vectorized element-wise kernel has). Block 0's first threads
// also do the n % N tail. Threads is kBlockSize everywhere but in 01_elementwise/block_size.cu,
// which measures what the block size changes (`dynamic_smem` is that tool's, too: it caps how many
// blocks an SM holds).
template <int N, int Threads, class FactoryT, class R, class... IN>
__global__ void __launch_bounds__(Threads)
    apply_tiles(FactoryT factory, std::int64_t n_pack, Packed<R, N>* __restrict__ pack_out,
                const Packed<IN, N>* __restrict__... pack_in, std::int64_t n_tail, R* __restrict__ tail_out,
                const IN* __restrict__... tail_in) {
  auto f = factory();
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(Threads) + threadIdx.x;
  if (i < n_pack) pack_out[i] = apply_pack<N, decltype(f), R, IN...>(f, pack_in[i]...);
  if (i < n_tail) tail_out[i] = f(tail_in[i]...);  // n_tail < N <= Threads
}

template <int N, int Threads, class FactoryT, class R, class... IN>
cudaError_t launch_tiles_packed_smem(FactoryT factory, cudaStream_t stream, std::size_t dynamic_smem, std::int64_t n,
                                     R* out, const IN*... in) {
  static_assert(Threads >= kMaxPackSize && Threads <= 1024, "a block holds the tail, and at most 1024 threads");
  const std::int64_t n_pack = n / N;
  const std::int64_t tail_offset = n_pack * N;
  const std::int64_t blocks = std::max<std::int64_t>(1, (n_pack + Threads - 1) / Threads);
  if (blocks > 0x7fffffff) return cudaErrorInvalidValue;
  apply_tiles<N, Threads, FactoryT, R, IN...><<<static_cast<unsigned>(blocks), Threads, dynamic_smem, stream>>>(
      factory, n_pack, reinterpret_cast<Packed<R, N>*>(out), reinterpret_cast<const Packed<IN, N>*>(in)...,
      n - tail_offset, out + tail_offset, (in + tail_offset)...);
  return cudaPeekAtLastError();
}

template <int N, int Threads = kBlockSize, class FactoryT, class R, class... IN>
cudaError_t launch_tiles_packed(FactoryT factory, cudaStream_t stream, std::int64_t n, R* out, const IN*... in) {
  return launch_tiles_packed_smem<N, Threads>(factory, stream, 0, n, out, in...);
}

// The pack width launch() uses for these pointers: the widest pack when every one is aligned for
// it, else 1.
template <class R, class... IN>
int pack_for(const R* out, const IN*... in) {
  constexpr int N = pack_size<R, IN...>();
  return all_aligned<N>(out, in...) ? N : 1;
}

// Checks n, picks the pack width for these pointers, and launches the grid-stride kernel
// (kTiles = false) or the tile-per-block one.
template <bool kTiles, class FactoryT, class R, class... IN>
cudaError_t dispatch(FactoryT factory, cudaStream_t stream, std::int64_t n, R* out, const IN*... in) {
  static_assert(sizeof...(IN) >= 1 && sizeof...(IN) <= 3, "1 to 3 inputs");
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  constexpr int N = pack_size<R, IN...>();
  const bool packed = pack_for(out, in...) == N;
  if constexpr (kTiles) {
    return packed ? launch_tiles_packed<N>(factory, stream, n, out, in...)
                  : launch_tiles_packed<1>(factory, stream, n, out, in...);
  } else {
    return packed ? launch_packed<N>(factory, stream, n, out, in...) : launch_packed<1>(factory, stream, n, out, in...);
  }
}

// The entry point. n == 0 launches nothing; n < 0 is cudaErrorInvalidValue.
template <class FactoryT, class R, class... IN>
cudaError_t launch(FactoryT factory, cudaStream_t stream, std::int64_t n, R* out, const IN*... in) {
  return dispatch<false>(factory, stream, n, out, in...);
}

// launch() with the tile-per-block kernel instead of the grid-stride loop.
template <class FactoryT, class R, class... IN>
cudaError_t launch_tiles(FactoryT factory, cudaStream_t stream, std::int64_t n, R* out, const IN*... in) {
  return dispatch<true>(factory, stream, n, out, in...);
}

// The kernel launch_tiles() uses for aligned pointers: for register counts and SASS checks.
template <class FactoryT, class R, class... IN>
constexpr auto tiles_kernel() {
  return &apply_tiles<pack_size<R, IN...>(), kBlockSize, FactoryT, R, IN...>;
}

// The kernel launch() uses for aligned pointers: for register counts and SASS checks.
template <class FactoryT, class R, class... IN>
constexpr auto packed_kernel() {
  return &apply_generic<pack_size<R, IN...>(), FactoryT, R, IN...>;
}

// A factory for functors that need no arguments.
template <class F>
struct SimpleFactory {
  __device__ F operator()() const { return F{}; }
};

}  // namespace tut::ew

// bwd v0_scatter_atomic: PyTorch's backward. dx is zeroed, then one thread per output adds dy at
// the input element its saved index names, with atomicAdd.
//
// Where windows overlap, several outputs may name the same input element (a maximum shared by
// neighbouring windows), and their atomic adds land in whatever order the hardware serves them.
// Float addition is not associative, so dx can differ in its last bits from run to run: PyTorch
// documents max_pool3d's backward as nondeterministic, and torch.use_deterministic_algorithms(True)
// makes it raise an error. Kept here as the comparison for the gather (bwd v1).
//
// Bytes: dx written twice (the zeroing, then the atomics' read-modify-write at L2, which the L2
// absorbs only while dx fits), dy and the index read once. With indices=compact the index is 1 or
// 2 bytes per output instead of 8.
#pragma once

#include "kernels/bwd.cuh"

namespace ch06 {

template <class T>
__global__ void __launch_bounds__(256) bwd_v0_scatter_atomic_kernel(BackwardArgs<T> a, OutDecoder dec) {
  const Window& w = a.w;
  const std::int64_t total = w.out_numel();
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < total;
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const OutPos q = dec(o);
    const std::int64_t flat = w.indices == IndexFormat::int64 ? a.index[o] : w.flat_index(q.od, q.oh, q.ow, saved_cell(a, o));
    atomicAdd(a.dx + in_element(w, q.n, q.c, flat), a.dy[o]);
  }
}

template <class T>
void bwd_v0_scatter_atomic(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v0_scatter_atomic");
  TUT_CUDA(cudaMemsetAsync(a.dx, 0, static_cast<std::size_t>(a.w.in_numel()) * sizeof(T), s));
  constexpr int kBlock = 256;
  bwd_v0_scatter_atomic_kernel<T><<<grid_for(a.w.out_numel(), kBlock, "bwd_v0_scatter_atomic"), kBlock, 0, s>>>(
      a, OutDecoder(a.w));
  TUT_CHECK_LAUNCH("bwd_v0_scatter_atomic_kernel");
}

}  // namespace ch06

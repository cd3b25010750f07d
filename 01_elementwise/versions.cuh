// Chapter 01's registry: each problem's ladder, listed once. The benchmark, the GPU tests and the
// exercise grader iterate these lists; a new version is one new entry.
#pragma once

#include "kernels/ops.cuh"
#include "kernels/v0_naive.cuh"
#include "kernels/v1_grid_stride.cuh"
#include "kernels/v2_waves.cuh"
#include "kernels/v3_generic.cuh"
#include "tut/registry.hpp"

#if TUT_EXERCISES
#include "exercises/relu_vectorized.cuh"
#endif

#include <cuda_fp16.h>

#include <cstdint>

namespace ch01 {

using ReluLaunch = void (*)(cudaStream_t, std::int64_t n, float* y, const float* x);
using MulLaunch = void (*)(cudaStream_t, std::int64_t n, __half* z, const __half* x, const __half* y);

// Floors: ReLU reads 4 bytes and writes 4 per element; the product reads 2 + 2 and writes 2.
inline const tut::Ladder<ReluLaunch>& relu_ladder() {
  static const tut::Ladder<ReluLaunch> ladder{
      tut::per_element("relu_f32", "y = max(x, 0) on float32, NaN-propagating", 8, 1),
      {
          {"v0_naive", "one thread per element, grid = ceil(n/256), bounds-checked", &v0_naive<Relu, float, float>,
           TUT_KERNEL(v0_naive_kernel<Relu, float, float>), true},
          {"v1_grid_stride", "grid-stride loop over a fixed grid of 1024 blocks", &v1_grid_stride<Relu, float, float>,
           TUT_KERNEL(v1_grid_stride_kernel<Relu, float, float>), true},
          {"v2_waves", "grid from SMs x threads/SM x 32 waves; stride from the host", &v2_waves<Relu, float, float>,
           TUT_KERNEL(v2_waves_kernel<ew::kBlockSize, Relu, float, float>), true},
          {"v3_generic", "generic template: 16-byte packs, tail, alignment fall-back", &v3_generic<Relu, float, float>,
           reinterpret_cast<const void*>(ew::packed_kernel<ew::SimpleFactory<Relu>, float, float>()), true},
#if TUT_EXERCISES
          {"ex_relu_vectorized", "exercise: your vectorized ReLU", &exercise::relu_vectorized,
           TUT_KERNEL(exercise::relu_vectorized_kernel), true},
#endif
      }};
  return ladder;
}

inline const tut::Ladder<MulLaunch>& mul_ladder() {
  static const tut::Ladder<MulLaunch> ladder{
      tut::per_element("mul_f16", "z = x * y on half", 6, 1),
      {
          {"v0_naive", "one thread per element, grid = ceil(n/256), bounds-checked",
           &v0_naive<Mul, __half, __half, __half>, TUT_KERNEL(v0_naive_kernel<Mul, __half, __half, __half>), true},
          {"v1_grid_stride", "grid-stride loop over a fixed grid of 1024 blocks",
           &v1_grid_stride<Mul, __half, __half, __half>,
           TUT_KERNEL(v1_grid_stride_kernel<Mul, __half, __half, __half>), true},
          {"v2_waves", "grid from SMs x threads/SM x 32 waves; stride from the host",
           &v2_waves<Mul, __half, __half, __half>,
           TUT_KERNEL(v2_waves_kernel<ew::kBlockSize, Mul, __half, __half, __half>), true},
          {"v3_generic", "generic template: 16-byte packs, __hmul2 pairs, tail, fall-back",
           &v3_generic<Mul, __half, __half, __half>,
           reinterpret_cast<const void*>(ew::packed_kernel<ew::SimpleFactory<Mul>, __half, __half, __half>()), true},
      }};
  return ladder;
}

}  // namespace ch01

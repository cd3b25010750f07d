// Chapter 01's problems and their ladders, listed once. The benchmark, the GPU tests, the
// exercise grader, the profiler and the sweep iterate these lists; a new version is one new entry.
#pragma once

#include "kernels/ops.cuh"
#include "kernels/v0_naive.cuh"
#include "kernels/v1_grid_stride.cuh"
#include "kernels/v2_waves.cuh"
#include "kernels/v3_generic.cuh"
#include "kernels/v4_tiles.cuh"
#include "reference.hpp"
#include "tut/elementwise_problem.cuh"

#if TUT_EXERCISES
#include "exercises/relu_vectorized.cuh"
#endif

#include <cuda_fp16.h>
#include <vector>

namespace ch01 {

using ReluInstance = tut::ElementwiseInstance<float, float>;
using MulInstance = tut::ElementwiseInstance<__half, __half, __half>;

// ReLU reads 4 bytes and writes 4 per element. The output is compared bit for bit: -0 must stay
// -0 and NaN must stay the same NaN.
inline const tut::Problem<ReluInstance>& relu_problem() {
  static const auto problem = [] {
    auto p = tut::elementwise_problem<float, float>("relu_f32", "y = max(x, 0) on float32, NaN-propagating",
                                                     &relu_ref, {"x", "y"}, 1, tut::Rule::bitwise());
    const auto version = [](const char* name, const char* summary, ReluInstance::Launch launch, const void* kernel) {
      return tut::elementwise_version<float, float>(name, summary, launch, {kernel});
    };
    p.versions = {
        version("v0_naive", "one thread per element, grid = ceil(n/256), bounds-checked",
                &v0_naive<Relu, float, float>, TUT_KERNEL(v0_naive_kernel<Relu, float, float>)),
        version("v1_grid_stride", "grid-stride loop over a fixed grid of 1024 blocks",
                &v1_grid_stride<Relu, float, float>, TUT_KERNEL(v1_grid_stride_kernel<Relu, float, float>)),
        version("v2_waves", "grid from SMs x threads/SM x 32 waves; stride from the host",
                &v2_waves<Relu, float, float>, TUT_KERNEL(v2_waves_kernel<tut::ew::kBlockSize, Relu, float, float>)),
        version("v3_generic", "generic template: 16-byte packs, tail, alignment fall-back",
                &v3_generic<Relu, float, float>,
                reinterpret_cast<const void*>(tut::ew::packed_kernel<tut::ew::SimpleFactory<Relu>, float, float>())),
        version("v4_tiles", "v3's packs, no loop: one pack per thread, one 4 KiB tile per block",
                &v4_tiles<Relu, float, float>,
                reinterpret_cast<const void*>(tut::ew::tiles_kernel<tut::ew::SimpleFactory<Relu>, float, float>())),
#if TUT_EXERCISES
        tut::elementwise_version<float, float>("ex_relu_vectorized", "exercise: your vectorized ReLU",
                                               &exercise::relu_vectorized, {TUT_KERNEL(exercise::relu_vectorized_kernel)},
                                               true, tut::Kind::exercise),
#endif
    };
    return p;
  }();
  return problem;
}

// The product reads 2 + 2 bytes and writes 2 per element, rounded once: exactly __hmul.
inline const tut::Problem<MulInstance>& mul_problem() {
  static const auto problem = [] {
    auto p = tut::elementwise_problem<__half, __half, __half>("mul_f16", "z = x * y on half", &mul_ref,
                                                              {"x", "y", "z"}, 1, tut::Rule::exact());
    const auto version = [](const char* name, const char* summary, MulInstance::Launch launch, const void* kernel) {
      return tut::elementwise_version<__half, __half, __half>(name, summary, launch, {kernel});
    };
    p.versions = {
        version("v0_naive", "one thread per element, grid = ceil(n/256), bounds-checked",
                &v0_naive<Mul, __half, __half, __half>, TUT_KERNEL(v0_naive_kernel<Mul, __half, __half, __half>)),
        version("v1_grid_stride", "grid-stride loop over a fixed grid of 1024 blocks",
                &v1_grid_stride<Mul, __half, __half, __half>,
                TUT_KERNEL(v1_grid_stride_kernel<Mul, __half, __half, __half>)),
        version("v2_waves", "grid from SMs x threads/SM x 32 waves; stride from the host",
                &v2_waves<Mul, __half, __half, __half>,
                TUT_KERNEL(v2_waves_kernel<tut::ew::kBlockSize, Mul, __half, __half, __half>)),
        version("v3_generic", "generic template: 16-byte packs, __hmul2 pairs, tail, fall-back",
                &v3_generic<Mul, __half, __half, __half>,
                reinterpret_cast<const void*>(
                    tut::ew::packed_kernel<tut::ew::SimpleFactory<Mul>, __half, __half, __half>())),
        version("v4_tiles", "v3's packs, no loop: one pack per thread, one 4 KiB tile per block",
                &v4_tiles<Mul, __half, __half, __half>,
                reinterpret_cast<const void*>(
                    tut::ew::tiles_kernel<tut::ew::SimpleFactory<Mul>, __half, __half, __half>())),
    };
    return p;
  }();
  return problem;
}

}  // namespace ch01

// Chapter 02's problems and their ladders. The benchmark, the GPU tests, the exercise grader, the
// profiler and the sweep iterate these lists. `any_alignment` is false for the raw vector kernels:
// they are tested on aligned data only, and the *_checked launchers at every pointer offset.
#pragma once

#include "kernels/alignment.cuh"
#include "kernels/copy.cuh"
#include "kernels/mul_k0_packed.cuh"
#include "kernels/mul_k1_from_global.cuh"
#include "kernels/mul_k2_cast_in_loop.cuh"
#include "kernels/mul_k3_half_index.cuh"
#include "kernels/mul_k4_int4_container.cuh"
#include "kernels/ops.cuh"
#include "reference.hpp"
#include "tut/elementwise.cuh"
#include "tut/elementwise_problem.cuh"

#if TUT_EXERCISES
#include "exercises/fma_f16.cuh"
#endif

#include <cuda_fp16.h>

#include <cstdint>
#include <vector>

namespace ch02 {

using CopyInstance = tut::ElementwiseInstance<std::int32_t, std::int32_t>;
using MulInstance = tut::ElementwiseInstance<__half, __half, __half>;
using FmaInstance = tut::ElementwiseInstance<__half, __half, __half, __half>;

// The generic template (common/include/tut/elementwise.cuh), launched as is: the reference row of
// each half problem.
template <class Op, class... In>
void generic(cudaStream_t s, std::int64_t n, __half* z, const In*... in) {
  TUT_CUDA(tut::ew::launch(tut::ew::SimpleFactory<Op>{}, s, n, z, in...));
}
template <class Op, class... In>
const void* generic_kernel() {
  return reinterpret_cast<const void*>(tut::ew::packed_kernel<tut::ew::SimpleFactory<Op>, __half, In...>());
}
// The same template with one pack per thread and one tile per block (chapter 01's v4_tiles).
template <class Op, class... In>
void generic_tiles(cudaStream_t s, std::int64_t n, __half* z, const In*... in) {
  TUT_CUDA(tut::ew::launch_tiles(tut::ew::SimpleFactory<Op>{}, s, n, z, in...));
}
template <class Op, class... In>
const void* generic_tiles_kernel() {
  return reinterpret_cast<const void*>(tut::ew::tiles_kernel<tut::ew::SimpleFactory<Op>, __half, In...>());
}

// int32 copies of every bit pattern, compared bit for bit.
inline const tut::Problem<CopyInstance>& copy_problem() {
  static const auto problem = [] {
    auto p = tut::elementwise_problem<std::int32_t, std::int32_t>("copy_i32", "out = in on int32", &copy_ref,
                                                                  {"in", "out"}, 0, tut::Rule::bitwise(),
                                                                  tut::InputSpec::bits());
    const auto version = [](const char* name, const char* summary, CopyInstance::Launch launch, const void* kernel,
                            bool any_alignment) {
      return tut::elementwise_version<std::int32_t, std::int32_t>(name, summary, launch, {kernel}, any_alignment);
    };
    p.versions = {
        version("copy_scalar", "one int (4 bytes) per thread per iteration", &copy_vectorized<std::int32_t>,
                TUT_KERNEL(copy_kernel<std::int32_t>), true),
        version("copy_int2", "int2: 8 bytes per access, any remainder in the tail", &copy_vectorized<int2>,
                TUT_KERNEL(copy_kernel<int2>), false),
        version("copy_int4", "int4: 16 bytes per access, any remainder in the tail", &copy_vectorized<int4>,
                TUT_KERNEL(copy_kernel<int4>), false),
        version("copy_int4_tiles", "int4, one 16 KiB tile per block: 256 threads x 4 loads", &copy_int4_tiles,
                TUT_KERNEL(copy_tiles_kernel<256, 4>), false),
        version("copy_int4_tiles_1024", "int4, one 32 KiB tile per block: 1024 threads x 2 loads",
                &copy_int4_tiles_1024, TUT_KERNEL(copy_tiles_kernel<1024, 2>), false),
        version("copy_int4_tiles_4k", "int4, one 4 KiB tile per block: 256 threads x 1 load",
                &copy_int4_tiles_4k, TUT_KERNEL(copy_tiles_kernel<256, 1>), false),
        version("copy_tiles_checked", "copy_int4_tiles_4k if both pointers are 16-byte aligned, else scalar",
                &copy_tiles_checked, TUT_KERNEL(copy_tiles_kernel<256, 1>), true),
        tut::elementwise_version<std::int32_t, std::int32_t>("cudaMemcpyAsync", "the driver's device-to-device copy",
                                                             &copy_memcpy, {}, true, tut::Kind::peer, "CUDA runtime"),
    };
    return p;
  }();
  return problem;
}

inline const tut::Problem<MulInstance>& mul_problem() {
  static const auto problem = [] {
    auto p = tut::elementwise_problem<__half, __half, __half>("mul_f16", "z = x * y on half", &mul_ref,
                                                              {"x", "y", "z"}, 1, tut::Rule::exact());
    const auto version = [](const char* name, const char* summary, MulInstance::Launch launch, const void* kernel,
                            bool any_alignment) {
      return tut::elementwise_version<__half, __half, __half>(name, summary, launch, {kernel}, any_alignment);
    };
    p.versions = {
        version("k0_packed", "Packed<half, 8> structs copied whole into registers", &mul_k0, TUT_KERNEL(mul_k0_packed),
                false),
        version("k1_from_global", "same structs, each element read and written in global memory", &mul_k1,
                TUT_KERNEL(mul_k1_from_global), false),
        version("k2_cast_in_loop", "k0 with the pointer casts inside the loop", &mul_k2,
                TUT_KERNEL(mul_k2_cast_in_loop), false),
        version("k3_half_index", "k2 with the loop counted in halves, not packs", &mul_k3,
                TUT_KERNEL(mul_k3_half_index), false),
        version("k4_int4_container", "int4 loads and stores, bytes viewed as halves", &mul_k4,
                TUT_KERNEL(mul_k4_int4_container), false),
        version("k0_checked", "k0 if all pointers are 16-byte aligned, else scalar", &mul_k0_checked,
                TUT_KERNEL(mul_k0_packed), true),
        version("generic", "reference row: the generic template (packs + __hmul2)", &generic<Mul, __half, __half>,
                generic_kernel<Mul, __half, __half>(), true),
        version("generic_tiles", "reference row: the template with one pack per thread, one tile per block",
                &generic_tiles<Mul, __half, __half>, generic_tiles_kernel<Mul, __half, __half>(), true),
    };
    return p;
  }();
  return problem;
}

inline const tut::Problem<FmaInstance>& fma_problem() {
  static const auto problem = [] {
    auto p = tut::elementwise_problem<__half, __half, __half, __half>("fma_f16", "z = a * x + y on half, one rounding",
                                                                      &fma_ref, {"a", "x", "y", "z"}, 2,
                                                                      tut::Rule::exact());
    p.versions = {
        tut::elementwise_version<__half, __half, __half, __half>(
            "generic", "reference row: the generic template (packs + __hfma2)", &generic<Fma, __half, __half, __half>,
            {generic_kernel<Fma, __half, __half, __half>()}),
        tut::elementwise_version<__half, __half, __half, __half>(
            "generic_tiles", "reference row: the template with one pack per thread, one tile per block",
            &generic_tiles<Fma, __half, __half, __half>, {generic_tiles_kernel<Fma, __half, __half, __half>()}),
#if TUT_EXERCISES
        tut::elementwise_version<__half, __half, __half, __half>(
            "ex_fma_vectorized", "exercise: your vectorized a*x + y", &exercise::fma_f16,
            {TUT_KERNEL(exercise::fma_f16_kernel)}, true, tut::Kind::exercise),
#endif
    };
    return p;
  }();
  return problem;
}

}  // namespace ch02

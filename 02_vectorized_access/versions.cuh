// Chapter 02's registry. The benchmark, the GPU tests and the exercise grader iterate these lists.
// `any_alignment` is false for the raw vector kernels: they are tested on aligned data only, and
// the *_checked launchers are tested at every pointer offset.
#pragma once

#include "elementwise.cuh"
#include "kernels/alignment.cuh"
#include "kernels/copy.cuh"
#include "kernels/fma_op.cuh"
#include "kernels/mul_k0_packed.cuh"
#include "kernels/mul_k1_from_global.cuh"
#include "kernels/mul_k2_cast_in_loop.cuh"
#include "kernels/mul_k3_half_index.cuh"
#include "kernels/mul_k4_int4_container.cuh"
#include "ops.cuh"
#include "tut/registry.hpp"

#if TUT_EXERCISES
#include "exercises/fma_f16.cuh"
#endif

#include <cuda_fp16.h>

#include <cstdint>

namespace ch02 {

using CopyLaunch = void (*)(cudaStream_t, std::int64_t n, std::int32_t* out, const std::int32_t* in);
using MulLaunch = void (*)(cudaStream_t, std::int64_t n, __half* z, const __half* x, const __half* y);
using FmaLaunch = void (*)(cudaStream_t, std::int64_t n, __half* z, const __half* a, const __half* x, const __half* y);

// Chapter 01's generic template, launched as is: the reference row of each half problem.
template <class Op, class... In>
void generic(cudaStream_t s, std::int64_t n, __half* z, const In*... in) {
  TUT_CUDA(ew::launch(ew::SimpleFactory<Op>{}, s, n, z, in...));
}

inline const tut::Ladder<CopyLaunch>& copy_ladder() {
  static const tut::Ladder<CopyLaunch> ladder{
      tut::per_element("copy_i32", "out = in on int32", 8, 0),
      {
          {"copy_scalar", "one int (4 bytes) per thread per iteration", &copy_vectorized<std::int32_t>,
           TUT_KERNEL(copy_kernel<std::int32_t>), true},
          {"copy_int2", "int2: 8 bytes per access, any remainder in the tail", &copy_vectorized<int2>,
           TUT_KERNEL(copy_kernel<int2>), false},
          {"copy_int4", "int4: 16 bytes per access, any remainder in the tail", &copy_vectorized<int4>,
           TUT_KERNEL(copy_kernel<int4>), false},
          {"copy_int4_tiles", "int4, one 16 KiB tile per block, 4 loads in flight per thread", &copy_int4_tiles,
           TUT_KERNEL(copy_int4_tiles_kernel), false},
          {"copy_tiles_checked", "copy_int4_tiles if both pointers are 16-byte aligned, else scalar",
           &copy_tiles_checked, TUT_KERNEL(copy_int4_tiles_kernel), true},
          {"cudaMemcpyAsync", "peer: the driver's device-to-device copy", &copy_memcpy, nullptr, true},
      }};
  return ladder;
}

inline const tut::Ladder<MulLaunch>& mul_ladder() {
  static const tut::Ladder<MulLaunch> ladder{
      tut::per_element("mul_f16", "z = x * y on half", 6, 1),
      {
          {"k0_packed", "Packed<half, 8> structs copied whole into registers", &mul_k0, TUT_KERNEL(mul_k0_packed),
           false},
          {"k1_from_global", "same structs, each element read and written in global memory", &mul_k1,
           TUT_KERNEL(mul_k1_from_global), false},
          {"k2_cast_in_loop", "k0 with the pointer casts inside the loop", &mul_k2, TUT_KERNEL(mul_k2_cast_in_loop),
           false},
          {"k3_half_index", "k2 with the loop counted in halves, not packs", &mul_k3, TUT_KERNEL(mul_k3_half_index),
           false},
          {"k4_int4_container", "int4 loads and stores, bytes viewed as halves", &mul_k4,
           TUT_KERNEL(mul_k4_int4_container), false},
          {"k0_checked", "k0 if all pointers are 16-byte aligned, else scalar", &mul_k0_checked,
           TUT_KERNEL(mul_k0_packed), true},
          {"generic", "reference row: chapter 01's template (packs + __hmul2)", &generic<ch01::Mul, __half, __half>,
           reinterpret_cast<const void*>(ew::packed_kernel<ew::SimpleFactory<ch01::Mul>, __half, __half, __half>()),
           true},
      }};
  return ladder;
}

inline const tut::Ladder<FmaLaunch>& fma_ladder() {
  static const tut::Ladder<FmaLaunch> ladder{
      tut::per_element("fma_f16", "z = a * x + y on half, one rounding", 8, 2),
      {
          {"generic", "reference row: chapter 01's template (packs + __hfma2)", &generic<Fma, __half, __half, __half>,
           reinterpret_cast<const void*>(ew::packed_kernel<ew::SimpleFactory<Fma>, __half, __half, __half, __half>()),
           true},
#if TUT_EXERCISES
          {"ex_fma_vectorized", "exercise: your vectorized a*x + y", &exercise::fma_f16,
           TUT_KERNEL(exercise::fma_f16_kernel), true},
#endif
      }};
  return ladder;
}

}  // namespace ch02

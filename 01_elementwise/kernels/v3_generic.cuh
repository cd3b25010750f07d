// v3_generic: the generic element-wise template (kernels/elementwise.cuh) with 16-byte packs.
//
// What changed: each thread loads and stores whole 16-byte packs (4 floats or 8 halves), with
// v2's grid, the tail handled separately, and a fall-back to width 1 for misaligned pointers.
// Half products go through Apply2, two per HMUL2.
//
// Why it helps: a quarter (float) or an eighth (half) of the load/store instructions for the same
// bytes, so the memory system sees full 128-byte lines per warp instruction with far fewer
// instructions issued. SASS: LDG.E.128 and STG.E.128 in the packed kernel (the SASS test checks
// this). The cost: more registers per thread to hold the packs.
#pragma once

#include "kernels/elementwise.cuh"
#include "tut/check.hpp"

#include <cstdint>

namespace ch01 {

template <class Op, class R, class... In>
void v3_generic(cudaStream_t stream, std::int64_t n, R* out, const In*... in) {
  TUT_CUDA(ew::launch(ew::SimpleFactory<Op>{}, stream, n, out, in...));
}

}  // namespace ch01

// v3_generic: the generic element-wise template (common/include/tut/elementwise.cuh) with 16-byte
// packs.
//
// What changed: each thread loads and stores whole 16-byte packs (4 floats or 8 halves), on v2's
// grid, with the tail handled separately and a fall-back to width 1 for misaligned pointers.
// Half products go through Apply2, two per HMUL2.
//
// Why it helps: for half, the bytes in flight. v2's half loop has one 2-byte load per input in
// flight per thread; a pack is 16 bytes per input, eight times as much, which is what Little's law
// asks for. For float, v2 already had four 4-byte loads in flight (its unrolled loop), so packs
// only save instructions: a quarter of the load/store instructions for the same bytes.
// SASS: LDG.E.128 and STG.E.128 in the packed kernel (the SASS test checks this). The cost: more
// registers per thread to hold the packs.
#pragma once

#include "tut/check.hpp"
#include "tut/elementwise.cuh"

#include <cstdint>

namespace ch01 {

template <class Op, class R, class... In>
void v3_generic(cudaStream_t stream, std::int64_t n, R* out, const In*... in) {
  TUT_CUDA(tut::ew::launch(tut::ew::SimpleFactory<Op>{}, stream, n, out, in...));
}

}  // namespace ch01

// v4_tiles: v3's 16-byte packs, with no loop: one pack per thread, one 4 KiB tile (256 packs) per
// block, as many blocks as tiles (tut::ew::launch_tiles in common/include/tut/elementwise.cuh).
//
// Where it comes from: profiling the library this chapter races. Nsight Compute shows PyTorch's
// torch.relu and torch.mul as a vectorized_elementwise_kernel of 128-thread blocks, 262144 of them
// for n = 2^28: one or two 16-byte packs per thread and no grid-stride loop (the chapter's profile
// table has the PyTorch rows). v0's shape, in other words, with v3's packs.
//
// What it changes against v3: the blocks. v3's 32 waves of long-lived blocks each loop over many
// packs; here about a thousand waves of blocks each move one tile and retire, and the block
// scheduler hands out tiles in address order. The measured difference is in the table; the
// profile's DRAM throughput and stall columns show where it comes from.
#pragma once

#include "tut/check.hpp"
#include "tut/elementwise.cuh"

#include <cstdint>

namespace ch01 {

template <class Op, class R, class... In>
void v4_tiles(cudaStream_t stream, std::int64_t n, R* out, const In*... in) {
  TUT_CUDA(tut::ew::launch_tiles(tut::ew::SimpleFactory<Op>{}, stream, n, out, in...));
}

}  // namespace ch01

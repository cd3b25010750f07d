// fwd v5_layout_dhw: the source's second thread/block mapping, on v2's body. A block covers a
// brick of one output plane, (tx, ty, tz) = (min(T, oW), min(T / tx, oH), min(T / (tx * ty), oD,
// 64)) along (W, H, D); the grid is (ceil(oH / ty), ceil(oD / tz), N*C): one plane per blockIdx.z.
// The source's T was 1024; here 256, as for v4.
//
// What changed since v4: a block's threads now hold a contiguous 3-D brick of one plane instead of
// rows from tz different (plane, od) pairs. The source found this mapping faster in most of its
// cases, and v4 faster for k = 8 with stride 1, for k = 8 on 8^3 volumes, and for k = 8 on 32^3
// volumes of 64 channels: small outputs, where a brick holds few threads (2 x 2 x 2 outputs make
// a block of 8 threads, a quarter of one warp). Three limits of the source's launch are fixed
// here: W past T outputs (the source's grid had no blocks for it; here each thread loops over ow
// in steps of tx), blockDim.z <= 64 (the source's tz could reach 1024 on a 1 x 1 x oD output),
// and gridDim.z <= 65535 planes (a loop over the rest).
//
// Prediction: v4's bytes and v4's per-thread work; the difference is how full the blocks are and
// which outputs share a warp. Achieved occupancy (Nsight Compute) should fall with the brick's
// size on the small volumes.
#pragma once

#include "kernels/fwd_v1_unrolled.cuh"
#include "kernels/window_body.cuh"

namespace ch06 {

template <int K, class T>
__global__ void __launch_bounds__(kMaxLayoutThreads) fwd_v5_layout_dhw_kernel(ForwardArgs<T> a) {
  const Window& w = a.w;
  const int oh = blockIdx.x * blockDim.y + threadIdx.y, od = blockIdx.y * blockDim.z + threadIdx.z;
  if (oh >= w.oH || od >= w.oD) return;  // no barrier below
  const std::int64_t planes = w.N * w.C, plane = w.in_plane();
  const int d0 = od * w.s[0] - w.p[0], h0 = oh * w.s[1] - w.p[1];
  for (std::int64_t nc = blockIdx.z; nc < planes; nc += gridDim.z) {
    for (int ow = threadIdx.x; ow < w.oW; ow += blockDim.x) {
      const int w0 = ow * w.s[2] - w.p[2];
      T best;
      int cell;
      window_interior_border<K>(a.x + nc * plane, w, d0, h0, w0, best, cell);
      store_result<K, K, K>(a, ((nc * w.oD + od) * w.oH + oh) * w.oW + ow, best, cell, d0, h0, w0);
    }
  }
}

template <class T>
std::string fwd_v5_refuses(const Window& w) {
  if (w.layout != Layout::ncdhw) return "fwd_v5_layout_dhw reads the layout NCDHW only";
  if (w.dilated()) return "fwd_v5_layout_dhw takes dilation 1 only";
  if (!plane_fits_32_bits(w)) return "fwd_v5_layout_dhw indexes a plane in 32 bits; this one is larger";
  const int tx = std::min(kMaxLayoutThreads, w.oW), ty = std::min(kMaxLayoutThreads / tx, w.oH), tz = std::min({kMaxLayoutThreads / (tx * ty), w.oD, 64});
  if ((w.oD + tz - 1) / tz > 65535) return "fwd_v5_layout_dhw: more than 65535 blocks along D";
  return {};
}

template <class T>
void fwd_v5_layout_dhw(cudaStream_t s, const ForwardArgs<T>& a) {
  check_forward(a, "fwd_v5_layout_dhw");
  if (const std::string why = fwd_v5_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  const Window& w = a.w;
  const int tx = std::min(kMaxLayoutThreads, w.oW), ty = std::min(kMaxLayoutThreads / tx, w.oH), tz = std::min({kMaxLayoutThreads / (tx * ty), w.oD, 64});
  const dim3 block(tx, ty, tz);
  const dim3 grid((w.oH + ty - 1) / ty, (w.oD + tz - 1) / tz,
                  static_cast<unsigned>(std::min<std::int64_t>(w.N * w.C, 65535)));
  with_cubic_kernel(w, [&](auto k) { fwd_v5_layout_dhw_kernel<decltype(k)::value, T><<<grid, block, 0, s>>>(a); });
  TUT_CHECK_LAUNCH("fwd_v5_layout_dhw_kernel");
}

template <class T>
std::vector<const void*> fwd_v5_kernels() {
  return {TUT_KERNEL(fwd_v5_layout_dhw_kernel<0, T>), TUT_KERNEL(fwd_v5_layout_dhw_kernel<2, T>),
          TUT_KERNEL(fwd_v5_layout_dhw_kernel<3, T>), TUT_KERNEL(fwd_v5_layout_dhw_kernel<4, T>),
          TUT_KERNEL(fwd_v5_layout_dhw_kernel<8, T>)};
}

}  // namespace ch06

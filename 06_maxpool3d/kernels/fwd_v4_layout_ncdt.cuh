// fwd v4_layout_ncdt: the source's first thread/block mapping, on v2's body. A block is
// (tx, ty, tz) = (min(T, oW), min(T / tx, oH), min(64, T / (tx * ty))) threads: x along the
// output's W, y along H, and z along the (plane, od) pairs, N*C*oD of them; the grid covers the
// rest, (ceil(oW / tx), ceil(oH / ty), ceil(N*C*oD / tz)). The source's T was 1024; here it is
// kMaxLayoutThreads = 256 (kernels/window_body.cuh says why).
//
// What changed since v2: only the mapping. v2 numbers the outputs 0..n-1 and decodes (ow, oh,
// od, plane) from a thread's number with three divisions; here blockIdx and threadIdx give them
// directly, and the block fills up with z when the output's W and H are small (the source's
// reason for it: with x and y alone, an output of 1 x 1 cells per slice leaves one thread per
// block). The source's launch asked for ceil(N*C*oD / tz) blocks along z, which passes the limit
// of 65535 on large tensors; here the grid stops at 65535 and the kernel loops over z.
//
// Prediction: the same bytes as v2. A warp holds 32 consecutive ow when oW >= 32; when oW is
// smaller, a warp spans ty rows (and tz slices), reading several short runs, so its requests
// touch more sectors each; but no divisions. Expect v2's time within a few percent where
// oW >= 32, and a measurable difference on small volumes.
#pragma once

#include "kernels/fwd_v1_unrolled.cuh"
#include "kernels/window_body.cuh"

namespace ch06 {

template <int K, class T>
__global__ void __launch_bounds__(kMaxLayoutThreads) fwd_v4_layout_ncdt_kernel(ForwardArgs<T> a, FastDiv by_od) {
  const Window& w = a.w;
  const int ow = blockIdx.x * blockDim.x + threadIdx.x, oh = blockIdx.y * blockDim.y + threadIdx.y;
  if (ow >= w.oW || oh >= w.oH) return;  // no barrier below: leaving early is safe
  const std::int64_t zs = w.N * w.C * w.oD, plane = w.in_plane();
  const bool narrow = zs <= kMaxInt32;
  for (std::int64_t z = blockIdx.z * static_cast<std::int64_t>(blockDim.z) + threadIdx.z; z < zs;
       z += static_cast<std::int64_t>(gridDim.z) * blockDim.z) {
    const std::int64_t nc = narrow ? by_od.div(static_cast<std::uint32_t>(z)) : z / w.oD;
    const int od = static_cast<int>(z - nc * w.oD);
    const int d0 = od * w.s[0] - w.p[0], h0 = oh * w.s[1] - w.p[1], w0 = ow * w.s[2] - w.p[2];
    T best;
    int cell;
    window_interior_border<K>(a.x + nc * plane, w, d0, h0, w0, best, cell);
    store_result<K, K, K>(a, (z * w.oH + oh) * w.oW + ow, best, cell, d0, h0, w0);
  }
}

template <class T>
std::string fwd_v4_refuses(const Window& w) {
  if (w.layout != Layout::ncdhw) return "fwd_v4_layout_ncdt reads the layout NCDHW only";
  if (w.dilated()) return "fwd_v4_layout_ncdt takes dilation 1 only";
  if (!plane_fits_32_bits(w)) return "fwd_v4_layout_ncdt indexes a plane in 32 bits; this one is larger";
  const int tx = std::min(kMaxLayoutThreads, w.oW), ty = std::min(kMaxLayoutThreads / tx, w.oH);
  if ((w.oH + ty - 1) / ty > 65535) return "fwd_v4_layout_ncdt: more than 65535 blocks along H";
  return {};
}

template <class T>
void fwd_v4_layout_ncdt(cudaStream_t s, const ForwardArgs<T>& a) {
  check_forward(a, "fwd_v4_layout_ncdt");
  if (const std::string why = fwd_v4_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  const Window& w = a.w;
  const int tx = std::min(kMaxLayoutThreads, w.oW), ty = std::min(kMaxLayoutThreads / tx, w.oH), tz = std::min(64, kMaxLayoutThreads / (tx * ty));
  const std::int64_t zs = w.N * w.C * w.oD;
  const dim3 block(tx, ty, tz);
  const dim3 grid((w.oW + tx - 1) / tx, (w.oH + ty - 1) / ty,
                  static_cast<unsigned>(std::min<std::int64_t>((zs + tz - 1) / tz, 65535)));
  const FastDiv by_od(w.oD);
  with_cubic_kernel(w, [&](auto k) { fwd_v4_layout_ncdt_kernel<decltype(k)::value, T><<<grid, block, 0, s>>>(a, by_od); });
  TUT_CHECK_LAUNCH("fwd_v4_layout_ncdt_kernel");
}

template <class T>
std::vector<const void*> fwd_v4_kernels() {
  return {TUT_KERNEL(fwd_v4_layout_ncdt_kernel<0, T>), TUT_KERNEL(fwd_v4_layout_ncdt_kernel<2, T>),
          TUT_KERNEL(fwd_v4_layout_ncdt_kernel<3, T>), TUT_KERNEL(fwd_v4_layout_ncdt_kernel<4, T>),
          TUT_KERNEL(fwd_v4_layout_ncdt_kernel<8, T>)};
}

}  // namespace ch06

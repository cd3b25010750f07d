// One output's window in the layout NCDHW, undilated: the bodies v1, v2, v4 and v5 share.
//
// K > 0: a K x K x K window known at compile time; K = 0: any window (kD, kH, kW read at run
// time). Offsets inside a plane are 32-bit (the launchers check plane_fits_32_bits) and built by
// additions from the row and slice strides the caller passes, never by a multiply per cell.
//
//   window_checked  every cell tested against the input (the border's path, and all of v1's)
//   window_inside   no tests at all: only for a window that lies wholly inside the input
//
// Both start from -inf and the first inside cell, and apply PyTorch's rule (kernels/pool.cuh)
// in scan order, so they give the reference's value and cell.
#pragma once

#include "kernels/pool.cuh"

namespace ch06 {

// Fully unrolled for K <= 4 (at most 64 loads); for K = 8 the two inner loops (64 loads) are
// unrolled and the slices are a loop, so the code stays a few hundred instructions.
// The source's layouts (v4, v5) made blocks of up to 1024 threads. A block that large leaves a
// thread at most 64 registers, and the unrolled K = 4 and K = 8 bodies then spill to local memory
// (about 110 spilled loads and stores each, the SASS showed). Here the same shapes are capped at
// 256 threads.
inline constexpr int kMaxLayoutThreads = 256;

template <int K>
inline constexpr int kUnrollSlices = K <= 4 ? K : 1;

// The first inside cell of an undilated window starting at (d0, h0, w0): PyTorch's initial index.
__device__ __forceinline__ int first_cell_undilated(int kh, int kw, int d0, int h0, int w0) {
  return ((d0 < 0 ? -d0 : 0) * kh + (h0 < 0 ? -h0 : 0)) * kw + (w0 < 0 ? -w0 : 0);
}

template <int K, class T>
__device__ __forceinline__ void window_checked(const T* __restrict__ plane, const Window& w, int d0, int h0, int w0,
                                               T& best, int& cell) {
  const int H = w.H, W = w.W, HW = H * W;
  const int kd = K > 0 ? K : w.k[0], kh = K > 0 ? K : w.k[1], kw = K > 0 ? K : w.k[2];
  best = lowest<T>();
  cell = first_cell_undilated(kh, kw, d0, h0, w0);
  const int origin = (d0 * H + h0) * W + w0;  // may lie outside the plane; only inside cells are read
  if constexpr (K > 0) {
    bool h_in[K], w_in[K];
#pragma unroll
    for (int j = 0; j < K; ++j) {
      h_in[j] = static_cast<unsigned>(h0 + j) < static_cast<unsigned>(H);
      w_in[j] = static_cast<unsigned>(w0 + j) < static_cast<unsigned>(W);
    }
    constexpr int kSlices = kUnrollSlices<K>;
#pragma unroll kSlices
    for (int jd = 0; jd < K; ++jd) {
      const bool d_in = static_cast<unsigned>(d0 + jd) < static_cast<unsigned>(w.D);
      const int slice = origin + jd * HW;
      // The source's "register cache": a slice's cells are loaded into registers first, every
      // load issued before the first compare needs one, then compared in order.
      T v[K * K];
#pragma unroll
      for (int jh = 0; jh < K; ++jh)
#pragma unroll
        for (int jw = 0; jw < K; ++jw)
          v[jh * K + jw] = (d_in && h_in[jh] && w_in[jw]) ? plane[slice + jh * W + jw] : lowest<T>();
#pragma unroll
      for (int j = 0; j < K * K; ++j) {
        if (replaces(best, v[j])) {
          best = v[j];
          cell = jd * K * K + j;
        }
      }
    }
  } else {
    int slice = origin;
    for (int jd = 0; jd < kd; ++jd, slice += HW) {
      if (static_cast<unsigned>(d0 + jd) >= static_cast<unsigned>(w.D)) continue;
      int row = slice;
      for (int jh = 0; jh < kh; ++jh, row += W) {
        if (static_cast<unsigned>(h0 + jh) >= static_cast<unsigned>(H)) continue;
        for (int jw = 0; jw < kw; ++jw) {
          if (static_cast<unsigned>(w0 + jw) >= static_cast<unsigned>(W)) continue;
          const T v = plane[row + jw];
          if (replaces(best, v)) {
            best = v;
            cell = (jd * kh + jh) * kw + jw;
          }
        }
      }
    }
  }
}

// `corner` points at cell (d0, h0, w0), which with the whole window lies inside the input.
template <int K, class T>
__device__ __forceinline__ void window_inside(const T* __restrict__ corner, const Window& w, T& best, int& cell) {
  const int W = w.W, HW = w.H * W;
  best = lowest<T>();
  cell = 0;  // the first cell is inside
  if constexpr (K > 0) {
    constexpr int kSlices = kUnrollSlices<K>;
#pragma unroll kSlices
    for (int jd = 0; jd < K; ++jd) {
      const T* slice = corner + jd * HW;
      T v[K * K];
#pragma unroll
      for (int jh = 0; jh < K; ++jh)
#pragma unroll
        for (int jw = 0; jw < K; ++jw) v[jh * K + jw] = slice[jh * W + jw];
#pragma unroll
      for (int j = 0; j < K * K; ++j) {
        if (replaces(best, v[j])) {
          best = v[j];
          cell = jd * K * K + j;
        }
      }
    }
  } else {
    const int kd = w.k[0], kh = w.k[1], kw = w.k[2];
    const T* slice = corner;
    for (int jd = 0; jd < kd; ++jd, slice += HW) {
      const T* row = slice;
      for (int jh = 0; jh < kh; ++jh, row += W) {
        for (int jw = 0; jw < kw; ++jw) {
          const T v = row[jw];
          if (replaces(best, v)) {
            best = v;
            cell = (jd * kh + jh) * kw + jw;
          }
        }
      }
    }
  }
}

// v2's body: the branch-free path where the window lies inside, the checked one at the border.
//
// The choice is made per warp, not per thread. A first version let each thread take its own path;
// on the stem case (28 outputs per row) every warp of 32 consecutive outputs then holds a border
// output (ow = 0), so every warp ran both paths one after the other, and the version was slower
// than v1 (results/first_run/ has it). Here the warp takes the branch-free path only when all of
// its lanes can: __all_sync over the lanes that are here. Which lanes vote does not matter for
// correctness (each path is right for an interior window), so __activemask() is a safe mask here,
// unlike in chapter 04, where the vote itself was the data.
template <int K, class T>
__device__ __forceinline__ void window_interior_border(const T* __restrict__ plane, const Window& w, int d0, int h0,
                                                       int w0, T& best, int& cell) {
  const int kd = K > 0 ? K : w.k[0], kh = K > 0 ? K : w.k[1], kw = K > 0 ? K : w.k[2];
  const bool inside = d0 >= 0 && h0 >= 0 && w0 >= 0 && d0 + kd <= w.D && h0 + kh <= w.H && w0 + kw <= w.W;
  if (__all_sync(__activemask(), inside)) window_inside<K>(plane + (d0 * w.H + h0) * w.W + w0, w, best, cell);
  else window_checked<K>(plane, w, d0, h0, w0, best, cell);
}

// What the launchers of kernels built on these bodies refuse, before anything is launched.
inline void require_undilated_ncdhw(const Window& w, const char* who) {
  if (w.layout != Layout::ncdhw) throw tut::Unsupported(std::string(who) + " reads the layout NCDHW only");
  if (w.dilated()) throw tut::Unsupported(std::string(who) + " takes dilation 1 only (v0 and v6 take any)");
  if (!plane_fits_32_bits(w))
    throw tut::Unsupported(std::string(who) + " indexes a plane in 32 bits; this one is larger");
}

}  // namespace ch06

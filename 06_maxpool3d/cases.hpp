// Chapter 06's cases, suites and floors: host code only, shared by the problems (versions.cuh)
// and the CPU tests.
//
// A case is a 5-D shape and the parameters kernel, stride, padding, dilation, ceil_mode, layout
// (NCDHW or NDHWC) and indices (none, int64, compact): `bench --shape 8x64x16x56x56
// --param kernel=3 --param stride=2 --param padding=1`. window.hpp checks them.
//
// The floor of a forward case: x read once (the cells some window covers: all of them unless the
// stride passes the window or floor mode leaves a remainder), y written once, and the index if
// the case asks for one (8 bytes per output for int64, 1 or 2 for compact). Its "flops" are the comparisons of the
// direct window, kD*kH*kW per output (the separable form does fewer: the lesson counts them).
// Models beside it: "separable", the bytes v6's three passes move (each intermediate written and
// read once, a value and a 2-byte cell per element); "pytorch_int64", what PyTorch's kernel
// moves, which writes an int64 index whether or not the caller asked for one; "whole_tensors", the
// whole input and the outputs (the floor less its exception for cells no window covers: larger
// only where the stride passes the window or floor mode leaves a remainder). The backward's
// floor: dy and the index read, dx written; its model "zero_then_scatter" adds the zeroing of dx
// that a scatter needs.
#pragma once

#include "tut/problem.hpp"
#include "window.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ch06 {

// The elements of v6's two intermediates: after the W pass (the input with W pooled) and after
// the H pass (W and H pooled).
inline std::int64_t separable_intermediates(const Window& w) {
  return w.N * w.C * w.D * (static_cast<std::int64_t>(w.H) * w.oW + static_cast<std::int64_t>(w.oH) * w.oW);
}

// How many cells of an axis of `in` cells some window covers. All of them, unless the stride
// passes the window (gaps between windows) or floor mode leaves cells past the last window: the
// floor counts only the input a version must read.
inline std::int64_t covered_cells(int in, int k, int s, int p, int dil, int out) {
  if (dil == 1 && s <= k) {
    const std::int64_t end = static_cast<std::int64_t>(out - 1) * s - p + k;  // one past the last window
    return std::min<std::int64_t>(in, end);
  }
  std::vector<bool> hit(static_cast<std::size_t>(in), false);
  for (int o = 0; o < out; ++o)
    for (int j = 0; j < k; ++j) {
      const std::int64_t x = static_cast<std::int64_t>(o) * s - p + static_cast<std::int64_t>(j) * dil;
      if (x >= 0 && x < in) hit[static_cast<std::size_t>(x)] = true;
    }
  std::int64_t n = 0;
  for (bool b : hit) n += b;
  return n;
}

// The input elements some window reads.
inline std::int64_t covered_input(const Window& w) {
  return w.N * w.C * covered_cells(w.D, w.k[0], w.s[0], w.p[0], w.dil[0], w.oD) *
         covered_cells(w.H, w.k[1], w.s[1], w.p[1], w.dil[1], w.oH) *
         covered_cells(w.W, w.k[2], w.s[2], w.p[2], w.dil[2], w.oW);
}

// The window of a case, from its parameters (checked again: a case built by hand may be wrong).
inline Window window_of_case(const tut::Case& c) {
  const auto& P = c.params;
  return window_of(c.shape, P.get<std::vector<std::int64_t>>("kernel"), P.get<std::vector<std::int64_t>>("stride"),
                   P.get<std::vector<std::int64_t>>("padding"), P.get<std::vector<std::int64_t>>("dilation"),
                   P.get<std::int64_t>("ceil_mode"), P.get<std::string>("layout"), P.get<std::string>("indices"));
}

using List = std::vector<std::int64_t>;

// ---- cases ---------------------------------------------------------------------------------------

inline std::vector<tut::ParamSpec> pool_params(const std::string& default_indices,
                                               const std::vector<std::string>& index_choices) {
  return {{"kernel", List{3, 3, 3}, "window per axis (D, H, W): one value or three", {}},
          {"stride", List{}, "step per axis; empty: the kernel", {}},
          {"padding", List{0, 0, 0}, "cells of -inf on each side, per axis (at most kernel / 2)", {}},
          {"dilation", List{1, 1, 1}, "distance between a window's cells, per axis", {}},
          {"ceil_mode", std::int64_t{0}, "1: round the output size up, as PyTorch's ceil_mode=True", {}},
          {"layout", std::string("NCDHW"), "memory order", {"NCDHW", "NDHWC"}},
          {"indices", default_indices, "index output: none, int64 (PyTorch's flat index) or compact (window cell)",
           index_choices}};
}

inline List three(const List& v) { return v.size() == 1 ? List{v[0], v[0], v[0]} : v; }

// The case of a shape and parameters, checked (window_of), with every list written out per axis
// and the stride made explicit: "8x64x16x56x56 kernel=3x3x3 stride=2x2x2 padding=1x1x1 ...".
inline tut::Case pool_case(const std::vector<std::int64_t>& shape, const tut::Params& in, bool backward) {
  const auto& kernel = in.get<List>("kernel");
  const auto& stride = in.get<List>("stride");
  window_of(shape, kernel, stride, in.get<List>("padding"), in.get<List>("dilation"), in.get<std::int64_t>("ceil_mode"),
            in.get<std::string>("layout"), in.get<std::string>("indices"));
  if (backward && in.get<std::string>("indices") == "none")
    throw std::invalid_argument("the backward reads the forward's index: indices is int64 or compact, not none");
  tut::Params p;
  p.set("kernel", three(kernel));
  p.set("stride", three(stride.empty() ? kernel : stride));
  p.set("padding", three(in.get<List>("padding")));
  p.set("dilation", three(in.get<List>("dilation")));
  p.set("ceil_mode", in.get<std::int64_t>("ceil_mode"));
  p.set("layout", in.get<std::string>("layout"));
  p.set("indices", in.get<std::string>("indices"));
  return tut::Case{tut::case_name(shape, p), shape, p};
}

// A suite entry: shape, kernel, stride, padding, then the rest by name.
struct Spec {
  std::vector<std::int64_t> shape;
  List kernel, stride, padding;
  List dilation = {1};
  std::int64_t ceil_mode = 0;
  std::string layout = "NCDHW";
  std::string indices = "none";
};

inline tut::Case make_pool_case(const Spec& s, bool backward) {
  tut::Params p;
  p.set("kernel", s.kernel);
  p.set("stride", s.stride);
  p.set("padding", s.padding);
  p.set("dilation", s.dilation);
  p.set("ceil_mode", s.ceil_mode);
  p.set("layout", s.layout);
  p.set("indices", s.indices);
  return pool_case(s.shape, p, backward);
}

// The shapes of the suite, each in both layouts: large and small N*C, a large single-channel
// volume, 4^3 and 8^3 volumes with many channels, windows of 8 with stride 1 and 8, strides
// below, at and above the kernel, padding, non-cubic windows, odd sizes, ceil_mode, dilation.
inline std::vector<Spec> suite_shapes() {
  return {
      {{8, 64, 16, 56, 56}, {3}, {2}, {1}},              // a 3-D ResNet's stem pooling
      {{2, 64, 32, 112, 112}, {2}, {2}, {0}},            // the classic halving, large
      {{4, 32, 32, 64, 64}, {3}, {1}, {1}},              // stride 1, same-size output
      {{1, 1, 320, 320, 320}, {2}, {2}, {0}},            // one large single-channel volume
      {{1, 1, 320, 320, 320}, {3}, {2}, {1}},
      {{1024, 512, 4, 4, 4}, {2}, {2}, {0}},             // 4^3 volumes, many channels
      {{1024, 512, 4, 4, 4}, {4}, {4}, {0}},             // a window the size of the volume
      {{256, 256, 8, 8, 8}, {8}, {8}, {0}},              // the source's k = 8 on 8^3
      {{1, 16, 64, 64, 64}, {8}, {1}, {0}},              // window 8, stride 1
      {{2, 64, 64, 64, 64}, {8}, {8}, {0}},              // window 8, stride 8
      {{4, 64, 16, 56, 56}, {1, 3, 3}, {1, 2, 2}, {0, 1, 1}},  // (1, 3, 3): a video network's pooling
      {{4, 32, 31, 63, 63}, {2, 3, 4}, {1, 2, 3}, {1, 1, 2}},  // non-cubic, odd sizes
      {{2, 48, 33, 65, 65}, {5}, {2}, {2}},              // kernel 5, odd sizes
      {{2, 64, 48, 96, 96}, {2}, {3}, {0}},              // stride larger than the kernel
      {{1, 2, 128, 256, 256}, {2}, {2}, {0}},            // small N*C
      {{8, 64, 33, 33, 33}, {2}, {2}, {0}, {1}, 1},      // ceil_mode
      {{2, 32, 32, 64, 64}, {3}, {1}, {1}, {2}},         // dilation 2
  };
}

inline std::vector<tut::Case> forward_suite() {
  std::vector<tut::Case> out;
  for (const std::string layout : {"NCDHW", "NDHWC"})
    for (Spec s : suite_shapes()) {
      s.layout = layout;
      out.push_back(make_pool_case(s, false));
    }
  // What the index costs: the stem pooling, the halving and window 8 stride 1 with each format.
  for (const std::string idx : {"int64", "compact"})
    for (int k : {0, 1, 8}) {
      Spec s = suite_shapes()[static_cast<std::size_t>(k)];
      s.indices = idx;
      out.push_back(make_pool_case(s, false));
    }
  return out;
}

inline std::vector<tut::Case> backward_suite() {
  std::vector<tut::Case> out;
  for (const std::string idx : {"int64", "compact"})
    for (int k : {0, 1, 2, 8, 9}) {
      Spec s = suite_shapes()[static_cast<std::size_t>(k)];
      s.indices = idx;
      out.push_back(make_pool_case(s, true));
    }
  Spec cl = suite_shapes()[0];
  cl.layout = "NDHWC";
  cl.indices = "int64";
  out.push_back(make_pool_case(cl, true));
  return out;
}

inline std::vector<tut::Case> half_suite() {
  std::vector<tut::Case> out;
  for (int k : {0, 1, 8}) out.push_back(make_pool_case(suite_shapes()[static_cast<std::size_t>(k)], false));
  Spec cl = suite_shapes()[0];
  cl.layout = "NDHWC";
  out.push_back(make_pool_case(cl, false));
  return out;
}

// ---- floors --------------------------------------------------------------------------------------

template <class T>
tut::Floor forward_floor(const tut::Case& c) {
  const Window w = window_of_case(c);
  const auto in = static_cast<std::uint64_t>(covered_input(w)), out = static_cast<std::uint64_t>(w.out_numel());
  const std::uint64_t ib = static_cast<std::uint64_t>(w.index_bytes());
  const auto mid = static_cast<std::uint64_t>(separable_intermediates(w));
  return {in * sizeof(T) + out * (sizeof(T) + ib),
          out * static_cast<std::uint64_t>(w.cells()),
          {{"separable", in * sizeof(T) + 2 * mid * (sizeof(T) + 2) + out * (sizeof(T) + ib)},
           {"pytorch_int64", in * sizeof(T) + out * (sizeof(T) + 8)},
           {"whole_tensors", static_cast<std::uint64_t>(w.in_numel()) * sizeof(T) + out * (sizeof(T) + ib)}}};
}

template <class T>
tut::Floor backward_floor(const tut::Case& c) {
  const Window w = window_of_case(c);
  const auto in = static_cast<std::uint64_t>(w.in_numel()), out = static_cast<std::uint64_t>(w.out_numel());
  const std::uint64_t ib = static_cast<std::uint64_t>(w.index_bytes());
  return {out * (sizeof(T) + ib) + in * sizeof(T), out, {{"zero_then_scatter", out * (sizeof(T) + ib) + 2 * in * sizeof(T)}}};
}

}  // namespace ch06

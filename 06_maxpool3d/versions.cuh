// Chapter 06's problems and their ladders, listed once. The benchmark, the GPU tests, the exercise
// grader and the race module iterate these lists; a new version is one new entry.
//
//   maxpool3d_f32           forward on float32: y, and the index in the case's format
//   maxpool3d_backward_f32  dx from dy and the forward's index (int64 or compact)
//   maxpool3d_f16           forward on float16, the versions that carry over
//
// Cases, suites and floors are in cases.hpp; the instances and their reference in instances.cuh.
#pragma once

#include "cases.hpp"
#include "instances.cuh"
#include "kernels/bwd_v0_scatter_atomic.cuh"
#include "kernels/bwd_v1_gather.cuh"
#include "kernels/bwd_auto.cuh"
#include "kernels/bwd_v2_marked_gather.cuh"
#include "kernels/bwd_v3_segment_writer.cuh"
#include "kernels/bwd_v4_tile_mask.cuh"
#include "kernels/bwd_v5_chunk_writer.cuh"
#include "kernels/bwd_v6_staged_tile.cuh"
#include "kernels/bwd_v7_zero_then_store.cuh"
#include "kernels/bwd_v8_slab_writer.cuh"
#include "kernels/bwd_v9_ordered_tile.cuh"
#include "kernels/bwd_v10_row_writer.cuh"
#include "kernels/bwd_v11_window_gather.cuh"
#include "kernels/bwd_v12_class_scatter.cuh"
#include "kernels/bwd_v13_prefetch_rows.cuh"
#include "kernels/bwd_v14_channel_gather.cuh"
#include "kernels/bwd_v15_separable_stages.cuh"
#include "kernels/bwd_v16_zeros_then_value.cuh"
#include "kernels/bwd_v17_bulk_store.cuh"
#include "kernels/bwd_v18_column_walk.cuh"
#include "kernels/bwd_v19_fixed_point_tile.cuh"
#include "kernels/bwd_v20_plane_fill.cuh"
#include "kernels/bwd_v21_fixed_point_global.cuh"
#include "kernels/bwd_v22_l2_plane_groups.cuh"
#include "kernels/bwd_v23_lane_runs.cuh"
#include "kernels/bwd_v25_clean_counters.cuh"
#include "kernels/bwd_v29_lean_scale.cuh"
#include "kernels/fwd_auto.cuh"
#include "kernels/fwd_v0_naive.cuh"
#include "kernels/fwd_v1_unrolled.cuh"
#include "kernels/fwd_v2_interior_border.cuh"
#include "kernels/fwd_v3_shared_tile.cuh"
#include "kernels/fwd_v4_layout_ncdt.cuh"
#include "kernels/fwd_v5_layout_dhw.cuh"
#include "kernels/fwd_v6_separable.cuh"
#include "kernels/fwd_v7_channels_last.cuh"
#include "kernels/fwd_v8_wide_loads.cuh"
#include "kernels/fwd_v9_run_reduce.cuh"
#include "kernels/fwd_v10_max_first.cuh"
#include "kernels/fwd_v11_columns_max.cuh"
#include "kernels/fwd_v13_output_packs.cuh"
#include "kernels/fwd_v14_row_lanes.cuh"
#include "kernels/fwd_v15_packs_max_first.cuh"

#if TUT_EXERCISES
#include "exercises/unrolled_padded.cuh"
#endif

#include <cuda_fp16.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace ch06 {

// ---- versions ------------------------------------------------------------------------------------

template <class T>
using FwdInst = ForwardInstance<T>;
template <class T>
using FwdLaunch = void (*)(cudaStream_t, const ForwardArgs<T>&);
using Refuses = std::string (*)(const Window&);

inline std::string takes_all(const Window&) { return {}; }

// auto: a version that launches another per case; the benchmark races it against the fastest other.
template <class Inst>
tut::Version<Inst> dispatcher(tut::Version<Inst> v) {
  v.dispatcher = true;
  return v;
}
inline std::string undilated_ncdhw(const Window& w) {
  if (w.layout != Layout::ncdhw) return "reads the layout NCDHW only";
  if (w.dilated()) return "takes dilation 1 only (v0, v6, v7 and auto take any)";
  if (!plane_fits_32_bits(w)) return "indexes a plane in 32 bits; this one is larger";
  return {};
}

// A forward version: its launcher, and what it refuses (checked in the untimed setup, so the
// benchmark shows the row as unsupported and the tests report it and go on).
template <class T>
tut::Version<FwdInst<T>> forward_version(std::string name, std::string summary, FwdLaunch<T> launch, Refuses refuses,
                                         std::vector<const void*> kernels, tut::Kind kind = tut::Kind::own) {
  tut::Version<FwdInst<T>> v;
  v.name = std::move(name);
  v.summary = std::move(summary);
  v.launch = [launch](FwdInst<T>& i, tut::Workspace&, cudaStream_t s) { launch(s, i.args()); };
  v.setup = [refuses, n = v.name](FwdInst<T>& i, tut::Workspace&) {
    if (const std::string why = refuses(i.window()); !why.empty()) throw tut::Unsupported(n + ": " + why);
  };
  v.kernels = std::move(kernels);
  v.kind = kind;
  return v;
}

// v6 and auto need scratch memory (the passes' intermediates).
template <class T>
tut::Version<FwdInst<T>> scratch_version(std::string name, std::string summary,
                                         void (*launch)(cudaStream_t, const ForwardArgs<T>&, void*, std::size_t),
                                         std::size_t (*bytes)(const Window&), Refuses refuses,
                                         std::vector<const void*> kernels) {
  tut::Version<FwdInst<T>> v = forward_version<T>(std::move(name), std::move(summary), nullptr, refuses, std::move(kernels));
  v.launch = [launch](FwdInst<T>& i, tut::Workspace& ws, cudaStream_t s) { launch(s, i.args(), ws.data(), ws.bytes()); };
  v.scratch_bytes = [bytes](const FwdInst<T>& i) { return bytes(i.window()); };
  return v;
}

template <class T>
std::vector<const void*> fwd_v6_kernels() {
  return {TUT_KERNEL(fwd_v6_pass_kernel<true, false, T>), TUT_KERNEL(fwd_v6_pass_kernel<false, false, T>),
          TUT_KERNEL(fwd_v6_last_pass_kernel<false, T>), TUT_KERNEL(fwd_v6_slide_kernel<false, false, T>),
          TUT_KERNEL(fwd_v6_slide_kernel<false, true, T>), TUT_KERNEL(fwd_v6_row_kernel<8, T>),
          TUT_KERNEL(fwd_v6_van_herk_kernel<8, false, false, T>), TUT_KERNEL(fwd_v6_van_herk_kernel<8, false, true, T>)};
}

template <class T>
void forward_problem_common(tut::Problem<FwdInst<T>>& p) {
  const std::string dt = tut::dtype_name<T>();
  p.dtype = dt;
  p.params = pool_params("none", {"none", "int64", "compact"});
  p.case_for = [](const std::vector<std::int64_t>& shape, const tut::Params& params) {
    return pool_case(shape, params, false);
  };
  p.floor = &forward_floor<T>;
  p.make = [](const tut::Case& c, const tut::InstanceOptions& o) { return std::make_unique<FwdInst<T>>(c, o); };
  p.default_case = make_pool_case(suite_shapes()[0], false);
}

// The forward's ladder in either type. v3, v4 and v5 (the shared tile and the source's two
// layouts) are timed in float only; auto's rule differs by type (kernels/fwd_auto.cuh).
template <class T>
std::vector<tut::Version<FwdInst<T>>> forward_versions() {
  constexpr bool kFloat = std::is_same_v<T, float>;
  std::vector<tut::Version<FwdInst<T>>> v = {
      forward_version<T>("v0_naive", "a thread per output, triple loop, a bounds test per cell, any case",
                         &fwd_v0_naive<T>, &takes_all, {TUT_KERNEL(fwd_v0_naive_kernel<T>)}),
      forward_version<T>("v1_unrolled", "kernel 2/3/4/8 as a template, unrolled, strides added, predicated loads",
                         &fwd_v1_unrolled<T>, &undilated_ncdhw, fwd_v1_kernels<T>()),
      forward_version<T>("v2_interior_border", "v1 + a test-free path for warps whose windows all lie inside",
                         &fwd_v2_interior_border<T>, &undilated_ncdhw, fwd_v2_kernels<T>()),
  };
  if constexpr (kFloat) {
    v.push_back(forward_version<T>("v3_shared_tile", "a block copies its tile's input to shared memory, then reads windows there",
                                   &fwd_v3_shared_tile<T>, &fwd_v3_refuses<T>, {TUT_KERNEL(fwd_v3_shared_tile_kernel<T>)}));
    v.push_back(forward_version<T>("v4_layout_ncdt", "v2's body, the source's blocks (W, H, plane*D), up to 256 threads",
                                   &fwd_v4_layout_ncdt<T>, &fwd_v4_refuses<T>, fwd_v4_kernels<T>()));
    v.push_back(forward_version<T>("v5_layout_dhw", "v2's body, the source's blocks (W, H, D) of one plane, up to 256 threads",
                                   &fwd_v5_layout_dhw<T>, &fwd_v5_refuses<T>, fwd_v5_kernels<T>()));
  }
  const std::string per_thread = std::to_string(16 / sizeof(T));  // channels in one 16-byte load
  std::vector<tut::Version<FwdInst<T>>> rest = {
      scratch_version<T>("v6_separable", "three 1-D passes (W, H, D) carrying the cell, through scratch",
                         &fwd_v6_separable<T>, &fwd_v6_scratch_bytes<T>, &fwd_v6_refuses<T>, fwd_v6_kernels<T>()),
      forward_version<T>("v7_channels_last", "NDHWC: a thread per " + per_thread + " channels, 16-byte loads along C",
                         &fwd_v7_channels_last<T>, &fwd_v7_refuses<T>, fwd_v7_kernels<T>()),
      forward_version<T>("v8_wide_loads", "large windows: 16-byte loads along W or C, 8 in flight; NDHWC rows split over lanes",
                         &fwd_v8_wide_loads<T>, &fwd_v8_refuses<T>, fwd_v8_kernels<T>()),
      forward_version<T>("v9_run_reduce", "windows as a read stream: NCDHW runs (kW = W; kH = H or kD = 1) over lanes; NDHWC cells over a block's rows",
                         &fwd_v9_run_reduce<T>, &fwd_v9_refuses<T>, fwd_v9_kernels<T>()),
      forward_version<T>("v10_max_first", "v9's NCDHW runs with a NaN-propagating max per cell, the cell found afterwards in registers",
                         &fwd_v10_max_first<T>, &fwd_v10_refuses<T>, fwd_v10_kernels<T>()),
      forward_version<T>("v11_columns_max", "NDHWC: v10's max first on v9's columns, a window's cells over a block's rows, any window",
                         &fwd_v11_columns_max<T>, &fwd_v11_refuses<T>, fwd_v11_kernels<T>()),
      forward_version<T>("v13_output_packs", "NCDHW, windows side by side along W: a thread takes the outputs whose window rows fill 16 bytes, one load a row",
                         &fwd_v13_output_packs<T>, &fwd_v13_refuses<T>, fwd_v13_kernels<T>()),
      forward_version<T>("v14_row_lanes", "NCDHW, window rows of whole 16-byte pieces: a warp reads neighbouring outputs' rows as consecutive pieces, each window split over lanes",
                         &fwd_v14_row_lanes<T>, &fwd_v14_refuses<T>, fwd_v14_kernels<T>()),
      forward_version<T>("v15_packs_max_first", "v13's packs with v10's max first: a NaN-propagating max per cell (two halves an instruction), the rule only for an index, a zero or a NaN",
                         &fwd_v15_packs_max_first<T>, &fwd_v15_refuses<T>, fwd_v15_kernels<T>()),
      dispatcher(scratch_version<T>(
          "auto",
          kFloat ? "the dispatcher: v10 for large disjoint NCDHW windows that are one run, v11 for NDHWC ones, else v14, v4 or v8; v6 for large overlapping ones, v7 for NDHWC, else v4, v13 or v2"
                 : "the dispatcher: v10 for large disjoint NCDHW windows that are one run, v11 for NDHWC ones, else v14, v4 or v8; v6 for large overlapping ones, v11 for NDHWC windows of >= 16 cells, else v7 for NDHWC, else v15 for kernel 2 side by side along W without an index, else v2",
          &fwd_auto<T>, &fwd_auto_scratch_bytes<T>, &takes_all, {})),
  };
  for (auto& r : rest) v.push_back(std::move(r));
  return v;
}

template <class T>
tut::Problem<FwdInst<T>> forward_problem() {
  constexpr bool kFloat = std::is_same_v<T, float>;
  tut::Problem<FwdInst<T>> p;
  p.name = kFloat ? "maxpool3d_f32" : "maxpool3d_f16";
  p.description = kFloat ? "y = max over each window (PyTorch's max_pool3d) and its index, on float32"
                         : "y = max over each window and its index, on float16";
  forward_problem_common(p);
  p.suite = kFloat ? forward_suite() : half_suite();
  p.versions = forward_versions<T>();
#if TUT_EXERCISES
  if constexpr (kFloat)
    p.versions.push_back(forward_version<T>("ex_unrolled_padded", "exercise: your unrolled window with padding",
                                            &exercise::unrolled_padded, &exercise::refuses,
                                            {TUT_KERNEL(exercise::unrolled_padded_kernel)}, tut::Kind::exercise));
#endif
  return p;
}

inline tut::Problem<FwdInst<float>> forward_f32_problem() { return forward_problem<float>(); }
inline tut::Problem<FwdInst<__half>> forward_f16_problem() { return forward_problem<__half>(); }

inline const tut::Problem<FwdInst<float>>& maxpool3d_f32() {
  static const auto p = forward_f32_problem();
  return p;
}
inline const tut::Problem<FwdInst<__half>>& maxpool3d_f16() {
  static const auto p = forward_f16_problem();
  return p;
}

template <class T>
using BwdInst = BackwardInstance<T>;

template <class T>
tut::Version<BwdInst<T>> backward_scratch_version(std::string name, std::string summary,
                                                  void (*launch)(cudaStream_t, const BackwardArgs<T>&, void*, std::size_t),
                                                  std::size_t (*bytes)(const Window&), std::vector<const void*> kernels,
                                                  Refuses refuses = &takes_all) {
  tut::Version<BwdInst<T>> v;
  v.name = std::move(name);
  v.summary = std::move(summary);
  v.launch = [launch](BwdInst<T>& i, tut::Workspace& ws, cudaStream_t s) { launch(s, i.args(), ws.data(), ws.bytes()); };
  v.scratch_bytes = [bytes](const BwdInst<T>& i) { return bytes(i.window()); };
  v.setup = [refuses, n = v.name](BwdInst<T>& i, tut::Workspace&) {
    if (const std::string why = refuses(i.window()); !why.empty()) throw tut::Unsupported(n + ": " + why);
  };
  v.kernels = std::move(kernels);
  return v;
}

template <class T>
tut::Version<BwdInst<T>> backward_version(std::string name, std::string summary,
                                          void (*launch)(cudaStream_t, const BackwardArgs<T>&),
                                          std::vector<const void*> kernels, Refuses refuses = &takes_all) {
  tut::Version<BwdInst<T>> v;
  v.name = std::move(name);
  v.summary = std::move(summary);
  v.launch = [launch](BwdInst<T>& i, tut::Workspace&, cudaStream_t s) { launch(s, i.args()); };
  v.setup = [refuses, n = v.name](BwdInst<T>& i, tut::Workspace&) {
    if (const std::string why = refuses(i.window()); !why.empty()) throw tut::Unsupported(n + ": " + why);
  };
  v.kernels = std::move(kernels);
  return v;
}

inline tut::Problem<BwdInst<float>> backward_f32_problem() {
  using T = float;
  tut::Problem<BwdInst<T>> p;
  p.name = "maxpool3d_backward_f32";
  p.description = "dx = the sum of dy over the outputs whose index names each input element, on float32";
  p.dtype = "f32";
  p.params = pool_params("int64", {"int64", "compact"});
  p.case_for = [](const std::vector<std::int64_t>& shape, const tut::Params& params) {
    return pool_case(shape, params, true);
  };
  p.floor = &backward_floor<T>;
  p.make = [](const tut::Case& c, const tut::InstanceOptions& o) { return std::make_unique<BwdInst<T>>(c, o); };
  Spec d = suite_shapes()[0];
  d.indices = "int64";
  p.default_case = make_pool_case(d, true);
  p.suite = backward_suite();
  // The index comes from the forward on the same case and seed: int64 or compact, by the case.
  p.chain.forward = []() -> const tut::ProblemEntry& {
    static const tut::ProblemEntry e = tut::erase(maxpool3d_f32());
    return e;
  };
  p.chain.links = {{"index", "index"}, {"offset8", "offset8"}, {"offset16", "offset16"}};
  p.versions = {
      backward_version<T>("v0_scatter_atomic", "PyTorch's way: zero dx, atomicAdd dy at each output's index",
                          &bwd_v0_scatter_atomic<T>, {TUT_KERNEL(bwd_v0_scatter_atomic_kernel<T>)}),
      backward_version<T>("v1_gather", "deterministic: each input sums dy of the covering outputs that chose it",
                          &bwd_v1_gather<T>, {TUT_KERNEL(bwd_v1_gather_kernel<false, T>), TUT_KERNEL(bwd_v1_gather_kernel<true, T>)}),
      backward_scratch_version<T>("v2_marked_gather", "deterministic: mark the chosen inputs, gather only for those",
                                  &bwd_v2_marked_gather<T>, &bwd_v2_scratch_bytes<T>,
                                  {TUT_KERNEL(bwd_v2_mark_kernel<T>), TUT_KERNEL(bwd_v2_split_kernel<T>),
                                   TUT_KERNEL(bwd_v2_gather_list_kernel<false, T>)}),
      backward_version<T>("v3_segment_writer", "deterministic, windows that do not overlap: each output writes its segment of dx",
                          &bwd_v3_segment_writer<T>, bwd_v3_kernels<T>(), &bwd_v3_refuses<T>),
      backward_version<T>("v4_tile_mask", "deterministic, overlapping windows: a block marks its dx tile's chosen cells in shared memory, gathers those",
                          &bwd_v4_tile_mask<T>, {TUT_KERNEL(bwd_v4_tile_mask_kernel<T>)}, &bwd_v4_refuses<T>),
      backward_version<T>("v5_chunk_writer", "deterministic, windows that do not overlap: a thread per 16-byte chunk of dx, as a memset",
                          &bwd_v5_chunk_writer<T>, bwd_v5_kernels<T>(), &bwd_v5_refuses<T>),
      backward_version<T>("v6_staged_tile", "deterministic, overlapping windows: a tile's outputs staged in shared memory once, each cell gathers there",
                          &bwd_v6_staged_tile<T>, {TUT_KERNEL(bwd_v6_staged_tile_kernel<T>)}, &bwd_v6_refuses<T>),
      backward_version<T>("v7_zero_then_store", "deterministic, windows that do not overlap: zero dx, then a plain store per output",
                          &bwd_v7_zero_then_store<T>, {TUT_KERNEL(bwd_v7_store_kernel<T>)}, &bwd_v7_refuses<T>),
      backward_version<T>("v8_slab_writer", "deterministic, windows that do not overlap: a warp zeroes an output row's cells, then stores its values",
                          &bwd_v8_slab_writer<T>, bwd_v8_kernels<T>(), &bwd_v8_refuses<T>),
      backward_version<T>("v9_ordered_tile", "deterministic, overlapping windows: a dx tile in shared memory, outputs added rank by rank between barriers",
                          &bwd_v9_ordered_tile<T>,
                          {TUT_KERNEL(bwd_v9_ordered_tile_kernel<T>), TUT_KERNEL(bwd_v9_ordered_channels_kernel<T>)}, &bwd_v9_refuses<T>),
      backward_version<T>("v10_row_writer", "deterministic, windows that do not overlap: one pass of 16-byte stores, a thread's column of a row fixed, its rows walked",
                          &bwd_v10_row_writer<T>, bwd_v10_kernels<T>(), &bwd_v10_refuses<T>),
      backward_version<T>("v11_window_gather", "deterministic, overlapping windows of <= 3 outputs per axis: v1 with 2 or 3 candidates per axis unrolled, every load before the compares",
                          &bwd_v11_window_gather<T>, bwd_v11_kernels<T>(), &bwd_v11_refuses<T>),
      backward_version<T>("v12_class_scatter", "deterministic, overlapping windows of <= 27 classes: zero dx, then a pass per class of outputs whose windows do not overlap, plain adds",
                          &bwd_v12_class_scatter<T>, {TUT_KERNEL(bwd_v12_class_pass_kernel<T>)}, &bwd_v12_refuses<T>),
      backward_version<T>("v13_prefetch_rows", "deterministic, windows that do not overlap: v10 with the next item's index and dy read before this item's stores",
                          &bwd_v13_prefetch_rows<T>, bwd_v13_kernels<T>(), &bwd_v13_refuses<T>),
      backward_version<T>("v14_channel_gather", "deterministic, NDHWC, <= 2 covering outputs per axis: a thread gathers 4 channels of a position, 8 candidate slots loaded before the compares",
                          &bwd_v14_channel_gather<T>, bwd_v14_kernels<T>(), &bwd_v14_refuses<T>),
      backward_version<T>("v15_separable_stages", "deterministic, stride-1 NCDHW cubic windows: undo the max along D, then H, then W in shared memory, 3k candidates per cell",
                          &bwd_v15_separable_stages<T>, bwd_v15_kernels<T>(), &bwd_v15_refuses<T>),
      backward_version<T>("v16_zeros_then_value", "deterministic, windows that do not overlap: a thread's chunks of several items zeroed before any load is waited on, then each named cell's dy stored alone",
                          &bwd_v16_zeros_then_value<T>, bwd_v16_kernels<T>(), &bwd_v16_refuses<T>),
      backward_version<T>("v17_bulk_store", "deterministic, windows that do not overlap: a block builds dx's next span in shared memory (zeros and the named cells) and one bulk copy writes it",
                          &bwd_v17_bulk_store<T>, bwd_v17_kernels<T>(), &bwd_v17_refuses<T>),
      backward_version<T>("v18_column_walk", "deterministic, stride-1 NCDHW cubic windows: v15's stages in the order H, W, then D along each thread's column of dx in registers",
                          &bwd_v18_column_walk<T>, bwd_v18_kernels<T>(), &bwd_v18_refuses<T>),
      backward_version<T>("v19_fixed_point_tile", "deterministic, overlapping NCDHW windows: a block scatters its tile's dy as exact 63-bit integers with shared-memory atomics, then rounds each cell once",
                          &bwd_v19_fixed_point_tile<T>, bwd_v19_kernels<T>(), &bwd_v19_refuses<T>),
      backward_version<T>("v20_plane_fill", "deterministic, windows that do not overlap, NCDHW: a block per span of a plane loads its outputs' index and dy, fills the span with zeros, then stores the named cells",
                          &bwd_v20_plane_fill<T>, bwd_v20_kernels<T>(), &bwd_v20_refuses<T>),
      backward_scratch_version<T>("v21_fixed_point_global", "deterministic, NCDHW, undilated: v19's exact 63-bit integers added to a 64-bit counter per dx cell in global memory, a warp's run of lanes naming one cell adding once, then each cell rounded once",
                                  &bwd_v21_fixed_point_global<T>, &bwd_v21_scratch_bytes<T>, bwd_v21_kernels<T>(),
                                  &bwd_v21_refuses<T>),
      backward_scratch_version<T>("v22_l2_plane_groups", "deterministic, NCDHW, undilated: v21 a group of planes at a time, so that the group's counters stay in the L2 (a third of it), each line of them dropped from the L2 once rounded",
                                  &bwd_v22_l2_plane_groups<T>, &bwd_v22_scratch_bytes<T>, bwd_v22_kernels<T>(),
                                  &bwd_v22_refuses<T>),
      backward_scratch_version<T>("v23_lane_runs", "deterministic, NCDHW, undilated: v21 with each lane taking 4 consecutive outputs, adding its own runs of one cell in registers, the warp's scan joining runs across lanes once per 128 outputs",
                                  &bwd_v23_lane_runs<T>, &bwd_v23_scratch_bytes<T>, bwd_v23_kernels<T>(),
                                  &bwd_v23_refuses<T>),
      backward_scratch_version<T>("v24_flat_terms", "deterministic, NCDHW, undilated: v23 with each output's cell and integer computed without a branch, every check a predicate",
                                  &bwd_v24_flat_terms<T>, &bwd_v23_scratch_bytes<T>, bwd_v24_kernels<T>(),
                                  &bwd_v24_refuses<T>),
      backward_scratch_version<T>("v25_clean_counters", "deterministic, NCDHW, undilated: v24 with counters the rounding leaves zero, so that nothing zeroes them before the scatter",
                                  &bwd_v25_clean_counters<T>, &bwd_v25_scratch_bytes<T>, bwd_v25_kernels<T>(),
                                  &bwd_v25_refuses<T>),
      backward_scratch_version<T>("v26_marked_sectors", "deterministic, NCDHW, undilated: v25 with a bit per 4 cells set beside each add, so that the rounding reads only the counters some output reached",
                                  &bwd_v26_marked_sectors<T>, &bwd_v26_scratch_bytes<T>, bwd_v26_kernels<T>(),
                                  &bwd_v26_refuses<T>),
      backward_scratch_version<T>("v27_early_loads", "deterministic, NCDHW, undilated: v25 with each warp's first outputs loaded before the wait for the plane's scale, and 8 loads in flight a thread in the rounding",
                                  &bwd_v27_early_loads<T>, &bwd_v25_scratch_bytes<T>, bwd_v27_kernels<T>(),
                                  &bwd_v27_refuses<T>),
      backward_scratch_version<T>("v29_lean_scale", "deterministic, NCDHW, undilated: v25 with a kernel 1 that keeps two unsigned values a thread, the largest |dy| bits and the smallest lowest-bit key, without a branch",
                                  &bwd_v29_lean_scale<T>, &bwd_v25_scratch_bytes<T>, bwd_v29_kernels<T>(),
                                  &bwd_v29_refuses<T>),
      dispatcher(backward_scratch_version<T>("auto", "the deterministic backward a user calls: v20, v10, v3 or v7 without overlap; v9, v18, v29, v15 or v6 with; else v1",
                                             &bwd_auto<T>, &bwd_auto_scratch_bytes<T>, {})),
  };
  return p;
}

inline const tut::Problem<BwdInst<float>>& maxpool3d_backward_f32() {
  static const auto p = backward_f32_problem();
  return p;
}

}  // namespace ch06

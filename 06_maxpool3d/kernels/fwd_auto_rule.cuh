// The dispatcher's rule (kernels/fwd_auto.cuh states it), apart from the kernels so that the CPU
// tests can check which version each case gets.
#pragma once

#include "kernels/pool.cuh"
#include "kernels/fwd_v4_layout_ncdt.cuh"
#include "kernels/fwd_v9_run_reduce.cuh"  // window_is_one_run
#include "kernels/fwd_v13_output_packs.cuh"
#include "kernels/fwd_v14_row_lanes.cuh"
#include "kernels/fwd_v15_packs_max_first.cuh"

namespace ch06 {

enum class AutoPick {
  v0_naive,
  v2_interior_border,
  v4_layout_ncdt,
  v6_separable,
  v7_channels_last,
  v8_wide_loads,
  v10_max_first,
  v11_columns_max,
  v13_output_packs,
  v14_row_lanes,
  v15_packs_max_first
};

inline const char* auto_pick_name(AutoPick p) {
  switch (p) {
    case AutoPick::v0_naive: return "v0_naive";
    case AutoPick::v2_interior_border: return "v2_interior_border";
    case AutoPick::v4_layout_ncdt: return "v4_layout_ncdt";
    case AutoPick::v6_separable: return "v6_separable";
    case AutoPick::v8_wide_loads: return "v8_wide_loads";
    case AutoPick::v10_max_first: return "v10_max_first";
    case AutoPick::v11_columns_max: return "v11_columns_max";
    case AutoPick::v13_output_packs: return "v13_output_packs";
    case AutoPick::v14_row_lanes: return "v14_row_lanes";
    case AutoPick::v15_packs_max_first: return "v15_packs_max_first";
    default: return "v7_channels_last";
  }
}

// How many windows cover an input cell, on average (>= 1 only counts overlap).
inline double window_overlap(const Window& w) {
  return static_cast<double>(w.cells()) / (static_cast<double>(w.s[0]) * w.s[1] * w.s[2]);
}

// The rule, from the suite's measurements (the lesson's table of auto against the best version):
//   1. large windows that do not overlap (>= 64 cells, undilated): in NCDHW where the window is
//      one run of its plane (kW = W, and kH = H or kD = 1: global pooling), v10, v9's stream of
//      whole sectors with the maximum taken first (on the H200, 0.891 and 0.856 of copy on 8^3
//      with kernel 8 and 4^3 with kernel 4, against v9's 0.623 and 0.696 in the same run,
//      results/forms/v10_first.json; v9 had reached 0.849 on the first on the H100); v11 in
//      NDHWC with more than one channel, v9's columns with the maximum first (on the H200 0.792
//      and 0.794 of copy on kernel 8, 512 cells, against v9's 0.746 and 0.757 in the same run,
//      results/forms/v11_third.json; with its rows cut to one resident wave, 8 instead of 32,
//      0.876 and 0.860, results/forms/v11_rows.json; v9 had taken them from v7's 0.375 and 0.374
//      and v8's 0.671 and 0.683 on the H100, results/forms/fwd_r6.json). Until commit fcdd179
//      windows of 64 to 127 cells took v7 (0.903 of copy on 4^3 with kernel 4, against v9's
//      0.817, same file), a split at 128 that no case measured. Swept on the H200, v11's rows at
//      one wave, each window in one process (results/forms/ndhwc_split.*), v11 against v7 on
//      windows of 64, 64, 96, 125 and 128 cells: 0.847 against 0.843 of copy (1024 x 512 x 4^3),
//      0.708 against 0.637 (8 x 64 x 32^3), 0.782 against 0.696, 0.830 against 0.720, 0.807
//      against 0.708; on 216 to 512 cells 0.807 to 0.874 against 0.271 to 0.506. So v11 from 64
//      cells; other NCDHW windows, where a row of outputs spans at
//      least 128 bytes of input: in float v14, a window's rows split over lanes that read
//      neighbouring outputs' rows as consecutive 16-byte pieces, where it takes the window (on the
//      H200, 2 x 64 x 64^3 with kernel 8: 0.0377 ms against v4's 0.0389 in one process, and 3.115x
//      PyTorch against v4's 2.934x in one race, results/forms/v14.*; the only suite case of this
//      branch, so rows of 4 to 7 outputs, and half, are not timed), else v4, a thread per output
//      with a warp on neighbouring outputs of a row (the same case: 0.878 to 0.890 of copy in
//      eight H100 suite runs against v8's 0.853 to 0.868), else v8, a window's rows read with 16-byte loads (on 8^3 and 4^3 one
//      output per plane puts a warp on 32 planes: v4 0.321 and 0.327 against v8's 0.730 and
//      0.769, results/); only those two points are measured, so the split at 128 bytes is a
//      guess between them. v7 or v8 (the rule before v9) where a plane does not fit 32-bit
//      offsets (v11 addresses in 64 bits, but its rows have not been timed on such planes);
//   2. the separable passes (v6), where the direct window costs most per output:
//      a. large overlapping windows: >= 64 cells and >= 8 windows over each input cell on average;
//      b. windows of >= 27 cells with >= 8 windows over each input cell, undilated in NDHWC
//         (kernel 3, stride 1: in NCDHW v6 0.173 of copy against v2's 0.158 once its passes slid;
//         in NDHWC, with van Herk's passes, 0.2101 ms against v7's 0.2608 in one process,
//         results/NVIDIA_H100_80GB_HBM3.v6_vanherk.json; dilated NDHWC windows stay with v7,
//         0.124 ms against v6's 0.223 in the suite run before);
//      c. very large windows in NDHWC (>= 256 cells);
//      d. dilated windows in NCDHW, which only v0's generic loop reads otherwise;
//   3. NDHWC with one channel is NCDHW in memory: v2;
//   4. other NDHWC: in half, windows of at least kV11HalfMinCells cells: v11, whose maximum of a
//      batch of cells is one packed max.NaN per two channels where v7 applies the rule value by
//      value. Swept on the H200, each window in one process (results/forms/ndhwc_split.*): v11
//      against v7 0.0593 against 0.0701 ms on kernel 3 stride 2 (27 cells), 0.0530 against
//      0.0560 on (2, 3, 4) (24 cells), 0.1133 against 0.1383 on kernel 3 dilated 2, 0.0321
//      against 0.0513 on kernel 4 (64 cells, rule 1 since), but 0.0419 against 0.0286 on
//      (1, 3, 3) (9 cells) and 1.11 to 1.18 times v7's time on the five windows of kernel 2
//      (8 cells). Nsight Compute on the first (same files): 32.8 M
//      warp instructions against v7's 37.7 M, where in float v11 issues 45.0 M against v7's 38.5 M
//      and loses (0.0679 against 0.0661 ms in the suite). The split at 16 is a guess between 9
//      and 24 cells; a plane past 32-bit offsets keeps v7, as above. Else v7;
//   5. other NCDHW: windows that do not overlap, in float, with rows of at least 32 outputs (v4's
//      block then gives each warp one row's neighbouring outputs): v4. The rule took v5 (the
//      source's (W, H, D) bricks) until the H200's suite. On the six suite cases with such rows
//      (2 x 64 x 32 x 112^2 in the three index formats, 320^3, 2 x 64 x 48 x 96^2 with stride 3,
//      1 x 2 x 128 x 256^2) v4 took at most 1.021 times the fastest version's time on the H100
//      (results/NVIDIA_H100_80GB_HBM3.json) and was the fastest on the H200, where v5 took up to
//      1.059 times it (results/h200_ffdfb2b/, commit ffdfb2b). Rows of fewer outputs (33^3 in ceil
//      mode: 17), and half precision: v2 (the warp-voted interior path; on 33^3 v4 took 1.063 and
//      1.080 times the fastest's time on the two GPUs, v2 1.027 and 1.000), when a plane fits
//      32-bit offsets; else v0. Except in half where windows of kernel 2 lie side by side along W
//      and no index is asked for: v15, v13's packs of 4 outputs a thread with the maximum first
//      and y stored a pack at a time. On the H200 (results/forms/v15_third.*, each shape in one
//      process) it ran at 0.673 of copy on 2 x 64 x 32 x 112^2 (v13 0.593, v2 0.413), 0.562 on
//      1 x 2 x 128 x 256^2 (v13 0.486), 0.465 on 33^3 in ceil mode (v13 0.456, v2 0.295) and
//      0.402 on 4^3 (v2 0.399, v13 0.363); its second form, y output by output, had been level
//      with v13 (results/forms/v15_second.*). With an int64 index, on the first shape, v2 led
//      (0.549 against v13's 0.469 and v15's 0.461), so indexed half cases keep v2; the compact
//      index was not timed in half. Until then the rule took v13 on rows of whole 16-byte lines
//      only (0.0454 ms against v2's 0.0654 on the first shape, results/forms/v13_second.*). In
//      float, v13 for kernel 2 side by side along W on rows of 8 to 31 outputs (shorter than
//      v4's): the H200's suite run of the tree of commit 8e72bbe (results/h200_8e72bbe/, the rule
//      before this one) timed it at 0.0257 ms on 33^3 in ceil mode (rows of 17 outputs, read cell
//      by cell) against v2's 0.0290, and at 0.0461 on 4^3 (rows of 2) against v2's 0.0402: the
//      split at 8 is a guess between them. Off the suite, beside the fwd v17 trial
//      (results/forms/v17_plane_slabs.*, each shape in its own process, H200), windows of kernel 2
//      that all lie inside the input went the other way: on 8 x 64 x 32^3 (rows of 16 outputs)
//      v13 ran 0.632 of copy against v4's 0.859 and v2's 0.824, on 8 x 64 x 32 x 40^2 (20) 0.674
//      against 0.889 and 0.885, on 16 x 64 x 31^3 (15) 0.810 against 0.861 and 0.868. So v13 now
//      takes disjoint windows only where ceil_mode or padding cuts some of them (v2's and v4's
//      test-free paths then do not apply), and not with an int64 index (33^3 in ceil mode: v2
//      0.762, v13 0.690); v4 takes rows of 16 outputs or more where every window lies inside. Both
//      for 2 x 2 x 2 windows only, the ones timed; others keep the rule before.
// Half windows in NDHWC from this many cells take v11 instead of v7 (rule 4).
inline constexpr std::int64_t kV11HalfMinCells = 16;

// elem_bytes: the size of an element (4 for float, 2 for half).
inline AutoPick auto_pick(const Window& w, int elem_bytes = 4) {
  const bool cl = w.layout == Layout::ndhwc, big = w.cells() >= 64, fits = w.cells() <= kMaxSeparableCells;
  if (big && !w.dilated() && windows_disjoint(w)) {
    if (plane_fits_32_bits(w) && !cl && window_is_one_run(w)) return AutoPick::v10_max_first;
    if (plane_fits_32_bits(w) && cl && w.C > 1) return AutoPick::v11_columns_max;
    if (cl && w.C > 1) return w.cells() < 512 ? AutoPick::v7_channels_last : AutoPick::v8_wide_loads;
    const bool wide_rows = static_cast<std::int64_t>(w.oW) * w.s[2] * elem_bytes >= 128;
    if (!cl && wide_rows && elem_bytes == 4 && fwd_v14_refuses<float>(w).empty()) return AutoPick::v14_row_lanes;
    return !cl && wide_rows && fwd_v4_refuses<float>(w).empty() ? AutoPick::v4_layout_ncdt : AutoPick::v8_wide_loads;
  }
  const bool overlapping = window_overlap(w) >= 8;
  if (fits && ((big && overlapping) || (w.cells() >= 27 && overlapping && !(cl && w.dilated())) || (cl && w.cells() >= 256) ||
               (!cl && w.dilated())))
    return AutoPick::v6_separable;
  const bool ncdhw_in_memory = !cl || w.C == 1;
  if (!ncdhw_in_memory)
    return elem_bytes == 2 && w.cells() >= kV11HalfMinCells && plane_fits_32_bits(w) ? AutoPick::v11_columns_max
                                                                                       : AutoPick::v7_channels_last;
  if (!cl && elem_bytes == 2 && w.k[2] == 2 && w.indices == IndexFormat::none && fwd_v15_refuses<__half>(w).empty())
    return AutoPick::v15_packs_max_first;
  // (2 x 2 x 2: the windows timed, rule 3's notes above, and again after the change in
  // results/forms/ncdhw_k2_rows.*; 1 x 2 x 2 went to v4 under a first form of this rule and ran
  // 0.370 of copy against v13's 0.540, results/forms/auto_off_suite.*.)
  const bool cube2 = w.k[0] == 2 && w.k[1] == 2 && w.k[2] == 2, disjoint = windows_disjoint(w), inside = windows_inside(w);
  if (!cl && elem_bytes == 4 && disjoint && (w.oW >= 32 || (w.oW >= 16 && inside && cube2)) && fwd_v4_refuses<float>(w).empty())
    return AutoPick::v4_layout_ncdt;
  if (!cl && elem_bytes == 4 && w.k[2] == 2 && w.oW >= 8 && !(cube2 && disjoint && (inside || w.indices == IndexFormat::int64)) &&
      fwd_v13_refuses<float>(w).empty())
    return AutoPick::v13_output_packs;
  if (!w.dilated() && plane_fits_32_bits(w)) return AutoPick::v2_interior_border;
  return cl ? AutoPick::v7_channels_last : AutoPick::v0_naive;
}

}  // namespace ch06

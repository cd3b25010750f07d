#!/usr/bin/env python3
"""Nsight Compute on the suite cases the lesson discusses: each (case, version) pair once, under
`ncu --profile-from-start off`, the counters below per kernel, into one CSV.

  profile_cases.py --build BUILD OUT.csv [--budget SECONDS] [--tags PREFIX] [--versions A,B] [--keep-l2]
  profile_cases.py --v6-lines CSV            where bwd v6's warp instructions go on the stem case
  profile_cases.py --ops CSV                 a kernel's warp instructions by kind of SASS instruction

The second form reads the per-SASS-line counters of bwd_v6_staged_tile_kernel (ncu --section
SourceCounters --page source --csv --print-source sass, reduced to line, sass, inst_executed and
thread_inst_executed in results/<gpu>.v6_source.csv) and prints the totals of its steps, the
ranges below found by reading that SASS: the per-cell "zero or list" loop, its zero store's
address arithmetic, and its mask and list slot.

BUILD is a build whose benchmark is BUILD/subprojects/06_maxpool3d/tut/bench_06_maxpool3d (the
repository's build; for this chapter built alone, a folder whose subprojects/06_maxpool3d/tut links to
its tut/). PyTorch's kernels are profiled through common/tools/torch_peers.py --profile. Each row:
tag (the name the lesson's figures select by), problem, case, version, kernel, then the metrics.
Pairs are profiled in order and the CSV is rewritten after each, so a run stopped by --budget keeps
what it measured. Without ncu, says so and exits 77.

By default ncu flushes the caches before each kernel (--cache-control all), so a kernel's DRAM bytes
do not show what an earlier kernel of the same call left in the L2. --keep-l2 profiles with
--cache-control none and only KEPT_METRICS, which ncu collects in one pass (the CSV's `passes`
column says how many it took): each kernel then finds the L2 as the kernel before it left it.
"""
import argparse
import csv
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

METRICS = [
    "gpu__time_duration.sum",
    "launch__grid_size", "launch__block_size", "launch__registers_per_thread",
    "dram__bytes_read.sum", "dram__bytes_write.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed.sum", "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sector_hit_rate.pct", "lts__t_sector_hit_rate.pct", "lts__t_sectors_srcunit_tex_op_read.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct",
    "smsp__warp_issue_stalled_barrier_per_warp_active.pct",
    "smsp__warp_issue_stalled_lg_throttle_per_warp_active.pct",
    "smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct",
    "smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct",
    "smsp__warp_issue_stalled_drain_per_warp_active.pct",
    "smsp__warp_issue_stalled_no_instruction_per_warp_active.pct",
    "smsp__warp_issue_stalled_wait_per_warp_active.pct",
    "smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct",
]

STEM = "8x64x16x56x56 kernel=3 stride=2 padding=1"
HALVE = "2x64x32x112x112 kernel=2 stride=2 padding=0"
K8S1 = "1x16x64x64x64 kernel=8 stride=1 padding=0"
SMALL = "1024x512x4x4x4 kernel=2 stride=2 padding=0"
K4S4 = "1024x512x4x4x4 kernel=4 stride=4 padding=0"
K8ON8 = "256x256x8x8x8 kernel=8 stride=8 padding=0"
K8S8 = "2x64x64x64x64 kernel=8 stride=8 padding=0"
S1 = "4x32x32x64x64 kernel=3 stride=1 padding=1"
THIN = "1x2x128x256x256 kernel=2 stride=2 padding=0"

F, B = "maxpool3d_f32", "maxpool3d_backward_f32"
# (tag, problem, case text, version); a version named with a dot is a PyTorch peer. In the order the
# lesson needs them, so that a run stopped by --budget keeps the most cited.
K2S3 = "2x64x48x96x96 kernel=2 stride=3 padding=0"
CEIL33 = "8x64x33x33x33 kernel=2 stride=2 padding=0 ceil_mode=1"

PAIRS = [
    # half in NDHWC: v7 (the per-channel rule cell by cell) against v11 (the maximum first, packed)
    ("ndhwc_v11_stem_f16", "maxpool3d_f16", STEM + " layout=NDHWC", ["v7_channels_last", "v11_columns_max"]),
    ("ndhwc_v11_halve_f16", "maxpool3d_f16", HALVE + " layout=NDHWC", ["v7_channels_last", "v11_columns_max"]),
    ("ndhwc_v11_stem_f32", F, STEM + " layout=NDHWC", ["v7_channels_last", "v11_columns_max"]),
    # fwd v11 (v10's maximum first on NDHWC columns) against the versions auto took on the NDHWC
    # memory-bound cases the H200 left under 0.85 of copy.
    ("v11_k8on8_cl", F, K8ON8 + " layout=NDHWC", ["v9_run_reduce", "v11_columns_max"]),
    ("v11_ceil_cl", F, CEIL33 + " layout=NDHWC", ["v7_channels_last", "v11_columns_max"]),
    ("v11_k4s4_cl", F, K4S4 + " layout=NDHWC", ["v7_channels_last", "v11_columns_max"]),
    ("v11_k8s8_cl", F, K8S8 + " layout=NDHWC", ["v9_run_reduce", "v11_columns_max"]),
    ("v11_k2s3_cl", F, K2S3 + " layout=NDHWC", ["v7_channels_last", "v11_columns_max"]),
    ("v11_thin_cl", F, THIN + " layout=NDHWC", ["v7_channels_last", "v11_columns_max"]),
    # The memory-bound suite cases the H200 leaves under 0.85 of copy, with auto's version there.
    ("gap_k8s8", F, K8S8, ["v4_layout_ncdt"]),
    ("gap_ceil", F, CEIL33, ["v2_interior_border", "v5_layout_dhw"]),
    ("gap_thin", F, THIN, ["v4_layout_ncdt", "v5_layout_dhw"]),
    ("gap_k8on8_cl", F, K8ON8 + " layout=NDHWC", ["v9_run_reduce"]),
    ("gap_k8s8_cl", F, K8S8 + " layout=NDHWC", ["v9_run_reduce"]),
    ("gap_thin_cl", F, THIN + " layout=NDHWC", ["v7_channels_last"]),
    ("gap_ceil_cl", F, CEIL33 + " layout=NDHWC", ["v7_channels_last"]),
    ("gap_k2s3_cl", F, K2S3 + " layout=NDHWC", ["v7_channels_last"]),
    # fwd v10 (the maximum first) against v9 on the two one-run suite cases: the issue slots used.
    ("v10_run8", F, K8ON8, ["v9_run_reduce", "v10_max_first"]),
    ("v10_run4", F, K4S4, ["v9_run_reduce", "v10_max_first"]),
    # fwd v13 (a thread's outputs side by side along W, one 16-byte load a window row) against the
    # best single-output versions, in half and in float.
    ("v13_k2s2_f16", "maxpool3d_f16", HALVE, ["v13_output_packs", "v2_interior_border"]),
    ("v13_k2s2", F, HALVE, ["v13_output_packs", "v4_layout_ncdt"]),
    ("v13_thin", F, THIN, ["v13_output_packs", "v4_layout_ncdt"]),
    # fwd v15 (v13's packs, the maximum first) against v13 on the cases auto gave v13: half kernel 2,
    # and 33^3 in ceil mode in float (rows of 33 floats, read cell by cell).
    ("v15_k2s2_f16", "maxpool3d_f16", HALVE, ["v15_packs_max_first", "v13_output_packs"]),
    ("v15_ceil", F, CEIL33, ["v15_packs_max_first", "v13_output_packs"]),
    # fwd v14 (a window's rows split over lanes reading consecutive 16-byte pieces) against v4, which
    # auto took on kernel 8 stride 8 over 64^3, and v10, which it takes on the 8^3 and 4^3 planes.
    ("v14_k8s8", F, K8S8, ["v14_row_lanes", "v4_layout_ncdt"]),
    ("v14_k8on8", F, K8ON8, ["v14_row_lanes", "v10_max_first"]),
    ("v14_k4s4", F, K4S4, ["v14_row_lanes", "v10_max_first"]),
    # bwd v29 (v25 with a kernel 1 of fewer instructions per dy) against v25, and PyTorch.
    ("v29_k8s1", B, K8S1 + " indices=int64", ["v29_lean_scale", "v25_clean_counters", "aten.max_pool3d_with_indices_backward"]),
    ("v29_k8s1_compact", B, K8S1 + " indices=compact", ["v29_lean_scale", "v25_clean_counters"]),
    # bwd v27 (v25 with its first loads early and 8 in flight in the rounding), v26 (v25 with
    # marks: only reached counters read), v25 (counters left zero, none zeroed
    # first), v24 (v23's terms without branches), v23 (v21 with a lane's runs added in registers)
    # and v22 (v21 a group of planes at a time): v21's cases.
    ("bwd_k8s1", B, K8S1 + " indices=int64", ["v27_early_loads", "v26_marked_sectors", "v25_clean_counters", "v24_flat_terms",
                                              "v23_lane_runs", "v22_l2_plane_groups"]),
    ("bwd_k8s1_compact", B, K8S1 + " indices=compact", ["v26_marked_sectors", "v25_clean_counters", "v24_flat_terms",
                                                        "v23_lane_runs", "v22_l2_plane_groups"]),
    ("bwd_s1", B, S1 + " indices=int64", ["v26_marked_sectors", "v25_clean_counters", "v24_flat_terms", "v23_lane_runs",
                                          "v22_l2_plane_groups", "v18_column_walk", "aten.max_pool3d_with_indices_backward"]),
    # bwd v21, the fixed-point counters in global memory: the overlapping cases v19 was built for.
    ("bwd_k8s1", B, K8S1 + " indices=int64", ["v21_fixed_point_global", "aten.max_pool3d_with_indices_backward"]),
    ("bwd_k8s1_compact", B, K8S1 + " indices=compact", ["v21_fixed_point_global"]),
    ("bwd_s1", B, S1 + " indices=int64", ["v21_fixed_point_global"]),
    # bwd v20, the plane fill: the disjoint case it was built for.
    ("bwd_k8s8", B, K8S8 + " indices=int64", ["v20_plane_fill"]),
    ("bwd_k8s8_compact", B, K8S8 + " indices=compact", ["v20_plane_fill"]),
    # bwd v19, the fixed-point tile: the overlapping cases it was built for, beside v15.
    ("bwd_k8s1", B, K8S1 + " indices=int64", ["v19_fixed_point_tile"]),
    ("bwd_k8s1_compact", B, K8S1 + " indices=compact", ["v19_fixed_point_tile"]),
    ("bwd_s1", B, S1 + " indices=int64", ["v19_fixed_point_tile"]),
    # fwd v7's row pieces (C = 2) and v9's NDHWC blocks of 128: the cases they were built for.
    ("thin_cl", F, THIN + " layout=NDHWC", ["v7_channels_last"]),
    # bwd v17 first: the newest rung, on the disjoint case it was built for, beside v10 and PyTorch.
    ("bwd_k8s8", B, K8S8 + " indices=int64", ["v17_bulk_store"]),
    ("bwd_k8s8_compact", B, K8S8 + " indices=compact", ["v17_bulk_store"]),
    # bwd v16 first: the newest rung, on the disjoint case it was built for, beside v10, v13 and PyTorch.
    ("bwd_k8s8", B, K8S8 + " indices=int64", ["v16_zeros_then_value"]),
    ("bwd_k8s8_compact", B, K8S8 + " indices=compact", ["v16_zeros_then_value"]),
    # bwd v15 first: the newest rung, on the two stride-1 suite cases it was built for.
    ("bwd_s1", B, S1 + " indices=int64", ["v15_separable_stages"]),
    ("bwd_s1_compact", B, S1 + " indices=compact", ["v15_separable_stages"]),
    ("bwd_k8s1", B, K8S1 + " indices=int64", ["v15_separable_stages"]),
    ("bwd_k8s1_compact", B, K8S1 + " indices=compact", ["v15_separable_stages"]),
    # bwd v18 and v9's NDHWC kernel: the cases they were built for.
    ("bwd_s1", B, S1 + " indices=int64", ["v18_column_walk"]),
    ("bwd_k8s1", B, K8S1 + " indices=int64", ["v18_column_walk"]),
    # fwd v9 and bwd v13, v14: the cases they were built for.
    ("k4s4", F, K4S4, ["v9_run_reduce"]),
    ("k8on8", F, K8ON8, ["v9_run_reduce"]),
    ("k4s4_cl", F, K4S4 + " layout=NDHWC", ["v9_run_reduce", "v7_channels_last"]),
    ("k8on8_cl", F, K8ON8 + " layout=NDHWC", ["v9_run_reduce", "v8_wide_loads"]),
    ("k8s8_cl", F, K8S8 + " layout=NDHWC", ["v9_run_reduce"]),
    ("bwd_k8s8", B, K8S8 + " indices=int64", ["v13_prefetch_rows"]),
    ("bwd_k8s8_compact", B, K8S8 + " indices=compact", ["v13_prefetch_rows"]),
    ("bwd_stem_cl", B, STEM + " layout=NDHWC indices=int64", ["v14_channel_gather"]),
    ("k2s3", F, K2S3, ["v4_layout_ncdt"]),
    ("k2s3_cl", F, K2S3 + " layout=NDHWC", ["v7_channels_last"]),
    # bwd v10 and v12 first: the pairs the lesson's newest backward sections cite (v11's, measured on
    # its own, are in results/forms/third.ncu.csv).
    ("bwd_k8s8", B, K8S8 + " indices=int64", ["v10_row_writer"]),
    ("bwd_stem_cl", B, STEM + " layout=NDHWC indices=int64", ["v12_class_scatter",
                                                              "aten.max_pool3d_with_indices_backward"]),
    ("bwd_s1", B, S1 + " indices=int64", ["v12_class_scatter", "aten.max_pool3d_with_indices_backward"]),
    ("bwd", B, STEM + " indices=int64", ["v12_class_scatter"]),
    ("bwd_k8s8_compact", B, K8S8 + " indices=compact", ["v10_row_writer"]),
    ("bwd", B, STEM + " indices=int64", ["v0_scatter_atomic", "v9_ordered_tile", "v6_staged_tile", "v4_tile_mask",
                                         "aten.max_pool3d_with_indices_backward"]),
    ("bwd_k8s8", B, K8S8 + " indices=int64", ["v0_scatter_atomic", "v7_zero_then_store", "v8_slab_writer",
                                              "v5_chunk_writer", "aten.max_pool3d_with_indices_backward"]),
    ("bwd_s1", B, S1 + " indices=int64", ["v0_scatter_atomic", "v9_ordered_tile", "v6_staged_tile"]),
    ("bwd_stem_cl", B, STEM + " layout=NDHWC indices=int64", ["v0_scatter_atomic", "v9_ordered_tile", "v6_staged_tile"]),
    ("bwd_k8s1", B, K8S1 + " indices=int64", ["v0_scatter_atomic", "v6_staged_tile", "v4_tile_mask"]),
    ("bwd_k8s8_compact", B, K8S8 + " indices=compact", ["v5_chunk_writer", "v7_zero_then_store", "v8_slab_writer"]),
    ("bwd_k8s8", B, K8S8 + " indices=int64", ["v3_segment_writer"]),
    ("bwd_halve", B, HALVE + " indices=int64", ["v0_scatter_atomic", "v3_segment_writer", "v5_chunk_writer"]),
    ("k4s4", F, K4S4, ["v2_interior_border", "v6_separable", "v8_wide_loads"]),
    ("k8on8", F, K8ON8, ["v2_interior_border", "v6_separable", "v8_wide_loads"]),
    ("k8s8", F, K8S8, ["v2_interior_border", "v8_wide_loads", "v3_shared_tile"]),
    ("k8s8_cl", F, K8S8 + " layout=NDHWC", ["v7_channels_last", "v6_separable", "v8_wide_loads"]),
    ("thin", F, THIN, ["v2_interior_border"]),
    ("k8s1", F, K8S1, ["v0_naive", "v2_interior_border", "v6_separable", "F.max_pool3d"]),
    ("stem", F, STEM, ["v1_unrolled", "v2_interior_border", "v4_layout_ncdt", "v5_layout_dhw", "v3_shared_tile",
                       "v0_naive", "v6_separable", "F.max_pool3d"]),
    ("halve", F, HALVE, ["v2_interior_border", "v3_shared_tile", "F.max_pool3d"]),
    ("small", F, SMALL, ["v2_interior_border", "v4_layout_ncdt", "v5_layout_dhw"]),
    ("stem_cl", F, STEM + " layout=NDHWC", ["v7_channels_last", "F.max_pool3d"]),
    ("s1", F, S1, ["v1_unrolled", "v3_shared_tile", "v6_separable"]),
]


def number(text):
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        return None


KEPT_METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"]


def ncu_rows(ncu, program, keep_l2=False):
    metrics = KEPT_METRICS if keep_l2 else METRICS
    cmd = [ncu, "--profile-from-start", "off", "--csv", "--page", "raw", "--print-units", "base",
           "--clock-control", "none", "--cache-control", "none" if keep_l2 else "all",
           "--metrics", ",".join(metrics)] + program
    proc = subprocess.run(cmd, capture_output=True, text=True)
    passes = [int(p) for p in re.findall(r"- (\d+) pass", proc.stdout + proc.stderr)]
    lines = proc.stdout.splitlines()
    head = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if head is None:
        return None, (proc.stderr + proc.stdout)[-1500:]
    rows = list(csv.reader(lines[head:]))
    names = rows[0]
    out = []
    for r in rows[2:]:
        rec = dict(zip(names, r))
        out.append({"kernel": rec.get("Kernel Name", "")[:80], "passes": max(passes, default=None),
                    **{m: number(rec.get(m)) for m in metrics}})
    return out, None


# SASS line ranges of bwd_v6_staged_tile_kernel<float> as built for sm_90 by nvcc 13.0 (the lines
# of results/<gpu>.v6_source.csv): the zero-or-list loop runs from its first LDC.64 to its backward
# branch; within it, the address of the zero store and the store, and the mask, vote and list slot.
V6_LOOP, V6_ADDRESS, V6_MASK = (1197, 1313), (1270, 1309), (1206, 1268)


def v6_lines(path):
    rows = list(csv.DictReader(open(path, encoding="utf-8")))
    inst = [number(r["inst_executed"]) or 0.0 for r in rows]
    total = sum(inst)
    span = lambda r: sum(inst[r[0]:r[1] + 1])
    passes = inst[V6_LOOP[0]]
    loop, addr, mask = span(V6_LOOP), span(V6_ADDRESS), span(V6_MASK)
    print(f"bwd_v6_staged_tile_kernel<float>, 8x64x16x56x56 kernel 3 stride 2 padding 1, int64 index: "
          f"Nsight Compute's executed warp instructions per SASS line ({len(rows)} lines)")
    print(f"all: {total / 1e6:.1f} M")
    print(f"zero or list (one thread per cell), SASS lines {V6_LOOP[0]}-{V6_LOOP[1]}: {loop / 1e6:.1f} M "
          f"({100 * loop / total:.0f} %), {passes / 1e6:.2f} M warp passes, {loop / passes:.0f} per pass")
    print(f"  the zero's 64-bit address and its store, lines {V6_ADDRESS[0]}-{V6_ADDRESS[1]}: {addr / 1e6:.1f} M "
          f"({addr / passes:.0f} per pass)")
    print(f"  the mask's read, the votes and the list slot, lines {V6_MASK[0]}-{V6_MASK[1]}: {mask / 1e6:.1f} M "
          f"({mask / passes:.0f} per pass)")
    print(f"everything else (staging, gathering the listed cells, the tiles' setup): {(total - loop) / 1e6:.1f} M "
          f"({100 * (total - loop) / total:.0f} %)")
    return 0


def op_classes(path):
    """A kernel's executed warp instructions and stall samples by kind of SASS instruction, from a CSV of
    line, sass, inst_executed, stall_samples (ncu --section SourceCounters --page source --csv
    --print-source sass, reduced): the warp's shuffles and votes (a scan), global reductions, loads,
    branches and barriers, and the rest (arithmetic, moves, compares)."""
    rows = list(csv.DictReader(open(path, encoding="utf-8")))
    kinds = {}
    for r in rows:
        op = next((t for t in r["sass"].split() if not t.startswith("@")), "")
        if op.startswith(("SHFL", "REDUX", "VOTE", "WARPSYNC", "BRA.DIV", "ENDCOLLECTIVE")):
            kind = "shuffles and votes"
        elif op.startswith(("REDG", "ATOM")):
            kind = "global reductions"
        elif op.startswith(("LDG", "LD.", "LDS")):
            kind = "loads"
        elif op.startswith(("BRA", "BSSY", "BSYNC", "EXIT", "BAR", "RET", "CALL")):
            kind = "branches and barriers"
        else:
            kind = "arithmetic, moves and compares"
        k = kinds.setdefault(kind, [0.0, 0.0])
        k[0] += number(r["inst_executed"]) or 0.0
        k[1] += number(r["stall_samples"]) or 0.0
    inst = sum(k[0] for k in kinds.values())
    samples = sum(k[1] for k in kinds.values())
    print(f"{os.path.basename(path)}: {inst / 1e6:.2f} M warp instructions over {len(rows)} SASS lines")
    for kind, (n, smp) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
        print(f"{kind}: {n / 1e6:.2f} M, {100 * n / inst:.1f} % of the instructions, {100 * smp / samples:.1f} % of the stall samples")
    return 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--v6-lines":
        return v6_lines(sys.argv[2])
    if len(sys.argv) == 3 and sys.argv[1] == "--ops":
        return op_classes(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--budget", type=float, default=1e9, help="stop starting new pairs after this many seconds")
    ap.add_argument("--tags", default="", help="only the pairs whose tag starts with this (bwd: the backward's)")
    ap.add_argument("--versions", default="", help="only these versions (comma-separated names)")
    ap.add_argument("--keep-l2", action="store_true", help="no cache flush between kernels; KEPT_METRICS only")
    ap.add_argument("out")
    args = ap.parse_args()
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    if not os.access(ncu, os.X_OK):
        print("ncu not found: nothing profiled")
        return 77
    build = os.path.abspath(args.build)
    bench = os.path.join(build, "subprojects", "06_maxpool3d", "tut", "bench_06_maxpool3d")
    peers = os.path.join(ROOT, "common", "tools", "torch_peers.py")
    rows, start = [], time.time()
    for tag, problem, text, versions in PAIRS:
        if not tag.startswith(args.tags):
            continue
        shape, *params = text.split()
        for version in versions:
            if args.versions and version not in args.versions.split(","):
                continue
            if time.time() - start > args.budget:
                print(f"budget spent: stopped before {tag} {version}")
                return 0
            if "." in version:
                prog = [sys.executable, peers, "--build", build, "--profile", "06_maxpool3d", problem, version,
                        "--case", text]
            else:
                prog = [bench, "--problem", problem, "--version", version, "--shape", shape, "--profile"]
                for p in params:
                    prog += ["--param", p]
            got, err = ncu_rows(ncu, prog, args.keep_l2)
            if got is None:
                print(f"{tag} {version}: ncu failed:\n{err}")
                continue
            for k in got:
                rows.append({"tag": tag, "problem": problem, "case": text, "version": version, **k})
            print(f"{tag} {version}: " + "; ".join(
                f"{k['kernel'][:40]} {k['gpu__time_duration.sum'] or 0:.0f} ns DRAM "
                f"{(k['dram__bytes_read.sum'] or 0) / 1e6:.1f} + {(k['dram__bytes_write.sum'] or 0) / 1e6:.1f} MB"
                for k in got))
            with open(args.out, "w", newline="", encoding="utf-8") as f:
                w = csv.DictWriter(f, fieldnames=["tag", "problem", "case", "version", "kernel", "passes"] + METRICS)
                w.writeheader()
                w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

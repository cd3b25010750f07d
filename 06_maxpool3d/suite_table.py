#!/usr/bin/env python3
"""The suite's summary, one line per case: the best version and its fraction of the copy ceiling,
the dispatcher's (auto's) fraction and its time over the best version's (and, where the benchmark raced
the two in alternating rounds, that ratio: alt), PyTorch's fraction, and
our raced version's speed over PyTorch's in the same process. Then the geometric means.

  suite_table.py RESULTS_DIR            write RESULTS_DIR/<gpu>.suite.txt for each <gpu>.json there, and
                                        <gpu>.ncu.txt for each <gpu>.ncu.csv (profile_cases.py's counters)
  suite_table.py --check RESULTS_DIR    exit 1 if a committed <gpu>.suite.txt is not what this makes
                                        of the JSON beside it (a test: the lesson quotes these files)
  suite_table.py --check-cases MODULE   the chapter's torch_peers.py CASES name exactly each
                                        problem's suite (through the race module; no GPU needed)

Reads the results through common/tools/results.py. A case is written short: its shape, kN (the
window, per axis when not cubic), sN, pN, dN (only when not 0 or 1), ceil, then the layout and the
index format, and a leading tag for the problem (fwd32, bwd32, fwd16): the lesson's figures select
lines by that text. "mem" marks the cases where no window overlaps another (stride >= kernel on
every axis): there the time is the bytes, and the lesson holds them to a fraction of the copy
ceiling.
"""
import argparse
import glob
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common", "tools"))
import results  # noqa: E402

TAGS = {"maxpool3d_f32": "fwd32", "maxpool3d_backward_f32": "bwd32", "maxpool3d_f16": "fwd16"}
RACED = {"maxpool3d_f32": "auto", "maxpool3d_backward_f32": "auto", "maxpool3d_f16": "auto"}


def axis_text(prefix, values, skip):
    if all(v == values[0] for v in values):
        return "" if values[0] == skip else f"{prefix}{values[0]}"
    return prefix + "x".join(str(v) for v in values)


def short(run):
    p = run["params"]
    shape = "x".join(str(d) for d in run["shape"])
    parts = [shape, axis_text("k", p["kernel"], None), axis_text("s", p["stride"], None),
             axis_text("p", p["padding"], 0), axis_text("d", p["dilation"], 1), "ceil" if p["ceil_mode"] else "",
             p["layout"], p["indices"]]
    return " ".join(x for x in parts if x)


def memory_bound(run):
    p = run["params"]
    return all(s >= k for s, k in zip(p["stride"], p["kernel"]))


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def table(bench, torch_doc):
    peers = {(r["problem"], r["case"]): r for r in (torch_doc or {}).get("runs", [])}
    lines = [f"{bench['gpu']}: results/{bench['_file']} (commit {bench['commit']}, {bench['date']}), "
             f"copy ceiling {bench['copy_ceiling']['GBps']:.1f} GB/s"]
    if torch_doc:
        lines.append(f"PyTorch {torch_doc['torch']}: results/{torch_doc['_file']} ({torch_doc['date']}), "
                     f"copy ceiling there {torch_doc['copy_ceiling']['GBps']:.1f} GB/s")
    lines.append("of copy: the floor's bytes per second over the copy ceiling of the same process; auto/best: "
                 "auto's time over the fastest version's; vs torch: our raced version's speed over PyTorch's, "
                 "timed in alternating rounds in one process")
    versus = any("versus_best" in r for r in bench["runs"])
    if versus:
        lines.append("alt: auto's time over the fastest other version's, the two timed in alternating rounds in the "
                     "benchmark's process (the median over rounds; auto/best compares rows timed one after another)")
    problems = []
    for r in bench["runs"]:
        if r["problem"] not in problems:
            problems.append(r["problem"])
    for problem in problems:
        tag, raced = TAGS.get(problem, problem), RACED.get(problem)
        runs = [r for r in bench["runs"] if r["problem"] == problem]
        cases = []
        for r in runs:
            if r["case"] not in cases:
                cases.append(r["case"])
        lines += ["", f"{problem}: {len(cases)} cases; the raced version is {raced}",
                  f"{'case':58s} {'best version':20s} {'of copy':>7s} {raced + ' of copy':>14s} {'auto/best':>9s} "
                  f"{'torch of copy':>13s} {'vs torch':>8s}" + (f" {'alt':>6s}" if versus else "") + "  mem"]
        ratios = {"NCDHW": [], "NDHWC": []}
        worst, mem_fracs, alts = [], [], []
        for case in cases:
            rows = [r for r in runs if r["case"] == case and r["check"] == "pass" and r["kind"] == "own"]
            if not rows:
                lines.append(f"{tag} {short(runs[0])}: no version passed")
                continue
            best = min(rows, key=lambda r: r["ms_median"])
            ours = next((r for r in rows if r["version"] == raced), None)
            peer = peers.get((problem, case))
            race = (peer or {}).get("race") or {}
            label = f"{tag} {short(best)}"
            ours_frac = f"{ours['fraction_of_copy']:.3f}" if ours else "-"
            over = f"{ours['ms_median'] / best['ms_median']:.3f}" if ours else "-"
            tf = f"{peer['fraction_of_copy']:.3f}" if peer else "-"
            vs = f"{race['speed_ratio']:.2f}x" if "speed_ratio" in race else "-"
            mem = "mem" if memory_bound(best) else ""
            alt = ""
            if versus:
                vb = (ours or {}).get("versus_best")
                alt = f" {vb['time_ratio']:6.3f}" if vb else f" {'-':>6s}"
                if vb:
                    alts.append((vb["time_ratio"], vb["version"], label))
            lines.append(f"{label:58s} {best['version']:20s} {best['fraction_of_copy']:7.3f} {ours_frac:>14s} "
                         f"{over:>9s} {tf:>13s} {vs:>8s}{alt}  {mem}".rstrip())
            if "speed_ratio" in race:
                ratios[best["params"]["layout"]].append(race["speed_ratio"])
                worst.append((race["speed_ratio"], label))
            if ours and mem:
                whole = ours["models"].get("whole_tensors", ours["bytes"]) / ours["bytes"]
                mem_fracs.append((ours["fraction_of_copy"], ours["fraction_of_copy"] * whole))
        all_r = ratios["NCDHW"] + ratios["NDHWC"]
        if all_r:
            lines.append(f"{tag} geometric mean of {raced}'s speed over PyTorch's: "
                         f"NCDHW {geomean(ratios['NCDHW']):.2f}x ({len(ratios['NCDHW'])} cases), "
                         f"NDHWC {geomean(ratios['NDHWC']):.2f}x ({len(ratios['NDHWC'])} cases), "
                         f"all {geomean(all_r):.2f}x ({len(all_r)} cases)")
            low = min(worst)
            lines.append(f"{tag} slowest against PyTorch: {low[0]:.2f}x on {low[1][len(tag) + 1:]}")
        if alts:
            high = max(alts)
            lines.append(f"{tag} {raced} against the fastest other version in alternating rounds: from "
                         f"{min(a[0] for a in alts):.3f} to {high[0]:.3f} times its time ({len(alts)} cases), "
                         f"{sum(a[0] > 1.05 for a in alts)} above 1.05; the highest against {high[1]} on "
                         f"{high[2][len(tag) + 1:]}")
        if mem_fracs:
            floor_f, whole_f = [f for f, _ in mem_fracs], [w for _, w in mem_fracs]
            lines.append(f"{tag} {raced} on the cases marked mem: fraction of copy from {min(floor_f):.3f} to "
                         f"{max(floor_f):.3f}, geometric mean {geomean(floor_f):.3f} ({len(floor_f)} cases), "
                         f"{sum(f < 0.85 for f in floor_f)} below 0.85")
            if any(abs(w - f) > 1e-9 for f, w in mem_fracs):
                lines.append(f"{tag} the same counting the whole input (the floor counts only the cells some window "
                             f"covers): from {min(whole_f):.3f} to {max(whole_f):.3f}, "
                             f"{sum(w < 0.85 for w in whole_f)} below 0.85")
    return "\n".join(lines) + "\n"


def kept_table(path, rows, num):
    """profile_cases.py --keep-l2's CSV: each kernel's time and DRAM bytes with the L2 as the kernel
    before it left it, then each version's sum over its kernels."""
    lines = [f"Nsight Compute without the cache flush between kernels (profile_cases.py --keep-l2), "
             f"results/{os.path.basename(path)}: per kernel, the passes ncu took, its time and DRAM bytes read "
             "and written; then each version's kernels summed",
             f"{'tag':17s} {'version':24s} {'kernel':30s} {'passes':>6s} {'us':>8s} {'read MB':>8s} {'write MB':>8s}"]
    sums = {}
    for r in rows:
        kernel = r["kernel"].replace("void ", "").replace("ch06::", "").replace("(anonymous namespace)::", "")
        kernel = kernel.split("(")[0].replace("_kernel", "").replace(" ", "").replace(",float>", ">")[:30]
        us, rd, wr = num(r, "gpu__time_duration.sum") / 1e3, num(r, "dram__bytes_read.sum") / 1e6, num(r, "dram__bytes_write.sum") / 1e6
        lines.append(f"{r['tag']:17s} {r['version']:24s} {kernel:30s} {r.get('passes') or '':>6s} {us:8.1f} {rd:8.1f} {wr:8.1f}")
        t = sums.setdefault((r["tag"], r["version"]), [0, 0.0, 0.0, 0.0])
        t[0] += 1
        t[1] += us
        t[2] += rd
        t[3] += wr
    lines += ["", "each version's kernels summed: launches, us, DRAM MB read, written, and GB/s"]
    for (tag, version), (n, us, rd, wr) in sums.items():
        lines.append(f"total {tag} {version}: {n} launches {us:.1f} us {rd:.1f} + {wr:.1f} MB {(rd + wr) / us:.2f} TB/s")
    return "\n".join(lines) + "\n"


def ncu_table(path):
    """profile_cases.py's CSV as a text table: one line per kernel."""
    import csv
    rows = list(csv.DictReader(open(path, encoding="utf-8")))

    def num(r, k):
        try:
            return float(r[k])
        except (KeyError, ValueError):
            return float("nan")

    if rows and not any(r.get("smsp__inst_executed.sum") for r in rows):
        return kept_table(path, rows, num)
    lines = [f"Nsight Compute, results/{os.path.basename(path)}: per kernel, its time, DRAM bytes (read + written) and "
             "throughput, achieved occupancy, warp instructions, L1 and L2 hit rates, sectors per global load request, "
             "shared-memory bank conflicts, and the share of active cycles stalled on a long scoreboard (global memory) "
             "and at a barrier",
             f"{'tag':9s} {'version':38s} {'kernel':30s} {'us':>8s} {'DRAM MB':>8s} {'DRAM %':>6s} {'occ %':>5s} "
             f"{'Minst':>7s} {'L1 %':>5s} {'L2 %':>5s} {'sec/req':>7s} {'bank cf':>9s} {'lsb %':>5s} {'bar %':>5s}"]
    for r in rows:
        kernel = r["kernel"].replace("void ", "").replace("ch06::", "").replace("(anonymous namespace)::", "")
        kernel = kernel.split("(")[0].replace("_kernel", "").replace(" ", "").replace(",float>", ">")[:30]
        req = num(r, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")
        spr = num(r, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum") / req if req > 0 else float("nan")
        dram = (num(r, "dram__bytes_read.sum") + num(r, "dram__bytes_write.sum")) / 1e6
        lines.append(f"{r['tag']:9s} {r['version']:38s} {kernel:30s} {num(r, 'gpu__time_duration.sum') / 1e3:8.1f} "
                     f"{dram:8.1f} {num(r, 'dram__throughput.avg.pct_of_peak_sustained_elapsed'):6.1f} "
                     f"{num(r, 'sm__warps_active.avg.pct_of_peak_sustained_active'):5.1f} "
                     f"{num(r, 'smsp__inst_executed.sum') / 1e6:7.1f} {num(r, 'l1tex__t_sector_hit_rate.pct'):5.1f} "
                     f"{num(r, 'lts__t_sector_hit_rate.pct'):5.1f} {spr:7.1f} "
                     f"{num(r, 'l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum'):9.0f} "
                     f"{num(r, 'smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct'):5.1f} "
                     f"{num(r, 'smsp__warp_issue_stalled_barrier_per_warp_active.pct'):5.1f}")
    # Versions that launch one kernel several times (v12's passes): their launches summed.
    groups = {}
    for r in rows:
        groups.setdefault((r["tag"], r["version"], r["kernel"]), []).append(r)
    sums = [(k, g) for k, g in groups.items() if len(g) > 1]
    if sums:
        lines += ["", "the same kernel launched several times by one version, summed: launches, us, DRAM MB, Minst"]
        for (tag, version, _), g in sums:
            us = sum(num(r, "gpu__time_duration.sum") for r in g) / 1e3
            dram = sum(num(r, "dram__bytes_read.sum") + num(r, "dram__bytes_write.sum") for r in g) / 1e6
            inst = sum(num(r, "smsp__inst_executed.sum") for r in g) / 1e6
            lines.append(f"total {tag} {version}: {len(g)} launches {us:.1f} us {dram:.1f} MB {inst:.1f} Minst")
    return "\n".join(lines) + "\n"


def tables(folder):
    out = {}
    if not os.path.isdir(folder):
        return out
    for csv_path in sorted(glob.glob(os.path.join(folder, "*.ncu.csv"))):
        out[csv_path[: -len(".csv")] + ".txt"] = ncu_table(csv_path)
    for slug, docs in sorted(results.folder(folder).items()):
        if "bench" in docs:
            out[os.path.join(folder, f"{slug}.suite.txt")] = table(docs["bench"], docs.get("torch"))
    return out


def check_cases(module_path):
    sys.path.insert(0, os.path.join(HERE, "..", "common", "tools"))
    import torch_peers as tp  # common/tools/torch_peers.py: the race module's ctypes wrapper
    spec = tp.Spec("06_maxpool3d")
    module = tp.RaceModule(module_path)
    errors = []
    for p in module.listing():
        suite = [c["name"] for c in p["suite"]]
        listed = [module.case(p["problem"], text).name for text in spec.cases_of(p["problem"])]
        if sorted(listed) != sorted(suite):
            missing = [c for c in suite if c not in listed]
            extra = [c for c in listed if c not in suite]
            errors.append(f"{p['problem']}: CASES differs from the suite; missing {missing[:3]}, extra {extra[:3]}")
        # the raced version is the dispatcher, which the benchmark races against the fastest other (alt)
        raced = next((v for v in p["versions"] if v["name"] == RACED.get(p["problem"])), None)
        if raced is None or not raced.get("dispatcher"):
            errors.append(f"{p['problem']}: its raced version {RACED.get(p['problem'])} is not marked a dispatcher")
    for e in errors:
        print("error: " + e)
    if not errors:
        print("torch_peers.py CASES names every suite case of every problem, once; each raced version is a dispatcher")
    return 1 if errors else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--check-cases", metavar="MODULE")
    ap.add_argument("folder", nargs="?")
    args = ap.parse_args()
    if args.check_cases:
        return check_cases(args.check_cases)
    if not args.folder:
        ap.error("give the results folder")
    made = tables(args.folder)
    if args.check:
        stale = []
        for path in glob.glob(os.path.join(args.folder, "*.suite.txt")) + glob.glob(os.path.join(args.folder, "*.ncu.txt")):
            if path not in made:
                stale.append(f"{path}: no results file to make it from")
        for path, text in made.items():
            have = open(path, encoding="utf-8").read() if os.path.isfile(path) else None
            if have != text:
                stale.append(f"{path}: not what suite_table.py makes of the results (run suite_table.py {args.folder})")
        for s in stale:
            print("error: " + s)
        if not stale:
            print(f"{len(made)} suite table(s) match their results")
        return 1 if stale else 0
    for path, text in made.items():
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The collector: every chapter's versions on this GPU's roofline.

  roofline.py [--results BUILD/results] [--out DIR] [--plot]   (./tutorial bench runs it on your run)
  roofline.py --update                                         the committed tables and plots
  roofline.py --check                                          exit 1 if the committed tables are stale (a test)

For each GPU it reads, through common/tools/results.py:
  - chapter 07's <gpu>.ceilings.json (the roofs, measured by `ceilings`) and <gpu>.json (the
    empirical sweep: F FLOPs per 8 bytes, F = 1 ... 2048);
  - every other chapter's benchmark (<gpu>.json), PyTorch rows (<gpu>.torch.json) and Nsight Compute
    profile (<gpu>.profile.json).
For each version it computes the arithmetic intensity on the floor's bytes, and where a profile
exists on the DRAM bytes Nsight Compute measured; the GFLOP/s and GB/s it attained; and the fraction
of the roof at its intensity: its rate over min(FP peak, copy ceiling x intensity), which for a
memory-bound kernel is its fraction of the copy ceiling. A chapter whose results are missing is
named as missing, never filled in.

Writes, per GPU: the tables between <!-- roofline:begin --> and <!-- roofline:end --> in
07_roofline/README.md (or DIR/<gpu>.roofline.md), and with --plot (matplotlib) <gpu>.roofline.png
and .svg (the hierarchical roofline: DRAM and L2 roofs, FP32 and FP16 peaks, every version of every
chapter, one colour per chapter) and <gpu>.ladder.<chapter>.png (each version's fraction of copy).
"""
import argparse
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common", "tools"))
import chapters  # noqa: E402
import results  # noqa: E402

CHAPTER = "07_roofline"
README = os.path.join(HERE, "README.md")
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"]
LOW_I = 1 / 64  # where a kernel with no arithmetic is drawn (its intensity is 0)


Failure = chapters.Failure


# ---- the data ------------------------------------------------------------------------------------

def roofs_of(ceilings, fallback_bench):
    """{name: (measured, theoretical)} in bytes/s or FLOP/s: chapter 07's ceilings, else what a
    chapter's benchmark file measured beside its runs (copy always; FP32 and FP16 from schema 3 on)."""
    if ceilings:
        r = ceilings["roofs"]
        scale = {"dram_copy_GBps": 1e9, "dram_read_GBps": 1e9, "dram_write_GBps": 1e9, "l2_read_GBps": 1e9,
                 "fp32_fma_GFLOPs": 1e9, "fp16_hfma2_GFLOPs": 1e9}
        return {k: (v["measured"] * scale[k], (v["theoretical"] or 0) * scale[k] or None) for k, v in r.items()}, \
            f"`{ceilings['_file']}`"
    if not fallback_bench:
        return None, None
    c, cc = fallback_bench["copy_ceiling"], fallback_bench.get("compute_ceiling")
    out = {"dram_copy_GBps": (c["GBps"] * 1e9, None), "dram_read_GBps": (c["read_only_GBps"] * 1e9, None),
           "dram_write_GBps": (c["write_only_GBps"] * 1e9, None)}
    if cc:
        out["fp32_fma_GFLOPs"] = (cc["fp32_fma_GFLOPs"] * 1e9, None)
        out["fp16_hfma2_GFLOPs"] = (cc["fp16_hfma2_GFLOPs"] * 1e9, None)
    return out, f"the copy ceiling of `{fallback_bench['chapter']}/results/{fallback_bench['_file']}` (no ceilings file)"


def peak_for(roofs, dtype):
    key = "fp16_hfma2_GFLOPs" if dtype == "f16" else "fp32_fma_GFLOPs"
    return (roofs.get(key) or (None,))[0]


def place(row, roofs):
    """The numbers of one version on the roofline (a results.Row)."""
    r = row.run
    s = r["ms_median"] * 1e-3
    flops, nbytes = float(r["flops"]), float(r["bytes"])
    bw = row.copy_GBps * 1e9  # the copy ceiling of the process that timed it
    peak = peak_for(roofs, r.get("dtype", "f32"))
    i_floor = flops / nbytes if nbytes else 0.0
    dram = row.dram_bytes
    roof = min(peak, bw * i_floor) if peak and i_floor > 0 else bw * i_floor if i_floor > 0 else None
    attained = flops / s if s > 0 else 0.0
    return {
        "chapter": row.chapter, "problem": row.problem, "case": row.case, "version": row.version, "kind": row.kind,
        "dtype": r.get("dtype", "f32"), "intensity": i_floor, "intensity_dram": flops / dram if dram else None,
        "GFLOPs": attained / 1e9, "GBps": nbytes / s / 1e9 if s > 0 else 0.0,
        # At intensity 0 the only roof is the bandwidth: the fraction of copy.
        "of_roof": (attained / roof) if roof else (nbytes / s) / bw if s > 0 else 0.0,
        "bound": "memory" if not peak or i_floor * bw < peak else "math",
        "dram_over_floor": dram / nbytes if dram and nbytes else None,
    }


def sweep_points(bench, roofs):
    """The empirical sweep's points per (problem, version): intensity, GFLOP/s, GB/s, the model's
    prediction min(copy ceiling x I, peak), and the ratio. The ceilings are the ones the benchmark
    measured in its own process, beside the sweep (else the roofs)."""
    out = []
    own = bench.get("compute_ceiling")
    bw = bench["copy_ceiling"]["GBps"] * 1e9 if "copy_ceiling" in bench else roofs["dram_copy_GBps"][0]
    for r in bench["runs"]:
        if not r["problem"].startswith("sweep_") or r["check"] == "FAIL":
            continue
        s = r["ms_median"] * 1e-3
        i = r["flops"] / r["bytes"]
        if own:
            peak = own["fp16_hfma2_GFLOPs" if r["dtype"] == "f16" else "fp32_fma_GFLOPs"] * 1e9
        else:
            peak = peak_for(roofs, r["dtype"])
        model = min(bw * i, peak) if peak else bw * i
        out.append({"problem": r["problem"], "version": r["version"], "flops": r["params"]["flops"], "intensity": i,
                    "GFLOPs": r["flops"] / s / 1e9, "GBps": r["bytes"] / s / 1e9, "model_GFLOPs": model / 1e9,
                    "ratio": r["flops"] / s / model, "compute_bound": bool(peak) and bw * i >= peak})
    return out


def measured_ridge(points, problem):
    """Where the sweep's two plateaus meet: its best FLOP/s over its best bytes/s (both of the fully
    unrolled version). None unless the sweep has points on both sides of the model's ridge: one point,
    or points on one plateau only, would give their own intensity, not the ridge."""
    pts = [p for p in points if p["problem"] == problem and p["version"] == "v2_unrolled"]
    if len({p["compute_bound"] for p in pts}) < 2:
        return None
    return max(p["GFLOPs"] for p in pts) / max(p["GBps"] for p in pts)


def gather(build_results=None):
    """Per GPU slug: {"gpu", "roofs", "roofs_from", "rows": [placed], "sweep": [...], "missing": [...]}."""
    per_gpu = {}
    for c in chapters.existing():
        folder = os.path.join(c.path, "results") if build_results is None else os.path.join(build_results, c.name)
        docs = results.folder(folder) if os.path.isdir(folder) else {}
        for slug, d in docs.items():
            g = per_gpu.setdefault(slug, {"docs": {}, "gpu": None})
            g["docs"][c.name] = d
            for kind in ("bench", "ceilings"):
                if kind in d:
                    g["gpu"] = d[kind]["gpu"]
    out = {}
    for slug, g in per_gpu.items():
        own = g["docs"].get(CHAPTER, {})
        fallback = next((d["bench"] for name, d in g["docs"].items() if name != CHAPTER and "bench" in d), None)
        roofs, roofs_from = roofs_of(own.get("ceilings"), fallback)
        if roofs is None:
            continue
        rows, missing = [], []
        for c in chapters.all_chapters():  # a chapter not written yet is missing too
            if c.name == CHAPTER:
                continue
            folder = os.path.join(c.path, "results") if build_results is None else os.path.join(build_results, c.name)
            if c.name not in g["docs"] or "bench" not in g["docs"][c.name]:
                missing.append(c.name)
                continue
            for row in results.rows(folder, c.name):
                if row.gpu == g["gpu"] and row.run.get("check") in ("pass", "skipped") and row.run["ms_median"] > 0:
                    rows.append(place(row, roofs))
        sweep = sweep_points(own["bench"], roofs) if "bench" in own else []
        out[slug] = {"gpu": g["gpu"], "roofs": roofs, "roofs_from": roofs_from, "rows": rows, "sweep": sweep,
                     "missing": missing, "ceilings": own.get("ceilings")}
    return out


# ---- the tables ----------------------------------------------------------------------------------

def f(v, fmt="{:.3f}"):
    return "–" if v is None else fmt.format(v)


def tables(slug, g):
    r = g["roofs"]
    lines = [f"**{g['gpu']}** (roofs from {g['roofs_from']}):\n\n", "| roof | measured | theoretical | measured / theoretical |\n",
             "|---|---:|---:|---:|\n"]
    names = {"dram_copy_GBps": ("DRAM copy", "GB/s"), "dram_read_GBps": ("DRAM read-only", "GB/s"),
             "dram_write_GBps": ("DRAM write-only", "GB/s"), "l2_read_GBps": ("L2 read", "GB/s"),
             "fp32_fma_GFLOPs": ("FP32 FMA", "GFLOP/s"), "fp16_hfma2_GFLOPs": ("FP16 HFMA2", "GFLOP/s")}
    for key, (name, unit) in names.items():
        if key not in r:
            continue
        m, t = r[key]
        lines.append(f"| {name} | {m / 1e9:.1f} {unit} | {f(t and t / 1e9, '{:.1f}')} {unit if t else ''} | "
                     f"{f(m / t if t else None)} |\n")
    ceil = g.get("ceilings")
    if ceil:
        lines.append(f"\nSM clock seen during the FP32 run: {ceil['sm_clock_MHz']:.0f} MHz; FP32 lanes per SM "
                     f"{ceil['fp32_lanes_per_sm'] or 'not in the table'}.\n")
    bw, peak32 = r["dram_copy_GBps"][0], peak_for(r, "f32")
    if peak32:
        t32 = r["fp32_fma_GFLOPs"][1]
        theory = f", theoretical {t32 / r['dram_copy_GBps'][1]:.1f}" if t32 and r["dram_copy_GBps"][1] else ""
        lines.append(f"Ridge point (FP32 peak over the copy ceiling): {peak32 / bw:.1f} FLOP per byte{theory}.\n")
    if g["sweep"]:
        ridge = measured_ridge(g["sweep"], "sweep_f32")
        worst = min((p for p in g["sweep"] if p["version"] == "v2_unrolled"), key=lambda p: p["ratio"])
        lines.append(f"\nThe sweep (GFLOP/s against the model's min(copy x I, peak), both ceilings measured by the "
                     f"benchmark in the same process): "
                     + (f"measured ridge {ridge:.1f} FLOP per byte (FP32)" if ridge is not None else
                        "no measured ridge (that needs sweep points on both sides of it: bench_07_roofline --suite)")
                     + f"; worst point of the fully unrolled form {worst['problem']} "
                     f"F = {worst['flops']}: {worst['ratio']:.3f} of the model.\n\n")
        lines.append("| problem | F | FLOP/B | " + " | ".join(f"{v} GFLOP/s" for v in ("v0_unroll1", "v1_unroll4", "v2_unrolled"))
                     + " | model GFLOP/s | v2 / model |\n")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|\n")
        keys = sorted({(p["problem"], p["flops"]) for p in g["sweep"]})
        for problem, fl in keys:
            pts = {p["version"]: p for p in g["sweep"] if p["problem"] == problem and p["flops"] == fl}
            any_p = next(iter(pts.values()))
            cells = " | ".join(f(pts[v]["GFLOPs"] if v in pts else None, "{:.0f}")
                               for v in ("v0_unroll1", "v1_unroll4", "v2_unrolled"))
            v2 = pts.get("v2_unrolled")
            lines.append(f"| {problem} | {fl} | {any_p['intensity']:g} | {cells} | {any_p['model_GFLOPs']:.0f} | "
                         f"{f(v2 and v2['ratio'])} |\n")
    lines.append("\nEvery version of every chapter (own, library and PyTorch rows), on its default case: FLOP/B on "
                 "the floor's bytes and on the DRAM bytes Nsight Compute measured, the rate attained, and the "
                 "fraction of the roof at its intensity.\n\n")
    lines.append("| chapter | problem | version | FLOP/B floor | FLOP/B DRAM | DRAM / floor | GB/s | GFLOP/s | of roof |\n")
    lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|\n")
    for p in g["rows"]:
        lines.append(f"| {p['chapter']} | `{p['problem']}` {p['case']} | `{p['version']}` | {p['intensity']:.3f} | "
                     f"{f(p['intensity_dram'])} | {f(p['dram_over_floor'], '{:.2f}')} | {p['GBps']:.1f} | "
                     f"{p['GFLOPs']:.1f} | {p['of_roof']:.3f} |\n")
    if g["missing"]:
        lines.append(f"\nNo results on this GPU for: {', '.join(g['missing'])}.\n")
    return "".join(lines)


def all_tables(data):
    if not data:
        return "_No results yet: run `./tutorial bench` on a GPU._\n"
    return "\n".join(tables(slug, data[slug]) for slug in sorted(data))


# ---- the plots -----------------------------------------------------------------------------------

def plot(slug, g, out_dir):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plots drawn")
        return []
    matplotlib.rcParams["svg.hashsalt"] = "roofline"  # the same picture gives the same file
    written = []
    r = g["roofs"]
    bw = r["dram_copy_GBps"][0] / 1e9
    fig, ax = plt.subplots(figsize=(9.5, 6.2))
    xs = [2 ** (k / 4) for k in range(-32, 41)]  # 1/256 ... 1024 FLOP per byte
    roofs_drawn = [("DRAM copy", bw, "black", "-")]
    if "l2_read_GBps" in r:
        roofs_drawn.append(("L2 read", r["l2_read_GBps"][0] / 1e9, "grey", "--"))
    peaks = [(name, r[key][0] / 1e9) for name, key in (("FP32 FMA peak", "fp32_fma_GFLOPs"),
                                                       ("FP16 HFMA2 peak", "fp16_hfma2_GFLOPs")) if key in r]
    top = max([p for _, p in peaks] + [bw * 16])
    for name, b, colour, style in roofs_drawn:
        caps = peaks or [(None, top)]
        for k, (pname, p) in enumerate(caps):
            ax.plot(xs, [min(b * x, p) for x in xs], style, color=colour, linewidth=1.0,
                    label=f"{name} {b:.0f} GB/s" if k == 0 else None)
    for pname, p in peaks:
        ax.axhline(p, color="black", linewidth=0.5, linestyle=":")
        ax.text(xs[-1], p * 1.08, f"{pname} {p / 1000:.1f} TFLOP/s", ha="right", fontsize=8)
    names = sorted({p["chapter"] for p in g["rows"]})
    for k, ch in enumerate(names):
        pts = [p for p in g["rows"] if p["chapter"] == ch]
        ax.scatter([max(p["intensity"], LOW_I) for p in pts], [max(p["GFLOPs"], 1e-3) if p["intensity"] else bw * LOW_I * p["of_roof"]
                                                                   for p in pts],
                   s=[30 if p["kind"] == "own" else 18 for p in pts], color=COLOURS[k % len(COLOURS)], alpha=0.75,
                   marker="o", label=ch, edgecolors="none")
    for problem, marker in (("sweep_f32", "^"), ("sweep_f16", "v")):
        pts = [p for p in g["sweep"] if p["problem"] == problem and p["version"] == "v2_unrolled"]
        if pts:
            ax.plot([p["intensity"] for p in pts], [p["GFLOPs"] for p in pts], marker=marker, color="#555555",
                    linewidth=0.8, markersize=5, label=f"07 sweep ({problem[-3:]}, unrolled)")
    ax.axvline(LOW_I, color="#bbbbbb", linewidth=0.5)
    ax.text(LOW_I * 1.05, bw * LOW_I * 0.3, "no arithmetic\n(drawn at 1/64)", fontsize=7, color="#777777")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=10)
    ax.set_xlabel("arithmetic intensity, FLOP per byte (the floor's bytes)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"Every chapter's versions on the roofline of {g['gpu']}", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    for ext in ("png", "svg"):
        path = os.path.join(out_dir, f"{slug}.roofline.{ext}")
        fig.savefig(path, dpi=110, metadata={"Date": None} if ext == "svg" else None)
        written.append(path)
    plt.close(fig)
    for ch in names:
        pts = [p for p in g["rows"] if p["chapter"] == ch]
        problems = []
        for p in pts:
            if p["problem"] not in problems:
                problems.append(p["problem"])
        fig, axes = plt.subplots(1, len(problems), figsize=(max(4.0, 2.6 * len(problems)), 3.6), squeeze=False)
        for a, problem in zip(axes[0], problems):
            ps = [p for p in pts if p["problem"] == problem]
            a.barh([p["version"] for p in ps][::-1], [p["GBps"] * 1e9 / (r["dram_copy_GBps"][0]) for p in ps][::-1],
                   color=[("#bbbbbb" if p["kind"] != "own" else COLOURS[names.index(ch) % len(COLOURS)]) for p in ps][::-1])
            a.axvline(1.0, color="black", linewidth=0.6)
            a.set_title(problem, fontsize=8)
            a.tick_params(labelsize=7)
            a.set_xlabel("fraction of the copy ceiling", fontsize=7)
        fig.suptitle(f"{ch} on {g['gpu']}: each version's fraction of copy (grey: libraries)", fontsize=9)
        fig.tight_layout()
        path = os.path.join(out_dir, f"{slug}.ladder.{ch}.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written


# ---- main ----------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", help="a build's results folder (BUILD/results): your own run")
    ap.add_argument("--out", help="where a run's tables and plots go (default: RESULTS/roofline)")
    ap.add_argument("--plot", action="store_true", help="draw the plots (matplotlib)")
    ap.add_argument("--update", action="store_true", help="rewrite the committed tables and plots")
    ap.add_argument("--check", action="store_true", help="exit 1 if the committed tables are stale")
    args = ap.parse_args()
    if args.results and not os.path.isdir(args.results):
        raise Failure(f"{args.results}: no such folder (a build's results folder, BUILD/results)")
    try:
        data = gather(args.results)
    except results.ResultsError as e:
        raise Failure(str(e)) from None
    if args.results:
        out = args.out or os.path.join(args.results, "roofline")
        os.makedirs(out, exist_ok=True)
        for slug, g in data.items():
            path = os.path.join(out, f"{slug}.roofline.md")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(tables(slug, g))
            print(tables(slug, g))
            print(f"wrote {path}")
            for p in plot(slug, g, out) if args.plot else []:
                print(f"wrote {p}")
        if not data:
            print(f"no results in {args.results} to place on a roofline (no GPU here, or the benchmarks did not run)")
        return 0
    with open(README, encoding="utf-8") as fh:
        text = fh.read()
    if "<!-- roofline:begin -->" not in text or "<!-- roofline:end -->" not in text:
        raise Failure(f"{README}: no <!-- roofline:begin --> ... <!-- roofline:end --> markers")
    new = chapters.replace_between(text, "roofline", all_tables(data))
    if args.check:
        if new != text:
            print("07_roofline/README.md's roofline tables are stale: run 07_roofline/roofline.py --update")
            return 1
        print("roofline tables are up to date")
        return 0
    if args.update:
        if new != text:
            with open(README, "w", encoding="utf-8") as fh:
                fh.write(new)
            print(f"updated {README}")
        for slug, g in data.items():
            for p in plot(slug, g, os.path.join(HERE, "results")) if args.plot else []:
                print(f"wrote {p}")
        return 0
    print(all_tables(data))
    return 0


if __name__ == "__main__":
    chapters.run_tool(main)

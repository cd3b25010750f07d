#!/usr/bin/env python3
"""Size sweep: every version of every problem across its suite of sizes, and the plot.

  sweep.py --build BUILD [CHAPTER ...]        (./tutorial sweep runs it)

Runs each chapter's benchmark over its built-in suite (n = 2^10 ... 2^28 for the element-wise
problems) with the L2 left warm between repetitions, writes BUILD/results/CH/<gpu>.sweep.json, and
draws fraction of copy against n, one panel per problem, into <gpu>.sweep.png (with matplotlib;
without it, the JSON alone). Three regions show: small n, where the launch's fixed cost (a few
microseconds) dominates and the fraction is tiny; n whose working set fits in L2, where the
fraction can pass 1 (the copy ceiling is a DRAM number); and the DRAM plateau.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chapters  # noqa: E402


def plot(doc, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: wrote the sweep's JSON, no plot")
        return False
    problems = []
    for r in doc["runs"]:
        if r["problem"] not in problems:
            problems.append(r["problem"])
    fig, axes = plt.subplots(1, len(problems), figsize=(5.2 * len(problems), 4.2), squeeze=False)
    l2 = doc["device"]["l2_bytes"]
    for ax, problem in zip(axes[0], problems):
        runs = [r for r in doc["runs"] if r["problem"] == problem]
        versions = []
        for r in runs:
            if r["version"] not in versions:
                versions.append(r["version"])
        for v in versions:
            pts = sorted((r["shape"][0], r["fraction_of_copy"]) for r in runs if r["version"] == v)
            style = "--" if any(r["kind"] == "peer" for r in runs if r["version"] == v) else "-"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", markersize=3, label=v)
        # Where the working set (bytes moved) reaches the L2's size.
        per_elem = runs[0]["bytes"] / runs[0]["shape"][0]
        ax.axvline(l2 / per_elem, color="grey", linewidth=0.8, linestyle=":")
        ax.text(l2 / per_elem, ax.get_ylim()[1] * 0.02, " working set = L2", color="grey", fontsize=7, rotation=90,
                va="bottom")
        ax.axhline(1.0, color="black", linewidth=0.6)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("n (elements)")
        ax.set_ylabel("fraction of the copy ceiling")
        ax.set_title(f"{problem} on {doc['gpu']}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{doc['chapter']}: L2 warm between repetitions; copy ceiling {doc['copy_ceiling_GBps']:.0f} GB/s",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", default="20")
    ap.add_argument("--plot-only", metavar="SWEEP_JSON", help="redraw the plot of an existing sweep")
    ap.add_argument("--type", help="only the problems on this element type (the benchmark's --type)")
    ap.add_argument("chapters", nargs="*")
    args = ap.parse_args()
    if args.plot_only:
        with open(args.plot_only, encoding="utf-8") as f:
            doc = json.load(f)
        plot(doc, args.plot_only[: -len(".json")] + ".png")
        return 0
    build = os.path.abspath(args.build)
    names = args.chapters or [c.name for c in chapters.existing()]
    for ch in names:
        bench = os.path.join(build, "subprojects", ch, f"bench_{ch}")
        tmp = os.path.join(build, "results", ch, "sweep.tmp.json")
        os.makedirs(os.path.dirname(tmp), exist_ok=True)
        # Correctness is the tests' job (and the benchmark's): the sweep only times.
        cmd = [bench, "--suite", "--l2", "warm", "--reps", args.reps, "--no-check", "--json", tmp]
        rc = subprocess.call(cmd + (["--type", args.type] if args.type else []))
        if rc == 77:
            print("no CUDA device: no sweep")
            return 77
        if rc != 0:
            raise SystemExit(f"{bench} --suite failed with {rc}")
        with open(tmp, encoding="utf-8") as f:
            doc = json.load(f)
        path = os.path.join(build, "results", ch, chapters.slug(doc["gpu"]) + ".sweep.json")
        os.replace(tmp, path)
        print(f"wrote {path}")
        plot(doc, path[: -len(".json")] + ".png")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Size sweep: every version of every problem across its built-in suite, and the plot.

  sweep.py --build BUILD [CHAPTER ...]        (./tutorial sweep runs it)
  sweep.py --plot-only SWEEP_JSON             redraw the plot of an existing sweep beside it

Runs each chapter's benchmark over its suite (n = 2^10 ... 2^28 for the element-wise problems; the
suite's shapes and parameters for the others) with the L2 left warm between repetitions, writes
BUILD/results/CH/<gpu>.sweep.json, and draws fraction of copy against each case's work, the bytes
its floor moves, one panel per problem, into <gpu>.sweep.png (with matplotlib; without it, the JSON
alone). Three regions show: small cases, where the launch's fixed cost (a few microseconds)
dominates and the fraction is tiny; cases whose working set fits in L2, where the fraction can pass
1 (the copy ceiling is a DRAM number); and the DRAM plateau.
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chapters  # noqa: E402
import results  # noqa: E402


Failure = chapters.Failure


def plot(doc, path):
    """Draws the sweep into `path`; False (and says so) when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed: no plot drawn ({path})")
        return False
    problems = []
    for r in doc["runs"]:
        if r["problem"] not in problems:
            problems.append(r["problem"])
    if not problems:
        raise Failure(f"{doc['_file']}: no runs to plot")
    fig, axes = plt.subplots(1, len(problems), figsize=(5.2 * len(problems), 4.2), squeeze=False)
    l2 = doc["device"]["l2_bytes"]
    for ax, problem in zip(axes[0], problems):
        runs = [r for r in doc["runs"] if r["problem"] == problem and r["bytes"] > 0]
        versions = []
        for r in runs:
            if r["version"] not in versions:
                versions.append(r["version"])
        for v in versions:
            pts = sorted((r["bytes"], r["fraction_of_copy"]) for r in runs if r["version"] == v)
            style = "--" if any(r["kind"] == "peer" for r in runs if r["version"] == v) else "-"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", markersize=3, label=v)
        ax.axvline(l2, color="grey", linewidth=0.8, linestyle=":")  # where the bytes moved reach the L2's size
        ax.text(l2, ax.get_ylim()[1] * 0.02, " bytes moved = L2", color="grey", fontsize=7, rotation=90, va="bottom")
        ax.axhline(1.0, color="black", linewidth=0.6)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes the case's floor moves")
        ax.set_ylabel("fraction of the copy ceiling")
        ax.set_title(f"{problem} on {doc['gpu']}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{doc['chapter']}: L2 warm between repetitions; copy ceiling {doc['copy_ceiling']['GBps']:.0f} GB/s",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")
    return True


def png_path(json_path):
    base = json_path[: -len(".json")] if json_path.endswith(".json") else json_path
    return base + ".png"


def plot_only(path):
    if not os.path.isfile(path):
        raise Failure(f"{path}: no such file")
    try:
        doc = results.load(path, "sweep")
    except results.ResultsError as e:
        raise Failure(str(e)) from None
    plot(doc, png_path(path))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--plot-only", metavar="SWEEP_JSON", help="redraw the plot of an existing sweep")
    ap.add_argument("--type", help="only the problems on this element type (the benchmark's --type)")
    ap.add_argument("chapters", nargs="*")
    args = ap.parse_args()
    if args.plot_only:
        return plot_only(args.plot_only)
    build = os.path.abspath(args.build)
    if not os.path.isdir(build):
        raise Failure(f"{args.build}: no such build folder (./tutorial build makes one)")
    known = [c.name for c in chapters.existing()]
    for ch in args.chapters:
        if ch not in known:
            raise Failure(f"no chapter '{ch}' (chapters: {', '.join(known)})")
    for ch in args.chapters or known:
        bench = os.path.join(build, "subprojects", ch, "tut", f"bench_{ch}")
        if not os.path.isfile(bench):
            raise Failure(f"{bench}: not built (./tutorial build)")
        tmp = os.path.join(build, "results", ch, "sweep.tmp.json")
        os.makedirs(os.path.dirname(tmp), exist_ok=True)
        # Correctness is the tests' job (and the benchmark's): the sweep only times.
        cmd = [bench, "--suite", "--l2", "warm", "--reps", str(args.reps), "--no-check", "--json", tmp]
        rc = subprocess.call(cmd + (["--type", args.type] if args.type else []))
        if rc == 77:
            print("no CUDA device: no sweep")
            return 77
        if rc != 0:
            raise Failure(f"{bench} --suite failed with {rc}")
        doc = results.load(tmp, "sweep")
        path = os.path.join(build, "results", ch, chapters.slug(doc["gpu"]) + ".sweep.json")
        os.replace(tmp, path)
        print(f"wrote {path}")
        plot(doc, png_path(path))
    return 0


if __name__ == "__main__":
    chapters.run_tool(main)

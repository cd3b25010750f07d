#!/usr/bin/env python3
"""Our best version against cuDNN, case by case, from a benchmark's JSON (results/<gpu>.json, or a
file of one problem's suite): for each problem and case, the fastest of our versions that passed,
cuDNN's fastest accepted path, and our time over cuDNN's (below 1: ours is faster); then the count,
and the count in each layout. Every ratio comes from one process (a file merged by
common/tools/results.py --merge keeps each problem's runs from one process).

  tools/cudnn_suite.py results/NVIDIA_H100_80GB_HBM3.json [more.json ...]

A .txt file is read as the benchmark's printed tables (a run stopped before it wrote its JSON).

With more than one file, a last paragraph counts the cases of all of them together, each case
judged in the last file that holds it (a later run of some cases replaces their verdicts; each
ratio still comes from one process).
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common", "tools"))
import results  # noqa: E402  (common/tools/results.py: loads and checks a results file)


def from_text(path):
    """The benchmark's printed tables (its stdout), for a run stopped before it wrote its JSON: our
    rows and cuDNN's (the peers named cudnn_*) that passed, with their median as printed (4
    decimals, so a ratio is good to about 0.5 % at 0.01 ms); without the closing "wrote" line the
    last case's table may be cut, and is left out."""
    lines = open(path, encoding="utf-8").read().splitlines()
    head = re.match(r"\S+ on (.+?) \(.*commit (\S+),", lines[0] if lines[0].strip() else lines[1])
    blocks, cur = [], None
    for line in lines:
        m = re.match(r"^(bn_\w+) \[\w+\]\s+(\S+ layout=\S+ eps=\S+ momentum=\S+ shift=\S+)", line)
        if m:
            cur = (m.group(1), m.group(2), [])
            blocks.append(cur)
            continue
        f = line.split()
        t = re.search(r"\s(\d+\.\d+) \[[\d.]+-[\d.]+\]", line)
        if cur and len(f) > 2 and f[1] in ("own", "peer") and t and line.rstrip().endswith("pass"):
            lib = "cuDNN" if f[0].startswith("cudnn_") else None
            cur[2].append({"problem": cur[0], "case": cur[1], "version": f[0], "kind": f[1], "library": lib,
                           "ms_median": float(t.group(1)), "check": "pass"})
    done = any(line.startswith("wrote ") for line in lines)
    runs = [r for b in (blocks if done else blocks[:-1]) for r in b[2]]
    return {"gpu": head.group(1) if head else "?", "date": "the benchmark's stdout, stopped by its time limit",
            "commit": head.group(2) if head else "?", "runs": runs}


def rows(path, verdicts):
    doc = from_text(path) if path.endswith(".txt") else results.load(path, "bench")
    cases = {}
    for r in doc["runs"]:
        if r["check"] != "pass":
            continue
        cases.setdefault((r["problem"], r["case"]), []).append(r)
    print(f"{path}: {doc['gpu']}, {doc['date']}, commit {doc['commit']}")
    print(f"{'problem':26s} {'case':32s} {'ours, fastest':>28s} {'cuDNN, fastest accepted':>36s} {'ours/cuDNN':>10s}")
    ahead = behind = 0
    by_layout = {}  # layout -> [accepted, ours slower]
    for (problem, case), runs in cases.items():
        ours = [r for r in runs if r["kind"] == "own"]
        lib = [r for r in runs if r.get("library") == "cuDNN"]
        if not ours or not lib:
            continue
        o = min(ours, key=lambda r: r["ms_median"])
        c = min(lib, key=lambda r: r["ms_median"])
        short = " ".join(case.split()[:2])
        ratio = o["ms_median"] / c["ms_median"]
        ahead, behind = ahead + (ratio <= 1), behind + (ratio > 1)
        verdicts[(problem, short)] = ratio <= 1
        layout = next((w.split("=", 1)[1] for w in case.split() if w.startswith("layout=")), "?")
        tally = by_layout.setdefault(layout, [0, 0])
        tally[0], tally[1] = tally[0] + 1, tally[1] + (ratio > 1)
        print(f"{problem:26s} {short:32s} {o['version']:>18s} {o['ms_median']:.4f} ms "
              f"{c['version']:>26s} {c['ms_median']:.4f} ms {ratio:10.3f}")
    print(f"cases cuDNN accepted: {ahead + behind}   ours at least as fast: {ahead}   ours slower: {behind}")
    for layout, (accepted, slower) in sorted(by_layout.items()):
        print(f"{layout} alone: {accepted} accepted   {accepted - slower} ours at least as fast   {slower} ours slower")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    verdicts = {}
    for i, path in enumerate(sys.argv[1:]):
        if i:
            print()
        try:
            rows(path, verdicts)
        except results.ResultsError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    if len(sys.argv) > 2:
        ahead = sum(verdicts.values())
        print()
        print(f"all files, each case from the last file holding it: cases cuDNN accepted: {len(verdicts)}   "
              f"ours at least as fast: {ahead}   ours slower: {len(verdicts) - ahead}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

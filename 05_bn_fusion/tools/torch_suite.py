#!/usr/bin/env python3
"""Our versions against PyTorch on every case of a race file (torch_peers.py's <gpu>.torch.json):
for each problem and case, the version of ours that raced, both medians and our speed over
PyTorch's (the median over the alternating rounds of one process, with its lowest and highest
round; above 1: ours is faster). Then, per problem, the geometric mean in each layout and over
both, the slowest case, and the cases where PyTorch was faster; last, the same over every problem.

  tools/torch_suite.py results/NVIDIA_H200.torch.json [more.torch.json ...]

With several files (a race split into processes, one per problem), each file's rows follow its own
header line, and the summaries count the rows of all of them; each ratio still comes from one
process.
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common", "tools"))
import results  # noqa: E402  (common/tools/results.py: loads and checks a results file)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def short(case):
    """'64x64x112x112 layout=NHWC eps=...' -> '64x64x112x112 NHWC'"""
    words = case.split()
    layout = next((w.split("=", 1)[1] for w in words if w.startswith("layout=")), "")
    return f"{words[0]} {layout}".strip()


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    docs = []
    for path in sys.argv[1:]:
        try:
            docs.append((path, results.load(path, "torch")))
        except results.ResultsError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    by_problem, failed = {}, []
    for path, doc in docs:
        spins = sorted({(r.get("race") or {}).get("busy_cycles", 200000) for r in doc["runs"]})
        print(f"{path}: PyTorch {doc['torch']} on {doc['gpu']}, {doc['date']}, spin of "
              f"{', '.join(str(b) for b in spins)} cycles before each timed call")
        print(f"{'problem':26s} {'case':20s} {'ours':>20s} {'ours ms':>9s} {'torch ms':>9s} {'speed':>7s} {'rounds':>13s}")
        rows(doc, by_problem, failed)
    summarize(by_problem, failed)
    return 1 if failed else 0


def rows(doc, by_problem, failed):
    for r in doc["runs"]:
        race = r.get("race") or {}
        if "speed_ratio" not in race or race.get("check") != "pass" or r.get("check") != "pass":
            failed.append(f"{r['problem']} {short(r['case'])}: {race.get('check') or r.get('check') or 'not raced'}")
            continue
        s = race["speed_ratio"]
        by_problem.setdefault(r["problem"], []).append((short(r["case"]), s))
        print(f"{r['problem']:26s} {short(r['case']):20s} {race['version']:>20s} {race['ms_median']:9.4f} "
              f"{race['peer_ms_median']:9.4f} {s:6.3f}x {race['speed_ratio_min']:.3f}-{race['speed_ratio_max']:.3f}")


def summarize(by_problem, failed):
    print()
    every = []
    for problem, got in by_problem.items():
        every += [(problem, c, s) for c, s in got]
        parts = []
        for layout in ("NCHW", "NHWC"):
            xs = [s for c, s in got if c.endswith(layout)]
            if xs:
                parts.append(f"{layout} {geomean(xs):.2f}x over {len(xs)}")
        low = min(got, key=lambda g: g[1])
        slower = [c for c, s in got if s < 1]
        print(f"{problem}: geometric mean {', '.join(parts)}, all {geomean([s for _, s in got]):.2f}x over {len(got)}; "
              f"slowest {low[1]:.3f}x on {low[0]}; PyTorch faster on {len(slower)} cases" +
              (f": {', '.join(slower)}" if slower else ""))
    if every:
        slower = [f"{p} {c} {s:.3f}x" for p, c, s in every if s < 1]
        print(f"every problem: geometric mean {geomean([s for _, _, s in every]):.2f}x over {len(every)} cases raced; "
              f"PyTorch faster on {len(slower)} cases" + (f": {'; '.join(slower)}" if slower else ""))
    for f in failed:
        print(f"not raced or failed: {f}")


if __name__ == "__main__":
    sys.exit(main())

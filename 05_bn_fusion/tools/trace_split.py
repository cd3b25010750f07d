#!/usr/bin/env python3
"""Each interval between two CUDA events on one stream, split into what the GPU did in it, from the
CSV that tools/gpu_trace.cpp writes:

  trace_split.py TRACE.csv [--min-count N] [--csv OUT.csv]

An interval runs from one event record's device timestamp to the next on the same stream. Intervals
are grouped by what runs in them (the operations' kinds and names, in order), so that the benchmark's
timed repetitions of one version form one group; the L2 flush and the spin between repetitions form
others. For each group with at least N intervals (default 5) it prints, as medians over the group in
microseconds: the interval (what cudaEventElapsedTime gives), the lead (from the first event to the
first operation's start), each operation's duration, the gaps between operations, and the tail (from
the last operation's end to the second event). --csv also writes those medians, one row per group
and part (interval, lead, op1, gap1, op2, ..., tail): key (the base name of the group's longest
operation), intervals, part, kind, name, us.
"""
import argparse
import csv
import shutil
import statistics
import subprocess
import sys


# The columns tools/gpu_trace.cpp writes that this reads.
COLUMNS = ["kind", "stream", "start_ns", "end_ns", "grid", "block", "cluster", "what"]


def demangle(names):
    tool = shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}


def short(name, width=72):
    """A kernel's name without its parameter list (the parentheses that close the name), cut to width."""
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i]
                break
    return name if len(name) <= width else name[: width - 3] + "..."


def base(name):
    """A kernel's name without its return type, namespaces and template arguments."""
    name = name.split("<")[0].split()[-1] if name.split() else name
    return name.split("::")[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--csv", help="also write the medians here, one row per group and part")
    args = ap.parse_args()
    try:
        with open(args.trace, newline="") as fh:
            rows = list(csv.DictReader(fh))
    except OSError as e:
        sys.exit(f"{args.trace}: {e.strerror}")
    if not rows:
        sys.exit(f"{args.trace}: no records")
    missing = [c for c in COLUMNS if c not in rows[0]]
    if missing:
        sys.exit(f"{args.trace}: not gpu_trace's CSV (no column {', '.join(missing)})")
    names = demangle(sorted({r["what"] for r in rows if r["kind"] == "kernel"}))
    by_stream = {}
    for r in rows:
        r["start"], r["end"] = int(r["start_ns"]), int(r["end_ns"])
        by_stream.setdefault(r["stream"], []).append(r)
    groups = {}
    for recs in by_stream.values():
        events = sorted((r for r in recs if r["kind"] == "event"), key=lambda r: r["start"])
        ops = sorted((r for r in recs if r["kind"] != "event"), key=lambda r: r["start"])
        j = 0
        for e0, e1 in zip(events, events[1:]):
            while j < len(ops) and ops[j]["start"] < e0["start"]:
                j += 1
            inside = []
            k = j
            while k < len(ops) and ops[k]["end"] <= e1["start"]:
                inside.append(ops[k])
                k += 1
            if not inside:
                continue
            sig = tuple((o["kind"], short(names.get(o["what"], o["what"])) if o["kind"] == "kernel" else o["what"])
                        for o in inside)
            parts = [inside[0]["start"] - e0["start"]]
            for a, b in zip(inside, inside[1:]):
                parts += [a["end"] - a["start"], b["start"] - a["end"]]
            parts += [inside[-1]["end"] - inside[-1]["start"], e1["start"] - inside[-1]["end"]]
            groups.setdefault(sig, []).append((e1["start"] - e0["start"], parts, inside))
    med = lambda xs: statistics.median(xs) / 1000.0  # noqa: E731
    table = []
    for sig, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        if len(items) < args.min_count:
            continue
        cols = list(zip(*[i[1] for i in items]))
        ops = items[0][2]
        longest = max(range(len(sig)), key=lambda n: med(cols[1 + 2 * n]))
        key = base(sig[longest][1]) if sig[longest][0] == "kernel" else sig[longest][0]
        interval = med([i[0] for i in items])
        print(f"{len(items)} intervals: interval {interval:.2f} us (median)")
        print(f"  lead, event to first start            {med(cols[0]):8.2f} us")
        parts = [("interval", "", "", interval), ("lead", "", "", med(cols[0]))]
        for n, (kind, what) in enumerate(sig):
            op, took = ops[n], med(cols[1 + 2 * n])
            shape = f" (grid {op['grid']}, block {op['block']}, cluster {op['cluster']})" if kind == "kernel" else " bytes"
            print(f"  {kind:7s} {what}{shape}")
            print(f"          duration                       {took:8.2f} us")
            parts.append((f"op{n + 1}", kind, what, took))
            if n + 1 < len(sig):
                gap = med(cols[2 + 2 * n])
                print(f"          gap to the next                {gap:8.2f} us")
                parts.append((f"gap{n + 1}", "", "", gap))
        print(f"  tail, last end to event               {med(cols[-1]):8.2f} us")
        parts.append(("tail", "", "", med(cols[-1])))
        table += [(key, len(items)) + p for p in parts]
    if args.csv:
        try:
            with open(args.csv, "w", newline="") as fh:
                w = csv.writer(fh)
                w.writerow(["key", "intervals", "part", "kind", "name", "us"])
                for r in table:
                    w.writerow(list(r[:5]) + [f"{r[5]:.3f}"])
        except OSError as e:
            sys.exit(f"{args.csv}: {e.strerror}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

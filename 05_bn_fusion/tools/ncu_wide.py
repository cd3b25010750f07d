#!/usr/bin/env python3
"""Nsight Compute's CSV (`ncu --csv --metrics ...`: one row per kernel and metric) as one row per
kernel, the form of this chapter's results/*ncu*.csv files:

    commit,problem,shape,layout,version,part,kernel,<each metric, sorted by name>

  tools/ncu_wide.py --commit C --out OUT.csv PROBLEM,SHAPE,LAYOUT,VERSION=NCU.csv [...]

Each input is one `bench_05_bn_fusion --profile --problem PROBLEM --version VERSION --shape SHAPE
--param layout=LAYOUT` under ncu, named by what it ran. `part` says which of the version's kernels a
row is: `one` for a version of one kernel; else `stats` or `pass` from the kernel's name (a name
with `apply` is a pass), or k0, k1, ... in launch order. Values are written as ncu printed them,
but with the thousands separators removed and byte and time units scaled to bytes and nanoseconds.
"""
import argparse
import csv
import sys

SCALE = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "nsecond": 1, "usecond": 1e3, "msecond": 1e6}


def part_of(name, index, count):
    if count == 1:
        return "one"
    if "stats" in name:
        return "stats"
    if "pass" in name or "apply" in name:
        return "pass"
    return f"k{index}"


def value(text, unit):
    text = text.replace(",", "")
    scale = SCALE.get(unit, 1)
    try:
        v = float(text)
    except ValueError:
        return text
    if scale == 1:
        return text
    return str(int(round(v * scale)))


def read(path):
    """[(kernel name, {metric: value})] in launch order."""
    with open(path, encoding="utf-8", errors="replace") as f:
        rows = [r for r in csv.reader(f) if len(r) > 10]
    if not rows:
        raise ValueError(f"{path}: no kernel rows (did ncu profile anything? see its stderr)")
    head = rows[0]
    try:
        k, m, v, i, u = (head.index(c) for c in ("Kernel Name", "Metric Name", "Metric Value", "ID", "Metric Unit"))
    except ValueError:
        raise ValueError(f"{path}: not ncu --csv output (no Kernel Name / Metric Name / Metric Value / ID / Metric Unit)")
    kernels, order = {}, []
    for r in rows[1:]:
        key = (r[i], r[k])
        if key not in kernels:
            kernels[key] = {}
            order.append(key)
        kernels[key][r[m]] = value(r[v], r[u])
    return [(key[1], kernels[key]) for key in order]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commit", required=True, help="the commit whose kernels ran")
    ap.add_argument("--out", required=True, help="the CSV to write")
    ap.add_argument("inputs", nargs="+", metavar="PROBLEM,SHAPE,LAYOUT,VERSION=NCU.csv")
    args = ap.parse_args()
    out, metrics = [], set()
    for spec in args.inputs:
        tags, sep, path = spec.partition("=")
        fields = tags.split(",")
        if not sep or len(fields) != 4:
            print(f"error: {spec}: expected PROBLEM,SHAPE,LAYOUT,VERSION=NCU.csv")
            return 2
        try:
            kernels = read(path)
        except (OSError, ValueError) as e:
            print(f"error: {e}")
            return 2
        for j, (name, d) in enumerate(kernels):
            out.append(([args.commit, *fields, part_of(name, j, len(kernels)), name], d))
            metrics.update(d)
    names = sorted(metrics)
    with open(args.out, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["commit", "problem", "shape", "layout", "version", "part", "kernel"] + names)
        for head, d in out:
            w.writerow(head + [d.get(n, "") for n in names])
    print(f"{args.out}: {len(out)} kernels")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Where a kernel's warps stall, instruction by instruction, from Nsight Compute's source page.

  stall_sites.py OUT.csv PROBLEM=SOURCE.csv [PROBLEM=SOURCE.csv ...]

Each SOURCE.csv is what `ncu --import REPORT --page source --csv --print-source sass` prints for a
report taken with `--section SourceCounters --section WarpStateStats` (one kernel). OUT.csv gets,
for each problem, one row `site=all` with the kernel's sampled stall totals, then one row for each
of the --top instructions with the most samples of any reason and of the barrier reason: its
offset from the kernel's first instruction, its SASS, how many times a warp executed it (the
instruction's executions over the kernel's warps, given as --warps), and its samples.
"""
import argparse
import csv
import io
import sys

# Every stall reason of the source page, the commonest first.
REASONS = ["stall_long_sb", "stall_barrier", "stall_wait", "stall_selected", "stall_not_selected",
           "stall_short_sb", "stall_math", "stall_branch_resolving", "stall_dispatch", "stall_no_inst",
           "stall_mio", "stall_lg", "stall_drain", "stall_imc", "stall_membar", "stall_misc", "stall_sleep",
           "stall_tex"]
ALL = "Warp Stall Sampling (All Samples)"


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def read(path):
    """The kernel's name and its instruction rows; a one-line error where the file is not ncu's source page."""
    try:
        with open(path, newline="") as fh:
            text = fh.read()
    except OSError as e:
        sys.exit(f"{path}: {e.strerror}")
    first, _, rest = text.partition("\n")  # "Kernel Name","...",
    head = next(csv.reader(io.StringIO(first)), [])
    lines = list(csv.DictReader(io.StringIO(rest)))
    if len(head) < 2 or head[0] != "Kernel Name" or not lines or not {"Address", "Source", ALL} <= set(lines[0]):
        sys.exit(f"{path}: not Nsight Compute's source page as CSV (ncu --import REPORT --page source --csv "
                 "--print-source sass)")
    return head[1], lines


def write_csv(out, fields, rows):
    """rows (dicts) to OUT as CSV with these columns; a one-line error where it cannot be written."""
    try:
        with open(out, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
    except OSError as e:
        sys.exit(f"{out}: {e.strerror}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("inputs", nargs="+", metavar="PROBLEM=SOURCE.csv")
    ap.add_argument("--warps", type=int, required=True, help="warps the kernel launched (grid x block / 32)")
    ap.add_argument("--top", type=int, default=4)
    args = ap.parse_args()
    fields = ["problem", "site", "offset", "sass", "per_warp", "samples"] + REASONS + ["kernel"]
    rows = []
    for spec in args.inputs:
        problem, _, path = spec.partition("=")
        if not path:
            sys.exit(f"{spec}: expected PROBLEM=SOURCE.csv")
        kernel, lines = read(path)
        base = int(lines[0]["Address"], 16)
        total = {"problem": problem, "site": "all", "offset": "", "sass": "", "per_warp": "", "kernel": kernel,
                 "samples": sum(number(r[ALL]) for r in lines)}
        total.update({k: sum(number(r.get(k, "0")) for r in lines) for k in REASONS})
        rows.append(total)
        picked = []
        for key in (ALL, "stall_barrier"):
            for r in sorted(lines, key=lambda r: -number(r.get(key, "0")))[: args.top]:
                if r not in picked and number(r.get(key, "0")) > 0:
                    picked.append(r)
        for r in sorted(picked, key=lambda r: int(r["Address"], 16)):
            row = {"problem": problem, "site": "instruction", "offset": hex(int(r["Address"], 16) - base),
                   "sass": " ".join(r["Source"].split()), "kernel": kernel,
                   "per_warp": round(number(r["Instructions Executed"]) / args.warps, 3), "samples": number(r[ALL])}
            row.update({k: number(r.get(k, "0")) for k in REASONS})
            rows.append(row)
    write_csv(args.out, fields, rows)
    print(f"wrote {args.out}: {len(rows)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Where a kernel's executed instructions and stall samples go: by stretch of code between block
barriers, and by opcode. Reads Nsight Compute's source page of one kernel, as stall_sites.py does.

  sass_regions.py OUT.csv SOURCE.csv

SOURCE.csv is what `ncu --import REPORT --page source --csv --print-source sass` prints for a report
taken with `--section SourceCounters --section WarpStateStats`. OUT.csv gets one row per region (region
k: the instructions after the k-th BAR.SYNC in address order, up to and including the next) and one
row per opcode (its mnemonic without suffixes, the predicate dropped), each with its warp
instructions executed, its share of them, and its share of the warp stall samples; opcodes sorted
by instructions.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stall_sites import ALL, number, read, write_csv  # noqa: E402


def opcode(sass):
    words = sass.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    out, path = sys.argv[1], sys.argv[2]
    kernel, lines = read(path)
    total = sum(number(r["Instructions Executed"]) for r in lines) or 1.0
    samples = sum(number(r[ALL]) for r in lines) or 1.0
    regions, ops, k = {}, {}, 0
    for r in lines:
        inst, smp = number(r["Instructions Executed"]), number(r[ALL])
        for key, table in ((k, regions), (opcode(r["Source"]), ops)):
            a = table.setdefault(key, [0.0, 0.0])
            a[0], a[1] = a[0] + inst, a[1] + smp
        if opcode(r["Source"]) == "BAR":
            k += 1
    rows = [{"kind": "region", "name": str(key), "warp_instructions": int(v[0]), "share": round(v[0] / total, 4),
             "sample_share": round(v[1] / samples, 4)} for key, v in sorted(regions.items())]
    rows += [{"kind": "opcode", "name": key, "warp_instructions": int(v[0]), "share": round(v[0] / total, 4),
              "sample_share": round(v[1] / samples, 4)} for key, v in sorted(ops.items(), key=lambda kv: -kv[1][0])]
    rows.append({"kind": "total", "name": kernel, "warp_instructions": int(total), "share": 1.0,
                 "sample_share": 1.0})
    write_csv(out, ["kind", "name", "warp_instructions", "share", "sample_share"], rows)
    print(f"wrote {out}: {len(regions)} regions, {len(ops)} opcodes, {int(total)} warp instructions")
    return 0


if __name__ == "__main__":
    sys.exit(main())

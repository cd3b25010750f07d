#!/usr/bin/env python3
"""Where a kernel's executed instructions and stall samples go: by stretch of code between block
barriers, and by opcode. Reads Nsight Compute's source page of one kernel, as stall_sites.py does.

  sass_regions.py OUT.csv SOURCE.csv

SOURCE.csv is what `ncu --import REPORT --page source --csv --print-source sass` prints for a report
taken with `--section SourceCounters --section WarpStateStats`. OUT.csv gets one row per region (region
k: the instructions after the k-th BAR.SYNC in address order, up to and including the next) and one
row per opcode (its mnemonic without suffixes, the predicate dropped), each with its warp
instructions executed, its share of them, and its share of the warp stall samples; opcodes sorted
by instructions. Each row also gives the shares of its own stall samples that waited on a long
scoreboard (a load from memory) and on a short one (shared memory, MIO), long_sb and short_sb.
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
        lsb, ssb = number(r.get("stall_long_sb", "0")), number(r.get("stall_short_sb", "0"))
        for key, table in ((k, regions), (opcode(r["Source"]), ops)):
            a = table.setdefault(key, [0.0, 0.0, 0.0, 0.0])
            a[0], a[1], a[2], a[3] = a[0] + inst, a[1] + smp, a[2] + lsb, a[3] + ssb
        if opcode(r["Source"]) == "BAR":
            k += 1

    def row(kind, name, v):
        return {"kind": kind, "name": name, "warp_instructions": int(v[0]), "share": round(v[0] / total, 4),
                "sample_share": round(v[1] / samples, 4), "long_sb": round(v[2] / v[1], 4) if v[1] else 0.0,
                "short_sb": round(v[3] / v[1], 4) if v[1] else 0.0}

    rows = [row("region", str(key), v) for key, v in sorted(regions.items())]
    rows += [row("opcode", key, v) for key, v in sorted(ops.items(), key=lambda kv: -kv[1][0])]
    whole = [sum(v[i] for v in regions.values()) for i in range(4)]
    rows.append(dict(row("total", kernel, whole), share=1.0, sample_share=1.0))
    write_csv(out, ["kind", "name", "warp_instructions", "share", "sample_share", "long_sb", "short_sb"], rows)
    print(f"wrote {out}: {len(regions)} regions, {len(ops)} opcodes, {int(total)} warp instructions")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Summarize Nsight Compute's counters for block_size's configurations (and torch.mul) as a table.

Input: the CSV that ncu writes with `--csv --print-units base --metrics ...` for one or more runs of
`block_size --profile` (the command is in block_size.cu's header), concatenated; each run's header
line may repeat. One row per profiled kernel, in the file's order.

Columns: the kernel and its block size, the threads per SM that its shared memory caps it at ("-"
where shared memory is not the tighter limit of the two captured, shared memory and warps), duration, DRAM throughput, achieved occupancy (warps per SM), the bytes its
resident warps have requested and not yet received (warps x 32 x bytes loaded per thread), and each
warp's lifetime in cycles by Little's law: warps resident on an SM on average, times the cycles the
SM was active, over the warps the SM ran.

    python3 01_elementwise/block_size_ncu.py results/GPU.block_size_ncu.csv --sms 132 > results/GPU.block_size_ncu.txt

--check FILE compares the table with FILE instead (the docs test does, for the committed pair).
"""
import argparse
import csv
import os
import sys

# Bytes one thread loads in one go, by the kernel's operation: ReLU one float4, the multiplies one
# 16-byte pack of each of two inputs.
LOADED = {"Relu": 16, "Mul": 32, "BinaryFunctor": 32}


def kernels(path):
    found = {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(line for line in f if not line.startswith("==")):
            if row["Metric Value"] == "Metric Value":  # a later run's header
                continue
            key = (row["Process ID"], row["ID"])
            k = found.setdefault(key, {"name": row["Kernel Name"], "process": row["Process Name"]})
            k[row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
    return list(found.values())


def label(name):
    short = name.split("(")[0].replace("void ", "")
    for op in LOADED:
        if op in short:
            return short.split("<")[0] + f"<{op}>", LOADED[op]
    sys.exit(f"block_size_ncu: no load size known for kernel {short!r}")


def table(args):
    yield (f"{os.path.basename(args.csv)}: {args.sms} SMs; "
           "lifetime = warps per SM x SM active cycles / (warps launched / SMs)")
    yield (f"{'kernel':<36}{'block':>6}{'smem cap':>9}{'us':>9}{'DRAM %':>8}{'occupancy %':>12}"
           f"{'warps/SM':>9}{'in flight KiB/SM':>17}{'warp life cycles':>17}")
    for k in kernels(args.csv):
        name, loaded = label(k["name"])
        block = int(k["launch__block_size"])
        smem, warp_limit = k["launch__occupancy_limit_shared_mem"], k["launch__occupancy_limit_warps"]
        cap = str(int(smem) * block) if smem < warp_limit else "-"
        warps = k["sm__warps_active.avg.per_cycle_active"]
        life = warps * k["sm__cycles_active.avg"] / (k["smsp__warps_launched.sum"] / args.sms)
        yield (f"{name:<36}{block:>6}{cap:>9}{k['gpu__time_duration.sum'] / 1e3:>9.1f}"
               f"{k['dram__throughput.avg.pct_of_peak_sustained_elapsed']:>8.1f}"
               f"{k['sm__warps_active.avg.pct_of_peak_sustained_active']:>12.1f}{warps:>9.1f}"
               f"{warps * 32 * loaded / 1024:>17.1f}{life:>17.0f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--sms", type=int, required=True, help="SMs of the GPU the CSV comes from")
    ap.add_argument("--check", metavar="FILE", help="exit 1 unless FILE holds this table")
    args = ap.parse_args()
    lines = list(table(args))
    if not args.check:
        print("\n".join(lines))
        return 0
    with open(args.check, encoding="utf-8") as f:
        committed = f.read().splitlines()
    if committed != lines:
        print(f"{args.check} is not the table of {args.csv}; regenerate it:")
        print("\n".join(lines))
        return 1
    print(f"{args.check} matches {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

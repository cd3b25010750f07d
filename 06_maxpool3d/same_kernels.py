#!/usr/bin/env python3
"""The same version, timed against itself: does a kernel's time move with the copy of the case's
buffers it runs on?

  same_kernels.py --build BUILD --problem P --case TEXT VERSION [VERSION ...]

Each VERSION (a name may repeat) is opened through the chapter's race module as its own instance of
the case: its own input, output and scratch buffers, filled from the same seed, so the same bytes
at other addresses. Each is checked against the CPU reference, then all are timed in ROUNDS rounds
in one process: in each round every instance is timed once (common/tools/torch_peers.py's time_ms,
REPS launches after warm-up), the order rotated by one every round and reversed every other round,
so that no instance keeps a place. Before each launch, untimed, a read of twice the L2 (so that no
instance finds its bytes there, as in the benchmark). Printed: each instance's median over the
rounds' medians, and its time over the first instance's, the median over rounds with the smallest
and largest.

Needs torch with a CUDA device; without one it says so and exits 77.
"""
import argparse
import ctypes
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common", "tools"))
import torch_peers as tp  # noqa: E402

ROUNDS, REPS = 8, 50


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--problem", required=True)
    ap.add_argument("--case", required=True, help="a suite case's name, or a shape and parameters")
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    ap.add_argument("versions", nargs="+")
    args = ap.parse_args()
    if args.rounds < 2:
        ap.error("--rounds must be at least 2")
    torch = tp.cuda_torch("nothing timed")
    if torch is None:
        return 77
    module = tp.RaceModule(tp.RaceModule.path(args.build, "06_maxpool3d"))
    case = module.case(args.problem, args.case)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    flush_buf = torch.ones(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4, dtype=torch.float32,
                           device="cuda")
    handles = [module.open(args.problem, args.case, v) for v in args.versions]
    try:
        for v, h in zip(args.versions, handles):
            verdict = module.check(h)
            if verdict != "pass":
                print(f"{v}: {verdict}")
                return 1
        ms = [[] for _ in handles]
        k = len(handles)
        for r in range(args.rounds):
            order = [(i + r) % k for i in range(k)]
            if r % 2:
                order.reverse()
            for i in order:
                h = handles[i]

                def before(h=h):
                    flush_buf.sum()
                    module.before(h, stream)

                ms[i].append(tp.time_ms(torch, lambda h=h: module.launch(h, stream), warmup=3, reps=REPS,
                                        before=before)[0])
        torch.cuda.synchronize()
        after = [module.check(h) for h in handles]
    finally:
        for h in handles:
            module.close(h)
    print(f"{args.problem} {case.name} on {torch.cuda.get_device_name()}: {k} instances, {args.rounds} rounds of "
          f"{REPS} launches, the order rotated every round; time over instance 1's, median over rounds [min-max]")
    for i, v in enumerate(args.versions):
        ratios = sorted(a / b for a, b in zip(ms[i], ms[0]))
        print(f"instance {i + 1} {v:24s} {statistics.median(ms[i]):.4f} ms  {statistics.median(ratios):.3f} "
              f"[{ratios[0]:.3f}-{ratios[-1]:.3f}]  check after timing: {after[i]}")
    return 0 if all(a == "pass" for a in after) else 1


if __name__ == "__main__":
    sys.exit(main())

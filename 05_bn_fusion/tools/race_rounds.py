#!/usr/bin/env python3
"""The race against PyTorch with every round printed, run two ways: "plain", the timed calls one
after another, so that where the GPU finishes a call before the host has queued the next, the
events also time the host's launch; and "busy", the GPU kept busy ahead of each timed call
(torch_peers.time_ms's spin of BUSY_CYCLES, as common/tools/torch_peers.py races), so both sides'
launches are queued before the start event fires and the events time the GPU's work alone. At 16x32x112x112 the two differ
for PyTorch, whose forward is three launches from Python (results/NVIDIA_H100_80GB_HBM3.race_rounds.txt).

  race_rounds.py BUILD "PROBLEM|CASE|VERSION,VERSION|plain,busy" ...

BUILD is the chapter's build folder (BUILD/tut/race_05_bn_fusion.so). Needs torch and a GPU."""
import ctypes
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common", "tools"))
import torch_peers as tp  # noqa: E402


def main():
    import torch
    build, jobs = sys.argv[1], [a.split("|") for a in sys.argv[2:]]
    spec = tp.Spec("05_bn_fusion")
    module = tp.RaceModule(os.path.join(build, "tut", "race_05_bn_fusion.so"))
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    for problem, text, versions, modes in jobs:
        case = module.case(problem, text)
        run, check = spec.peers[problem][0][1](case, torch)
        print(f"== {problem} {case.name}: torch check {check()}", flush=True)
        handles = {v: module.open(problem, case.name, v) for v in versions.split(",")}
        for v, h in handles.items():
            print(f"   {v}: check {module.check(h)}", flush=True)
        for mode in modes.split(","):
            busy = tp.BUSY_CYCLES if mode == "busy" else 0
            rows = {v: [] for v in handles}
            rows["torch"] = []
            for r in range(tp.RACE_ROUNDS):
                for who in (["torch"] + list(handles)) if r % 2 == 0 else (list(handles) + ["torch"]):
                    if who == "torch":
                        rows[who].append(tp.time_ms(torch, run, warmup=3, reps=tp.RACE_REPS, busy_cycles=busy)[0])
                        continue
                    h = handles[who]
                    rows[who].append(tp.time_ms(torch, lambda h=h: module.launch(h, stream), warmup=3, reps=tp.RACE_REPS,
                                                before=lambda h=h: module.before(h, stream), busy_cycles=busy)[0])
            t = rows["torch"]
            print(f"   [{mode}] torch ms per round: " + " ".join(f"{x:.4f}" for x in t), flush=True)
            for v in handles:
                ratios = sorted(a / b for a, b in zip(t, rows[v]))
                print(f"   [{mode}] {v} ms per round: " + " ".join(f"{x:.4f}" for x in rows[v]) +
                      f" | ratio median {statistics.median(ratios):.3f} [{ratios[0]:.3f}-{ratios[-1]:.3f}]", flush=True)
        for v, h in handles.items():
            print(f"   {v}: check after {module.check(h)}", flush=True)
            module.close(h)
    return 0


if __name__ == "__main__":
    sys.exit(main())

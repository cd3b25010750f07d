#!/usr/bin/env python3
"""Time what a PyTorch user would call instead, on each problem's default case.

  torch_peers.py --build BUILD [CHAPTER ...]       (./tutorial peers runs it)

Each chapter lists its peers in NN_chapter/torch_peers.py: a dict PEERS from problem name to a
list of (name, setup) where setup(n, torch) returns (run, check): run() enqueues the operator,
check() compares its output with a float64 computation and returns "pass" or "FAIL: ...". The
rows are written in the results format (kind "peer", library "torch") to
BUILD/results/CH/<gpu>.torch.json, with a copy ceiling measured in this process (Tensor.copy_,
device to device, counting bytes read and written). Timing: CUDA events around each call after
warm-up, 50 repetitions, median with min and max.

With --profile CHAPTER PROBLEM NAME it runs that one peer once between
torch.cuda.profiler.start() and stop(), for `ncu --profile-from-start off` (common/tools/profile.py).

Without torch (or without a CUDA device), says so and exits 77.
"""
import argparse
import importlib.util
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chapters  # noqa: E402


def time_ms(torch, run, warmup=5, reps=50):
    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    stops = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for a, b in zip(starts, stops):
        a.record()
        run()
        b.record()
    torch.cuda.synchronize()
    ms = sorted(a.elapsed_time(b) for a, b in zip(starts, stops))
    return statistics.median(ms), ms[0], ms[-1], reps


def copy_ceiling(torch):
    n = (1 << 30) // 4
    src = torch.ones(n, dtype=torch.int32, device="cuda")
    dst = torch.empty_like(src)
    med, lo, hi, reps = time_ms(torch, lambda: dst.copy_(src), reps=30)
    return {"GBps": 2 * n * 4 / (med * 1e-3) / 1e9, "bytes": 2 * n * 4, "winner": "Tensor.copy_ (device to device)",
            "ms_median": med}


def peers_of(chapter):
    """The chapter's PEERS, or None when it lists none."""
    spec_path = os.path.join(chapters.ROOT, chapter, "torch_peers.py")
    if not os.path.isfile(spec_path):
        return None
    spec = importlib.util.spec_from_file_location(f"{chapter}_torch_peers", spec_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PEERS


def profile_one(torch, chapter, problem, name):
    n, _, peers = peers_of(chapter)[problem]
    run, _ = dict(peers)[name](n, torch)
    for _ in range(3):
        run()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    run()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--profile", nargs=3, metavar=("CHAPTER", "PROBLEM", "NAME"))
    ap.add_argument("chapters", nargs="*")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("torch is not importable here: no peer rows (pip install torch, or run where it is)")
        return 77
    if not torch.cuda.is_available():
        print("torch sees no CUDA device: no peer rows")
        return 77
    if args.profile:
        return profile_one(torch, *args.profile)
    gpu = torch.cuda.get_device_name()
    ceiling = copy_ceiling(torch)
    names = args.chapters or [c.name for c in chapters.existing()]
    for ch in names:
        peers = peers_of(ch)
        if peers is None:
            continue
        runs = []
        for problem, (n, bytes_per_element, listed) in peers.items():
            for name, setup in listed:
                run, check = setup(n, torch)
                verdict = check()
                med, lo, hi, reps = time_ms(torch, run)
                GBps = n * bytes_per_element / (med * 1e-3) / 1e9
                runs.append({"problem": problem, "case": f"n={n}", "size": f"n={n}", "shape": [n], "params": {},
                             "version": name, "summary": f"PyTorch {torch.__version__}", "kind": "peer",
                             "library": "torch", "bytes": n * bytes_per_element, "flops": 0, "ms_median": med,
                             "ms_min": lo, "ms_max": hi, "reps": reps, "GBps": GBps,
                             "fraction_of_copy": GBps / ceiling["GBps"], "check": verdict})
                print(f"{ch} {problem} {name}: {med:.4f} ms, {GBps:.1f} GB/s, {GBps / ceiling['GBps']:.3f} of copy, "
                      f"{verdict}")
                del run, check
                torch.cuda.empty_cache()
        chapters.write_results(args.build, ch, gpu, ".torch.json",
                               {"library": "torch", "torch": torch.__version__, "copy_ceiling_GBps": ceiling["GBps"],
                                "copy_ceiling": ceiling, "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())

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

The race. Two processes disagree by about half a percent (the copy ceiling does), as much as the
gap between our best version and PyTorch's. So where the chapter names, in OURS, the version that
races a problem's peers, this process also loads the chapter's race module
(BUILD/subprojects/CH/race_CH.so, tut/race.hpp), checks that version against the CPU reference on
the peer's n, and times it and the peer in alternating rounds (7 rounds of 50 launches, the order
swapped every round): each round gives the ratio of the two medians, our speed over PyTorch's. The
peer row carries it as "race" (the median ratio over rounds, with its min and max).

With --check-race CHAPTER MODULE (a test; no torch needed) it checks the chapter's OURS against
its PEERS and the module's versions, and that the module reports a bad name as an error; with
--launch too it runs each raced version through the module on an odd n and checks its output
(exit 77 without a GPU).

With --profile CHAPTER PROBLEM NAME it runs that one peer once between
torch.cuda.profiler.start() and stop(), for `ncu --profile-from-start off` (common/tools/profile.py).

Without torch (or without a CUDA device), says so and exits 77.
"""
import argparse
import ctypes
import importlib.util
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chapters  # noqa: E402


RACE_ROUNDS, RACE_REPS = 7, 50


def time_ms(torch, run, warmup=5, reps=50, before=None):
    """Median, min and max of `reps` timed calls of run(); before(), if given, is enqueued ahead of
    each call, outside the timed region (the resets the bench runs untimed)."""
    for _ in range(warmup):
        if before:
            before()
        run()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    stops = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for a, b in zip(starts, stops):
        if before:
            before()
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


def spec_of(chapter):
    """The chapter's torch_peers.py as a module, or None when it has none."""
    spec_path = os.path.join(chapters.ROOT, chapter, "torch_peers.py")
    if not os.path.isfile(spec_path):
        return None
    spec = importlib.util.spec_from_file_location(f"{chapter}_torch_peers", spec_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def peers_of(chapter):
    """The chapter's PEERS, or None when it lists none."""
    module = spec_of(chapter)
    return None if module is None else module.PEERS


def ours_of(spec):
    """OURS of a chapter's torch_peers.py: problem -> the version that races that problem's peers
    in one process."""
    return getattr(spec, "OURS", {})


class RaceModule:
    """A chapter's race module (tut/race.hpp) through ctypes."""

    def __init__(self, path):
        lib = ctypes.CDLL(path)
        lib.tut_race_list.restype = ctypes.c_char_p
        lib.tut_race_error.restype = ctypes.c_char_p
        lib.tut_race_open.argtypes = [ctypes.c_char_p, ctypes.c_longlong, ctypes.c_char_p,
                                      ctypes.POINTER(ctypes.c_void_p)]
        for name in ("tut_race_before", "tut_race_launch"):
            getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.tut_race_check.argtypes = [ctypes.c_void_p]
        lib.tut_race_close.argtypes = [ctypes.c_void_p]
        lib.tut_race_close.restype = None
        self.lib = lib

    @staticmethod
    def path(build, chapter):
        return os.path.join(os.path.abspath(build), "subprojects", chapter, f"race_{chapter}.so")

    def problems(self):
        """{problem: {version name: kind}}"""
        listed = json.loads(self.lib.tut_race_list())
        if listed is None:
            raise RuntimeError(self.error())
        return {p["problem"]: {v["name"]: v["kind"] for v in p["versions"]} for p in listed}

    def error(self):
        return self.lib.tut_race_error().decode()

    def _ok(self, rc):
        if rc != 0:
            raise RuntimeError(self.error())

    def open(self, problem, n, version):
        handle = ctypes.c_void_p()
        self._ok(self.lib.tut_race_open(problem.encode(), n, version.encode(), ctypes.byref(handle)))
        return handle

    def check(self, handle):
        """"pass", or "FAIL: " and what differs."""
        rc = self.lib.tut_race_check(handle)
        if rc == 2:
            return "FAIL: " + self.error()
        self._ok(rc)
        return "pass"

    def before(self, handle, stream):
        self._ok(self.lib.tut_race_before(handle, stream))

    def launch(self, handle, stream):
        self._ok(self.lib.tut_race_launch(handle, stream))

    def close(self, handle):
        self.lib.tut_race_close(handle)


def check_race(chapter, path, launch):
    module, spec = RaceModule(path), spec_of(chapter)
    listed = module.problems()
    peers, ours = (spec.PEERS, ours_of(spec)) if spec else ({}, {})
    errors = [f"{problem} has peers but no version of ours to race them (OURS)" for problem in peers if problem not in ours]
    for problem, version in ours.items():
        kind = listed.get(problem, {}).get(version)
        if problem not in peers:
            errors.append(f"OURS races {problem}, which has no peer in PEERS")
        if kind is None:
            errors.append(f"OURS races {problem} with {version}, which {os.path.basename(path)} does not have")
        elif kind != "own":
            errors.append(f"OURS races {problem} with {version}, a {kind} version, not one of ours")
    try:
        module.open("no_such_problem", 10, "v0")
        errors.append("tut_race_open succeeded on a problem that does not exist")
    except RuntimeError as e:
        if "no_such_problem" not in str(e):
            errors.append(f"tut_race_open's error does not name the problem: {e}")
    if not errors and launch:
        n = (1 << 20) + 1
        for problem, version in ours.items():
            try:
                handle = module.open(problem, n, version)
            except RuntimeError as e:
                if "no CUDA device" in str(e):
                    print("no CUDA device: the launches through the race module are skipped")
                    return 77
                raise
            try:
                first = module.check(handle)
                for _ in range(2):
                    module.before(handle, None)
                    module.launch(handle, None)
                again = module.check(handle)
            finally:
                module.close(handle)
            print(f"{chapter} {problem} {version} n={n} through the race module: {first}, then {again}")
            errors += [f"{problem} {version}: {v}" for v in (first, again) if v != "pass"]
    for e in errors:
        print("error: " + e)
    if not errors:
        print(f"{chapter}: OURS agrees with PEERS and with {os.path.basename(path)}")
    return 1 if errors else 0


def race(torch, module, problem, n, version, peer_run, rounds=RACE_ROUNDS):
    """Our `version` against peer_run() in this process, in alternating rounds. Where ours fails its
    check, only the version and the verdict."""
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    handle = module.open(problem, n, version)
    try:
        verdict = module.check(handle)
        if verdict != "pass":
            return {"version": version, "check": verdict}
        ours_ms, peer_ms = [], []

        def time_peer():
            peer_ms.append(time_ms(torch, peer_run, warmup=3, reps=RACE_REPS)[0])

        def time_ours():
            ours_ms.append(time_ms(torch, lambda: module.launch(handle, stream), warmup=3, reps=RACE_REPS,
                                   before=lambda: module.before(handle, stream))[0])

        for r in range(rounds):
            for timed in ((time_peer, time_ours) if r % 2 == 0 else (time_ours, time_peer)):
                timed()
        torch.cuda.synchronize()
        verdict = module.check(handle)  # the timed launches left nothing behind that breaks it
    finally:
        module.close(handle)
    ratios = sorted(p / o for p, o in zip(peer_ms, ours_ms))
    return {"version": version, "check": verdict, "rounds": rounds, "reps_per_round": RACE_REPS,
            "ms_median": statistics.median(ours_ms), "peer_ms_median": statistics.median(peer_ms),
            "speed_ratio": statistics.median(ratios), "speed_ratio_min": ratios[0], "speed_ratio_max": ratios[-1]}


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
    ap.add_argument("--check-race", nargs=2, metavar=("CHAPTER", "MODULE"))
    ap.add_argument("--launch", action="store_true", help="with --check-race: run the raced versions too")
    ap.add_argument("chapters", nargs="*")
    args = ap.parse_args()
    if args.check_race:
        return check_race(*args.check_race, args.launch)
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
    failed = False  # one of our versions was wrong, or could not run, in the race
    for ch in names:
        spec = spec_of(ch)
        if spec is None:
            continue
        peers, ours, module = spec.PEERS, ours_of(spec), None
        if ours:
            path = RaceModule.path(args.build, ch)
            if os.path.isfile(path):
                module = RaceModule(path)
            else:
                print(f"{ch}: no race module at {path} (build first): no race against our versions")
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
                line = f"{ch} {problem} {name}: {med:.4f} ms, {GBps:.1f} GB/s, {GBps / ceiling['GBps']:.3f} of copy, {verdict}"
                if module is not None and problem in ours:
                    try:
                        r = race(torch, module, problem, n, ours[problem], run)
                    except RuntimeError as e:
                        r = {"version": ours[problem], "check": f"FAIL: {e}"}
                    runs[-1]["race"] = r
                    failed = failed or r["check"] != "pass"
                    line += (f"; {r['version']} in this process: {r['check']}" if "speed_ratio" not in r else
                             f"; {r['version']} in this process at {r['speed_ratio']:.3f}x its speed "
                             f"[{r['speed_ratio_min']:.3f}-{r['speed_ratio_max']:.3f}], {r['check']}")
                print(line)
                del run, check
                torch.cuda.empty_cache()
        chapters.write_results(args.build, ch, gpu, ".torch.json",
                               {"library": "torch", "torch": torch.__version__, "copy_ceiling_GBps": ceiling["GBps"],
                                "copy_ceiling": ceiling, "runs": runs})
    if failed:
        print("one of our versions failed its check in the race (see the rows above)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Time what a PyTorch user would call instead, on the chapters' own cases, and race it against our
version in the same process.

  torch_peers.py --build BUILD [CHAPTER ...]       (./tutorial peers runs it)

Each chapter lists its peers in NN_chapter/torch_peers.py:

  PEERS   problem -> [(name, setup)]: setup(case, torch) returns (run, check); run() enqueues the
          operator, check() compares its output with a float64 computation and returns "pass" or
          "FAIL: ...". `case` has .name, .shape, .params (a dict), .numel and .floor (.bytes, .flops).
  CASES   problem -> [case text], optional: the cases to time ("" is the problem's default case; a
          name, or a shape and parameters such as "2x64x16x56x56 kernel=3x3x3"); default [""].
  BUSY_CYCLES  optional: the spin before each timed call (below), where a peer takes the host longer
          to queue than the default's 100 us (autograd's backward, for one).
  OURS    problem -> the version of ours that races the problem's peers; or, where no one version
          is the one a user would pick on every case (a chapter without a dispatcher), a dict from
          each of the problem's CASES texts to the version that races it.

The cases, and their floors, come from the chapter's C++ problems through its race module
(BUILD/subprojects/CH/tut/race_CH.so, common/src/race_module.cpp): nothing is restated here. The
rows are written in the results format (results.schema.json, kind "torch") to
BUILD/results/CH/<gpu>.torch.json, with a copy ceiling measured in this process (Tensor.copy_,
device to device, counting bytes read and written). Timing: CUDA events around each call after
warm-up, 50 repetitions, median with min and max; before each call the GPU spins for about 100 us,
untimed, so the events time the GPU's work and not the host's launch latency (BUSY_CYCLES).

The race. Two processes disagree by about half a percent (the copy ceiling does), as much as the
gap between our best version and PyTorch's. So this process also runs the version OURS names
through the race module, checks it against the CPU reference on the same case, and times it and
the peer in alternating rounds (7 rounds of 50 launches, the order swapped every round): each
round gives the ratio of the two medians, our speed over PyTorch's. The peer row carries it as
"race" (the median ratio over rounds, with its min and max).

  --check-race CHAPTER MODULE   (a test; no torch needed) OURS against PEERS and the module's
                                versions, every CASES text against the module, and that a bad
                                name comes back as an error; with --launch, each raced version
                                through the module on a small case, checked (exit 77 without a GPU)
  --problem P, --case TEXT, --json FILE
                                only problem P's peers, only case TEXT (instead of CASES), both
                                repeatable; such a narrowed run writes its rows only to --json FILE
  --versions A,B                each peer raced against these versions of ours in turn instead of
                                OURS' one, a line each (the row keeps the first's race)
  --profile CHAPTER PROBLEM NAME [--case TEXT]
                                that one peer once between torch.cuda.profiler.start() and stop(),
                                for `ncu --profile-from-start off` (common/tools/profile.py)

Without torch (or without a CUDA device), says so and exits 77.
"""
import argparse
import ctypes
import importlib.util
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chapters  # noqa: E402

RACE_ROUNDS, RACE_REPS = 7, 50
# About 100 us at the H100's 1.98 GHz: longer than any peer's launches take the host to queue.
# Without it, a call shorter than its launch latency is timed with the host's wait inside it: on
# the H100, PyTorch's BN + ReLU forward at 16x32x112x112 NHWC took 0.082-0.089 ms per round timed
# back to back and 0.056 ms with the GPU kept busy, ours 0.037-0.045 ms either way
# (05_bn_fusion/results/NVIDIA_H100_80GB_HBM3.race_rounds.txt).
BUSY_CYCLES = 200_000


Failure = chapters.Failure


class Floor:
    def __init__(self, d):
        self.bytes, self.flops = d["bytes"], d["flops"]
        self.models = d.get("models", {})


class Case:
    """A case as the race module resolves it."""

    def __init__(self, d):
        self.name, self.shape, self.params = d["name"], list(d["shape"]), dict(d["params"])
        self.numel = math.prod(self.shape)
        self.floor = Floor(d["floor"])


def cuda_torch(what, hint=""):
    """torch, where it imports and sees a CUDA device; else None, after printing why `what` does not
    happen (the caller then exits 77, Meson's skip)."""
    try:
        import torch
    except ImportError:
        print(f"torch is not importable here: {what}{hint}")
        return None
    if not torch.cuda.is_available():
        print(f"torch sees no CUDA device: {what}")
        return None
    return torch


def time_ms(torch, run, warmup=5, reps=50, before=None, busy_cycles=BUSY_CYCLES):
    """Median, min and max of `reps` timed calls of run(); before(), if given, is enqueued ahead of
    each call, outside the timed region (the resets the bench runs untimed). Each call is preceded,
    untimed, by a spin of `busy_cycles` on the GPU, so the host has queued the call before the GPU
    reaches it: the events time the GPU's work, not the host's launch latency (0: no spin, the
    calls back to back)."""
    for _ in range(warmup):
        if before:
            before()
        run()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    stops = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for a, b in zip(starts, stops):
        if busy_cycles:
            torch.cuda._sleep(busy_cycles)
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
    med, _, _, _ = time_ms(torch, lambda: dst.copy_(src), reps=30)
    return {"GBps": 2 * n * 4 / (med * 1e-3) / 1e9, "bytes": 2 * n * 4, "winner": "Tensor.copy_ (device to device)",
            "ms_median": med}


class Spec:
    """A chapter's torch_peers.py, loaded once."""

    def ours_for(self, problem, text):
        """The version of ours that races `problem`'s peers on the case `text`, or None."""
        o = self.ours.get(problem)
        if isinstance(o, dict):
            if text not in o:
                raise Failure(f"OURS of {problem} names a version for each case of CASES, and none for "
                              f"'{text}': give --versions")
            return o[text]
        return o

    def ours_versions(self, problem):
        """Every version OURS races `problem` with."""
        o = self.ours.get(problem)
        return sorted(set(o.values())) if isinstance(o, dict) else ([o] if o else [])

    def __init__(self, chapter):
        path = os.path.join(chapters.ROOT, chapter, "torch_peers.py")
        spec = importlib.util.spec_from_file_location(f"{chapter}_torch_peers", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self.peers = getattr(module, "PEERS", {})
        self.cases = getattr(module, "CASES", {})
        self.ours = getattr(module, "OURS", {})
        self.busy_cycles = getattr(module, "BUSY_CYCLES", BUSY_CYCLES)

    @staticmethod
    def of(chapter):
        """The chapter's spec, or None when it has no torch_peers.py."""
        if not os.path.isfile(os.path.join(chapters.ROOT, chapter, "torch_peers.py")):
            return None
        return Spec(chapter)

    def cases_of(self, problem):
        return self.cases.get(problem, [""])

    def selected(self, problems=(), cases=()):
        """(problem, its peers, case text) for each problem of PEERS in `problems` (every one when
        empty) and each text of `cases` (the problem's CASES when empty)."""
        for problem, peers in self.peers.items():
            if problems and problem not in problems:
                continue
            for text in cases or self.cases_of(problem):
                yield problem, peers, text


class RaceModule:
    """A chapter's race module (common/src/race_module.cpp) through ctypes."""

    def __init__(self, path):
        if not os.path.isfile(path):
            raise Failure(f"{path}: no race module there (build first: ./tutorial build)")
        try:
            lib = ctypes.CDLL(os.path.abspath(path))
        except OSError as e:
            raise Failure(f"{path}: cannot load the race module ({e})") from None
        for name in ("tut_race_list", "tut_race_error", "tut_race_case"):
            getattr(lib, name).restype = ctypes.c_char_p
        lib.tut_race_case.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        lib.tut_race_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        for name in ("tut_race_before", "tut_race_launch"):
            getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.tut_race_check.argtypes = [ctypes.c_void_p]
        lib.tut_race_close.argtypes = [ctypes.c_void_p]
        lib.tut_race_close.restype = None
        self.lib = lib

    @staticmethod
    def path(build, chapter):
        return os.path.join(os.path.abspath(build), "subprojects", chapter, "tut", f"race_{chapter}.so")

    def listing(self):
        listed = json.loads(self.lib.tut_race_list())
        if listed is None:
            raise RuntimeError(self.error())
        return listed

    def problems(self):
        """{problem: {version name: kind}}"""
        return {p["problem"]: {v["name"]: v["kind"] for v in p["versions"]} for p in self.listing()}

    def case(self, problem, text):
        """The case `text` of `problem` ("" for the default), with its floor."""
        got = json.loads(self.lib.tut_race_case(problem.encode(), text.encode()))
        if got is None:
            raise RuntimeError(self.error())
        return Case(got)

    def error(self):
        return self.lib.tut_race_error().decode()

    def _ok(self, rc):
        if rc != 0:
            raise RuntimeError(self.error())

    def open(self, problem, case_text, version):
        handle = ctypes.c_void_p()
        self._ok(self.lib.tut_race_open(problem.encode(), case_text.encode(), version.encode(), ctypes.byref(handle)))
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


def small_case(listing, problem):
    """A small case of `problem` for a quick check: 2^20 + 1 elements for a flat problem, else its
    smallest suite case."""
    p = next(p for p in listing if p["problem"] == problem)
    if len(p["default_case"]["shape"]) == 1:
        return f"n={(1 << 20) + 1}"
    cases = p["suite"] or [p["default_case"]]
    return min(cases, key=lambda c: math.prod(c["shape"]))["name"]


def check_race(chapter, path, launch):
    module, spec = RaceModule(path), Spec.of(chapter)
    listing, listed = module.listing(), module.problems()
    peers, ours = (spec.peers, spec.ours) if spec else ({}, {})
    errors = [f"{problem} has peers but no version of ours to race them (OURS)" for problem in peers if problem not in ours]
    for problem in ours:
        if problem not in peers:
            errors.append(f"OURS races {problem}, which has no peer in PEERS")
        if isinstance(ours[problem], dict) and sorted(ours[problem]) != sorted(spec.cases_of(problem)):
            errors.append(f"OURS of {problem} is a dict whose keys are not exactly its CASES")
        for version in spec.ours_versions(problem):
            kind = listed.get(problem, {}).get(version)
            if kind is None:
                errors.append(f"OURS races {problem} with {version}, which {os.path.basename(path)} does not have")
            elif kind != "own":
                errors.append(f"OURS races {problem} with {version}, a {kind} version, not one of ours")
    for problem in peers:
        for text in (spec.cases_of(problem) if spec else []):
            try:
                module.case(problem, text)
            except RuntimeError as e:
                errors.append(f"CASES of {problem}: {e}")
    try:
        module.open("no_such_problem", "", "v0")
        errors.append("tut_race_open succeeded on a problem that does not exist")
    except RuntimeError as e:
        if "no_such_problem" not in str(e):
            errors.append(f"tut_race_open's error does not name the problem: {e}")
    if not errors and launch:
        for problem, version in ((p, v) for p in ours for v in spec.ours_versions(p)):
            text = small_case(listing, problem)
            try:
                handle = module.open(problem, text, version)
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
            print(f"{chapter} {problem} {version} {text} through the race module: {first}, then {again}")
            errors += [f"{problem} {version}: {v}" for v in (first, again) if v != "pass"]
    for e in errors:
        print("error: " + e)
    if not errors:
        print(f"{chapter}: OURS agrees with PEERS and with {os.path.basename(path)}")
    return 1 if errors else 0


def race(torch, module, problem, case_text, version, peer_run, rounds=RACE_ROUNDS, busy_cycles=BUSY_CYCLES):
    """Our `version` against peer_run() in this process, in alternating rounds. Where ours fails its
    check, only the version and the verdict."""
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    handle = module.open(problem, case_text, version)
    try:
        verdict = module.check(handle)
        if verdict != "pass":
            return {"version": version, "check": verdict}
        ours_ms, peer_ms = [], []

        def time_peer():
            peer_ms.append(time_ms(torch, peer_run, warmup=3, reps=RACE_REPS, busy_cycles=busy_cycles)[0])

        def time_ours():
            ours_ms.append(time_ms(torch, lambda: module.launch(handle, stream), warmup=3, reps=RACE_REPS,
                                   before=lambda: module.before(handle, stream), busy_cycles=busy_cycles)[0])

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
            "speed_ratio": statistics.median(ratios), "speed_ratio_min": ratios[0], "speed_ratio_max": ratios[-1],
            "busy_cycles": busy_cycles}


def profile_one(torch, build, chapter, problem, name, case_text):
    spec = Spec.of(chapter)
    if spec is None or problem not in spec.peers:
        raise Failure(f"{chapter} lists no PyTorch peer of {problem}")
    setups = dict(spec.peers[problem])
    if name not in setups:
        raise Failure(f"{chapter} {problem} has no peer '{name}' (it has: {', '.join(setups)})")
    case = RaceModule(RaceModule.path(build, chapter)).case(problem, case_text)
    run, _ = setups[name](case, torch)
    for _ in range(3):
        run()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    run()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


def peer_rows(torch, build, chapter, spec, ceiling, problems=(), cases=(), versions=(), busy_cycles=None):
    """The chapter's peer rows, each raced against OURS; and whether one of our versions failed.
    `problems`, when given, keeps only those problems; `cases`, when given, replaces CASES;
    `versions`, when given, are raced in turn instead of OURS (the row keeps the first's race)."""
    module = RaceModule(RaceModule.path(build, chapter))
    busy = spec.busy_cycles if busy_cycles is None else busy_cycles
    runs, failed = [], False
    for problem, listed, text in spec.selected(problems, cases):
        case = module.case(problem, text)
        for name, setup in listed:
            run, check = setup(case, torch)
            verdict = check()
            med, lo, hi, reps = time_ms(torch, run, busy_cycles=busy)
            GBps = case.floor.bytes / (med * 1e-3) / 1e9
            row = {"problem": problem, "case": case.name, "shape": case.shape, "params": case.params,
                   "version": name, "summary": f"PyTorch {torch.__version__}", "kind": "peer", "library": "torch",
                   "bytes": case.floor.bytes, "flops": case.floor.flops, "ms_median": med, "ms_min": lo,
                   "ms_max": hi, "reps": reps, "GBps": GBps, "fraction_of_copy": GBps / ceiling["GBps"],
                   "check": verdict}
            line = f"{chapter} {problem} {case.name} {name}: {med:.4f} ms, {GBps:.1f} GB/s, " \
                   f"{GBps / ceiling['GBps']:.3f} of copy, {verdict}"
            for k, version in enumerate(versions or [v for v in [spec.ours_for(problem, text)] if v]):
                try:
                    r = race(torch, module, problem, case.name, version, run, busy_cycles=busy)
                except RuntimeError as e:
                    r = {"version": version, "check": f"FAIL: {e}"}
                if k == 0:
                    row["race"] = r
                failed = failed or r["check"] != "pass"
                line += (f"; {r['version']} in this process: {r['check']}" if "speed_ratio" not in r else
                         f"; {r['version']} in this process at {r['speed_ratio']:.3f}x its speed "
                         f"[{r['speed_ratio_min']:.3f}-{r['speed_ratio_max']:.3f}], {r['check']}")
            print(line)
            runs.append(row)
            del run, check
            torch.cuda.empty_cache()
    return runs, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--profile", nargs=3, metavar=("CHAPTER", "PROBLEM", "NAME"))
    ap.add_argument("--problem", action="append", default=[],
                    help="only this problem's peers (repeatable)")
    ap.add_argument("--case", action="append", default=[],
                    help="with --profile: the case (default: the problem's default case); otherwise a case to time "
                         "instead of the chapter's CASES, by name or as a shape and parameters (repeatable)")
    ap.add_argument("--json", help="write the rows to this file instead of BUILD/results/CH/<gpu>.torch.json; "
                                   "a run narrowed by --problem or --case writes only here")
    ap.add_argument("--versions", default="", help="race these versions of ours (comma-separated) instead of OURS'")
    ap.add_argument("--busy-cycles", type=int, default=None,
                    help="the spin before each timed call, in GPU clock cycles (default: the chapter's BUSY_CYCLES, "
                         f"else {BUSY_CYCLES})")
    ap.add_argument("--check-race", nargs=2, metavar=("CHAPTER", "MODULE"))
    ap.add_argument("--launch", action="store_true", help="with --check-race: run the raced versions too")
    ap.add_argument("chapters", nargs="*")
    args = ap.parse_args()
    known = {c.name for c in chapters.existing()}
    for ch in args.chapters + ([args.check_race[0]] if args.check_race else []) + ([args.profile[0]] if args.profile else []):
        if ch not in known:
            raise Failure(f"no chapter '{ch}' (chapters: {', '.join(sorted(known))})")
    if args.check_race:
        return check_race(*args.check_race, args.launch)
    if args.profile and len(args.case) > 1:
        raise Failure("--profile times one case: give --case once")
    if args.json and len(args.chapters) != 1:
        raise Failure("--json writes one chapter's rows: name exactly one chapter")
    for problem in args.problem:
        if not any(problem in (Spec.of(ch).peers if Spec.of(ch) else {})
                   for ch in args.chapters or [c.name for c in chapters.existing()]):
            raise Failure(f"no PyTorch peer of a problem '{problem}' in the selected chapters")
    torch = cuda_torch("no peer rows", " (pip install torch, or run where it is)")
    if torch is None:
        return 77
    if args.profile:
        return profile_one(torch, args.build, *args.profile, args.case[0] if args.case else "")
    gpu = torch.cuda.get_device_name()
    ceiling = copy_ceiling(torch)
    failed = False
    for ch in args.chapters or [c.name for c in chapters.existing()]:
        spec = Spec.of(ch)
        if spec is None or not spec.peers:
            continue
        runs, bad = peer_rows(torch, args.build, ch, spec, ceiling, args.problem, args.case,
                              [v for v in args.versions.split(",") if v], args.busy_cycles)
        failed = failed or bad
        doc = {"library": "torch", "torch": torch.__version__, "copy_ceiling": ceiling, "runs": runs}
        if args.json:
            chapters.write_results(args.build, ch, gpu, ".torch.json", doc, path=args.json)
        elif args.problem or args.case or args.versions:
            print(f"{ch}: a run narrowed by --problem, --case or --versions keeps its rows only with --json FILE; none written")
        else:
            chapters.write_results(args.build, ch, gpu, ".torch.json", doc)
    if failed:
        print("one of our versions failed its check in the race (see the rows above)")
    return 1 if failed else 0


if __name__ == "__main__":
    chapters.run_tool(main)

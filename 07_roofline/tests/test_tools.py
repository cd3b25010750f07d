#!/usr/bin/env python3
"""The chapter's Python tools, on the CPU: the collector measures a ridge only from a sweep that has
points on both plateaus, and pick_shape.py answers bad input with one line, never a traceback.

  test_tools.py
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHAPTER = os.path.dirname(HERE)
sys.path.insert(0, CHAPTER)
import roofline  # noqa: E402

BW, PEAK = 3000.0, 60000.0  # GB/s and GFLOP/s: the model's ridge is 20 FLOP per byte


def point(flops, gflops):
    i = flops / 8
    model = min(BW * i, PEAK)
    return {"problem": "sweep_f32", "version": "v2_unrolled", "flops": flops, "intensity": i, "GFLOPs": gflops,
            "GBps": gflops / i, "model_GFLOPs": model, "ratio": gflops / model, "compute_bound": BW * i >= PEAK}


def main():
    errors = []
    # A sweep on both sides of the ridge: the best FLOP/s over the best bytes/s.
    both = [point(8, 2700.0), point(16, 5400.0), point(1024, 58000.0), point(2048, 57000.0)]
    ridge = roofline.measured_ridge(both, "sweep_f32")
    want = 58000.0 / (2700.0 / 1)
    if ridge is None or abs(ridge - want) > 1e-9:
        errors.append(f"measured_ridge on both plateaus: {ridge}, wanted {want}")
    # One point, or one plateau only, gives that point's intensity, not the ridge: no ridge.
    for name, pts in (("one point", [point(256, 55000.0)]), ("memory side only", both[:2]),
                      ("compute side only", both[2:])):
        got = roofline.measured_ridge(pts, "sweep_f32")
        if got is not None:
            errors.append(f"measured_ridge on {name}: {got}, wanted None")

    pick = os.path.join(CHAPTER, "pick_shape.py")
    with tempfile.TemporaryDirectory() as tmp:
        empty = os.path.join(tmp, "empty.txt")
        open(empty, "w").close()
        for args, text in (([os.path.join(tmp, "absent.txt")], "No such file"),
                           ([empty], "no 'shape,' lines"),
                           (["--bogus"], "arguments are required")):
            p = subprocess.run([sys.executable, pick, *args], capture_output=True, text=True)
            out = p.stdout + p.stderr
            if p.returncode != 2 or text not in out or "Traceback" in out:
                errors.append(f"pick_shape.py {' '.join(args)}: exit {p.returncode}, {out.strip()[-200:]!r}; "
                              f"wanted exit 2 and {text!r}")
    for e in errors:
        print(e)
    print(f"{len(errors)} failure(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

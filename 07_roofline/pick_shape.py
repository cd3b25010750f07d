#!/usr/bin/env python3
"""Picks the sweep kernel's shape from `sweep_shapes`' output and writes it into kernels/sweep_shape.hpp.

  pick_shape.py SWEEP_SHAPES_OUTPUT [kernels/sweep_shape.hpp]

A shape: packs per thread P for each precision, and tiles per block K(F) by one of two rules:
  (a) the same K at every F;
  (b) K, except one tile per block where the unrolled body has kLongBody (4096) FMA instructions or more.
The shape kept maximises the worst point of both precisions (GFLOP/s over min(copy x F/8, peak));
within 0.003 of the best, rule (a) before (b), then the smaller K, then the smaller P."""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common", "tools"))
import chapters  # noqa: E402

FLOPS_PER_FMA = {"f32": 2, "f16": 4}  # FLOPs an FMA instruction does per element: FFMA 2, HFMA2 4 (a pair)
LONG_BODY = 4096
NEAR = 0.003


def read_points(path):
    """{(precision, P, K, F): fraction of the model} from the lines `shape,prec,P,K,F,ms,ratio`."""
    points = {}
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.startswith("shape,"):
                    continue
                fields = line.strip().split(",")
                if len(fields) != 7:
                    raise chapters.Failure(f"{path}:{n}: a shape line has 7 fields, this one {len(fields)}")
                _, prec, P, K, F, _ms, ratio = fields
                points[(prec, int(P), int(K), int(F))] = float(ratio)
    except OSError as e:
        raise chapters.Failure(f"{path}: {e.strerror}")
    except ValueError as e:
        raise chapters.Failure(f"{path}: {e}")
    if not points:
        raise chapters.Failure(f"{path}: no 'shape,' lines (is it the output of sweep_shapes?)")
    return points


def choose(points):
    """The candidates, best first, and the one chosen: (joint worst, rule, K, {prec: ((worst, F), P)})."""
    flops = sorted({k[3] for k in points})

    def worst(prec, P, rule, K):
        pts = []
        for F in flops:
            body = 4 * P * (F // FLOPS_PER_FMA[prec])
            k = 1 if rule == "b" and body >= LONG_BODY else K
            if (prec, P, k, F) not in points:
                raise chapters.Failure(f"no point for {prec} P={P} K={k} F={F} in the sweep_shapes output")
            pts.append((points[(prec, P, k, F)], F))
        return min(pts)

    cands = []
    for rule in ("a", "b"):
        for K in (1, 2, 4, 8, 16):
            if rule == "b" and K == 1:
                continue
            best = {}
            for prec in ("f32", "f16"):
                opts = sorted(((worst(prec, P, rule, K), P) for P in (1, 2)), key=lambda t: (-t[0][0], t[1]))
                if abs(opts[0][0][0] - opts[1][0][0]) < NEAR:
                    opts.sort(key=lambda t: t[1])
                best[prec] = opts[0]
            cands.append((min(best["f32"][0][0], best["f16"][0][0]), rule, K, best))
    top = max(c[0] for c in cands)
    near = sorted((c for c in cands if c[0] >= top - NEAR), key=lambda c: (c[1] != "a", c[2]))
    return sorted(cands, key=lambda c: -c[0]), near[0], flops


def write_shape(path, best, rule, K):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise chapters.Failure(f"{path}: {e.strerror}")
    for name, value in (("kPacksF32", best["f32"][1]), ("kPacksF16", best["f16"][1]), ("kTilesPerBlock", K),
                        ("kLongBody", LONG_BODY if rule == "b" else "1 << 30")):
        text, n = re.subn(rf"(inline constexpr int {name} = )[^;]+;", rf"\g<1>{value};", text)
        if n != 1:
            raise chapters.Failure(f"{path}: expected one 'inline constexpr int {name} = ...;', found {n}")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweep_shapes_output", help="what sweep_shapes printed")
    ap.add_argument("shape_hpp", nargs="?", default=os.path.join(HERE, "kernels", "sweep_shape.hpp"),
                    help="the header to rewrite (default: kernels/sweep_shape.hpp)")
    args = ap.parse_args()
    points = read_points(args.sweep_shapes_output)
    cands, (joint, rule, K, best), flops = choose(points)
    print("candidates (joint worst, rule, K, f32 P/worst@F, f16 P/worst@F):")
    for c in cands:
        print(f"  {c[0]:.3f}  ({c[1]}) K={c[2]:2d}  f32 P={c[3]['f32'][1]} {c[3]['f32'][0][0]:.3f}@{c[3]['f32'][0][1]}"
              f"  f16 P={c[3]['f16'][1]} {c[3]['f16'][0][0]:.3f}@{c[3]['f16'][0][1]}")
    print(f"CHOSEN rule ({rule}) K={K} P_f32={best['f32'][1]} P_f16={best['f16'][1]} worst {joint:.3f}")
    write_shape(args.shape_hpp, best, rule, K)
    if all(("f32", 0, 1, F) in points and ("f16", 0, 1, F) in points for F in flops):
        print("previous kernel, per F (f32/f16):",
              " ".join(f"{F}:{points[('f32', 0, 1, F)]:.3f}/{points[('f16', 0, 1, F)]:.3f}" for F in flops))
    return 0


if __name__ == "__main__":
    chapters.run_tool(main)

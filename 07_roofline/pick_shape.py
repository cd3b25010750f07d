#!/usr/bin/env python3
"""Picks the sweep kernel's shape from `sweep_shapes`' output and writes it into kernels/sweep_shape.hpp.

  pick_shape.py SWEEP_SHAPES_OUTPUT [kernels/sweep_shape.hpp]

A shape: packs per thread P for each precision, and tiles per block K(F) by one of two rules:
  (a) the same K at every F;
  (b) K, except one tile per block where the unrolled body has kLongBody (4096) FMA instructions or more.
The shape kept maximises the worst point of both precisions (GFLOP/s over min(copy x F/8, peak));
within 0.003 of the best, rule (a) before (b), then the smaller K, then the smaller P."""
import re, sys
ab = sys.argv[1]
shape_hpp = sys.argv[2] if len(sys.argv) > 2 else __file__.rsplit('/', 1)[0] + '/kernels/sweep_shape.hpp'
r = {}
for line in open(ab):
    if line.startswith('shape,'):
        _, prec, P, K, F, ms, ratio = line.strip().split(',')
        r[(prec, int(P), int(K), int(F))] = float(ratio)
Fs = sorted({k[3] for k in r})
fpf = {'f32': 2, 'f16': 4}
LONG = 4096
def body(prec, P, F):
    return 4 * P * (F // fpf[prec])
def worst(prec, P, rule, K):
    pts = []
    for F in Fs:
        k = 1 if rule == 'b' and body(prec, P, F) >= LONG else K
        pts.append((r[(prec, P, k, F)], F))
    return min(pts)
cands = []
for rule in ('a', 'b'):
    for K in (1, 2, 4, 8, 16):
        if rule == 'b' and K == 1:
            continue
        best = {}
        for prec in ('f32', 'f16'):
            opts = sorted(((worst(prec, P, rule, K), P) for P in (1, 2)), key=lambda t: (-t[0][0], t[1]))
            if abs(opts[0][0][0] - opts[1][0][0]) < 0.003:
                opts.sort(key=lambda t: t[1])
            best[prec] = opts[0]
        joint = min(best['f32'][0][0], best['f16'][0][0])
        cands.append((joint, rule, K, best))
top = max(c[0] for c in cands)
near = [c for c in cands if c[0] >= top - 0.003]
near.sort(key=lambda c: (c[1] != 'a', c[2]))
joint, rule, K, best = near[0]
print("candidates (joint worst, rule, K, f32 P/worst@F, f16 P/worst@F):")
for c in sorted(cands, key=lambda c: -c[0]):
    print(f"  {c[0]:.3f}  ({c[1]}) K={c[2]:2d}  f32 P={c[3]['f32'][1]} {c[3]['f32'][0][0]:.3f}@{c[3]['f32'][0][1]}"
          f"  f16 P={c[3]['f16'][1]} {c[3]['f16'][0][0]:.3f}@{c[3]['f16'][0][1]}")
print(f"CHOSEN rule ({rule}) K={K} P_f32={best['f32'][1]} P_f16={best['f16'][1]} worst {joint:.3f}")
s = open(shape_hpp).read()
def setc(name, val):
    global s
    s, n = re.subn(rf'(inline constexpr int {name} = )[^;]+;', rf'\g<1>{val};', s)
    assert n == 1, name
setc('kPacksF32', best['f32'][1])
setc('kPacksF16', best['f16'][1])
setc('kTilesPerBlock', K)
setc('kLongBody', LONG if rule == 'b' else '1 << 30')
open(shape_hpp, 'w').write(s)
print("previous kernel, per F (f32/f16):", ' '.join(f"{F}:{r[('f32',0,1,F)]:.3f}/{r[('f16',0,1,F)]:.3f}" for F in Fs))

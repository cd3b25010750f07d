#!/usr/bin/env python3
"""What PyTorch's max_pool3d returns on ties, NaN, -inf and padding, measured on the device, and
whether it is the rule this chapter's reference implements (reference.hpp):

  scan the window's cells in order (d, then h, then w), skipping padding; start from -inf at the
  first inside cell; a value replaces the best so far when it is larger, or when it is NaN.

  torch_semantics.py OUT.txt     (needs torch and a CUDA device; exits 77 without them)

Prints and writes a few hand-made windows with PyTorch's answer, then the number of outputs on which
PyTorch (CUDA, float32 and float16, NCDHW and channels_last_3d) and the rule above disagree, over
random tensors of whole numbers in [-2, 2] with NaN, -inf and -0 sprinkled in (many ties, many NaN
windows), for several windows, strides, paddings, dilations and ceil_mode. Then three edge cases:
PyTorch's padding check on a dilated window, a window that covers no input cell, and whether the
backward is allowed under torch.use_deterministic_algorithms(True).
"""
import itertools
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common", "tools"))
import torch_peers  # noqa: E402  (common/tools/torch_peers.py: torch with a CUDA device, or why not)


def rule(x, k, s, p, dil, ceil_mode):
    """The reference's rule on a 5-D nested list x[n][c][d][h][w] of floats: (values, flat indices)."""
    N, C, D, H, W = len(x), len(x[0]), len(x[0][0]), len(x[0][0][0]), len(x[0][0][0][0])
    dims = (D, H, W)

    def out_size(i):
        num = dims[i] + 2 * p[i] - dil[i] * (k[i] - 1) - 1 + (s[i] - 1 if ceil_mode else 0)
        o = num // s[i] + 1
        if ceil_mode and (o - 1) * s[i] >= dims[i] + p[i]:
            o -= 1
        return o

    oD, oH, oW = (out_size(i) for i in range(3))
    vals, idxs = [], []
    for n, c, od, oh, ow in itertools.product(range(N), range(C), range(oD), range(oH), range(oW)):
        starts = (od * s[0] - p[0], oh * s[1] - p[1], ow * s[2] - p[2])
        cells = []
        for j in itertools.product(range(k[0]), range(k[1]), range(k[2])):
            pos = tuple(starts[a] + j[a] * dil[a] for a in range(3))
            if all(0 <= pos[a] < dims[a] for a in range(3)):
                cells.append(pos)
        best, where = -math.inf, cells[0]
        for d, h, w in cells:
            v = x[n][c][d][h][w]
            if best < v or math.isnan(v):
                best, where = v, (d, h, w)
        vals.append(best)
        idxs.append((where[0] * H + where[1]) * W + where[2])
    return vals, idxs


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    torch = torch_peers.cuda_torch("PyTorch's rule not measured")
    if torch is None:
        return 77
    F = torch.nn.functional
    inf, nan = math.inf, math.nan
    lines = [f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}: max_pool3d's value and index"]

    def one_row(values, k, s=None, p=0):
        x = torch.tensor(values, dtype=torch.float32, device="cuda").view(1, 1, 1, 1, -1)
        y, i = F.max_pool3d(x, (1, 1, k), (1, 1, s or k), (0, 0, p), return_indices=True)
        return [(float(a), int(b)) for a, b in zip(y.flatten().tolist(), i.flatten().tolist())]

    examples = [
        ("a tie: [1, 5, 5, 2], window 4", [1, 5, 5, 2], 4, None, 0),
        ("+0 and -0: [-0.0, 0.0], window 2", [-0.0, 0.0], 2, None, 0),
        ("NaN: [1, nan, 7, nan, 3, 9], window 6", [1, nan, 7, nan, 3, 9], 6, None, 0),
        ("a NaN after the maximum: [9, nan, 1], window 3", [9, nan, 1], 3, None, 0),
        ("all -inf, padding 1: [-inf, -inf], window 2, stride 1", [-inf, -inf], 2, 1, 1),
    ]
    for text, values, k, s, p in examples:
        got = one_row(values, k, s, p)
        shown = ", ".join(f"value {v} at index {i}" for v, i in got)
        sign = ""
        if text.startswith("+0"):
            x = torch.tensor(values, device="cuda").view(1, 1, 1, 1, -1)
            sign = f" (sign bit {int(torch.signbit(F.max_pool3d(x, (1, 1, 2))).item())})"
        lines.append(f"  {text}: {shown}{sign}")

    # Random windows against the rule.
    g = torch.Generator().manual_seed(20261124)
    configs = [((3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1), False), ((2, 2, 2), (1, 1, 1), (1, 1, 1), (1, 1, 1), False),
               ((2, 3, 4), (1, 2, 3), (1, 1, 2), (1, 1, 1), False), ((3, 3, 3), (1, 1, 1), (1, 1, 1), (2, 2, 2), False),
               ((2, 2, 2), (2, 2, 2), (1, 1, 1), (1, 1, 1), True), ((3, 3, 3), (2, 2, 2), (0, 0, 0), (1, 1, 1), True),
               ((4, 4, 4), (1, 1, 1), (2, 2, 2), (1, 1, 1), False)]
    total, differ = 0, 0
    for (k, s, p, dil, ceil), dtype, cl in itertools.product(configs, (torch.float32, torch.float16), (False, True)):
        shape = (2, 3, 7, 8, 9)
        x = torch.randint(-2, 3, shape, generator=g).float()
        r = torch.rand(shape, generator=g)
        x[r < 0.06] = nan
        x[(r >= 0.06) & (r < 0.10)] = -inf
        x[(r >= 0.10) & (r < 0.14)] = -0.0
        ref_v, ref_i = rule(x.tolist(), k, s, p, dil, ceil)
        xd = x.to(dtype).cuda()
        if cl:
            xd = xd.contiguous(memory_format=torch.channels_last_3d)
        y, i = F.max_pool3d(xd, k, s, p, dil, ceil, return_indices=True)
        yv, iv = y.float().cpu().flatten().tolist(), i.cpu().flatten().tolist()
        for a, b, ia, ib in zip(yv, ref_v, iv, ref_i):
            total += 1
            same = (math.isnan(a) and math.isnan(b)) or a == b
            differ += 0 if (same and ia == ib) else 1
    lines.append(f"random windows: PyTorch and the rule differ on {differ} of {total} outputs "
                 f"({len(configs)} window setups x float32/float16 x NCDHW/channels_last_3d)")

    # Edge cases.
    x = torch.zeros(1, 1, 9, 9, 9, device="cuda")
    try:
        F.max_pool3d(x, 3, 1, 2, 2)
        lines.append("kernel 3, dilation 2, padding 2: accepted")
    except RuntimeError as e:
        lines.append(f"kernel 3, dilation 2, padding 2: refused ({str(e).splitlines()[0][:100]})")
    x = torch.full((1, 1, 2, 4, 4), 5.0, device="cuda")
    try:
        y, i = F.max_pool3d(x, (2, 1, 1), 1, (1, 0, 0), (3, 1, 1), return_indices=True)
        lines.append(f"a window with no input cell (D = 2, kernel 2, dilation 3, padding 1): output shape "
                     f"{tuple(y.shape)}, value {y.flatten()[0].item()}, index {i.flatten()[0].item()} "
                     f"(the volume has {2 * 4 * 4} cells)")
    except RuntimeError as e:
        lines.append(f"a window with no input cell: refused ({str(e).splitlines()[0][:100]})")
    x = torch.randn(1, 1, 8, 8, 8, device="cuda", requires_grad=True)
    torch.use_deterministic_algorithms(True)
    try:
        F.max_pool3d(x, 3, 1).sum().backward()
        lines.append("backward under torch.use_deterministic_algorithms(True): allowed")
    except RuntimeError as e:
        lines.append(f"backward under torch.use_deterministic_algorithms(True): raises ({str(e).splitlines()[0][:90]})")
    finally:
        torch.use_deterministic_algorithms(False)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What a PyTorch user would call instead of this chapter's kernels (common/tools/torch_peers.py
times them, on each problem's default case). PEERS: problem -> [(name, setup(case, torch))]."""


def _halves(torch, n, count):
    g = torch.Generator(device="cuda").manual_seed(20261121)
    return [(torch.rand(n, device="cuda", generator=g) * 8 - 4).half() for _ in range(count)]


def _verdict(torch, got, ref):
    bad = ~((got == ref) | (torch.isnan(got) & torch.isnan(ref)))
    count = int(bad.sum())
    return "pass" if count == 0 else f"FAIL: {count} of {got.numel()} differ from the correctly rounded result"


def copy(n, torch):
    g = torch.Generator(device="cuda").manual_seed(20261121)
    src = torch.randint(-2**31, 2**31 - 1, (n,), dtype=torch.int32, device="cuda", generator=g)
    dst = torch.empty_like(src)
    run = lambda: dst.copy_(src)  # noqa: E731
    return run, lambda: "pass" if bool(torch.equal((run(), dst)[1], src)) else "FAIL: the copy differs"


def mul(n, torch):
    x, y = _halves(torch, n, 2)
    z = torch.empty_like(x)
    run = lambda: torch.mul(x, y, out=z)  # noqa: E731
    return run, lambda: _verdict(torch, (run(), z)[1], (x.double() * y.double()).half())


def fma(n, torch):
    # addcmul computes y + a * x in float and rounds once to half; the problem asks for one rounding
    # of the exact a * x + y, and the check says where the two differ.
    a, x, y = _halves(torch, n, 3)
    z = torch.empty_like(x)
    run = lambda: torch.addcmul(y, a, x, out=z)  # noqa: E731
    return run, lambda: _verdict(torch, (run(), z)[1], (a.double() * x.double() + y.double()).half())


PEERS = {
    "copy_i32": [("Tensor.copy_", lambda c, t: copy(c.numel, t))],
    "mul_f16": [("torch.mul(out=)", lambda c, t: mul(c.numel, t))],
    "fma_f16": [("torch.addcmul(out=)", lambda c, t: fma(c.numel, t))],
}


# The version that races each problem's peers in one process (common/tools/torch_peers.py): the
# 4 KiB-tile copy, and the template with one pack per thread and one tile per block.
OURS = {"copy_i32": "copy_int4_tiles_4k", "mul_f16": "generic_tiles", "fma_f16": "generic_tiles"}

"""What a PyTorch user would call instead of this chapter's kernels (common/tools/torch_peers.py
times them, on each problem's default case). PEERS: problem -> [(name, setup(case, torch))]."""


def _inputs(torch, n, dtype, count):
    g = torch.Generator(device="cuda").manual_seed(20261121)
    return [(torch.rand(n, device="cuda", generator=g) * 8 - 4).to(dtype) for _ in range(count)]


def _verdict(torch, got, ref):
    bad = ~((got == ref) | (torch.isnan(got) & torch.isnan(ref)))
    count = int(bad.sum())
    return "pass" if count == 0 else f"FAIL: {count} of {got.numel()} differ"


def relu(n, torch, op):
    (x,) = _inputs(torch, n, torch.float32, 1)
    x[::61] = float("nan")
    y = torch.empty_like(x)
    if op == "relu":
        run = lambda: torch.relu(x)  # noqa: E731  allocates its output, as a user's call does
        out = lambda: torch.relu(x)  # noqa: E731
    else:
        run = lambda: torch.clamp_min(x, 0, out=y)  # noqa: E731
        out = lambda: (torch.clamp_min(x, 0, out=y), y)[1]  # noqa: E731
    ref = torch.where(x < 0, torch.zeros_like(x), x)
    return run, lambda: _verdict(torch, out(), ref)


def mul(n, torch):
    x, y = _inputs(torch, n, torch.float16, 2)
    z = torch.empty_like(x)
    run = lambda: torch.mul(x, y, out=z)  # noqa: E731
    check = lambda: _verdict(torch, (run(), z)[1], (x.double() * y.double()).half())  # noqa: E731
    return run, check


PEERS = {
    "relu_f32": [("torch.relu", lambda c, t: relu(c.numel, t, "relu")),
                 ("torch.clamp_min(out=)", lambda c, t: relu(c.numel, t, "clamp_min"))],
    "mul_f16": [("torch.mul(out=)", lambda c, t: mul(c.numel, t))],
}

# The version that races each problem's peers in one process (common/tools/torch_peers.py): the top
# of the ladder.
OURS = {"relu_f32": "v4_tiles", "mul_f16": "v4_tiles"}

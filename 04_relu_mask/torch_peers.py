"""What a PyTorch user would call instead of this chapter's kernels (common/tools/torch_peers.py
times them, on each problem's default case). PEERS: problem -> [(name, setup(case, torch))].

Each peer row's GB/s counts the problem's floor, the bitmask strategy's bytes (8 + 4/32 per element
for a float32 ReLU forward or backward, from the chapter's C++ problem), so it is on the same scale
as the chapter's rows of that problem. torch.relu writes no mask at all; threshold_backward reads y
(12 bytes per element) where the bitmask versions read 1/8 byte."""


def _inputs(torch, n, dtype, count):
    g = torch.Generator(device="cuda").manual_seed(20261121)
    out = [(torch.rand(n, device="cuda", generator=g) * 8 - 4).to(dtype) for _ in range(count)]
    out[0][::61] = float("nan")
    return out


def _verdict(torch, got, ref):
    bad = ~((got == ref) | (torch.isnan(got) & torch.isnan(ref)))
    count = int(bad.sum())
    return "pass" if count == 0 else f"FAIL: {count} of {got.numel()} differ"


def _relu_ref(torch, s):
    # The chapter's y: s < 0 ? 0 : s (NaN stays NaN).
    return torch.where(s < 0, torch.zeros_like(s), s)


def relu(n, torch, dtype):
    (x,) = _inputs(torch, n, dtype, 1)
    run = lambda: torch.relu(x)  # noqa: E731  allocates its output, as a user's call does
    return run, lambda: _verdict(torch, run(), _relu_ref(torch, x))


def add_relu(n, torch, dtype):
    x, r = _inputs(torch, n, dtype, 2)
    run = lambda: torch.relu_(torch.add(x, r))  # noqa: E731  two kernels: the add, then relu in place
    return run, lambda: _verdict(torch, run(), _relu_ref(torch, (x.double() + r.double()).to(dtype)))


def threshold_backward(n, torch, dtype):
    # PyTorch's ReLU backward: dx = y <= 0 ? 0 : dy, reading y.
    x, dy = _inputs(torch, n, dtype, 2)
    y = torch.relu(x)
    run = lambda: torch.ops.aten.threshold_backward(dy, y, 0)  # noqa: E731
    ref = torch.where(x.isnan() | (x > 0), dy, torch.zeros_like(dy))
    return run, lambda: _verdict(torch, run(), ref)


PEERS = {
    "relu_mask_f32": [("torch.relu", lambda c, t: relu(c.numel, t, t.float32))],
    "relu_backward_f32": [("aten.threshold_backward", lambda c, t: threshold_backward(c.numel, t, t.float32))],
    "add_relu_mask_f32": [("torch.add + relu_", lambda c, t: add_relu(c.numel, t, t.float32))],
    "relu_mask_f16": [("torch.relu", lambda c, t: relu(c.numel, t, t.float16))],
    "relu_backward_f16": [("aten.threshold_backward", lambda c, t: threshold_backward(c.numel, t, t.float16))],
    "add_relu_mask_f16": [("torch.add + relu_", lambda c, t: add_relu(c.numel, t, t.float16))],
}


# The version that races each problem's peers in one process (common/tools/torch_peers.py): the
# top of each ladder.
OURS = {"relu_mask_f32": "v3_ballot_vectorized", "relu_backward_f32": "v3_from_bitmask_vectorized",
        "add_relu_mask_f32": "v3_ballot_vectorized", "relu_mask_f16": "v3_ballot_vectorized",
        "relu_backward_f16": "v3_from_bitmask_vectorized", "add_relu_mask_f16": "v3_ballot_vectorized"}

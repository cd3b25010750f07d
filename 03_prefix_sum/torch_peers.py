"""What a PyTorch user would call instead of this chapter's device-wide scans (common/tools/torch_peers.py
times them, on each problem's default case). PEERS: problem -> [(name, setup(case, torch))].

torch.cumsum is inclusive; PyTorch has no exclusive prefix sum, so the exclusive problems have no
peer row. The inputs are whole numbers, as in the chapter (int32 in [-1000, 1000], float32 in
[-8, 8]), so the float sums are exact and the check compares exactly."""


def _whole(torch, n, lo, hi, dtype):
    g = torch.Generator(device="cuda").manual_seed(20261121)
    return torch.randint(lo, hi + 1, (n,), device="cuda", generator=g).to(dtype)


def cumsum(n, torch, dtype, lo, hi):
    x = _whole(torch, n, lo, hi, dtype)
    y = torch.empty_like(x)
    run = lambda: torch.cumsum(x, 0, dtype=dtype, out=y)  # noqa: E731
    ref = torch.cumsum(x.to(torch.int64), 0)

    def check():
        run()
        bad = int((y.to(torch.int64) != ref).sum())
        return "pass" if bad == 0 else f"FAIL: {bad} of {n} differ"

    return run, check


PEERS = {
    "scan_i32": [("torch.cumsum(dtype=int32)", lambda c, t: cumsum(c.numel, t, t.int32, -1000, 1000))],
    "scan_f32": [("torch.cumsum", lambda c, t: cumsum(c.numel, t, t.float32, -8, 8))],
}


# The version that races each problem's peers in one process (common/tools/torch_peers.py).
OURS = {"scan_i32": "v7_decoupled_lookback", "scan_f32": "v7_decoupled_lookback"}

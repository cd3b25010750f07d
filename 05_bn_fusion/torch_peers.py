"""What a PyTorch user would call instead of this chapter's kernels (common/tools/torch_peers.py
times them and races them against OURS in one process). PEERS: problem -> [(name, setup(case, torch))].

Training: F.batch_norm(training=True) then relu (ResNet's bn -> relu, and bn -> += identity ->
relu), forward; and the same graph's backward through autograd (relu's threshold_backward reading
y, then BatchNorm's backward), which is what loss.backward() runs for these two layers. Inference:
F.batch_norm(training=False) then relu. NHWC cases use channels_last tensors. Half cases keep
gamma, beta and the running statistics in float32, as this chapter's problems do.

Each row's GB/s counts the problem's floor (the single-read bytes of the chapter's C++ problem), so
it is on the same scale as the chapter's rows: PyTorch moves more (no mask; the backward reads y;
the statistics read x again), and that shows as a lower fraction of copy."""

SEED = 20261121


def _tensors(case, torch, dtype, add=False):
    n, c = case.shape[0], case.shape[1]
    g = torch.Generator(device="cuda").manual_seed(SEED)
    shift = float(case.params.get("shift", 0.0))
    fmt = torch.channels_last if case.params.get("layout") == "NHWC" else torch.contiguous_format

    def uniform(shape, lo, hi, dt):
        return (torch.rand(shape, device="cuda", generator=g, dtype=torch.float32) * (hi - lo) + lo).to(dt)

    x = uniform(case.shape, shift - 3, shift + 3, dtype).contiguous(memory_format=fmt)
    r = uniform(case.shape, -2, 2, dtype).contiguous(memory_format=fmt) if add else None
    w, b = uniform([c], 0.5, 1.5, torch.float32), uniform([c], -0.5, 0.5, torch.float32)
    rm, rv = uniform([c], -1, 1, torch.float32), uniform([c], 0.5, 2, torch.float32)
    dy = uniform(case.shape, -1, 1, dtype).contiguous(memory_format=fmt)
    del n
    return x, r, w, b, rm, rv, dy


def _tol(half):
    return 4e-3 if half else 2e-4


def _close(torch, got, ref, half):
    tol = _tol(half)
    bad = ~torch.isclose(got.double(), ref, atol=tol, rtol=tol)
    count = int(bad.sum())
    return "pass" if count == 0 else f"FAIL: {count} of {got.numel()} differ"


def _pre(torch, F, case, x, r, w, b, rm, rv, training):
    """ReLU's input: the normalized x, plus r in the Add form."""
    eps, momentum = float(case.params["eps"]), float(case.params["momentum"])
    s = F.batch_norm(x, rm, rv, w, b, training=training, momentum=momentum, eps=eps)
    return s if r is None else s + r


def _graph(torch, F, case, x, r, w, b, rm, rv, training):
    return torch.relu(_pre(torch, F, case, x, r, w, b, rm, rv, training))


def forward(case, torch, dtype, add=False, training=True):
    import torch.nn.functional as F
    x, r, w, b, rm, rv, _ = _tensors(case, torch, dtype, add)
    run = lambda: _graph(torch, F, case, x, r, w, b, rm, rv, training)  # noqa: E731  allocates y, as a user's call does

    def check():
        got = run()
        ref = _graph(torch, F, case, x.double(), None if r is None else r.double(), w.double(), b.double(),
                     rm.double().clone(), rv.double().clone(), training)
        return _close(torch, got, ref, dtype == torch.float16)

    return run, check


def backward(case, torch, dtype, add=False):
    import torch.nn.functional as F
    x, r, w, b, rm, rv, dy = _tensors(case, torch, dtype, add)
    leaves = [t.requires_grad_() for t in ([x, w, b] + ([r] if add else []))]
    y = _graph(torch, F, case, x, r, w, b, rm, rv, True)
    run = lambda: torch.autograd.grad(y, leaves, dy, retain_graph=True)  # noqa: E731

    def check():
        got = run()
        half = dtype == torch.float16
        tol = _tol(half)
        ref_leaves = [t.detach().double().requires_grad_() for t in leaves]
        xr, wr, br = ref_leaves[:3]
        rr = ref_leaves[3] if add else None
        sr = _pre(torch, F, case, xr, rr, wr, br, rm.double().clone(), rv.double().clone(), True)
        # ReLU's backward passes dy where PyTorch's own y > 0. Where the pre-activation lies within the
        # tolerance of 0, rounding (in half, s + r rounds to 2^-11 relative) may put PyTorch's y on the
        # other side of 0 than the float64 one, and a gate that differs moves dx and dr there by a
        # whole dy. So the reference takes PyTorch's gate, after checking that it differs from its own
        # only within the tolerance of 0: the rule the chapter's tests apply to its own masks.
        gate = y.detach() > 0
        off = (gate != (sr.detach() > 0)) & (sr.detach().abs() > tol)
        if bool(off.any()):
            return f"FAIL: ReLU's gate differs from the float64 one at {int(off.sum())} elements away from 0"
        ref = torch.autograd.grad(sr * gate.double(), ref_leaves, dy.double())
        verdicts = [_close(torch, g, rf, half and g.dtype == torch.float16) for g, rf in zip(got, ref)]
        bad = [v for v in verdicts if v != "pass"]
        return "pass" if not bad else bad[0]

    return run, check


PEERS = {
    "bn_relu_f32": [("F.batch_norm + relu", lambda c, t: forward(c, t, t.float32))],
    "bn_relu_backward_f32": [("autograd: relu, batch_norm backward", lambda c, t: backward(c, t, t.float32))],
    "bn_add_relu_f32": [("F.batch_norm + add + relu", lambda c, t: forward(c, t, t.float32, add=True))],
    "bn_add_relu_backward_f32": [("autograd: relu, add, batch_norm backward",
                                  lambda c, t: backward(c, t, t.float32, add=True))],
    "bn_relu_f16": [("F.batch_norm + relu", lambda c, t: forward(c, t, t.float16))],
    "bn_relu_backward_f16": [("autograd: relu, batch_norm backward", lambda c, t: backward(c, t, t.float16))],
    "bn_add_relu_f16": [("F.batch_norm + add + relu", lambda c, t: forward(c, t, t.float16, add=True))],
    "bn_add_relu_backward_f16": [("autograd: relu, add, batch_norm backward",
                                  lambda c, t: backward(c, t, t.float16, add=True))],
    "bn_relu_inference_f32": [("F.batch_norm(training=False) + relu",
                               lambda c, t: forward(c, t, t.float32, training=False))],
}

# The spin before each timed call (common/tools/torch_peers.py), in GPU clock cycles: about 0.5 ms
# at the H200's 1.98 GHz. The common 200,000 (about 0.1 ms) is shorter than autograd takes the host
# to queue a backward: on the H200, PyTorch's half backward at 8x3x224x224 NHWC took 0.1030 ms per
# call in a race with it and 0.0172 in another process, and with this spin its small cases ran as
# fast as the faster of those (results/spin_1m/, spin_200k_by_problem/, NVIDIA_H200.torch.json of
# commit 3daa64b). The spin is untimed and both sides of a race get it.
BUSY_CYCLES = 1_000_000

# The runs that pick the version raced on each case, in the order they ran: the whole suite's run on
# the H200, and after it any run of some cases with rungs that came later (a case's pick is replaced
# where the later run timed it against the earlier pick, in one process). The suite's run of the build
# of commit 1ce1383 has every rung, v31 included, so it alone picks (the race of
# results/NVIDIA_H200.torch_64x64.json took its picks from it; the whole race of
# results/NVIDIA_H200.torch.json took its picks from an earlier run, now results/suite_ca6cad0/).
_PICKS = ["NVIDIA_H200.json"]


def _fastest_in_suite():
    """problem -> {case: the fastest of our versions that passed there}, by _PICKS. This chapter has
    no dispatcher: no one version is the fastest on every case (v15 at 4x33x17x19, v24 at 64x1024x7x7
    NCHW, v11 there in NHWC, v19 and v20 at the large shapes), so each case races the version a user
    who read those runs would pick for it."""
    import json
    import os
    out = {}
    for name in _PICKS:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", name)) as f:
            runs = json.load(f)["runs"]
        best, timed = {}, {}
        for r in runs:
            if r["kind"] == "own" and r["check"] == "pass" and r["problem"] in PEERS:
                key = (r["problem"], r["case"])
                timed.setdefault(key, set()).add(r["version"])
                if key not in best or r["ms_median"] < best[key][1]:
                    best[key] = (r["version"], r["ms_median"])
        for (problem, case), (version, _) in best.items():
            picks = out.setdefault(problem, {})
            if case not in picks or picks[case] in timed[(problem, case)]:
                picks[case] = version
    return out


# Every case of the suite (7 shapes in both layouts), each raced against our fastest version there.
OURS = _fastest_in_suite()
CASES = {problem: list(by_case) for problem, by_case in OURS.items()}

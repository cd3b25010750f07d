"""What a PyTorch user would call instead of this chapter's kernels (common/tools/torch_peers.py
times them and races our dispatcher against them in one process, on every suite case).

PEERS: problem -> [(name, setup(case, torch))]. The forward's peer is torch.nn.functional.max_pool3d
with the case's window, stride, padding, dilation and ceil_mode, on a tensor in the case's memory
format (channels_last_3d for NDHWC), asking for indices when the case does (int64 or compact: PyTorch
has only int64). The backward's peer is aten.max_pool3d_with_indices_backward on the indices
PyTorch's own forward returned. Inputs are whole numbers in [-8, 8], as ours are, so ties are common.

Each peer row's GB/s counts the case's floor (the chapter's C++ problem: x read once, y written once,
and the index in the case's format), so it is on the same scale as our rows. PyTorch's kernel writes an
int64 index even when none is asked for; the floor's "pytorch_int64" model counts those bytes.

CASES lists every case of each problem's suite, in the words the race module reads back
(shape and parameters); suite_table.py --check-cases proves the lists are the suites."""

SEED = 20261124

# The suite's shapes, as versions.cuh's suite_shapes() lists them: shape, then parameters.
SHAPES = [
    ("8x64x16x56x56", "kernel=3 stride=2 padding=1"),
    ("2x64x32x112x112", "kernel=2 stride=2 padding=0"),
    ("4x32x32x64x64", "kernel=3 stride=1 padding=1"),
    ("1x1x320x320x320", "kernel=2 stride=2 padding=0"),
    ("1x1x320x320x320", "kernel=3 stride=2 padding=1"),
    ("1024x512x4x4x4", "kernel=2 stride=2 padding=0"),
    ("1024x512x4x4x4", "kernel=4 stride=4 padding=0"),
    ("256x256x8x8x8", "kernel=8 stride=8 padding=0"),
    ("1x16x64x64x64", "kernel=8 stride=1 padding=0"),
    ("2x64x64x64x64", "kernel=8 stride=8 padding=0"),
    ("4x64x16x56x56", "kernel=1x3x3 stride=1x2x2 padding=0x1x1"),
    ("4x32x31x63x63", "kernel=2x3x4 stride=1x2x3 padding=1x1x2"),
    ("2x48x33x65x65", "kernel=5 stride=2 padding=2"),
    ("2x64x48x96x96", "kernel=2 stride=3 padding=0"),
    ("1x2x128x256x256", "kernel=2 stride=2 padding=0"),
    ("8x64x33x33x33", "kernel=2 stride=2 padding=0 ceil_mode=1"),
    ("2x32x32x64x64", "kernel=3 stride=1 padding=1 dilation=2"),
]


def _text(k, layout="NCDHW", indices="none"):
    shape, params = SHAPES[k]
    return f"{shape} {params} layout={layout} indices={indices}"


FORWARD_CASES = ([_text(k, layout) for layout in ("NCDHW", "NDHWC") for k in range(len(SHAPES))] +
                 [_text(k, "NCDHW", idx) for idx in ("int64", "compact") for k in (0, 1, 8)])
BACKWARD_CASES = ([_text(k, "NCDHW", idx) for idx in ("int64", "compact") for k in (0, 1, 2, 8, 9)] +
                  [_text(0, "NDHWC", "int64")])
HALF_CASES = [_text(k) for k in (0, 1, 8)] + [_text(0, "NDHWC")]


def _window(case):
    p = case.params
    return dict(kernel_size=tuple(p["kernel"]), stride=tuple(p["stride"]), padding=tuple(p["padding"]),
                dilation=tuple(p["dilation"]), ceil_mode=bool(p["ceil_mode"]))


def _whole(torch, shape, dtype, layout, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randint(-8, 9, tuple(shape), device="cuda", generator=g).to(dtype)
    if layout == "NDHWC":
        x = x.contiguous(memory_format=torch.channels_last_3d)
    return x


def forward(case, torch, dtype):
    F = torch.nn.functional
    x = _whole(torch, case.shape, dtype, case.params["layout"], SEED)
    win = _window(case)
    with_indices = case.params["indices"] != "none"
    run = lambda: F.max_pool3d(x, return_indices=with_indices, **win)  # noqa: E731  allocates, as a user's call does

    def check():
        got = run()
        y, idx = (got if with_indices else (got, None))
        ref_y, ref_idx = F.max_pool3d(x.double(), return_indices=True, **win)
        bad = int((y.double() != ref_y).sum())
        if idx is not None:
            bad += int((idx != ref_idx).sum())
        return "pass" if bad == 0 else f"FAIL: {bad} values or indices differ from float64"
    return run, check


def backward(case, torch):
    F = torch.nn.functional
    x = _whole(torch, case.shape, torch.float32, case.params["layout"], SEED)
    win = _window(case)
    y, idx = F.max_pool3d(x, return_indices=True, **win)
    dy = _whole(torch, y.shape, torch.float32, case.params["layout"], SEED + 1)
    args = (win["kernel_size"], win["stride"], win["padding"], win["dilation"], win["ceil_mode"])
    op = torch.ops.aten.max_pool3d_with_indices_backward
    run = lambda: op(dy, x, *args, idx)  # noqa: E731  allocates and zeroes dx, then scatters

    def check():
        # Whole-number gradients: the sums are exact in any order, so float64 must agree exactly.
        bad = int((run().double() != op(dy.double(), x.double(), *args, idx)).sum())
        return "pass" if bad == 0 else f"FAIL: {bad} of dx differ from float64"
    return run, check


PEERS = {
    "maxpool3d_f32": [("F.max_pool3d", lambda c, t: forward(c, t, t.float32))],
    "maxpool3d_backward_f32": [("aten.max_pool3d_with_indices_backward", lambda c, t: backward(c, t))],
    "maxpool3d_f16": [("F.max_pool3d", lambda c, t: forward(c, t, t.float16))],
}

CASES = {"maxpool3d_f32": FORWARD_CASES, "maxpool3d_backward_f32": BACKWARD_CASES, "maxpool3d_f16": HALF_CASES}

# The version of ours that races each problem's peer: the dispatcher a user would call (for the
# backward, the deterministic one).
OURS = {"maxpool3d_f32": "auto", "maxpool3d_backward_f32": "auto", "maxpool3d_f16": "auto"}

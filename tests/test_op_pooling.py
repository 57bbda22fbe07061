"""Pooling, grid_sampler_3d, cdist/pdist and _trilinear: torch's NaN and tie
rules, output layouts, bad arguments, and compiled models whose generated
code calls these fallbacks, against eager (OpInfo samples in every layout
are in tests/test_opinfo.py)."""

from __future__ import annotations

import subprocess

import pytest
import torch
from torch.nn import functional as F

from aotishim import shim
from aotishim._core import ShimError
from torch_views import same, to_shim, to_torch

A = torch.ops.aten


def _call(name, *args):
    got = shim.call_op(name, *args, entry="cpu")
    got = got if isinstance(got, tuple) else (got,)
    try:
        return [(to_torch(t), t.strides) for t in got]
    finally:
        for t in got:
            shim.delete(t)


def test_max_pools_take_the_last_nan_and_the_first_of_ties():
    x = torch.tensor([[1.0, 3.0, 3.0, float("nan")], [2.0, float("nan"), 3.0, 0.5],
                      [3.0, 3.0, -1.0, -1.0], [0.0, 0.0, 0.0, 0.0]]).view(1, 1, 4, 4)
    for k, s, p, d in [(2, 1, 0, 1), (3, 1, 1, 1), (2, 1, 0, 2), (4, 4, 0, 1)]:
        (v, _), (i, _) = _call("max_pool2d_with_indices", to_shim(x), [k], [s], [p], [d], 0)
        want = A.max_pool2d_with_indices(x, [k], [s], [p], [d], False)
        assert same(v, want[0]) and same(i, want[1]), (k, s, p, d)
    for size in ([1, 1], [2, 3], [3, 3]):
        (v, _), (i, _) = _call("adaptive_max_pool2d", to_shim(x), size)
        want = A.adaptive_max_pool2d(x, size)
        assert same(v, want[0]) and same(i, want[1]), size


@pytest.mark.parametrize("op,args,ref", [
    ("_adaptive_avg_pool2d", ([3, 4],), lambda x: A._adaptive_avg_pool2d(x, [3, 4])),
    ("adaptive_max_pool2d", ([3, 4],), lambda x: A.adaptive_max_pool2d(x, [3, 4])),
    ("avg_pool2d", ([3], [2], [1], 1, 0, None),
     lambda x: A.avg_pool2d(x, [3], [2], [1], True, False, None)),
    ("max_pool2d_with_indices", ([3, 2], [2, 1], [1, 1], [1, 2], 1),
     lambda x: A.max_pool2d_with_indices(x, [3, 2], [2, 1], [1, 1], [1, 2], True)),
])
def test_2d_pools_follow_a_channels_last_input(op, args, ref):
    # 32 channels: all in torch's vector lanes, whatever their width (see
    # test_averages_round_as_torch)
    x = torch.randn(2, 32, 7, 9).contiguous(memory_format=torch.channels_last)
    got = _call(op, to_shim(x), *args)
    want = ref(x)
    want = want if isinstance(want, tuple) else (want,)
    for (g, strides), w in zip(got, want):
        assert strides == list(w.stride()) and w.stride()[1] == 1
        assert same(g, w.contiguous())


def test_3d_layouts_as_torch():
    v = torch.randn(2, 3, 5, 6, 7).contiguous(memory_format=torch.channels_last_3d)
    (_, s_mp), (_, s_mi) = _call("max_pool3d_with_indices", to_shim(v), [2], [], [0], [1], 0)
    want = A.max_pool3d_with_indices(v, [2], [], [0], [1], False)
    assert s_mp == list(want[0].stride()) == s_mi and want[0].stride()[1] == 1  # channels-last
    ((_, s_ap),) = _call("avg_pool3d", to_shim(v), [2], [], [0], 0, 1, None)
    assert s_ap == list(A.avg_pool3d(v, [2]).stride())  # contiguous
    ((_, s_aa),) = _call("_adaptive_avg_pool3d", to_shim(v), [2, 3, 4])
    assert s_aa == list(A._adaptive_avg_pool3d(v, [2, 3, 4]).stride())
    # an unbatched (C, D, H, W) input whose strides read as a 2-D channels-last
    # layout: torch's 3-D pools know no such layout (it refuses the input);
    # the output is contiguous, as for every unbatched input
    u = torch.randn(3, 5, 6, 7).contiguous(memory_format=torch.channels_last)
    (got, s_u), _ = _call("max_pool3d_with_indices", to_shim(u), [2], [], [0], [1], 0)
    want = A.max_pool3d_with_indices(u.contiguous(), [2], [], [0], [1], False)[0]
    assert s_u == list(want.stride()) and same(got, want)


def test_max_unpool_checks_indices():
    x = torch.randn(1, 2, 3, 3)
    bad = torch.zeros(1, 2, 3, 3, dtype=torch.int64)
    bad[0, 1, 2, 2] = 100
    with pytest.raises(ShimError, match=r"Found an invalid max index: 100 \(output volumes are of "
                                        r"size 6x6\)"):
        shim.call_op("max_unpool2d", to_shim(x), to_shim(bad), [6, 6], entry="cpu")
    with pytest.raises(ShimError, match="elements in indices should be type int64"):
        shim.call_op("max_unpool2d", to_shim(x), to_shim(bad.int()), [6, 6], entry="cpu")
    # repeated indices: the last element written wins, as in torch's loop
    idx = torch.zeros(1, 2, 3, 3, dtype=torch.int64)
    ((got, _),) = _call("max_unpool2d", to_shim(x), to_shim(idx), [2, 2])
    assert same(got, A.max_unpool2d(x, idx, [2, 2]))


def test_bad_arguments():
    x4, x5 = to_shim(torch.zeros(2, 3, 7, 9)), to_shim(torch.zeros(2, 3, 5, 7, 9))
    cases = [
        ("avg_pool2d", (x4, [1, 2, 3], [], [0], 0, 1, None), "kernel_size must either be a single int"),
        ("avg_pool2d", (x4, [2], [], [0], 0, 1, 0), "divisor must be not zero"),
        ("avg_pool2d", (x4, [2], [1], [2], 0, 1, None), "pad should be at most half"),
        ("avg_pool2d", (x4, [8, 2], [], [0], 0, 1, None), "Output size is too small"),
        ("avg_pool3d", (x5, [6, 2, 2], [], [0], 0, 1, None), "smaller than kernel size"),
        ("max_pool2d_with_indices", (x4, [2], [1], [0], [0], 0),
         "dilation should be greater than zero"),
        ("max_pool2d_with_indices", (x4, [2], [0], [0], [1], 0), "stride should not be zero"),
        ("max_pool3d_with_indices", (x4, [2, 2, 2], [], [0], [1], 0), None),  # (C, D, H, W): ok
        ("_adaptive_avg_pool2d", (x4, [3]), "output_size must be 2"),
        ("adaptive_max_pool2d", (x5, [3, 4]), "Expected 3D or 4D tensor"),
        ("grid_sampler_3d", (x5, to_shim(torch.zeros(2, 2, 2, 2, 2)), 0, 0, 0),
         "expected grid to have size 3 in last dimension"),
        ("grid_sampler_3d", (x5, to_shim(torch.zeros(2, 2, 2, 2, 3)), 2, 0, 0),
         "bicubic interpolation only supports 4D input"),
        ("_cdist_forward", (x4, to_shim(torch.zeros(2, 3, 4, 8)), 2.0, None),
         "X1 and X2 must have the same number of columns"),
        ("_cdist_forward", (x4, x4, -1.0, None), "non-negative p values"),
        ("_cdist_forward", (to_shim(torch.zeros(3, 4, dtype=torch.int64)),
                            to_shim(torch.zeros(3, 4, dtype=torch.int64)), 2.0, None),
         "cdist only supports floating-point dtypes"),
        ("_pdist_forward", (x4, 2.0), "pdist only supports 2D tensors"),
        ("_trilinear", (to_shim(torch.zeros(4, 3)), to_shim(torch.zeros(5, 3, 6)),
                        to_shim(torch.zeros(4, 6)), [1, 3], [0], [1, 2], [2, 3], 4),
         r"unroll_dim must be in \[0,3\]"),
        ("_trilinear", (to_shim(torch.zeros(4, 3)), to_shim(torch.zeros(5, 3, 6)),
                        to_shim(torch.zeros(4, 7)), [1, 3], [0], [1, 2], [2, 3], 1),
         "non-broadcast dimensions must match"),
        ("fractional_max_pool2d", (x4, [2, 2], [7, 4], to_shim(torch.rand(2, 3, 2))),
         "pool height 2 too large relative to input height 7"),
        ("fractional_max_pool2d", (x4, [2, 2], [3, 4], to_shim(torch.rand(2, 3, 2).double())),
         "same dtype as input"),
        ("avg_pool2d", (to_shim(torch.zeros(2, 3, 4, 4, dtype=torch.int64)), [2], [], [0], 0, 1,
                        None), "int64 is not supported"),
    ]
    for op, args, message in cases:
        if message is None:
            for t in shim.call_op(op, *args, entry="cpu"):
                shim.delete(t)
            continue
        with pytest.raises(ShimError, match=message):
            shim.call_op(op, *args, entry="cpu")


def test_cdist_matrix_product_form_matches_torch():
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(2, 40, 9, generator=g), torch.randn(1, 30, 9, generator=g)
    for mode in (None, 1):
        ((got, strides),) = _call("_cdist_forward", to_shim(a), to_shim(b), 2.0, mode)
        want = A._cdist_forward(a, b, 2.0, mode)
        assert strides == list(want.stride())
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    # a row against itself: the form cancels to about zero, never below (a
    # negative square clamps to 0, not NaN)
    ((got, _),) = _call("_cdist_forward", to_shim(a), to_shim(a), 2.0, 1)
    want = A._cdist_forward(a, a, 2.0, 1)
    assert not got.isnan().any() and bool((got >= 0).all())
    torch.testing.assert_close(got, want, rtol=1e-5, atol=4e-3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_averages_round_as_torch(dtype, layout):
    """Bitwise torch's values: its kernels' summation order and divisions
    (the channels-last adaptive kernel divides its vector lanes' sums once by
    the window's size, the others once per dim). 32 channels fill the lanes
    whatever their width (channels past the last full vector would divide
    per dim there: an ulp apart, within the OpInfo comparison). bfloat16
    3-D adaptive averages are left out: torch's 3-D kernel rounds its sums
    differently there (ours accumulate in float32, at least as close to the
    exact answer, which the OpInfo comparison checks)."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(4, 32, 23, 29, generator=g).to(dtype)
    v = torch.randn(2, 4, 11, 13, 9, generator=g).to(dtype)
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
        v = v.contiguous(memory_format=torch.channels_last_3d)
    cases = [("_adaptive_avg_pool2d", x, ([5, 7],), lambda t: A._adaptive_avg_pool2d(t, [5, 7])),
             ("avg_pool2d", x, ([3], [2], [1], 1, 0, None),
              lambda t: A.avg_pool2d(t, [3], [2], [1], True, False, None))]
    if dtype == torch.float32:  # torch's avg_pool3d takes no reduced types
        cases.append(("_adaptive_avg_pool3d", v, ([3, 5, 4],),
                      lambda t: A._adaptive_avg_pool3d(t, [3, 5, 4])))
        cases.append(("avg_pool3d", v, ([3, 2, 2], [2], [1, 0, 1], 0, 1, 5),
                      lambda t: A.avg_pool3d(t, [3, 2, 2], [2], [1, 0, 1], False, True, 5)))
    for op, t, args, ref in cases:
        ((got, strides),) = _call(op, to_shim(t), *args)
        want = ref(t)
        assert strides == list(want.stride()), op
        assert same(got, want.contiguous()), op


def _fallbacks(so) -> set[str]:
    out = subprocess.run(["nm", "-D", "--undefined-only", str(so)], capture_output=True,
                         text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if "aoti_torch_cpu_" in line}


@pytest.mark.parametrize("name,make,inputs,needs", [
    ("op_pooling2d", "Pooling2d",
     lambda g: (torch.randn(2, 3, 16, 17, generator=g), torch.randn(2, 3, 6, 9, 10, generator=g)),
     {"_adaptive_avg_pool2d", "adaptive_max_pool2d", "avg_pool2d", "avg_pool3d"}),
    ("op_grid_sample3d", "GridSample3d",
     lambda g: (torch.randn(2, 3, 5, 6, 7, generator=g),
                torch.rand(2, 4, 3, 5, 3, generator=g) * 2 - 1),
     {"grid_sampler_3d"}),
    ("op_distances", "Distances",
     lambda g: (torch.randn(2, 10, 7, generator=g), torch.randn(2, 9, 7, generator=g)),
     {"_cdist_forward", "_pdist_forward"}),
    ("op_bilinear", "BilinearHead",
     lambda g: (torch.randn(2, 3, 6, generator=g), torch.randn(2, 3, 5, generator=g)),
     {"_trilinear"}),
])
def test_compiled_model_matches_eager(model_cache, name, make, inputs, needs):
    import op_models
    from aotishim import export

    module = getattr(op_models, make)().eval()
    args = inputs(torch.Generator().manual_seed(0))
    so = export.compile_cached(module, args, model_cache, name=name)
    # the generated code really calls these fallbacks
    assert {f"aoti_torch_cpu_{n}" for n in needs} <= _fallbacks(so)
    op_models.check_model(model_cache, name, module, args, rtol=1e-5, atol=1e-5)

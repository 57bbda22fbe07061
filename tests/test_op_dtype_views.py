"""view_dtype, view_as_real and view_as_complex: new handles over the same
storage with torch's sizes, strides and storage offsets, and torch's errors
for views that cannot exist."""

from __future__ import annotations

import re

import numpy as np
import pytest

import aotishim
from aotishim import shim

torch = pytest.importorskip("torch")


def _over_torch(t: torch.Tensor) -> shim.Tensor:
    """A handle borrowing t's storage with t's own geometry (offset included)."""
    base = t.untyped_storage()
    flat = torch.empty(0, dtype=t.dtype).set_(base, 0, (base.nbytes() // t.element_size(),), (1,))
    whole = shim.from_numpy(flat.numpy())
    return shim.reinterpret_tensor(whole, list(t.shape), list(t.stride()), t.storage_offset())


def _assert_same_view(h: shim.Tensor, want: torch.Tensor) -> None:
    info = aotishim._core.tensor_info(h.handle)
    assert info["sizes"] == list(want.shape)
    assert info["strides"] == list(want.stride())
    assert shim.get(h, "storage_offset") == want.storage_offset()
    assert info["dtype"] == shim.constants()[f"dtype_{str(want.dtype).removeprefix('torch.')}"]
    np.testing.assert_array_equal(shim.to_numpy(h), want.numpy())


CASES = [
    # (make the source, target dtype)
    (lambda: torch.randn(4, 6), torch.float64),
    (lambda: torch.randn(4, 6), torch.int16),
    (lambda: torch.randn(4, 6), torch.complex64),
    (lambda: torch.randn(6, 8)[1:5, 2:6], torch.float64),  # offset 10, row stride 8
    (lambda: torch.randn(6, 8)[1:5, 2:6], torch.uint8),
    (lambda: torch.randn(6, 8, dtype=torch.complex64)[1:, 2:6], torch.float32),
    (lambda: torch.randn(3, 4, dtype=torch.complex128), torch.complex64),
    (lambda: torch.randn(3, 4, dtype=torch.float64).t(), torch.int64),  # same size: any strides
    (lambda: torch.tensor(3.5), torch.int32),
]


@pytest.mark.parametrize("make,dtype", CASES)
def test_view_dtype_is_torchs_view(make, dtype):
    src = make()
    h = _over_torch(src)
    v = shim.call_op("view_dtype", h, shim.constants()[f"dtype_{str(dtype).removeprefix('torch.')}"])
    want = src.view(dtype)
    _assert_same_view(v, want)
    assert shim.get(v, "data_ptr") == want.data_ptr()  # the same memory, not a copy


INVALID = [
    lambda: torch.tensor(1.0),                        # 0-d, sizes differ
    lambda: torch.randn(4, 6).t(),                    # stride(-1) != 1
    lambda: torch.randn(4, 5),                        # size(-1) not divisible
    lambda: torch.randn(4, 8)[:, 1:7],                # storage offset 1
    lambda: torch.randn(5, 7)[:, :4],                 # stride(0) = 7
    lambda: torch.randn(6, 8)[:, ::2],                # stride(-1) = 2
]


@pytest.mark.parametrize("make", INVALID)
def test_view_dtype_refuses_what_torch_refuses(make):
    src = make()
    with pytest.raises(RuntimeError) as torch_error:
        src.view(torch.float64)
    with pytest.raises(aotishim.ShimError) as ours:
        shim.call_op("view_dtype", _over_torch(src), shim.constants()["dtype_float64"])
    # The same message, up to torch's dtype spellings (Float, Double).
    theirs = str(torch_error.value).split("\n")[0]
    theirs = theirs.replace("Float", "float32").replace("Double", "float64")
    assert theirs in str(ours.value)


@pytest.mark.parametrize("make", [
    lambda: torch.randn(3, 4, dtype=torch.complex64),
    lambda: torch.randn(5, 6, dtype=torch.complex128)[1:, ::3],
    lambda: torch.randn(4, 3, dtype=torch.complex64).t(),
    lambda: torch.tensor(1 + 2j, dtype=torch.complex64),
])
def test_view_as_real_is_torchs_view(make):
    src = make()
    v = shim.call_op("view_as_real", _over_torch(src))
    want = torch.view_as_real(src)
    _assert_same_view(v, want)
    assert shim.get(v, "data_ptr") == want.data_ptr()


@pytest.mark.parametrize("make", [
    lambda: torch.randn(3, 4, 2),
    lambda: torch.randn(5, 6, 2, dtype=torch.float64)[1:, ::3],
    lambda: torch.randn(2),
    lambda: torch.randn(4, 3, 2).transpose(0, 1),
])
def test_view_as_complex_is_torchs_view(make):
    src = make()
    v = shim.call_op("view_as_complex", _over_torch(src))
    want = torch.view_as_complex(src)
    _assert_same_view(v, want)
    assert shim.get(v, "data_ptr") == want.data_ptr()


@pytest.mark.parametrize("op,make", [
    ("view_as_real", lambda: torch.randn(3, 4)),
    ("view_as_complex", lambda: torch.randn(3, 2).to(torch.int32)),
    ("view_as_complex", lambda: torch.tensor(1.0)),
    ("view_as_complex", lambda: torch.randn(3, 3)),
    ("view_as_complex", lambda: torch.randn(2, 3).t()),
    ("view_as_complex", lambda: torch.randn(5, 3)[:, 1:]),  # row stride 3
    ("view_as_complex", lambda: torch.randn(9)[1:].view(4, 2)),
])
def test_dtype_views_refuse_what_torch_refuses(op, make):
    src = make()
    with pytest.raises(RuntimeError) as torch_error:
        getattr(torch, op)(src)
    with pytest.raises(aotishim.ShimError) as ours:
        shim.call_op(op, _over_torch(src))
    theirs = str(torch_error.value).split("\n")[0]
    theirs = re.sub(r"scalar type: \w+", "scalar type:", theirs)
    theirs = theirs.replace("half, float", "float")  # no complex32 here: half is refused too
    assert theirs in str(ours.value)


def test_writes_through_a_view_reach_the_base():
    base = np.zeros((2, 3), dtype=np.complex64)
    h = shim.from_numpy(base)
    real = shim.call_op("view_as_real", h)
    shim.copy_(real, shim.from_numpy(np.arange(12, dtype=np.float32).reshape(2, 3, 2)))
    np.testing.assert_array_equal(base, np.arange(12, dtype=np.float32).view(np.complex64).reshape(2, 3))

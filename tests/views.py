"""Device-neutral helpers for tests of views on an asynchronous device (sim,
mps): dtypes, numpy references of views, tensors produced by a still-pending
device command, and hypothesis draws of input and output views."""

from __future__ import annotations

from typing import Sequence

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

from aotishim import shim

NP_DTYPES = {"float32": np.dtype(np.float32), "bfloat16": np.dtype(ml_dtypes.bfloat16)}


def f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def extent_bytes(sizes: Sequence[int], strides: Sequence[int], itemsize: int) -> int:
    if any(s == 0 for s in sizes):
        return 0
    return (1 + sum((s - 1) * st_ for s, st_ in zip(sizes, strides))) * itemsize


def gather(base: np.ndarray, sizes: Sequence[int], strides: Sequence[int], offset: int) -> np.ndarray:
    """The elements a view (sizes, strides, offset in elements) of a 1-D array sees."""
    return np.lib.stride_tricks.as_strided(
        base[offset:], tuple(sizes), tuple(s * base.itemsize for s in strides)).copy()


def produced_on_device(arr: np.ndarray, device: str) -> shim.Tensor:
    """A tensor on `device` holding arr whose bytes are written by a device
    command still pending on the stream (as an earlier kernel's output would be)."""
    staging = shim.from_numpy(np.ascontiguousarray(arr), copy=True, device=device)
    t = shim.empty_strided(list(arr.shape), None, dtype=str(arr.dtype), device=device)
    shim.copy_(t, staging)
    return t


def draw_input_view(data, sizes, dtype: str, seed: int, device: str):
    """A view with arbitrary non-negative strides (broadcasts and overlaps
    included) at an offset of a buffer whose write is still pending, and the
    float64 values it holds. Small integers keep every product and sum exact
    in float32 and bfloat16."""
    strides = [data.draw(st.integers(0, 7)) for _ in sizes]
    offset = data.draw(st.integers(0, 9))
    extent = 1 + sum((s - 1) * st_ for s, st_ in zip(sizes, strides))
    length = offset + extent + data.draw(st.integers(0, 4))
    base = np.random.default_rng(seed).integers(-3, 4, length).astype(NP_DTYPES[dtype])
    view = shim.reinterpret_tensor(produced_on_device(base, device), list(sizes), strides, offset)
    return view, f64(gather(base, sizes, strides, offset))


def draw_output_view(data, sizes, dtype: str, device: str):
    """A view that never overlaps itself (dims laid out in a random order,
    with padding) at an offset into a larger buffer of known contents whose
    write is still pending. Returns (buffer, its contents, view, strides, offset)."""
    perm = data.draw(st.permutations(range(len(sizes))))
    strides = [0] * len(sizes)
    step = 1
    for d in reversed(perm):
        strides[d] = step
        step = step * sizes[d] + data.draw(st.integers(0, 2))
    offset = data.draw(st.integers(0, 6))
    extent = 1 + sum((s - 1) * st_ for s, st_ in zip(sizes, strides))
    init = np.full(offset + extent + 3, 77, dtype=NP_DTYPES[dtype])
    buf = produced_on_device(init, device)
    return buf, init, shim.reinterpret_tensor(buf, list(sizes), strides, offset), strides, offset


def expect_buffer(buf, init, strides, offset, sizes, values, dtype: str) -> None:
    """buf holds values (rounded to dtype) in the view (sizes, strides,
    offset) and init everywhere else, byte for byte."""
    want = f64(init)
    np.lib.stride_tricks.as_strided(
        want[offset:], tuple(sizes), tuple(s * 8 for s in strides))[...] = values
    np.testing.assert_array_equal(f64(shim.to_numpy(buf)), f64(want.astype(NP_DTYPES[dtype])))

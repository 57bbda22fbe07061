"""Helpers shared by the sim device tests."""

from __future__ import annotations

from typing import Iterator, Sequence

import ml_dtypes
import numpy as np
import pytest

import aotishim
from aotishim import shim, sim

NP_DTYPES = {"float32": np.dtype(np.float32), "bfloat16": np.dtype(ml_dtypes.bfloat16)}


@pytest.fixture
def sim_device() -> Iterator[None]:
    """Default sim settings (fifo, checker on); afterwards the queue runs and
    the test's tensors are released, whatever the test left behind."""
    sim.configure()
    try:
        yield
    finally:
        sim.configure(checker=False)
        aotishim.synchronize("sim")  # runs what a failing test left queued
        shim.cleanup_memory()
        sim.configure()


def extent_bytes(sizes: Sequence[int], strides: Sequence[int], itemsize: int) -> int:
    if any(s == 0 for s in sizes):
        return 0
    return (1 + sum((s - 1) * st for s, st in zip(sizes, strides))) * itemsize


def gather(base: np.ndarray, sizes: Sequence[int], strides: Sequence[int], offset: int) -> np.ndarray:
    """The elements a view (sizes, strides, offset in elements) of a 1-D array sees."""
    item = base.itemsize
    return np.lib.stride_tricks.as_strided(
        base[offset:], shape=tuple(sizes), strides=tuple(s * item for s in strides)).copy()


def produced_on_device(arr: np.ndarray) -> shim.Tensor:
    """A sim tensor holding arr whose bytes are written by a device command
    still pending on the stream (as an earlier kernel's output would be)."""
    staging = shim.from_numpy(arr, copy=True, device="sim")
    t = shim.empty_strided(list(arr.shape), None, dtype=str(arr.dtype), device="sim")
    shim.copy_(t, staging)
    return t


def sim_counters() -> dict:
    return dict(sim.counters())


def delta(before: dict, after: dict) -> dict:
    return {k: after[k] - before[k] for k in before}


def host_pack_old(view: shim.Tensor) -> shim.Tensor:
    """The old host path for a view an op needs packed: copy its elements on
    the host from data_ptr (which includes the storage offset), waiting for
    the device only when that exact address is a buffer base with pending
    writes. For a view at an offset it never is."""
    addr = view.data_ptr
    if sim.is_buffer_base(addr) and sim.has_pending_writes_exact_base(addr):
        aotishim.synchronize("sim")
    dt = NP_DTYPES[view.dtype]
    raw = sim.host_read(addr, extent_bytes(view.sizes, view.strides, dt.itemsize))
    flat = np.frombuffer(raw, dtype=dt)
    packed = gather(flat, view.sizes, view.strides, 0)
    return shim.from_numpy(packed, copy=True, device="sim")

"""Helpers specific to the sim device tests (device-neutral ones are in views.py)."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pytest

import aotishim
from aotishim import shim, sim

from views import NP_DTYPES, extent_bytes, gather


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

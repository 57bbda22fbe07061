"""Random buffers and random in-bounds views fed to mm/bmm on the sim device
with random scheduler settings: results equal numpy, bytes outside the output
view are untouched, and the checker reports nothing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aotishim import shim, sim

from _sim_common import NP_DTYPES, gather, produced_on_device, sim_device  # noqa: F401

pytestmark = pytest.mark.usefixtures("sim_device")

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def draw_scheduler(data) -> None:
    sim.configure(order=data.draw(st.sampled_from(sim.ORDERS)),
                  seed=data.draw(st.integers(0, 2**32 - 1)),
                  flush_interval=data.draw(st.sampled_from([0, 0, 1, 3])),
                  checker=True)


def draw_input_view(data, sizes, dtype, seed):
    """A buffer produced on the device (its write still pending) and a view
    of it with arbitrary non-negative strides (broadcasts and overlaps
    included) at an offset."""
    strides = [data.draw(st.integers(0, 7)) for _ in sizes]
    offset = data.draw(st.integers(0, 9))
    extent = 1 + sum((s - 1) * st_ for s, st_ in zip(sizes, strides))
    length = offset + extent + data.draw(st.integers(0, 4))
    # Small integers keep every product and sum exact in float32 and bfloat16.
    base = np.random.default_rng(seed).integers(-3, 4, length).astype(NP_DTYPES[dtype])
    buf = produced_on_device(base)
    view = shim.reinterpret_tensor(buf, list(sizes), strides, offset)
    return view, gather(base, sizes, strides, offset).astype(np.float64)


def draw_output_view(data, sizes, dtype):
    """A view that never overlaps itself (dims laid out in a random order,
    with padding), at an offset into a larger buffer of known contents."""
    perm = data.draw(st.permutations(range(len(sizes))))
    strides = [0] * len(sizes)
    step = 1
    for d in reversed(perm):
        strides[d] = step
        step = step * sizes[d] + data.draw(st.integers(0, 2))
    offset = data.draw(st.integers(0, 6))
    extent = 1 + sum((s - 1) * st_ for s, st_ in zip(sizes, strides))
    init = np.full(offset + extent + 3, 77, dtype=NP_DTYPES[dtype])
    buf = produced_on_device(init)
    return buf, init, shim.reinterpret_tensor(buf, list(sizes), strides, offset), strides, offset


def check(buf, init, out_strides, offset, sizes, expected, dtype):
    want = init.astype(np.float64)
    np.lib.stride_tricks.as_strided(want[offset:], tuple(sizes), tuple(s * 8 for s in out_strides))[...] = expected
    got = shim.to_numpy(buf).astype(np.float64)
    np.testing.assert_array_equal(got, want.astype(NP_DTYPES[dtype]).astype(np.float64))


@SETTINGS
@given(data=st.data())
def test_mm_random_views(data):
    draw_scheduler(data)
    dtype = data.draw(st.sampled_from(["float32", "bfloat16"]))
    m, k, n = (data.draw(st.integers(1, 5)) for _ in range(3))
    hazards = sim.counters()["hazards"]
    a, ra = draw_input_view(data, (m, k), dtype, 1)
    b, rb = draw_input_view(data, (k, n), dtype, 2)
    buf, init, out, strides, offset = draw_output_view(data, (m, n), dtype)
    shim.mm(out, a, b)
    check(buf, init, strides, offset, (m, n), ra @ rb, dtype)
    assert sim.counters()["hazards"] == hazards


@SETTINGS
@given(data=st.data())
def test_bmm_random_views(data):
    draw_scheduler(data)
    dtype = data.draw(st.sampled_from(["float32", "bfloat16"]))
    bt, m, k, n = (data.draw(st.integers(1, 4)) for _ in range(4))
    hazards = sim.counters()["hazards"]
    a, ra = draw_input_view(data, (bt, m, k), dtype, 3)
    b, rb = draw_input_view(data, (bt, k, n), dtype, 4)
    buf, init, out, strides, offset = draw_output_view(data, (bt, m, n), dtype)
    shim.bmm(out, a, b)
    check(buf, init, strides, offset, (bt, m, n), ra @ rb, dtype)
    assert sim.counters()["hazards"] == hazards

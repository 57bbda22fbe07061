"""Random buffers and random in-bounds views fed to mm/bmm on the sim device
with random scheduler settings: results equal numpy, bytes outside the output
view are untouched, and the checker reports nothing."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aotishim import shim, sim

from _sim_common import sim_device  # noqa: F401
from views import draw_input_view, draw_output_view, expect_buffer

pytestmark = pytest.mark.usefixtures("sim_device")

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def draw_scheduler(data) -> None:
    sim.configure(order=data.draw(st.sampled_from(sim.ORDERS)),
                  seed=data.draw(st.integers(0, 2**32 - 1)),
                  flush_interval=data.draw(st.sampled_from([0, 0, 1, 3])),
                  checker=True)


@SETTINGS
@given(data=st.data())
def test_mm_random_views(data):
    draw_scheduler(data)
    dtype = data.draw(st.sampled_from(["float32", "bfloat16"]))
    m, k, n = (data.draw(st.integers(1, 5)) for _ in range(3))
    hazards = sim.counters()["hazards"]
    a, ra = draw_input_view(data, (m, k), dtype, 1, "sim")
    b, rb = draw_input_view(data, (k, n), dtype, 2, "sim")
    buf, init, out, strides, offset = draw_output_view(data, (m, n), dtype, "sim")
    shim.mm(out, a, b)
    expect_buffer(buf, init, strides, offset, (m, n), ra @ rb, dtype)
    assert sim.counters()["hazards"] == hazards


@SETTINGS
@given(data=st.data())
def test_bmm_random_views(data):
    draw_scheduler(data)
    dtype = data.draw(st.sampled_from(["float32", "bfloat16"]))
    bt, m, k, n = (data.draw(st.integers(1, 4)) for _ in range(4))
    hazards = sim.counters()["hazards"]
    a, ra = draw_input_view(data, (bt, m, k), dtype, 3, "sim")
    b, rb = draw_input_view(data, (bt, k, n), dtype, 4, "sim")
    buf, init, out, strides, offset = draw_output_view(data, (bt, m, n), dtype, "sim")
    shim.bmm(out, a, b)
    expect_buffer(buf, init, strides, offset, (bt, m, n), ra @ rb, dtype)
    assert sim.counters()["hazards"] == hazards

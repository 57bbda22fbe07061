"""Views at storage offsets on the sim device: the call sequences AOTInductor
generates for chunk views read finished data in every scheduler order, and
the two old algorithms demonstrably read unfinished data."""

from __future__ import annotations

import numpy as np
import pytest

import aotishim
from aotishim import _core, shim, sim

from _sim_common import host_pack_old, sim_device  # noqa: F401
from chunk_replay import CASES, FIRST_DIM, LAST_DIM, ChunkReplay
from views import NP_DTYPES

pytestmark = pytest.mark.usefixtures("sim_device")


def replay(case, dtype) -> ChunkReplay:
    return ChunkReplay(case, dtype, "sim")


@pytest.mark.parametrize("order", sim.ORDERS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_chunk_view_reads_finished_data(case, dtype, order):
    sim.configure(order=order, seed=1234, checker=True)
    model = replay(case, dtype)
    hazards = sim.counters()["hazards"]
    buf0 = model.first_linear()
    chunk = shim.reinterpret_tensor(buf0, list(case.sizes), list(case.strides), case.offset)
    assert chunk.data_ptr == buf0.data_ptr + case.offset * NP_DTYPES[dtype].itemsize
    buf1 = model.second_linear(chunk)
    # Nothing has run yet: the chunk's producer is still pending when its
    # consumer is recorded.
    assert sim.pending_commands() > 0
    # Reading the chunk itself (from an interior address) waits too.
    np.testing.assert_allclose(shim.to_numpy(chunk).astype(np.float64), model.chunk,
                               rtol=1e-6, atol=1e-6)
    assert sim.pending_commands() == 0
    model.check(shim.to_numpy(buf1))
    assert sim.counters()["hazards"] == hazards


# ---- the old algorithms, reproduced test-side, must fail ----

OLD = ["host_copy_exact_base", "no_copy_alias"]


def consume_the_old_way(algorithm: str, chunk):
    if algorithm == "host_copy_exact_base":
        return host_pack_old(chunk)
    return sim.make_alias(chunk)


def test_exact_base_lookup_misses_views_at_an_offset():
    """Why the old host copy never waited: data_ptr of a view at an offset is
    not a buffer base, so an exact-address lookup finds nothing pending,
    while a lookup by range finds the pending producer."""
    model = replay(LAST_DIM, "float32")
    buf0 = model.first_linear()
    chunk0 = shim.reinterpret_tensor(buf0, [12, 8], [16, 1], 0)
    chunk1 = shim.reinterpret_tensor(buf0, [12, 8], [16, 1], 8)
    assert sim.is_buffer_base(chunk0.data_ptr) and sim.has_pending_writes_exact_base(chunk0.data_ptr)
    assert not sim.is_buffer_base(chunk1.data_ptr)
    assert not sim.has_pending_writes_exact_base(chunk1.data_ptr)
    assert sim.has_pending_writes(chunk1.data_ptr)


@pytest.mark.parametrize("algorithm", OLD)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_old_algorithm_is_reported_by_the_checker(case, dtype, algorithm):
    model = replay(case, dtype)
    before = sim.counters()["hazards"]
    buf0 = model.first_linear()
    chunk = shim.reinterpret_tensor(buf0, list(case.sizes), list(case.strides), case.offset)
    with pytest.raises(shim.ShimError) as info:
        model.second_linear(consume_the_old_way(algorithm, chunk))
    message = str(info.value)
    assert "sim hazard" in message
    # Both sides: the unfinished producer of buf0 and the access that raced it.
    assert "'gemm' " in message and "writes out" in message
    if algorithm == "host_copy_exact_base":
        assert "raw host read" in message
    else:
        assert "reads a" in message and "different buffer objects" in message
    assert sim.counters()["hazards"] == before + 1


@pytest.mark.parametrize("algorithm", OLD)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_old_algorithm_gives_wrong_numbers_without_the_checker(case, dtype, algorithm):
    """Without the checker the old algorithms read poison: the numbers are
    wrong, so the tests above cannot pass vacuously. (The alias only goes
    wrong when the scheduler runs its reader first, as a GPU may: reverse.)"""
    sim.configure(order="reverse", checker=False)
    model = replay(case, dtype)
    buf0 = model.first_linear()
    chunk = shim.reinterpret_tensor(buf0, list(case.sizes), list(case.strides), case.offset)
    result = shim.to_numpy(model.second_linear(consume_the_old_way(algorithm, chunk)))
    assert np.isnan(result.astype(np.float64)).any()
    with pytest.raises(AssertionError):
        model.check(result)


def test_alias_happens_to_work_in_submission_order():
    """The defect hides when work runs in submission order: the reason the
    sim reorders independent commands at all."""
    sim.configure(order="fifo", checker=False)
    model = replay(FIRST_DIM, "float32")
    buf0 = model.first_linear()
    chunk = shim.reinterpret_tensor(buf0, [6, 16], [16, 1], 96)
    model.check(shim.to_numpy(model.second_linear(sim.make_alias(chunk))))


# ---- outputs: one handle in several slots ----

@pytest.mark.parametrize("order", sim.ORDERS)
def test_repeated_output_handle_is_deleted_once(order):
    """A program returning (y, z, y): AOTInductor sets output_handles[2] =
    output_handles[0]. Outputs are right, and each handle is deleted once."""
    sim.configure(order=order, seed=5)
    model = replay(FIRST_DIM, "float32")
    buf0 = model.first_linear()
    z = model.second_linear(shim.reinterpret_tensor(buf0, [6, 16], [16, 1], 96))
    y = buf0
    slots = [y, z, y]
    values = [shim.to_numpy(t) for t in slots]
    model.check(values[1])
    np.testing.assert_array_equal(values[0], values[2])
    np.testing.assert_allclose(values[0][6:], model.chunk, rtol=1e-6, atol=1e-6)

    released = aotishim.memory_stats()["released_handles"]
    # The product's last-slot rule (what Model.run uses), not a copy of it.
    _core.release_outputs([t.handle for t in slots], None)
    assert aotishim.memory_stats()["released_handles"] == released + 2
    assert not shim.is_live(y) and not shim.is_live(z)
    # Deleting every slot, as the old runner did, deletes y a second time:
    with pytest.raises(shim.ShimError, match="already deleted"):
        shim.delete(slots[2])
    assert aotishim.memory_stats()["released_handles"] == released + 2

"""Views at storage offsets on the sim device: the call sequences AOTInductor
generates for chunk views read finished data in every scheduler order, and
the two old algorithms demonstrably read unfinished data."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import aotishim
from aotishim import shim, sim

from _sim_common import NP_DTYPES, host_pack_old, sim_device  # noqa: F401

pytestmark = pytest.mark.usefixtures("sim_device")


@dataclass(frozen=True)
class ChunkCase:
    """fc2(chunk(fc1(x), 2, dim)[1]) with fc1 = Linear(7, 16) on x of (12, 7):
    the second chunk is reinterpret_tensor(buf0, sizes, strides, offset)."""
    name: str
    sizes: tuple
    strides: tuple
    offset: int

    @property
    def in2(self) -> int:
        return self.sizes[1]


LAST_DIM = ChunkCase("LinearChunkLastDim", (12, 8), (16, 1), 8)
FIRST_DIM = ChunkCase("LinearChunkFirstDim", (6, 16), (16, 1), 96)
CASES = [LAST_DIM, FIRST_DIM]
OUT2 = 5


def round_to(a: np.ndarray, dtype: str) -> np.ndarray:
    return a.astype(NP_DTYPES[dtype]).astype(np.float64)


class Model:
    """Weights and the numpy reference of one case."""

    def __init__(self, case: ChunkCase, dtype: str):
        rng = np.random.default_rng(7)
        dt = NP_DTYPES[dtype]
        self.case, self.dtype = case, dtype
        self.x = rng.standard_normal((12, 7)).astype(dt)
        self.w1 = rng.standard_normal((16, 7)).astype(dt)
        self.b1 = rng.standard_normal(16).astype(dt)
        self.w2 = rng.standard_normal((OUT2, case.in2)).astype(dt)
        self.b2 = rng.standard_normal(OUT2).astype(dt)
        f = lambda a: a.astype(np.float64)  # noqa: E731
        buf0 = round_to(f(self.x) @ f(self.w1).T + f(self.b1), dtype).reshape(-1)
        chunk = np.lib.stride_tricks.as_strided(
            buf0[case.offset:], case.sizes, tuple(s * 8 for s in case.strides))
        self.chunk = chunk.copy()
        self.expected = chunk @ f(self.w2).T + f(self.b2)

    def check(self, result: np.ndarray) -> None:
        tol = 1e-5 if self.dtype == "float32" else 3e-2
        np.testing.assert_allclose(result.astype(np.float64), self.expected, rtol=tol, atol=tol)

    def first_linear(self):
        """buf0 = addmm(b1, x, w1.T) on sim, as the generated code calls it."""
        X = shim.from_numpy(self.x, copy=True, device="sim")
        W1 = shim.from_numpy(self.w1, copy=True, device="sim")
        B1 = shim.from_numpy(self.b1, copy=True, device="sim")
        buf0 = shim.empty_strided([12, 16], [16, 1], dtype=self.dtype, device="sim")
        shim.addmm(buf0, B1, X, shim.reinterpret_tensor(W1, [7, 16], [1, 7], 0), beta=1.0, alpha=1.0)
        return buf0

    def second_linear(self, chunk):
        W2 = shim.from_numpy(self.w2, copy=True, device="sim")
        B2 = shim.from_numpy(self.b2, copy=True, device="sim")
        rows = self.case.sizes[0]
        buf1 = shim.empty_strided([rows, OUT2], [OUT2, 1], dtype=self.dtype, device="sim")
        shim.addmm(buf1, B2, chunk, shim.reinterpret_tensor(W2, [self.case.in2, OUT2], [1, self.case.in2], 0),
                   beta=1.0, alpha=1.0)
        return buf1


@pytest.mark.parametrize("order", sim.ORDERS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_chunk_view_reads_finished_data(case, dtype, order):
    sim.configure(order=order, seed=1234, checker=True)
    model = Model(case, dtype)
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
    model = Model(LAST_DIM, "float32")
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
    model = Model(case, dtype)
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
    model = Model(case, dtype)
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
    model = Model(FIRST_DIM, "float32")
    buf0 = model.first_linear()
    chunk = shim.reinterpret_tensor(buf0, [6, 16], [16, 1], 96)
    model.check(shim.to_numpy(model.second_linear(sim.make_alias(chunk))))


# ---- outputs: one handle in several slots ----

def release_outputs(slots: list) -> int:
    """Deletes each handle at the last slot that holds it; returns how many."""
    deleted = 0
    for i, t in enumerate(slots):
        if all(t.handle != later.handle for later in slots[i + 1:]):
            shim.delete(t)
            deleted += 1
    return deleted


@pytest.mark.parametrize("order", sim.ORDERS)
def test_repeated_output_handle_is_deleted_once(order):
    """A program returning (y, z, y): AOTInductor sets output_handles[2] =
    output_handles[0]. Outputs are right, and each handle is deleted once."""
    sim.configure(order=order, seed=5)
    model = Model(FIRST_DIM, "float32")
    buf0 = model.first_linear()
    z = model.second_linear(shim.reinterpret_tensor(buf0, [6, 16], [16, 1], 96))
    y = buf0
    slots = [y, z, y]
    values = [shim.to_numpy(t) for t in slots]
    model.check(values[1])
    np.testing.assert_array_equal(values[0], values[2])
    np.testing.assert_allclose(values[0][6:], model.chunk, rtol=1e-6, atol=1e-6)

    released = aotishim.memory_stats()["released_handles"]
    assert release_outputs(slots) == 2
    assert aotishim.memory_stats()["released_handles"] == released + 2
    assert not shim.is_live(y) and not shim.is_live(z)
    # Deleting every slot, as the old runner did, deletes y a second time:
    with pytest.raises(shim.ShimError, match="already deleted"):
        shim.delete(slots[2])
    assert aotishim.memory_stats()["released_handles"] == released + 2

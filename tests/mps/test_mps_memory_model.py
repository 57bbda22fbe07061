"""The memory model on the mps device over the host Metal, with sim's rules:
commands that no buffer object orders run in any order (fifo, reverse,
seeded shuffle), committed work can be held back until the host waits
(deferred, as a slow GPU), fresh memory is poisoned, and the host Metal's
hazard checker turns a host access of bytes with pending device writes, or
two commands racing through aliases, into an error naming both sides.

The scenarios: views at storage offsets read and written after the device
wrote them (AOTInductor's chunk views, cat-style output views), constants
at interior addresses of a blob, and the two old algorithms reproduced
test-side (a host copy that waits only for exact base addresses; a second
buffer object over a view's bytes), which must fail: reported by the
checker, wrong numbers without it. Needs the host Metal's controls
(aotishim._core.host_metal): Linux builds with AOTISHIM_METAL_HOST.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import aotishim
from aotishim import _core, shim

from chunk_replay import CASES, FIRST_DIM, LAST_DIM, ChunkReplay
from views import NP_DTYPES, draw_input_view, draw_output_view, expect_buffer, extent_bytes, f64, gather, produced_on_device

REQUIRED = os.environ.get("AOTISHIM_REQUIRE_MPS") == "1"
HOST = getattr(_core, "host_metal", None)
if REQUIRED and "mps" not in aotishim.devices():
    raise RuntimeError(f"AOTISHIM_REQUIRE_MPS=1 but aotishim.devices() is {aotishim.devices()}")
pytestmark = pytest.mark.skipif("mps" not in aotishim.devices() or HOST is None
                                or not hasattr(HOST, "configure"),
                                reason="needs the mps device over the host Metal (AOTISHIM_METAL_HOST)")
ORDERS = ["fifo", "reverse", "shuffle"]


@pytest.fixture(autouse=True)
def host_metal(monkeypatch):
    """Checker on, fifo, eager; afterwards the queue runs with the checker
    off and the test's tensors are released, whatever the test left."""
    monkeypatch.delenv("AOTISHIM_MPS_GEMM", raising=False)
    HOST.configure()
    # The device exists from here on (memory_stats lists created devices
    # only), whichever test this process runs first; nothing is pending.
    aotishim.synchronize("mps")
    try:
        yield HOST
    finally:
        HOST.configure(checker=False)
        try:
            aotishim.synchronize("mps")
        finally:
            shim.cleanup_memory()
            HOST.configure()


def counters() -> dict:
    d = next(d for d in aotishim.memory_stats()["devices"] if d["device"] == "mps:0")
    return {"synchronizes": d["synchronizes"], "hazards": HOST.hazards()}


def delta(before: dict) -> dict:
    after = counters()
    return {k: after[k] - before[k] for k in before}


def ints(shape, seed=0, dtype=np.float32):
    """Small integers: every product and sum below is exact in float32."""
    return np.random.default_rng(seed).integers(-3, 4, size=shape).astype(dtype)


def to_mps(a: np.ndarray) -> shim.Tensor:
    return shim.from_numpy(np.ascontiguousarray(a), copy=True, device="mps")


def alias(t: shim.Tensor) -> shim.Tensor:
    return shim.Tensor(HOST.make_alias(t.handle))


# ---- the device itself ----

def test_fresh_memory_is_poisoned():
    f32 = shim.empty_strided([4], None, dtype="float32", device="mps")
    bf16 = shim.empty_strided([4], None, dtype="bfloat16", device="mps")
    assert np.isnan(shim.to_numpy(f32)).all()
    assert np.isnan(shim.to_numpy(bf16).astype(np.float32)).all()
    assert HOST.host_read(f32.data_ptr, 16) == b"\xff" * 16


def test_work_is_deferred_until_the_host_waits():
    HOST.configure(deferred=True)
    a, b = ints((3, 4), 1), ints((4, 2), 2)
    out = shim.empty_strided([3, 2], None, dtype="float32", device="mps")
    shim.mm(out, to_mps(a), to_mps(b))
    before = counters()
    # Reading out without waiting is a hazard naming both sides...
    with pytest.raises(shim.ShimError, match=r"host Metal hazard: host read \(raw host read\) of buffer object .* "
                       r"\(matrix product\) of command buffer #\d+ \(not committed\) writes result matrix"):
        HOST.host_read(out.data_ptr, 4)
    assert delta(before)["hazards"] == 1
    # ...and with the checker off it shows poison: nothing ran.
    HOST.configure(deferred=True, checker=False)
    assert HOST.host_read(out.data_ptr, 4) == b"\xff" * 4
    HOST.configure(deferred=True)
    aotishim.synchronize("mps")
    np.testing.assert_array_equal(shim.to_numpy(out), a @ b)


def test_committed_work_is_pending_until_seen_complete():
    """Deferred: a committed command buffer still runs nothing, and the
    host may not read what it writes until it waited."""
    HOST.configure(deferred=True)
    x = ints((4, 4), 3)
    X = to_mps(x)
    out = shim.empty_strided([4, 4], None, dtype="float32", device="mps")
    shim.mm(out, X, X)
    other = shim.empty_strided([4], None, dtype="float32", device="mps")
    shim.to_numpy(other)  # commits nothing: other has no pending work
    with pytest.raises(shim.ShimError, match="not committed"):
        HOST.host_read(out.data_ptr, 4)
    np.testing.assert_array_equal(shim.to_numpy(out), x @ x)


def test_idle_read_does_not_wait_busy_read_waits_once():
    x = ints((4, 4), 3)
    X = to_mps(x)
    out = shim.empty_strided([4, 4], None, dtype="float32", device="mps")
    HOST.configure(deferred=True)
    shim.mm(out, X, X)
    # X is only read by the pending product: reading it needs no wait.
    before = counters()
    np.testing.assert_array_equal(shim.to_numpy(X), x)
    assert delta(before) == {"synchronizes": 0, "hazards": 0}
    # out has a pending write: one wait, then it is idle again.
    np.testing.assert_array_equal(shim.to_numpy(out), x @ x)
    assert delta(before)["synchronizes"] == 1
    before = counters()
    np.testing.assert_array_equal(shim.to_numpy(out), x @ x)
    assert delta(before) == {"synchronizes": 0, "hazards": 0}


@pytest.mark.parametrize("sizes,strides,offset", [([2, 3], [8, 1], 13), ([2, 8], [8, 1], 16)])
def test_read_of_a_view_at_an_offset_waits_for_its_allocation(sizes, strides, offset):
    """The wait is found by range: a view at an offset into a buffer with a
    pending write waits, exactly once (strided, and packed from an interior
    pointer)."""
    HOST.configure(deferred=True)
    x = ints((4, 8), 4)
    buf = produced_on_device(x, "mps")
    view = shim.reinterpret_tensor(buf, sizes, strides, offset)
    assert not HOST.is_buffer_base(view.data_ptr)
    before = counters()
    np.testing.assert_array_equal(shim.to_numpy(view), gather(x.reshape(-1), sizes, strides, offset))
    assert delta(before) == {"synchronizes": 1, "hazards": 0}


@pytest.mark.parametrize("order", ORDERS)
def test_dependent_commands_keep_their_order_in_every_schedule(order):
    """Copies into four buffers, then a product reading one of them, held
    back and run together: every schedule keeps the product after its
    producer, and nothing is reported."""
    HOST.configure(order=order, seed=3, deferred=True)
    srcs = [to_mps(ints((2, 2), i)) for i in range(4)]
    dsts = [shim.empty_strided([2, 2], None, dtype="float32", device="mps") for _ in range(4)]
    for s, d in zip(srcs, dsts):
        shim.copy_(d, s)
    out = shim.empty_strided([2, 2], None, dtype="float32", device="mps")
    shim.mm(out, dsts[0], srcs[1])
    before = counters()
    np.testing.assert_array_equal(shim.to_numpy(out), ints((2, 2), 0) @ ints((2, 2), 1))
    for i, d in enumerate(dsts):
        np.testing.assert_array_equal(shim.to_numpy(d), ints((2, 2), i))
    assert delta(before)["hazards"] == 0


@pytest.mark.parametrize("order", ["reverse", "shuffle"])
def test_output_view_at_an_offset_is_written_in_place(order):
    """cat-style: an op writes its result into a view of a larger buffer."""
    HOST.configure(order=order, seed=5, deferred=True)
    init = np.full(8 * 4, 100.0, dtype=np.float32)
    big = produced_on_device(init, "mps")
    a, b = ints((3, 2), 8), ints((2, 3), 9)
    view = shim.reinterpret_tensor(big, [3, 3], [4, 1], 5)
    shim.mm(view, to_mps(a), to_mps(b))
    expected = init.copy()
    np.lib.stride_tricks.as_strided(expected[5:], (3, 3), (16, 4))[...] = a @ b
    np.testing.assert_array_equal(shim.to_numpy(big), expected)


def test_borrowed_storage_over_mps_memory_binds_the_containing_allocation():
    """A tensor created from a blob at an interior address of an mps
    allocation binds that allocation's buffer: ordered after the pending
    writer, no hazard (a second buffer object there would be one)."""
    HOST.configure(order="reverse", deferred=True)
    x = ints((4, 4), 14)
    buf = produced_on_device(x, "mps")
    inner = shim.from_blob(buf.data_ptr + 16, [2, 4], None, 0, dtype="float32", device="mps")
    out = shim.empty_strided([2, 4], None, dtype="float32", device="mps")
    before = counters()
    shim.mm(out, inner, to_mps(np.eye(4, dtype=np.float32)))
    np.testing.assert_array_equal(shim.to_numpy(out), x[1:3])
    assert delta(before)["hazards"] == 0


def test_host_write_through_an_alias_is_a_hazard():
    """Uploading into an alias does not wait for work on the parent's
    buffer object: the checker reports it, and the product's result stands."""
    x = ints((4, 4), 10)
    X = to_mps(x)
    out = shim.empty_strided([4, 4], None, dtype="float32", device="mps")
    shim.mm(out, X, X)
    view = alias(shim.reinterpret_tensor(out, [2, 4], [4, 1], 8))
    with pytest.raises(shim.ShimError, match=r"host write \(upload destination\) .* "
                       r"\(matrix product\) .* writes result matrix.*did not wait"):
        shim.copy_(view, shim.from_numpy(np.zeros((2, 4), np.float32)))
    np.testing.assert_array_equal(shim.to_numpy(out), x @ x)


def mps_allocations() -> int:
    return next(d["allocations"] for d in aotishim.memory_stats()["devices"] if d["device"] == "mps:0")


def test_alias_is_a_different_buffer_object_over_the_same_bytes():
    x = ints((4, 4), 11)
    before = mps_allocations()
    X = to_mps(x)
    a = alias(X)
    assert a.data_ptr == X.data_ptr
    assert mps_allocations() == before + 1  # no second allocation
    np.testing.assert_array_equal(shim.to_numpy(a), x)
    # The alias keeps the parent's bytes alive, and only until it dies.
    shim.delete(X)
    np.testing.assert_array_equal(shim.to_numpy(a), x)
    assert mps_allocations() == before + 1
    shim.delete(a)
    assert mps_allocations() == before


def test_raw_host_read_of_idle_memory_is_allowed():
    x = ints((2, 2), 12)
    X = to_mps(x)
    assert np.frombuffer(HOST.host_read(X.data_ptr, 16), np.float32).tolist() == x.reshape(-1).tolist()
    with pytest.raises(shim.ShimError, match="reaches past its allocation"):
        HOST.host_read(X.data_ptr + 8, 16)


def test_unknown_order_is_refused():
    with pytest.raises(shim.ShimError, match="unknown order 'backwards'"):
        HOST.configure(order="backwards")


# ---- constants blobs: freed memory comes back poisoned ----

def _c():
    here = pathlib.Path(aotishim.__file__).resolve().parent
    lib = ctypes.CDLL(str(here / "libaotishim.so"), mode=ctypes.RTLD_GLOBAL)
    lib.aoti_torch_mps_malloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    lib.aoti_torch_mps_free.argtypes = [ctypes.c_void_p]
    return lib


def test_freed_blob_comes_back_poisoned_at_its_address():
    lib, blob = _c(), ctypes.c_void_p()
    assert lib.aoti_torch_mps_malloc(ctypes.byref(blob), 4096) == 0
    t = shim.from_blob(blob.value, [4], None, 0, dtype="float32", device="mps")
    shim.copy_(t, to_mps(np.zeros(4, np.float32)))
    np.testing.assert_array_equal(shim.to_numpy(t), np.zeros(4, np.float32))
    shim.delete(t)
    first = blob.value
    assert lib.aoti_torch_mps_free(blob) == 0
    assert lib.aoti_torch_mps_malloc(ctypes.byref(blob), 4096) == 0
    assert blob.value == first  # last freed, first reused
    assert HOST.host_read(blob.value, 16) == b"\xff" * 16
    assert lib.aoti_torch_mps_free(blob) == 0


# ---- views at offsets: AOTInductor's chunk call sequences ----

def replay(case, dtype) -> ChunkReplay:
    return ChunkReplay(case, dtype, "mps")


@pytest.mark.parametrize("gemm", ["mps", "kernel"])
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_chunk_view_reads_finished_data(case, dtype, order, gemm, monkeypatch):
    if gemm == "kernel":
        monkeypatch.setenv("AOTISHIM_MPS_GEMM", "kernel")
    HOST.configure(order=order, seed=1234, deferred=True)
    model = replay(case, dtype)
    before = counters()
    buf0 = model.first_linear()
    chunk = shim.reinterpret_tensor(buf0, list(case.sizes), list(case.strides), case.offset)
    assert chunk.data_ptr == buf0.data_ptr + case.offset * NP_DTYPES[dtype].itemsize
    buf1 = model.second_linear(chunk)
    # Nothing has run yet: the chunk's producer is still pending.
    assert HOST.has_pending_writes(buf0.data_ptr)
    # Reading the chunk itself (from an interior address) waits.
    np.testing.assert_allclose(f64(shim.to_numpy(chunk)), model.chunk, rtol=1e-6, atol=1e-6)
    assert not HOST.has_pending_writes(buf0.data_ptr)
    model.check(shim.to_numpy(buf1))
    assert delta(before)["hazards"] == 0


# ---- the old algorithms, reproduced test-side, must fail ----

OLD = ["host_copy_exact_base", "no_copy_alias"]


def host_pack_old(view: shim.Tensor) -> shim.Tensor:
    """The old host path for a view an op needs packed: copy its elements on
    the host from data_ptr (which includes the storage offset), waiting for
    the device only when that exact address is a buffer base with pending
    writes. For a view at an offset it never is."""
    addr = view.data_ptr
    if HOST.is_buffer_base(addr) and HOST.has_pending_writes(addr, exact_base=True):
        aotishim.synchronize("mps")
    dt = NP_DTYPES[view.dtype]
    raw = HOST.host_read(addr, extent_bytes(view.sizes, view.strides, dt.itemsize))
    packed = gather(np.frombuffer(raw, dtype=dt), view.sizes, view.strides, 0)
    return to_mps(packed)


def consume_the_old_way(algorithm: str, chunk):
    return host_pack_old(chunk) if algorithm == "host_copy_exact_base" else alias(chunk)


def test_exact_base_lookup_misses_views_at_an_offset():
    """Why the old host copy never waited: data_ptr of a view at an offset is
    not a buffer base, so an exact-address lookup finds nothing pending,
    while a lookup by range finds the pending producer."""
    buf0 = replay(LAST_DIM, "float32").first_linear()
    chunk0 = shim.reinterpret_tensor(buf0, [12, 8], [16, 1], 0)
    chunk1 = shim.reinterpret_tensor(buf0, [12, 8], [16, 1], 8)
    assert HOST.is_buffer_base(chunk0.data_ptr)
    assert HOST.has_pending_writes(chunk0.data_ptr, exact_base=True)
    assert not HOST.is_buffer_base(chunk1.data_ptr)
    assert not HOST.has_pending_writes(chunk1.data_ptr, exact_base=True)
    assert HOST.has_pending_writes(chunk1.data_ptr)


@pytest.mark.parametrize("algorithm", OLD)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_old_algorithm_is_reported_by_the_checker(case, dtype, algorithm):
    model = replay(case, dtype)
    before = counters()
    buf0 = model.first_linear()
    chunk = shim.reinterpret_tensor(buf0, list(case.sizes), list(case.strides), case.offset)
    with pytest.raises(shim.ShimError) as info:
        model.second_linear(consume_the_old_way(algorithm, chunk))
    message = str(info.value)
    assert "host Metal hazard" in message
    # Both sides: the unfinished producer of buf0 and the access that raced it.
    # (addmm's producer is a bias copy and a product, by MPS or our kernel)
    assert re.search(r"command \d+ \((matrix product|dispatch '\w+'|blit copy)\) of command "
                     r"buffer #\d+ \([^)]*\) writes", message), message
    if algorithm == "host_copy_exact_base":
        assert "host read (raw host read)" in message and "did not wait" in message
    else:
        assert re.search(r"reads (left matrix|buffer\(\d+\) \w+) = buffer object", message), message
        assert "different buffer objects" in message
    assert delta(before)["hazards"] == 1


@pytest.mark.parametrize("algorithm", OLD)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_old_algorithm_gives_wrong_numbers_without_the_checker(case, dtype, algorithm):
    """Without the checker the old algorithms read poison: the numbers are
    wrong, so the tests above cannot pass vacuously. (The alias only goes
    wrong when its reader runs first, as a GPU may: reverse.)"""
    HOST.configure(order="reverse", deferred=True, checker=False)
    model = replay(case, dtype)
    buf0 = model.first_linear()
    chunk = shim.reinterpret_tensor(buf0, list(case.sizes), list(case.strides), case.offset)
    result = shim.to_numpy(model.second_linear(consume_the_old_way(algorithm, chunk)))
    assert np.isnan(f64(result)).any()
    with pytest.raises(AssertionError):
        model.check(result)


def test_alias_happens_to_work_in_submission_order():
    """The defect hides when work runs in submission order: the reason the
    host Metal reorders independent commands at all."""
    HOST.configure(order="fifo", checker=False)
    model = replay(FIRST_DIM, "float32")
    buf0 = model.first_linear()
    chunk = shim.reinterpret_tensor(buf0, [6, 16], [16, 1], 96)
    model.check(shim.to_numpy(model.second_linear(alias(chunk))))


@pytest.mark.parametrize("order", ORDERS)
def test_repeated_output_handle_is_deleted_once(order):
    """A program returning (y, z, y): output_handles[2] = output_handles[0].
    Outputs are right in every schedule, and each handle is deleted once."""
    HOST.configure(order=order, seed=5, deferred=True)
    model = replay(FIRST_DIM, "float32")
    buf0 = model.first_linear()
    z = model.second_linear(shim.reinterpret_tensor(buf0, [6, 16], [16, 1], 96))
    slots = [buf0, z, buf0]
    values = [shim.to_numpy(t) for t in slots]
    model.check(values[1])
    np.testing.assert_array_equal(values[0], values[2])
    np.testing.assert_allclose(values[0][6:], model.chunk, rtol=1e-6, atol=1e-6)
    released = aotishim.memory_stats()["released_handles"]
    _core.release_outputs([t.handle for t in slots], None)
    assert aotishim.memory_stats()["released_handles"] == released + 2
    with pytest.raises(shim.ShimError, match="already deleted"):
        shim.delete(slots[2])


# ---- random views under random schedules ----

RANDOM = settings(max_examples=40, deadline=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture])


@RANDOM
@given(data=st.data())
def test_mm_and_bmm_random_views_random_schedules(data):
    HOST.configure(order=data.draw(st.sampled_from(ORDERS)), seed=data.draw(st.integers(0, 2**32 - 1)),
                   deferred=data.draw(st.booleans()))
    kernel = data.draw(st.booleans())
    dtype = data.draw(st.sampled_from(["float32", "bfloat16"]))
    batch = data.draw(st.sampled_from([None, 2]))
    m, k, n = (data.draw(st.integers(1, 5)) for _ in range(3))
    lead = () if batch is None else (batch,)
    before = counters()
    saved = os.environ.pop("AOTISHIM_MPS_GEMM", None)
    if kernel:
        os.environ["AOTISHIM_MPS_GEMM"] = "kernel"
    try:
        a, ra = draw_input_view(data, lead + (m, k), dtype, 1, "mps")
        b, rb = draw_input_view(data, lead + (k, n), dtype, 2, "mps")
        buf, init, out, strides, offset = draw_output_view(data, lead + (m, n), dtype, "mps")
        (shim.mm if batch is None else shim.bmm)(out, a, b)
        expect_buffer(buf, init, strides, offset, lead + (m, n), ra @ rb, dtype)
    finally:
        os.environ.pop("AOTISHIM_MPS_GEMM", None)
        if saved is not None:
            os.environ["AOTISHIM_MPS_GEMM"] = saved
        shim.cleanup_memory()
    assert delta(before)["hazards"] == 0


# ---- convolution and attention with queued work ----

@pytest.mark.parametrize("order", ["reverse", "shuffle"])
def test_conv_and_attention_order_with_queued_work(order):
    """Their kernels read inputs still being copied and their outputs are
    read by later work: right under every schedule, nothing reported."""
    pytest.importorskip("torch")
    from device_op_cases import CONV_CASES, check_conv, check_math_for_mps, qkv
    import torch
    HOST.configure(order=order, seed=7, deferred=True)
    before = counters()
    check_conv("mps", CONV_CASES[0], "offset", "contiguous", "float32")
    check_conv("mps", CONV_CASES[7], "channels_last", "contiguous", "float32", bias=False)
    mask = torch.randn(1, 2, 6, 9, generator=torch.Generator().manual_seed(8))
    check_math_for_mps("mps", *qkv(1, 2, 6, 9, 8, seed=2), "float32", mask=mask)
    check_math_for_mps("mps", *qkv(1, 2, 6, 9, 8, seed=3), "float32", causal=True)
    assert delta(before)["hazards"] == 0

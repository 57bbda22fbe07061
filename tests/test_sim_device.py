"""The sim device itself: deferred work, its ordering rules and scheduler,
poisoned memory, host reads that wait exactly when needed, the hazard
checker, and constants blobs reloaded at reused addresses."""

from __future__ import annotations

import numpy as np
import pytest

import aotishim
from aotishim import shim, sim

from _sim_common import delta, sim_counters, sim_device  # noqa: F401
from views import produced_on_device

pytestmark = pytest.mark.usefixtures("sim_device")


def ints(shape, seed=0, dtype=np.float32):
    """Small integers: every product and sum below is exact in float32."""
    return np.random.default_rng(seed).integers(-3, 4, size=shape).astype(dtype)


def test_sim_is_listed_and_counted():
    assert "sim" in aotishim.devices()
    shim.empty_strided([2], None, dtype="float32", device="sim")
    names = [d["device"] for d in aotishim.memory_stats()["devices"]]
    assert any(n.startswith("sim") for n in names)
    assert set(sim.counters()) == {"synchronizes", "hazards", "commands"}


def test_fresh_memory_is_poisoned():
    f32 = shim.empty_strided([4], None, dtype="float32", device="sim")
    bf16 = shim.empty_strided([4], None, dtype="bfloat16", device="sim")
    assert np.isnan(shim.to_numpy(f32)).all()
    assert np.isnan(shim.to_numpy(bf16).astype(np.float32)).all()
    raw = sim.host_read(f32.data_ptr, 16)
    assert raw == b"\xff" * 16


def test_work_is_deferred_until_synchronize():
    a, b = ints((3, 4), 1), ints((4, 2), 2)
    A, B = shim.from_numpy(a, copy=True, device="sim"), shim.from_numpy(b, copy=True, device="sim")
    out = shim.empty_strided([3, 2], None, dtype="float32", device="sim")
    before = sim_counters()
    shim.mm(out, A, B)
    assert sim.pending_commands() >= 1
    assert delta(before, sim_counters())["commands"] == sim.pending_commands()
    # Reading out without waiting is a hazard; with the checker off it shows
    # poison: nothing ran.
    with pytest.raises(shim.ShimError, match="raw host read .* pending command #\\d+ 'gemm' writes out"):
        sim.host_read(out.data_ptr, 4)
    with sim.configured(checker=False):
        assert sim.host_read(out.data_ptr, 4) == b"\xff" * 4
    assert sim.config()["checker"] and sim.pending_commands() > 0
    aotishim.synchronize("sim")
    assert sim.pending_commands() == 0
    np.testing.assert_array_equal(shim.to_numpy(out), a @ b)


def test_idle_read_does_not_synchronize_busy_read_does_once():
    x = ints((4, 4), 3)
    X = shim.from_numpy(x, copy=True, device="sim")
    out = shim.empty_strided([4, 4], None, dtype="float32", device="sim")
    shim.mm(out, X, X)
    pending = sim.pending_commands()
    assert pending > 0

    # X is only read by the pending command: reading it needs no wait.
    before = sim_counters()
    np.testing.assert_array_equal(shim.to_numpy(X), x)
    assert delta(before, sim_counters())["synchronizes"] == 0
    assert sim.pending_commands() == pending

    # out has a pending write: one synchronize, then it is idle again.
    before = sim_counters()
    np.testing.assert_array_equal(shim.to_numpy(out), x @ x)
    assert delta(before, sim_counters())["synchronizes"] == 1
    assert sim.pending_commands() == 0
    before = sim_counters()
    np.testing.assert_array_equal(shim.to_numpy(out), x @ x)
    assert delta(before, sim_counters())["synchronizes"] == 0


def test_read_of_a_view_at_an_offset_waits_for_its_allocation():
    """The wait is found by range: a view at an offset into a buffer with a
    pending write synchronizes, exactly once."""
    x = ints((4, 8), 4)
    buf = produced_on_device(x, "sim")
    view = shim.reinterpret_tensor(buf, [2, 3], [8, 1], 13)
    assert not sim.is_buffer_base(view.data_ptr)
    before = sim_counters()
    expected = np.lib.stride_tricks.as_strided(x.reshape(-1)[13:], (2, 3), (32, 4))
    np.testing.assert_array_equal(shim.to_numpy(view), expected)
    assert delta(before, sim_counters())["synchronizes"] == 1


def test_read_of_a_packed_view_at_an_offset_waits_for_its_allocation():
    """A contiguous view at an offset is downloaded in place, from an interior
    pointer: the wait is still found by range."""
    x = ints((4, 8), 5)
    buf = produced_on_device(x, "sim")
    view = shim.reinterpret_tensor(buf, [2, 8], [8, 1], 16)
    before = sim_counters()
    np.testing.assert_array_equal(shim.to_numpy(view), x[2:])
    assert delta(before, sim_counters()) == {"synchronizes": 1, "hazards": 0, "commands": 0}


@pytest.mark.parametrize("order", sim.ORDERS)
def test_scheduler_orders_only_through_shared_buffer_objects(order):
    """Independent commands run in the configured order; a command that
    reads what another writes always runs after it."""
    sim.configure(order=order, seed=3)
    srcs = [shim.from_numpy(ints((2, 2), i), copy=True, device="sim") for i in range(4)]
    dsts = [shim.empty_strided([2, 2], None, dtype="float32", device="sim") for _ in range(4)]
    for s, d in zip(srcs, dsts):
        shim.copy_(d, s)
    # A consumer of dsts[0] (and so ordered after the first copy).
    out = shim.empty_strided([2, 2], None, dtype="float32", device="sim")
    shim.mm(out, dsts[0], srcs[1])
    aotishim.synchronize("sim")
    ran = sim.last_execution_order()
    seqs = [int(r.split()[0][1:]) for r in ran]
    names = [r.split(maxsplit=1)[1] for r in ran]
    copies = [s for s, n in zip(seqs, names) if n == "copy"]
    assert len(copies) == 4
    if order == "fifo":
        assert seqs == sorted(seqs)
    if order == "reverse":
        assert copies == sorted(copies, reverse=True)
    # The gemm reading dsts[0] ran after the copy that wrote it.
    gemm = seqs.index(max(s for s, n in zip(seqs, names) if n == "gemm"))
    assert seqs.index(min(copies)) < gemm
    np.testing.assert_array_equal(shim.to_numpy(out), ints((2, 2), 0) @ ints((2, 2), 1))


def test_shuffle_is_deterministic_per_seed():
    def run(seed):
        sim.configure(order="shuffle", seed=seed)
        srcs = [shim.from_numpy(ints((2,), i), copy=True, device="sim") for i in range(8)]
        for s in srcs:
            shim.copy_(shim.empty_strided([2], None, dtype="float32", device="sim"), s)
        aotishim.synchronize("sim")
        seqs = [int(r.split()[0][1:]) for r in sim.last_execution_order()]
        return [s - min(seqs) for s in seqs]

    assert run(11) == run(11)
    assert any(run(11) != run(s) for s in range(12, 20))


def test_flush_interval_bounds_the_queue():
    sim.configure(flush_interval=2)
    x = shim.from_numpy(ints((2, 2)), copy=True, device="sim")
    before = sim_counters()
    for _ in range(5):
        shim.copy_(shim.empty_strided([2, 2], None, dtype="float32", device="sim"), x)
        assert sim.pending_commands() < 2
    # Flushing is the device's own business, not a host wait.
    assert delta(before, sim_counters()) == {"synchronizes": 0, "hazards": 0, "commands": 5}
    sim.configure(flush_interval=0)
    queued = sim.pending_commands()
    for _ in range(5):
        shim.copy_(shim.empty_strided([2, 2], None, dtype="float32", device="sim"), x)
    assert sim.pending_commands() == queued + 5


def test_transposed_operand_is_packed_on_the_stream():
    """An operand the kernel cannot take as is gets packed by a command,
    ordered after its producer, never by the host."""
    sim.configure(order="reverse")
    w = ints((5, 3), 6)
    W = produced_on_device(w, "sim")  # pending producer
    X = shim.from_numpy(ints((4, 3), 7), copy=True, device="sim")
    out = shim.empty_strided([4, 5], None, dtype="float32", device="sim")
    before = sim_counters()
    shim.mm(out, X, shim.reinterpret_tensor(W, [3, 5], [1, 3], 0))
    assert delta(before, sim_counters())["synchronizes"] == 0
    np.testing.assert_array_equal(shim.to_numpy(out), ints((4, 3), 7) @ w.T)
    assert any(r.endswith("pack b") for r in sim.last_execution_order())


def test_output_view_at_an_offset_is_written_in_place():
    """cat-style: an op writes its result into a view of a larger buffer."""
    sim.configure(order="reverse")
    init = np.full(8 * 4, 100.0, dtype=np.float32)
    big = produced_on_device(init, "sim")
    a, b = ints((3, 2), 8), ints((2, 3), 9)
    view = shim.reinterpret_tensor(big, [3, 3], [4, 1], 5)
    shim.mm(view, shim.from_numpy(a, copy=True, device="sim"), shim.from_numpy(b, copy=True, device="sim"))
    expected = init.copy()
    np.lib.stride_tricks.as_strided(expected[5:], (3, 3), (16, 4))[...] = a @ b
    np.testing.assert_array_equal(shim.to_numpy(big), expected)


def test_borrowed_storage_over_sim_memory_binds_the_containing_allocation():
    """A tensor created from a blob at an interior address of a sim
    allocation is the same buffer object: ordered after the pending writer,
    no hazard (a second buffer object there would be one)."""
    sim.configure(order="reverse")
    x = ints((4, 4), 14)
    buf = produced_on_device(x, "sim")
    inner = shim.from_blob(buf.data_ptr + 16, [2, 4], None, 0, dtype="float32", device="sim")
    eye = shim.from_numpy(np.eye(4, dtype=np.float32), copy=True, device="sim")
    out = shim.empty_strided([2, 4], None, dtype="float32", device="sim")
    before = sim_counters()
    shim.mm(out, inner, eye)
    np.testing.assert_array_equal(shim.to_numpy(out), x[1:3])
    assert delta(before, sim_counters())["hazards"] == 0


def test_host_write_through_an_alias_is_a_hazard():
    """Uploading into an alias does not wait for work on the parent's buffer
    object, so the checker reports it."""
    x = ints((4, 4), 10)
    X = shim.from_numpy(x, copy=True, device="sim")
    out = shim.empty_strided([4, 4], None, dtype="float32", device="sim")
    shim.mm(out, X, X)
    alias = sim.make_alias(shim.reinterpret_tensor(out, [2, 4], [4, 1], 8))
    with pytest.raises(shim.ShimError, match="host write.*pending command #\\d+ 'gemm' writes out"):
        shim.copy_(alias, shim.from_numpy(np.zeros((2, 4), np.float32), device="cpu"))
    np.testing.assert_array_equal(shim.to_numpy(out), x @ x)


def sim_allocations() -> int:
    return next(d["allocations"] for d in aotishim.memory_stats()["devices"]
                if d["device"].startswith("sim"))


def test_alias_is_a_different_buffer_object_over_the_same_bytes():
    x = ints((4, 4), 11)
    before = sim_allocations()
    X = shim.from_numpy(x, copy=True, device="sim")
    alias = sim.make_alias(X)
    assert alias.data_ptr == X.data_ptr
    assert sim_allocations() == before + 1  # no second allocation
    np.testing.assert_array_equal(shim.to_numpy(alias), x)
    # The alias keeps the parent's bytes alive, and only until it dies.
    shim.delete(X)
    np.testing.assert_array_equal(shim.to_numpy(alias), x)
    assert sim_allocations() == before + 1
    shim.delete(alias)
    assert sim_allocations() == before


def test_raw_host_read_of_idle_memory_is_allowed():
    x = ints((2, 2), 12)
    X = shim.from_numpy(x, copy=True, device="sim")
    assert np.frombuffer(sim.host_read(X.data_ptr, 16), np.float32).tolist() == x.reshape(-1).tolist()
    with pytest.raises(shim.ShimError, match="not inside one live sim allocation"):
        sim.host_read(X.data_ptr + 8, 16)
    # a length that wraps the address space around is outside too
    with pytest.raises(shim.ShimError, match="not inside one live sim allocation"):
        sim.host_read(X.data_ptr, 2**64 - X.data_ptr + 8)


def test_configure_rejects_unknown_order():
    with pytest.raises(shim.ShimError, match="unknown scheduler order"):
        sim.configure(order="backwards")  # type: ignore[arg-type]


# ---- constants blobs at reused addresses ----

BLOB_BYTES = 4096  # constants sections are padded; no other allocation here has this size


def load(w: np.ndarray, b: np.ndarray):
    """What loading a model does with its constants on a GPU: one raw blob,
    tensors created from it at offsets, filled by device copies."""
    blob = sim.raw_alloc(BLOB_BYTES)
    W = shim.from_blob(blob, list(w.shape), None, 0, dtype="float32", device="sim")
    B = shim.from_blob(blob + 1024, list(b.shape), None, 0, dtype="float32", device="sim")
    shim.copy_(W, shim.from_numpy(w, copy=True, device="sim"))
    shim.copy_(B, shim.from_numpy(b, copy=True, device="sim"))
    return blob, W, B


def test_constants_blob_reloaded_at_reused_addresses():
    """Load, run, destroy, load the next model: the sim's allocator hands the
    freed blob's address to the next blob (as GPU caching allocators do), and
    creating tensors there works. Each blob is freed while a gemm reading it
    is still pending; freeing waits for it."""
    x = ints((3, 4), 13)
    X = shim.from_numpy(x, copy=True, device="sim")
    previous = None  # (blob, W, B, out, expected) of the model loaded last
    blobs = []
    for i in range(8):
        w, b = ints((5, 4), 20 + i), ints((5,), 40 + i)
        p_out = None
        if previous is not None:
            p_blob, p_w, p_b, p_out, p_expected = previous
            assert sim.pending_commands() > 0
            if i % 2:
                shim.delete(p_w)
                shim.delete(p_b)
            else:
                assert shim.cleanup_memory() > 0  # everything, p_out included
                p_out = None
            before = sim_counters()
            sim.raw_free(p_blob)
            assert delta(before, sim_counters())["synchronizes"] == 1
            assert sim.pending_commands() == 0
        blob, W, B = load(w, b)
        blobs.append(blob)
        # The stale-address case really happens: the new blob is where the
        # destroyed model's blob was.
        assert previous is None or blob == previous[0], blobs
        if p_out is not None:
            np.testing.assert_array_equal(shim.to_numpy(p_out), p_expected)
        if i % 2 == 0 and i:
            X = shim.from_numpy(x, copy=True, device="sim")
        out = shim.empty_strided([3, 5], None, dtype="float32", device="sim")
        shim.addmm(out, B, X, shim.reinterpret_tensor(W, [4, 5], [1, 4], 0), beta=1.0, alpha=1.0)
        previous = (blob, W, B, out, x @ w.T + b)
    np.testing.assert_array_equal(shim.to_numpy(previous[3]), previous[4])
    assert len(set(blobs)) == 1


def test_freed_memory_is_poisoned_again():
    blob = sim.raw_alloc(BLOB_BYTES)
    t = shim.from_blob(blob, [4], None, 0, dtype="float32", device="sim")
    shim.copy_(t, shim.from_numpy(np.zeros(4, np.float32), copy=True, device="sim"))
    np.testing.assert_array_equal(shim.to_numpy(t), np.zeros(4, np.float32))
    shim.delete(t)
    sim.raw_free(blob)
    again = sim.raw_alloc(BLOB_BYTES)
    assert again == blob
    assert sim.host_read(again, 16) == b"\xff" * 16
    sim.raw_free(again)


def test_raw_free_rejects_what_raw_alloc_did_not_return():
    X = shim.from_numpy(ints((2, 2)), copy=True, device="sim")
    with pytest.raises(shim.ShimError, match="not returned by sim.raw_alloc"):
        sim.raw_free(X.data_ptr)
    blob = sim.raw_alloc(64)
    sim.raw_free(blob)
    with pytest.raises(shim.ShimError, match="already freed"):
        sim.raw_free(blob)

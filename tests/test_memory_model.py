"""Lifetimes, scopes and the stale-address defect (DESIGN.md, defect 1)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import aotishim
from aotishim import _core, shim


def _cpu_stats():
    return next(d for d in aotishim.memory_stats()["devices"] if d["device"] == "cpu")


def _default_scope():
    return next(s for s in aotishim.memory_stats()["scopes"] if s["name"] == "default")


def test_view_outlives_its_base():
    base = shim.empty_strided([8], dtype="float32")
    shim.copy_(base, shim.from_numpy(np.arange(8, dtype=np.float32)))
    view = shim.reinterpret_tensor(base, [4], [2], 1)
    allocations = _cpu_stats()["allocations"]
    shim.delete(base)
    assert _cpu_stats()["allocations"] == allocations  # memory kept for the view
    np.testing.assert_array_equal(shim.to_numpy(view), [1, 3, 5, 7])
    shim.delete(view)
    assert _cpu_stats()["allocations"] == allocations - 1


def test_refcounts_return_to_zero():
    start = _cpu_stats()
    ts = [shim.empty_strided([16, 16], dtype="float64") for _ in range(5)]
    views = [shim.reinterpret_tensor(t, [4], [1], 3) for t in ts]
    clones = [shim.clone(v) for v in views]
    assert _cpu_stats()["allocations"] == start["allocations"] + 10
    for t in ts + views + clones:
        shim.delete(t)
    end = _cpu_stats()
    assert end["allocations"] == start["allocations"] and end["bytes"] == start["bytes"]
    assert _default_scope()["tensors"] == 0


def test_cleanup_memory_empties_the_scope():
    for _ in range(3):
        t = shim.empty_strided([4])
        shim.reinterpret_tensor(t, [2], [1], 2)
    shim.from_numpy(np.zeros(3, np.float32))
    assert _default_scope()["tensors"] == 7
    assert shim.cleanup_memory() == 7
    s = _default_scope()
    assert s["tensors"] == 0 and s["owned_storages"] == 0 and s["borrowed_storages"] == 0
    assert aotishim.memory_stats()["live_tensors"] == 0
    assert _cpu_stats()["allocations"] == 0


def _malloc_at(address, nbytes):
    """malloc until the allocator hands back `address` (holding the misses)."""
    misses = []
    try:
        for _ in range(2000):
            candidate = shim.host_malloc(nbytes)
            if candidate == address:
                return candidate
            misses.append(candidate)
    finally:
        for m in misses:
            shim.host_free(m)
    pytest.skip("the allocator never reused the address")


@pytest.mark.parametrize("release", ["delete", "cleanup_memory"])
def test_borrowed_blob_at_reused_address(release):
    """A constants blob at an address a previous model's blob used works again."""
    nbytes = 4096
    addr = shim.host_malloc(nbytes)
    first = shim.from_blob(addr, [32, 32], dtype="float32")
    view = shim.from_blob(addr, [16], storage_offset=100, dtype="float32")
    if release == "delete":
        shim.delete(first)
        shim.delete(view)
    else:
        assert shim.cleanup_memory() == 2
    shim.host_free(addr)

    addr2 = _malloc_at(addr, nbytes)
    assert addr2 == addr  # the hazard really is exercised: same address, new blob
    second = shim.from_blob(addr2, [32, 32], dtype="float32")
    second_view = shim.from_blob(addr2, [16], storage_offset=100, dtype="float32")
    assert second.data_ptr == addr
    assert second_view.data_ptr == addr + 400
    shim.delete(second)
    shim.delete(second_view)
    shim.host_free(addr2)


def test_two_live_tensors_may_borrow_the_same_bytes():
    buf = np.arange(16, dtype=np.float32)
    a = shim.from_blob(buf.ctypes.data, [16], dtype="float32")
    b = shim.from_blob(buf.ctypes.data, [4, 4], dtype="float32")
    c = shim.from_blob(buf.ctypes.data + 8, [2], dtype="float32")
    np.testing.assert_array_equal(shim.to_numpy(b).reshape(-1), shim.to_numpy(a))
    np.testing.assert_array_equal(shim.to_numpy(c), [2, 3])
    assert _default_scope()["borrowed_storages"] == 3


def test_scopes_are_isolated():
    scope = _core.create_scope("model-a")
    in_scope = _core.in_scope(scope, lambda: [shim.empty_strided([8]) for _ in range(3)])
    outside = shim.empty_strided([8])
    assert shim.cleanup_memory() == 1  # only the default scope's tensor
    assert all(shim.is_live(t) for t in in_scope)
    assert not shim.is_live(outside)
    leaks = _core.destroy_scope(scope)
    assert len(leaks) == 3 and all("float32[8] on cpu" in l for l in leaks)
    assert not any(shim.is_live(t) for t in in_scope)
    assert all(s["name"] != "model-a" for s in aotishim.memory_stats()["scopes"])
    with pytest.raises(shim.ShimError, match="does not exist"):
        _core.destroy_scope(scope)


def test_view_in_another_scope_keeps_memory_alive():
    scope = _core.create_scope("model-b")
    base = _core.in_scope(scope, lambda: shim.empty_strided([4], dtype="int32"))
    shim.copy_(base, shim.from_numpy(np.array([1, 2, 3, 4], np.int32)))
    view = shim.reinterpret_tensor(base, [2], [1], 2)  # default scope
    _core.destroy_scope(scope)
    np.testing.assert_array_equal(shim.to_numpy(view), [3, 4])


def test_current_scope_is_per_thread():
    scope = _core.create_scope("threaded")
    made = {}

    def worker():
        made["t"] = shim.empty_strided([2])

    def body():
        th = threading.Thread(target=worker)
        th.start()
        th.join()
        return shim.empty_strided([2])

    mine = _core.in_scope(scope, body)
    # The other thread's tensor went to the default scope, not ours.
    assert len(_core.destroy_scope(scope)) == 1
    assert not shim.is_live(mine) and shim.is_live(made["t"])


def test_tensor_made_in_a_destroyed_scope_joins_the_default_scope():
    # What a thread sees when another destroys its current scope between two
    # of its calls: its next tensor must not land in the forgotten scope,
    # where no statistic would ever count it (a leak nobody can see).
    scope = _core.create_scope("doomed")

    def body():
        assert len(_core.destroy_scope(scope)) == 0
        return shim.empty_strided([3])

    t = _core.in_scope(scope, body)
    assert shim.is_live(t)
    stats = aotishim.memory_stats()
    assert stats["live_tensors"] == 1
    assert sum(s["tensors"] for s in stats["scopes"]) == 1
    assert _default_scope()["tensors"] == 1
    assert shim.cleanup_memory() == 1 and not shim.is_live(t)


def test_default_scope_cannot_be_destroyed():
    with pytest.raises(shim.ShimError, match="default scope"):
        _core.destroy_scope(1)


def test_handles_are_never_reused():
    seen = set()
    for _ in range(200):
        t = shim.empty_strided([1])
        assert t.handle not in seen
        seen.add(t.handle)
        shim.delete(t)

"""Random sequences of shim calls against a shadow model of memory.

Every storage has a numpy mirror; views are (storage, offset, sizes,
strides). After each step the library must agree with the mirror on values,
on which handles are live, and on how many owned allocations exist, on the
cpu and on the asynchronous sim device (hazard checker on, reordering
scheduler), so views, aliases, deletes and reuse are exercised together.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

import aotishim
from aotishim import shim, sim

ITEM = 4  # float32


class _View:
    def __init__(self, storage: int, offset: int, sizes: list[int], strides: list[int]):
        self.storage, self.offset, self.sizes, self.strides = storage, offset, sizes, strides

    def of(self, mirror: np.ndarray) -> np.ndarray:
        return np.lib.stride_tricks.as_strided(
            mirror[self.offset:], self.sizes, [s * ITEM for s in self.strides], writeable=True)


def _view_geometry(draw, nelems: int):
    """An in-bounds view (sizes, strides, offset) of a storage of nelems."""
    ndim = draw(st.integers(1, 3))
    sizes = [draw(st.integers(1, 4)) for _ in range(ndim)]
    strides = [draw(st.integers(0, 5)) for _ in range(ndim)]
    extent = 1 + sum((n - 1) * s for n, s in zip(sizes, strides))
    if extent > nelems:
        sizes, strides, extent = [1], [1], 1
    offset = draw(st.integers(0, nelems - extent))
    return sizes, strides, offset


def _writable(sizes, strides) -> bool:
    """The runtime's rule for a destination: its dimensions, sorted by stride,
    each step past everything the smaller ones reach (so no two elements
    share an address)."""
    if 0 in sizes:
        return True
    reach = 0
    for stride, size in sorted((st, n) for st, n in zip(strides, sizes) if n > 1):
        if stride <= reach:
            return False
        reach += stride * (size - 1)
    return True


class MemoryMachine(RuleBasedStateMachine):
    device = "cpu"
    handles = Bundle("handles")

    def __init__(self):
        super().__init__()
        shim.cleanup_memory()
        self.mirrors: dict[int, np.ndarray] = {}  # storage id -> values
        self.owned: dict[int, bool] = {}
        self.views: dict[int, _View] = {}  # live handle -> view
        self.next_storage = 0
        self.rng = np.random.default_rng(0)
        self.borrowed_arrays: list[np.ndarray] = []

    def _new_storage(self, values: np.ndarray, owned: bool) -> int:
        sid = self.next_storage
        self.next_storage += 1
        self.mirrors[sid] = values
        self.owned[sid] = owned
        return sid

    # ---- rules ----
    @rule(target=handles, n=st.integers(1, 40))
    def create(self, n):
        return self._create(n)

    def _create(self, n):
        values = self.rng.standard_normal(n).astype(np.float32)
        t = shim.from_numpy(values, copy=True, device=self.device)
        self.views[t.handle] = _View(self._new_storage(values.copy(), True), 0, [n], [1])
        return t

    @rule(target=handles, n=st.integers(1, 40))
    def borrow(self, n):
        if self.device != "cpu":  # only cpu tensors borrow; elsewhere it is a create
            return self._create(n)
        array = self.rng.standard_normal(n).astype(np.float32)
        self.borrowed_arrays.append(array)
        t = shim.from_numpy(array)
        self.views[t.handle] = _View(self._new_storage(array, False), 0, [n], [1])
        return t

    @rule(target=handles, base=handles, data=st.data())
    def view(self, base, data):
        if base.handle not in self.views:
            return base
        b = self.views[base.handle]
        # The offset counts from where base starts (torch's _reinterpret_tensor).
        sizes, strides, step = _view_geometry(data.draw, self.mirrors[b.storage].size - b.offset)
        t = shim.reinterpret_tensor(base, sizes, strides, step)
        self.views[t.handle] = _View(b.storage, b.offset + step, sizes, strides)
        return t

    @rule(target=handles, base=handles)
    def new_handle(self, base):
        if base.handle not in self.views:
            return base
        t = shim.new_tensor_handle(base)
        self.views[t.handle] = self.views[base.handle]
        return t

    @rule(target=handles, base=handles)
    def clone(self, base):
        if base.handle not in self.views:
            return base
        v = self.views[base.handle]
        values = v.of(self.mirrors[v.storage]).copy()
        t = shim.clone(base)
        # A clone is dense (torch's layout rule, checked against torch in
        # test_shim_tensors); its storage is mirrored in that layout, so
        # views taken of it later read the same elements.
        numel = int(np.prod(values.shape))
        assert t.storage_nbytes == numel * ITEM
        mirror = np.zeros(numel, np.float32)
        clone = _View(self._new_storage(mirror, True), 0, list(values.shape), list(t.strides))
        if numel:
            clone.of(self.mirrors[clone.storage])[...] = values
        self.views[t.handle] = clone
        return t

    @rule(dst=handles, src=handles)
    def copy(self, dst, src):
        if dst.handle not in self.views or src.handle not in self.views:
            return
        d, s = self.views[dst.handle], self.views[src.handle]
        if d.sizes != s.sizes:
            return
        dview = d.of(self.mirrors[d.storage])
        # A destination whose elements may share addresses has no single
        # answer: refused, nothing written.
        if not _writable(d.sizes, d.strides):
            with pytest.raises(shim.ShimError, match="elements overlap in memory"):
                shim.copy_(dst, src)
            return
        new = s.of(self.mirrors[s.storage]).copy()
        shim.copy_(dst, src)
        dview[...] = new

    @rule(t=consumes(handles))
    def delete(self, t):
        if t.handle in self.views:
            shim.delete(t)
            del self.views[t.handle]
        else:
            with pytest.raises(shim.ShimError, match="already deleted"):
                shim.delete(t)

    @rule(t=handles)
    def read(self, t):
        if t.handle not in self.views:
            return
        v = self.views[t.handle]
        np.testing.assert_array_equal(shim.to_numpy(t), v.of(self.mirrors[v.storage]))

    @rule()
    def synchronize(self):
        aotishim.synchronize(self.device)
        # Nothing pending holds memory any more: exactly the live storages remain.
        assert self._allocations() == self._live_owned()

    # ---- invariants ----
    def _allocations(self) -> int:
        stats = aotishim.memory_stats()
        device = next((d for d in stats["devices"] if d["device"].split(":")[0] == self.device),
                      {"allocations": 0})
        return device["allocations"]

    def _live_owned(self) -> int:
        return len({v.storage for v in self.views.values() if self.owned[v.storage]})

    @invariant()
    def handles_agree(self):
        assert aotishim.memory_stats()["live_tensors"] == len(self.views)
        # Pending device work keeps the memory it uses alive until it has run.
        allocations = self._allocations()
        assert allocations >= self._live_owned()
        if self.device == "cpu":
            assert allocations == self._live_owned()

    def teardown(self):
        if self.device == "sim":
            aotishim.synchronize("sim")
        shim.cleanup_memory()


class SimMemoryMachine(MemoryMachine):
    device = "sim"

    def __init__(self):
        sim.configure(order="shuffle", seed=11, checker=True, flush_interval=0)
        super().__init__()

    def teardown(self):
        super().teardown()
        sim.configure()


TestCpuMemory = MemoryMachine.TestCase
TestCpuMemory.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
TestSimMemory = SimMemoryMachine.TestCase
TestSimMemory.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)

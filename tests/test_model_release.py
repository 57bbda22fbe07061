"""The last-slot rule for output handles (aotishim release_outputs), on its own."""

from __future__ import annotations

import pytest

import aotishim
from aotishim import _core, shim


def released() -> int:
    return aotishim.memory_stats()["released_handles"]


def make(n: int) -> list[shim.Tensor]:
    return [shim.empty_strided([2, 3], dtype="float32") for _ in range(n)]


def test_each_handle_deleted_once_at_its_last_slot():
    a, b, c = make(3)
    # Repeated (a), non-adjacent (b at 1 and 5), null (3).
    slots = [a.handle, b.handle, a.handle, 0, c.handle, b.handle]
    seen: list[tuple[int, int, bool]] = []
    before = released()

    def convert(i: int, h: int) -> None:
        # Every slot is converted while all handles are still alive.
        seen.append((i, h, h == 0 or _core.is_live(h)))

    _core.release_outputs(slots, convert)
    assert [s[0] for s in seen] == list(range(6))
    assert all(alive for _, _, alive in seen)
    assert seen[3][1] == 0
    assert released() - before == 3
    assert not any(t.is_live for t in (a, b, c))


def test_without_converter_releases_once():
    a, b = make(2)
    before = released()
    _core.release_outputs([b.handle, a.handle, b.handle, b.handle], None)
    assert released() - before == 2
    assert not a.is_live and not b.is_live


def test_conversion_failure_midway_still_releases_everything_once():
    a, b, c = make(3)
    slots = [a.handle, b.handle, c.handle, a.handle, b.handle]
    converted: list[int] = []
    before = released()

    def convert(i: int, h: int) -> None:
        if i == 2:
            raise KeyError("conversion failed")
        converted.append(i)

    with pytest.raises(KeyError, match="conversion failed"):
        _core.release_outputs(slots, convert)
    assert converted == [0, 1]  # stops converting at the failure ...
    assert released() - before == 3  # ... yet every handle goes, once
    assert not any(t.is_live for t in (a, b, c))


def test_stale_handle_reported_and_others_still_released():
    a, b = make(2)
    shim.delete(a)  # already gone: deleting it again must be an error, not a crash
    before = released()
    with pytest.raises(shim.ShimError):
        _core.release_outputs([a.handle, b.handle, a.handle], None)
    assert released() - before == 1
    assert not b.is_live


def test_all_null_slots():
    before = released()
    _core.release_outputs([0, 0, 0], lambda i, h: None)
    assert released() == before

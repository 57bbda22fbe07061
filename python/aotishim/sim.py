"""Controls and test probes of the ``sim`` device.

``sim`` is a deterministic model of an asynchronous GPU with Metal's ordering
rules. Its memory is host memory, but every allocation is its own buffer
object and is poisoned with ``0xFF`` bytes when allocated (NaN as float16,
bfloat16, float32 and float64; -1 as signed integers), so reading bytes that
no command wrote shows up as NaN. Device work (copies, packing, GEMMs) is
recorded and runs only at a synchronize, before a host access that needs it,
or every ``flush_interval`` queued commands.

Two commands are ordered only when they bind the same buffer object and at
least one writes it; the scheduler runs everything else in the configured
order (``"fifo"``, ``"reverse"`` or a seeded ``"shuffle"``). The hazard checker
raises :class:`aotishim.shim.ShimError` naming both sides when the host touches
bytes with pending device work that it did not wait for, or when two pending
commands touch the same bytes through different buffer objects (see
:func:`make_alias`) and one of them writes.
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Literal, TypedDict

from . import _core
from . import shim as _shim

Order = Literal["fifo", "reverse", "shuffle"]
ORDERS: tuple[Order, ...] = ("fifo", "reverse", "shuffle")

_sim = _core.sim


class SimConfig(TypedDict):
    order: Order
    seed: int
    flush_interval: int
    checker: bool


class SimCounters(TypedDict):
    synchronizes: int
    hazards: int
    commands: int


def configure(order: Order = "fifo", seed: int = 0, flush_interval: int = 0,
              checker: bool = True) -> None:
    """Sets the scheduler order and seed, the flush interval (0 = run queued
    work only when something needs it) and whether hazards raise.

    Takes effect at once: work already queued runs under the new order when
    the stream next runs."""
    _sim.configure(order, seed, flush_interval, checker)


def config() -> SimConfig:
    """The current settings."""
    return _sim.config()


@contextlib.contextmanager
def configured(order: Order = "fifo", seed: int = 0, flush_interval: int = 0,
               checker: bool = True) -> Iterator[None]:
    """Applies settings for the duration of a ``with`` block, then restores
    the previous ones."""
    previous = config()
    configure(order, seed, flush_interval, checker)
    try:
        yield
    finally:
        configure(**previous)


def pending_commands() -> int:
    """Commands recorded on the stream and not yet run."""
    return _sim.pending_commands()


def last_execution_order() -> list[str]:
    """The commands the latest run of the stream executed, in the order the
    scheduler ran them (``"#3 gemm"``, ...)."""
    return _sim.last_execution_order()


def counters() -> SimCounters:
    """sim:0's synchronizes, hazards and commands, as
    :func:`aotishim.memory_stats` reports them."""
    from . import memory_stats

    for dev in memory_stats()["devices"]:
        if dev["device"] in ("sim", "sim:0"):
            return {k: dev[k] for k in ("synchronizes", "hazards", "commands")}  # type: ignore[return-value]
    return {"synchronizes": 0, "hazards": 0, "commands": 0}


def reset_counters() -> None:
    """Zeroes the sim device's counters."""
    _sim.reset_counters()


def make_alias(tensor: _shim.Tensor) -> _shim.Tensor:
    """A new tensor over the same bytes as ``tensor``, bound to a new buffer
    object, as Metal's ``newBufferWithBytesNoCopy`` makes one.

    Work through the alias is not ordered with work through the parent: this
    exists only to reproduce the defect of binding views that way. The
    parent's memory stays alive as long as the alias."""
    return _shim.Tensor(_sim.make_alias(tensor.handle))


def is_buffer_base(address: int) -> bool:
    """Whether ``address`` is the first byte of a live buffer object."""
    return _sim.is_buffer_base(address)


def has_pending_writes_exact_base(address: int) -> bool:
    """Pending writes to the buffer object whose base is exactly ``address``;
    False when ``address`` is not a base (how an exact-address lookup fails
    for views at an offset)."""
    return _sim.has_pending_writes_exact_base(address)


def has_pending_writes(address: int) -> bool:
    """Pending writes to the buffer object containing ``address``."""
    return _sim.has_pending_writes(address)


def host_read(address: int, nbytes: int) -> bytes:
    """Reads sim memory directly, waiting for nothing; the checker raises if
    pending work writes those bytes."""
    return _sim.host_read(address, nbytes)


def raw_alloc(nbytes: int) -> int:
    """A raw (poisoned) sim allocation, as a GPU model's constants blob is
    allocated; returns its address."""
    return _sim.raw_alloc(nbytes)


def raw_free(address: int) -> None:
    """Frees what :func:`raw_alloc` returned, after pending work on it."""
    _sim.raw_free(address)


__all__ = [
    "ORDERS", "Order", "SimConfig", "SimCounters", "configure", "config", "configured",
    "pending_commands", "last_execution_order", "counters", "reset_counters", "make_alias",
    "is_buffer_base", "has_pending_writes_exact_base", "has_pending_writes", "host_read",
    "raw_alloc", "raw_free",
]

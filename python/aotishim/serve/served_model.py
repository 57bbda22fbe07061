"""One loaded model as a replica serves it: inputs checked against its spec
before it runs, runs counted so that an eviction closes it only once the
runs it is in the middle of have finished."""

from __future__ import annotations

import threading
from typing import Any, Sequence

import numpy as np

from .._dtypes import dtype_code, dtype_name
from ..model import Model, ModelInputError
from ..spec import ShapeError
from .errors import RequestError


class ServedModel:
    """Wraps an :class:`aotishim.Model` for the multiplexer.

    Ray's multiplexer "unloads" an evicted model by calling its ``__del__``
    (in a worker thread) and dropping its reference, while requests that
    fetched it before may still be running it. ``__del__`` here retires the
    model: it is closed through :meth:`Model.close` at once when idle, else by
    the last run to finish.
    """

    def __init__(self, model_id: str, model: Model, on_close=None, on_retire=None) -> None:
        self.model_id = model_id
        self.model = model
        self._lock = threading.Lock()
        self._running = 0
        self._retired = False
        self._on_close = on_close
        self._on_retire = on_retire
        self.batch_symbol = _batch_symbol(model)

    # ---- lifetime ----
    def acquire(self) -> None:
        with self._lock:
            if self._retired:  # evicted between lookup and use: the caller reloads
                raise _Retired()
            self._running += 1

    def release(self) -> None:
        with self._lock:
            self._running -= 1
            close = self._retired and self._running == 0
        if close:
            self._close()

    def retire(self) -> None:
        with self._lock:
            if self._retired:
                return
            self._retired = True
            close = self._running == 0
        if self._on_retire is not None:
            self._on_retire(self)
        if close:
            self._close()

    def __del__(self) -> None:
        self.retire()

    def _close(self) -> None:
        leaks = self.model.close()
        if self._on_close is not None:
            self._on_close(self, leaks)

    # ---- running ----
    def run(self, arrays: Sequence[np.ndarray]) -> tuple[np.ndarray | None, ...]:
        """Runs the model (blocking; call it off the event loop)."""
        self.acquire()
        try:
            return self.model.run(*arrays)
        except ModelInputError as e:
            raise RequestError(422, f"{self.model_id}: {e}") from None
        finally:
            self.release()

    # ---- checking ----
    def labels(self) -> list[str]:
        specs = self.model.input_specs
        names = [s.name for s in specs] if specs is not None else self.model.input_names
        return [f"input {i} ({n})" for i, n in enumerate(names)]

    def input_dtypes(self) -> list[str | None]:
        specs = self.model.input_specs
        return [s.dtype for s in specs] if specs is not None else [None] * len(self.labels())

    def check_count(self, count: int) -> None:
        labels = self.labels()
        if count != len(labels):
            raise RequestError(422, f"{self.model_id} takes {len(labels)} input(s) "
                                    f"({', '.join(labels)}), got {count}")

    def check(self, arrays: Sequence[np.ndarray]) -> None:
        """A :class:`RequestError` 422 when ``arrays`` do not match the
        model's inputs in count, dtype or shape (its spec's ranges included)."""
        self.check_count(len(arrays))
        labels = self.labels()
        specs = self.model.input_specs
        if specs is None:
            return  # the model's own checks report what is wrong when it runs
        for label, spec, array in zip(labels, specs, arrays):
            try:
                got = dtype_name(dtype_code(array.dtype))
            except ValueError as e:
                raise RequestError(422, f"{self.model_id}: {label}: {e}") from None
            if got != spec.dtype:
                raise RequestError(422, f"{self.model_id}: {label} has dtype {got}, "
                                        f"the model expects {spec.dtype}")
        try:
            self.model.spec.check_shapes([a.shape for a in arrays], labels)
        except ShapeError as e:
            raise RequestError(422, f"{self.model_id}: {e}") from None


class _Retired(Exception):
    """The model was evicted after it was looked up."""


def _batch_symbol(model: Model) -> tuple[str, int] | None:
    """``(symbol, max rows)`` when requests may be stacked along dimension 0:
    every input's and output's first dimension is one and the same symbol,
    which appears nowhere else in the spec; else None."""
    spec = model.spec
    if spec is None or not spec.inputs or not spec.outputs:
        return None
    first = spec.inputs[0].shape[0] if spec.inputs[0].shape else None
    if first is None or isinstance(first, int) or len(first.symbols) != 1 \
            or first.text not in first.symbols:
        return None
    symbol = first.text
    for t in (*spec.inputs, *spec.outputs):
        if not t.shape or isinstance(t.shape[0], int) or t.shape[0] is None \
                or t.shape[0].text != symbol:
            return None
        for d in t.shape[1:]:
            if d is None or (not isinstance(d, int) and symbol in d.symbols):
                return None
    if any(symbol in r.expr.symbols for r in spec.relations):
        return None
    bound = spec.symbols[symbol].max
    return symbol, (bound if bound is not None else 1 << 30)

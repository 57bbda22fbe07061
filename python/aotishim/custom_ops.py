"""Implementations, in Python, of the ops a compiled model calls through
AOTInductor's proxy executor:
``torch.library`` custom ops (and ATen ops Inductor has no C shim for, where
aotishim has no implementation of its own).

>>> import aotishim, numpy as np
>>> def scale(x, alpha, *, bias=None):          # mylib::scale(Tensor x, float alpha, *, Tensor? bias=None) -> Tensor
...     return x * np.float32(alpha) + (0 if bias is None else bias)
>>> aotishim.register_custom_op("mylib::scale", scale)

The function receives the op's arguments in its schema's order, as the
model's package serialized them (positional ones by position, keyword ones
by name): tensors as read-only numpy arrays viewing the model's memory
(valid only during the call: copy what you keep), ``Tensor[]`` as lists,
ints, floats, bools, strings and lists of them as Python values, a dtype as
a numpy dtype, a device, layout or memory format as its name. It returns
what the schema returns: an array (anything ``np.asarray`` takes), a tuple
of them for several returns, a list for ``Tensor[]``, None for a None
return. Results are copied into the model's memory after their dtype and
shape are checked against what the compiled code expects, where the package
records it (models compiled by :mod:`aotishim.export` do). An exception the
function raises fails that run with a :class:`ModelError` naming the op; the
model stays usable.

A model binds its implementations when it is loaded: register before
:func:`aotishim.load` (an op without one refuses the model, naming it).
Registering again, or unregistering, changes only models loaded later.
Only cpu models call Python implementations (numpy arrays are host memory).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import _core
from ._dtypes import DTYPES, dtype_code, dtype_name, numpy_dtype

__all__ = ["register_custom_op", "registered_custom_ops", "unregister_custom_op"]


def _scalar_type(code: int) -> Any:
    try:
        return numpy_dtype(code)
    except ValueError:
        return dtype_name(code)


def _describe(code: int, shape: tuple) -> str:
    return f"{dtype_name(code)}[{','.join('?' if d < 0 else str(d) for d in shape)}]"


def _as_array(value: Any, what: str) -> tuple[np.ndarray, int]:
    if value is None:
        raise TypeError(f"{what} is None; the compiled model expects a tensor")
    try:
        array = np.asarray(value)
    except Exception as e:  # noqa: BLE001 (whatever the object raises)
        raise TypeError(f"{what} is not an array ({type(value).__name__}): {e}") from None
    try:
        code = dtype_code(array.dtype)
    except ValueError:
        raise TypeError(f"{what} has dtype {array.dtype}, which a model tensor cannot hold "
                        f"(one of {sorted(DTYPES)})") from None
    return np.ascontiguousarray(array), code


class _Bridge:
    """What the runtime calls (with the GIL held) for each call of the op."""

    def __init__(self, name: str, fn: Callable[..., Any]) -> None:
        self.name = name
        self.fn = fn

    def __call__(self, op: str, args: list, returns: list, outputs: list) -> list:
        positional: list[Any] = []
        keywords: dict[str, Any] = {}
        for name, keyword, kind, value in args:
            if kind == "scalar_type":
                value = _scalar_type(value)
            if keyword:
                keywords[name] = value
            else:
                positional.append(value)
        result = self.fn(*positional, **keywords)

        if len(returns) == 1:
            values = [result]
        elif not isinstance(result, (tuple, list)) or len(result) != len(returns):
            got = f"a {type(result).__name__} of {len(result)}" if isinstance(
                result, (tuple, list)) else type(result).__name__
            raise TypeError(f"{op} returns {len(returns)} values; the implementation returned {got}")
        else:
            values = list(result)
        flat: list[tuple[np.ndarray, int]] = []
        for i, ((kind, count), value) in enumerate(zip(returns, values)):
            what = f"return value {i}" if len(returns) > 1 else "the return value"
            if kind == "tensor":
                flat.append(_as_array(value, what))
            elif kind == "tensors":
                if not isinstance(value, (tuple, list)) or len(value) != count:
                    raise TypeError(f"{what} must be a list of {count} arrays (a Tensor[] the "
                                    f"compiled model expects), not {type(value).__name__}")
                flat.extend(_as_array(v, f"{what}[{j}]") for j, v in enumerate(value))
            elif value is not None:
                raise TypeError(f"{what} must be None (the compiled model takes no tensor there)")
        for i, ((array, code), want) in enumerate(zip(flat, outputs)):
            if want is None:
                continue
            want_code, want_shape = want
            shape_ok = len(want_shape) == array.ndim and all(
                w < 0 or w == d for w, d in zip(want_shape, array.shape))
            if code != want_code or not shape_ok:
                raise TypeError(f"output {i} is {_describe(code, array.shape)}; the compiled "
                                f"model expects {_describe(want_code, tuple(want_shape))}")
        return flat


def register_custom_op(name: str, fn: Callable[..., Any]) -> None:
    """Registers (or replaces) the implementation of op ``name``:
    ``"namespace::op"`` (the default overload; also every overload without a
    registration of its own) or ``"namespace::op.overload"``."""
    if not callable(fn):
        raise TypeError(f"the implementation of {name!r} must be callable, not "
                        f"{type(fn).__name__}")
    _core.register_custom_op(name, _Bridge(name, fn))


def unregister_custom_op(name: str) -> bool:
    """Removes a registration (models already loaded keep theirs); False when
    there was none."""
    return _core.unregister_custom_op(name)


def registered_custom_ops() -> list[str]:
    """The names with an implementation now, sorted."""
    return list(_core.registered_custom_ops())

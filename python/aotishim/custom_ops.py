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
(valid only during the call: copy what you keep), or for a cuda model as
device tensors exporting ``__dlpack__`` (``torch.from_dlpack(x)``,
``cupy.from_dlpack(x)``; read them, never write them), ``Tensor[]`` as lists,
ints, floats, bools, strings and lists of them as Python values, a dtype as
a numpy dtype, a device, layout or memory format as its name. It returns
what the schema returns: an array (anything ``np.asarray`` takes; for a
cuda model also a tensor on the model's GPU exporting ``__dlpack__``, such
as a torch cuda tensor), a tuple of them for several returns, a list for
``Tensor[]``, None for a None return. Results are copied into the model's
memory (device results on the device, the call waiting for that copy so
their memory may be freed once it returns) after their dtype and
shape are checked against what the compiled code expects, where the package
records it (models compiled by :mod:`aotishim.export` do). An exception the
function raises fails that run with a :class:`ModelError` naming the op; the
model stays usable.

A model binds its implementations when it is loaded: register before
:func:`aotishim.load` (an op without one refuses the model, naming it).
Registering again, or unregistering, changes only models loaded later.
cpu and cuda models call Python implementations (mps tensors cannot be
exported through DLPack).
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
    if _dlpack_device(value) not in (None, _DL_CPU):
        raise TypeError(f"{what} is a device tensor; a cpu model takes host arrays")
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


_DL_CPU, _DL_CUDA = 1, 2  # DLPack device types


def _dlpack_device(value: Any) -> int | None:
    """The DLPack device type of a non-numpy DLPack producer, else None."""
    if isinstance(value, (np.ndarray, np.generic)) or not hasattr(value, "__dlpack__"):
        return None
    try:
        return int(value.__dlpack_device__()[0])
    except Exception:  # noqa: BLE001 (not a usable producer: numpy's path decides)
        return None


def _lent(value: Any, what: str, device: str) -> tuple[int, int, tuple]:
    """A result on the model's GPU, borrowed through DLPack (ordered before
    this thread's stream there): (handle, dtype code, shape). The runtime
    copies it and deletes the handle."""
    dl_type, dl_id = value.__dlpack_device__()
    kind, index = _core.parse_device(device)
    if (int(dl_type), int(dl_id)) != (_DL_CUDA, index):
        raise TypeError(f"{what} is on DLPack device ({int(dl_type)}, {int(dl_id)}); the "
                        f"model runs on {device}")
    stream = _core.device_stream(device)
    try:
        capsule = value.__dlpack__(max_version=(1, 0), stream=stream)
    except TypeError:  # a producer older than DLPack 1.0 (no max_version)
        capsule = value.__dlpack__(stream=stream)
    handle, code, shape, _ = _core.borrow_dlpack_input(capsule, device)
    return handle, code, tuple(shape)


class _Bridge:
    """What the runtime calls (with the GIL held) for each call of the op."""

    def __init__(self, name: str, fn: Callable[..., Any]) -> None:
        self.name = name
        self.fn = fn

    def __call__(self, op: str, args: list, returns: list, outputs: list,
                 device: str = "cpu") -> list:
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
        tensors: list[tuple[Any, str]] = []
        for i, ((kind, count), value) in enumerate(zip(returns, values)):
            what = f"return value {i}" if len(returns) > 1 else "the return value"
            if kind == "tensor":
                tensors.append((value, what))
            elif kind == "tensors":
                if not isinstance(value, (tuple, list)) or len(value) != count:
                    raise TypeError(f"{what} must be a list of {count} arrays (a Tensor[] the "
                                    f"compiled model expects), not {type(value).__name__}")
                tensors.extend((v, f"{what}[{j}]") for j, v in enumerate(value))
            elif value is not None:
                raise TypeError(f"{what} must be None (the compiled model takes no tensor there)")
        # (array or borrowed device handle, dtype code); a handle borrowed
        # here is deleted here unless the runtime receives it
        flat: list[tuple[Any, int]] = []
        try:
            for i, (value, what) in enumerate(tensors):
                if device != "cpu" and _dlpack_device(value) == _DL_CUDA:
                    handle, code, shape = _lent(value, what, device)
                    flat.append((handle, code))
                else:
                    array, code = _as_array(value, what)
                    shape = array.shape
                    flat.append((array, code))
                want = outputs[i] if i < len(outputs) else None
                if want is None:
                    continue
                want_code, want_shape = want
                shape_ok = len(want_shape) == len(shape) and all(
                    w < 0 or w == d for w, d in zip(want_shape, shape))
                if code != want_code or not shape_ok:
                    raise TypeError(f"output {i} is {_describe(code, shape)}; the compiled "
                                    f"model expects {_describe(want_code, tuple(want_shape))}")
        except BaseException:
            for payload, _ in flat:
                if isinstance(payload, int):
                    _core.delete_tensor_object(payload)
            raise
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

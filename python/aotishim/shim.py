"""Drive the aoti_torch_* C shim ABI from Python.

Every function here calls the same exported C functions that AOTInductor's
generated code calls. Tensors are plain handles: nothing is freed
automatically, ``delete`` frees a handle exactly like
``aoti_torch_delete_tensor_object``. Failures raise :class:`ShimError` with the
shim's message.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from . import _core, _fallback
from ._dtypes import dtype_code, dtype_name, numpy_dtype, parse_device

ShimError = _core.ShimError

__all__ = [
    "ShimError", "Tensor", "empty_strided", "from_numpy", "from_blob", "reinterpret_tensor",
    "new_tensor_handle", "assign_tensors_out", "clone", "clone_preserve_strides", "copy_",
    "call_op", "FALLBACK_OPS", "mm", "addmm", "bmm", "cpu_mm_out", "cpu_addmm_out", "cpu_bmm_out", "delete", "is_live",
    "cleanup_memory", "to_numpy", "get", "constants", "host_malloc", "host_free", "last_error",
]


class Tensor:
    """A tensor handle (an ``AtenTensorHandle``). Not freed automatically."""

    __slots__ = ("handle",)

    def __init__(self, handle: int) -> None:
        self.handle = int(handle)

    def _info(self) -> dict:
        return _core.tensor_info(self.handle)

    @property
    def sizes(self) -> list[int]:
        return self._info()["sizes"]

    @property
    def strides(self) -> list[int]:
        return self._info()["strides"]

    @property
    def storage_offset(self) -> int:
        return self._info()["storage_offset"]

    @property
    def dtype(self) -> str:
        return dtype_name(self._info()["dtype"])

    @property
    def device(self) -> str:
        return self._info()["device"]

    @property
    def data_ptr(self) -> int:
        return self._info()["data_ptr"]

    @property
    def storage_nbytes(self) -> int:
        return self._info()["storage_nbytes"]

    @property
    def owns_storage(self) -> bool:
        return self._info()["owns_storage"]

    @property
    def is_live(self) -> bool:
        return _core.is_live(self.handle)

    def numpy(self) -> np.ndarray:
        return to_numpy(self)

    def __repr__(self) -> str:
        if not _core.is_live(self.handle):
            return f"Tensor(handle={self.handle:#x}, deleted)"
        i = self._info()
        return (f"Tensor(handle={self.handle:#x}, {dtype_name(i['dtype'])}{i['sizes']}, "
                f"strides={i['strides']}, offset={i['storage_offset']}, device={i['device']})")


def _h(t: Tensor | int) -> int:
    return t.handle if isinstance(t, Tensor) else int(t)


def empty_strided(sizes: Sequence[int], strides: Sequence[int] | None = None,
                  dtype: str | int = "float32", device: str = "cpu") -> Tensor:
    """``aoti_torch_empty_strided``: fresh owned memory (contents undefined)."""
    dt, di = parse_device(device)
    return Tensor(_core.empty_strided(list(sizes), None if strides is None else list(strides),
                                      dtype_code(dtype), dt, di))


def from_blob(address: int, sizes: Sequence[int], strides: Sequence[int] | None = None,
              storage_offset: int = 0, dtype: str | int = "float32",
              device: str = "cpu") -> Tensor:
    """``aoti_torch_create_tensor_from_blob_v2``: borrow memory at ``address``."""
    dt, di = parse_device(device)
    return Tensor(_core.create_tensor_from_blob(
        int(address), list(sizes), None if strides is None else list(strides),
        int(storage_offset), dtype_code(dtype), dt, di))


def from_numpy(array: np.ndarray, *, copy: bool = False, device: str = "cpu") -> Tensor:
    """A tensor over a numpy array.

    With ``copy=False`` (cpu only) the tensor borrows the array's memory and
    keeps the array alive while any view of it lives; otherwise the values are
    copied into fresh memory on ``device``.
    """
    array = np.asarray(array)
    code = dtype_code(array.dtype)
    if not copy:
        if device != "cpu":
            raise ValueError("only cpu tensors can borrow numpy memory; pass copy=True")
        return Tensor(_core.borrow_array(array, code))
    # A copy needs no particular layout: pack negative or unaligned strides
    # (a[::-1]) first; contiguous arrays pass through without a copy.
    return Tensor(_core.copy_array(np.ascontiguousarray(array), code, device))


def reinterpret_tensor(t: Tensor, sizes: Sequence[int], strides: Sequence[int],
                       storage_offset: int) -> Tensor:
    """``aoti_torch__reinterpret_tensor``: a view sharing t's storage, starting
    ``storage_offset`` elements past where t starts (added to t's own storage
    offset, as torch's ``_reinterpret_tensor`` does)."""
    return Tensor(_core.reinterpret_tensor(_h(t), list(sizes), list(strides), int(storage_offset)))


def new_tensor_handle(t: Tensor) -> Tensor:
    return Tensor(_core.new_tensor_handle(_h(t)))


def assign_tensors_out(t: Tensor) -> Tensor:
    return Tensor(_core.assign_tensors_out(_h(t)))


def clone(t: Tensor) -> Tensor:
    return Tensor(_core.clone(_h(t)))


def clone_preserve_strides(t: Tensor) -> Tensor:
    return Tensor(_core.clone_preserve_strides(_h(t)))


def copy_(dst: Tensor, src: Tensor) -> None:
    """``aoti_torch_copy_``: dst = src (broadcast, dtype conversion, any devices)."""
    _core.copy_(_h(dst), _h(src))


# ---- fallback ops: every op of libaotishim's table (aotishim/fallback_ops.def) ----
FALLBACK_OPS = _fallback.load_table()


def call_op(name: str, *args, entry: str | None = None):
    """Call fallback op ``name`` with its shim's arguments (outputs it creates are
    returned). ``entry=None`` calls the device-generic ``aotishim_<name>`` (the
    device is the tensors'); ``entry="cpu"``/``"cuda"``/``"mps"`` calls
    ``aoti_torch_<entry>_<name>``, exactly as generated code does."""
    op = FALLBACK_OPS.get(name)
    if op is None:
        raise ValueError(f"no fallback op {name!r} (known: {', '.join(sorted(FALLBACK_OPS))})")
    return op(*args, entry=entry)


def mm(out: Tensor, a: Tensor, b: Tensor) -> None:
    """out = a @ b on out's device."""
    call_op("mm_out", out, a, b)


def addmm(out: Tensor, self: Tensor, a: Tensor, b: Tensor, beta: float = 1.0,
          alpha: float = 1.0) -> None:
    """out = beta * self + alpha * (a @ b) on out's device."""
    call_op("addmm_out", out, self, a, b, float(beta), float(alpha))


def bmm(out: Tensor, a: Tensor, b: Tensor) -> None:
    """out[i] = a[i] @ b[i] on out's device."""
    call_op("bmm_out", out, a, b)


def cpu_mm_out(out: Tensor, a: Tensor, b: Tensor) -> None:
    call_op("mm_out", out, a, b, entry="cpu")


def cpu_addmm_out(out: Tensor, self: Tensor, a: Tensor, b: Tensor, beta: float = 1.0,
                  alpha: float = 1.0) -> None:
    call_op("addmm_out", out, self, a, b, float(beta), float(alpha), entry="cpu")


def cpu_bmm_out(out: Tensor, a: Tensor, b: Tensor) -> None:
    call_op("bmm_out", out, a, b, entry="cpu")


def delete(t: Tensor) -> None:
    """``aoti_torch_delete_tensor_object``."""
    _core.delete_tensor_object(_h(t))


def is_live(t: Tensor) -> bool:
    return _core.is_live(_h(t))


def cleanup_memory() -> int:
    """Empty the current scope; returns how many tensors were deleted."""
    return _core.cleanup_memory()


def to_numpy(t: Tensor) -> np.ndarray:
    """A packed copy of the tensor's values (waits only for work on its memory)."""
    info = _core.tensor_info(_h(t))
    out = np.empty(info["sizes"], dtype=numpy_dtype(info["dtype"]))
    _core.copy_to_host(_h(t), out)
    return out


def get(t: Tensor, what: str):
    """Call one ``aoti_torch_get_<what>`` shim (data_ptr, sizes, strides, dim, numel,
    storage_offset, storage_size, dtype, device_type, device_index, layout,
    is_contiguous, element_size)."""
    return _core.get(_h(t), what)


def constants() -> dict[str, int]:
    """Values of the ABI's constant shims (dtype, device type, layout numbers)."""
    return _core.constants()


def host_malloc(nbytes: int) -> int:
    """Raw ``malloc`` (for modelling a constants blob); free with :func:`host_free`."""
    return _core.host_malloc(int(nbytes))


def host_free(address: int) -> None:
    _core.host_free(int(address))


def last_error() -> str:
    """The last shim failure's message on this thread."""
    return _core.last_error()

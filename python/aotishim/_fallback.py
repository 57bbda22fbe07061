"""Python callers of the fallback-op shims, built from libaotishim's op table.

Every op in the table (``aotishim/fallback_ops.def``) gets a wrapper without
any per-op code here: the table gives each op's C parameter list, and the
wrappers call the exported entry points (``aotishim_<op>`` for any device,
``aoti_torch_<device>_<op>`` for one) through ctypes. Parameter conventions
follow torch's generated shims:

- ``AtenTensorHandle x``: a tensor (``shim.Tensor`` or a handle int);
- ``AtenTensorHandle* retN``: an output the op creates; returned (``None`` when
  the op leaves it empty, as torch's ``None`` outputs);
- ``int64_t* retN`` (any scalar type): a scalar output; returned as a number;
- ``AtenTensorHandle* x`` (other names): an optional tensor, ``None`` for absent;
- ``const int64_t* x, int64_t x_len_``: a list of ints (the length is implied);
- ``double* x`` / ``int64_t* x``: an optional scalar, ``None`` for absent;
- ``const char* x`` / ``const char** x``: a string / an optional string;
- ``AtenGeneratorHandle* generator``: ``None`` (the process-wide generator);
- ``const AtenTensorHandle** x, int64_t x_len_``: a list of optional tensors;
- ``const AtenTensorHandle* x, int64_t x_len_``: a list of tensors;
- ``const double** x, int64_t x_len_``: an optional list of floats, ``None`` for absent.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass

from . import _core

_SCALARS = {
    "double": ctypes.c_double,
    "float": ctypes.c_float,
    "int64_t": ctypes.c_int64,
    "int32_t": ctypes.c_int32,
    "int8_t": ctypes.c_int8,
    "bool": ctypes.c_bool,
}


@dataclass(frozen=True)
class Param:
    ctype: str  # normalised C type, e.g. "AtenTensorHandle*", "const int64_t*"
    name: str


def parse_params(text: str) -> list[Param]:
    """'(AtenTensorHandle out, const int64_t* stride, int64_t stride_len_)' -> Params."""
    body = text.strip()
    if body.startswith("(") and body.endswith(")"):
        body = body[1:-1]
    params = []
    for part in filter(None, (p.strip() for p in body.split(","))):
        m = re.fullmatch(r"(.*?[\s*])(\w+)", part)
        if m is None:
            raise ValueError(f"cannot parse parameter {part!r}")
        ctype = re.sub(r"\s*\*\s*", "*", m.group(1).strip())
        params.append(Param(ctype, m.group(2)))
    return params


class FallbackOp:
    """One op of the table; call it as ``op(*args, entry=None)``."""

    def __init__(self, lib: ctypes.CDLL, name: str, params: str, devices: list[str]) -> None:
        self.name = name
        self.devices = tuple(devices)
        self.params = parse_params(params)
        self._lib = lib
        self._functions: dict[str, object] = {}
        # The parameters the caller passes: lengths of lists are implied.
        lengths = {p.name for p in self.params if p.name.endswith("_len_")}
        self.user_params = [p for p in self.params
                            if p.name not in lengths and not self._is_output(p)]

    @staticmethod
    def _is_output(p: Param) -> bool:
        if not re.fullmatch(r"ret\d+", p.name):
            return False
        return p.ctype == "AtenTensorHandle*" or (p.ctype.endswith("*") and p.ctype[:-1] in _SCALARS)

    def _function(self, entry: str | None):
        symbol = f"aotishim_{self.name}" if entry is None else f"aoti_torch_{entry}_{self.name}"
        if entry is not None and entry not in self.devices:
            raise ValueError(f"{self.name} has no {entry} entry point (it has: {', '.join(self.devices)})")
        fn = self._functions.get(symbol)
        if fn is None:
            fn = getattr(self._lib, symbol)
            fn.restype = ctypes.c_int32
            self._functions[symbol] = fn
        return fn

    def __call__(self, *args, entry: str | None = None):
        if len(args) != len(self.user_params):
            names = ", ".join(p.name for p in self.user_params)
            raise TypeError(f"{self.name}({names}) takes {len(self.user_params)} arguments, "
                            f"got {len(args)}")
        given = {p.name: a for p, a in zip(self.user_params, args)}
        c_args, outputs, keep = [], [], []
        for p in self.params:
            c_args.append(self._convert(p, given, outputs, keep))
        rc = self._function(entry)(*c_args)
        if rc != 0:
            raise _core.ShimError(_core.last_error())
        from .shim import Tensor  # shim imports this module

        results = tuple(_result(o, Tensor) for o in outputs)
        return results[0] if len(results) == 1 else (results or None)

    def _convert(self, p: Param, given: dict, outputs: list, keep: list):
        if self._is_output(p):
            slot = ctypes.c_void_p(0) if p.ctype == "AtenTensorHandle*" else _SCALARS[p.ctype[:-1]](0)
            outputs.append(slot)
            return ctypes.byref(slot)
        if p.name.endswith("_len_"):
            values = given[p.name[: -len("_len_")]]
            return ctypes.c_int64(0 if values is None else len(values))
        value = given[p.name]
        if p.ctype == "AtenTensorHandle":
            return ctypes.c_void_p(_handle(value))
        if p.ctype == "AtenTensorHandle*":  # an optional tensor
            if value is None:
                return None
            slot = ctypes.c_void_p(_handle(value))
            keep.append(slot)
            return ctypes.byref(slot)
        if p.ctype == "AtenGeneratorHandle*":  # aotishim takes only the default (None)
            if value is None:
                return None
            slot = ctypes.c_void_p(int(value))
            keep.append(slot)
            return ctypes.byref(slot)
        if p.ctype == "const int64_t*":
            if value is None:
                return None
            array = (ctypes.c_int64 * len(value))(*[int(v) for v in value])
            keep.append(array)
            return array
        if p.ctype == "const AtenTensorHandle**":  # a list of optional tensors
            if value is None:
                return None
            slots = [None if v is None else ctypes.c_void_p(_handle(v)) for v in value]
            pointers = (ctypes.c_void_p * len(slots))(
                *[None if s is None else ctypes.addressof(s) for s in slots])
            keep.extend([slots, pointers])
            return pointers
        if p.ctype == "const AtenTensorHandle*":  # a list of tensors
            handles = (ctypes.c_void_p * max(1, len(value)))(*[_handle(v) for v in value])
            keep.append(handles)
            return handles
        if p.ctype == "const double**":  # an optional list of floats
            if value is None:
                return None
            array = (ctypes.c_double * max(1, len(value)))(*[float(v) for v in value])
            box = ctypes.cast(array, ctypes.c_void_p)
            keep.extend([array, box])
            return ctypes.byref(box)
        if p.ctype == "const char*":
            return None if value is None else str(value).encode()
        if p.ctype == "const char**":  # an optional string
            if value is None:
                return None
            box = ctypes.c_char_p(str(value).encode())
            keep.append(box)
            return ctypes.byref(box)
        if p.ctype.endswith("*") and p.ctype[:-1] in _SCALARS:  # an optional scalar
            if value is None:
                return None
            box = _SCALARS[p.ctype[:-1]](value)
            keep.append(box)
            return ctypes.byref(box)
        if p.ctype in _SCALARS:
            return _SCALARS[p.ctype](value)
        raise TypeError(f"{self.name}: parameter {p.name} has a type ({p.ctype}) "
                        "the Python wrappers do not handle")


def _result(slot, tensor_type):
    if isinstance(slot, ctypes.c_void_p):
        return tensor_type(slot.value) if slot.value else None
    return slot.value


def _handle(value) -> int:
    if value is None:
        return 0
    return value.handle if hasattr(value, "handle") else int(value)


def load_table() -> dict[str, FallbackOp]:
    lib = ctypes.CDLL(_core.library_file())
    return {name: FallbackOp(lib, name, params, devices)
            for name, params, devices in _core.fallback_ops()}

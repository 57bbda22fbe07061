"""dtype and device names <-> the ABI's numbers (c10 ScalarType / DeviceType)."""

from __future__ import annotations

import numpy as np
import ml_dtypes

from . import _core

DTYPES: dict[str, int] = {
    "uint8": 0,
    "int8": 1,
    "int16": 2,
    "int32": 3,
    "int64": 4,
    "float16": 5,
    "float32": 6,
    "float64": 7,
    "bool": 11,
    "complex64": 9,
    "complex128": 10,
    "bfloat16": 15,
    "uint16": 27,
    "uint32": 28,
    "uint64": 29,
}
DTYPE_NAMES: dict[int, str] = {v: k for k, v in DTYPES.items()}

_NUMPY: dict[str, np.dtype] = {
    name: np.dtype(ml_dtypes.bfloat16 if name == "bfloat16" else name) for name in DTYPES
}


# Hot-path lookups (Model.run): numpy dtype -> code, code -> numpy dtype.
NUMPY_CODES: dict[np.dtype, int] = {npd: DTYPES[name] for name, npd in _NUMPY.items()}
NUMPY_BY_CODE: dict[int, np.dtype] = {DTYPES[name]: npd for name, npd in _NUMPY.items()}


def dtype_code(dtype: str | int | np.dtype | type) -> int:
    """The ABI number of a dtype given by name, number or numpy dtype."""
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        return int(dtype)
    if isinstance(dtype, str) and dtype in DTYPES:
        return DTYPES[dtype]
    try:
        npd = np.dtype(dtype)
    except TypeError:
        raise ValueError(f"unknown dtype {dtype!r}; expected one of {sorted(DTYPES)}") from None
    for name, candidate in _NUMPY.items():
        if candidate == npd:
            return DTYPES[name]
    raise ValueError(f"unsupported dtype {npd}; expected one of {sorted(DTYPES)}")


def dtype_name(code: int) -> str:
    return DTYPE_NAMES.get(code, f"dtype({code})")


def numpy_dtype(dtype: str | int) -> np.dtype:
    """The numpy dtype for an ABI dtype (bfloat16 through ml_dtypes)."""
    name = dtype if isinstance(dtype, str) else dtype_name(dtype)
    if name not in _NUMPY:
        raise ValueError(f"dtype {name} has no numpy equivalent")
    return _NUMPY[name]


def parse_device(device: str) -> tuple[int, int]:
    """'cpu' -> (0, -1), 'sim' -> (20, 0), 'cuda:1' -> (1, 1).

    The C++ parser (the one the runtime uses for every device name); raises
    ValueError("invalid device ...") for anything else.
    """
    return _core.parse_device(device)

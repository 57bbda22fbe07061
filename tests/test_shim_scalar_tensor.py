"""aoti_torch_scalar_to_tensor_<dtype>: generated code makes a 0-dimensional
cpu tensor from a number where an op takes a tensor (irfft's `x * 2` before
the proxy executor's _fft_c2r, for one). Driven through the C ABI, with the
argument types generated code passes (complex ones by value, as
c10::complex)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from aotishim import _core, shim


class Complex64(ctypes.Structure):
    _fields_ = [("real", ctypes.c_float), ("imag", ctypes.c_float)]


class Complex128(ctypes.Structure):
    _fields_ = [("real", ctypes.c_double), ("imag", ctypes.c_double)]


CASES = [
    ("float32", ctypes.c_float, 1.5, np.float32),
    ("float64", ctypes.c_double, -2.25e300, np.float64),
    ("uint8", ctypes.c_uint8, 255, np.uint8),
    ("uint16", ctypes.c_uint16, 65535, np.uint16),
    ("uint32", ctypes.c_uint32, 2**32 - 1, np.uint32),
    ("uint64", ctypes.c_uint64, 2**64 - 1, np.uint64),
    ("int8", ctypes.c_int8, -128, np.int8),
    ("int16", ctypes.c_int16, -32768, np.int16),
    ("int32", ctypes.c_int32, -(2**31), np.int32),
    ("int64", ctypes.c_int64, -(2**63), np.int64),
    ("bool", ctypes.c_bool, True, np.bool_),
    ("complex64", Complex64, (0.5, -3.0), np.complex64),
    ("complex128", Complex128, (1e-300, 7.0), np.complex128),
]


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    lib = ctypes.CDLL(_core.library_file())
    for name, ctype, _, _ in CASES:
        f = getattr(lib, f"aoti_torch_scalar_to_tensor_{name}")
        f.argtypes = [ctype, ctypes.POINTER(ctypes.c_void_p)]
        f.restype = ctypes.c_int32
    lib.aotishim_last_error.restype = ctypes.c_char_p
    return lib


@pytest.mark.parametrize("name,ctype,value,np_dtype", CASES, ids=[c[0] for c in CASES])
def test_scalar_to_tensor_holds_the_number_in_a_0d_cpu_tensor(lib, name, ctype, value, np_dtype):
    arg = ctype(*value) if isinstance(value, tuple) else ctype(value)
    handle = ctypes.c_void_p()
    f = getattr(lib, f"aoti_torch_scalar_to_tensor_{name}")
    assert f(arg, ctypes.byref(handle)) == 0, lib.aotishim_last_error()
    t = shim.Tensor(handle.value)
    try:
        assert (t.sizes, t.strides, t.dtype, t.device) == ([], [], name, "cpu")
        got = shim.to_numpy(t)
        want = np.array(complex(*value) if isinstance(value, tuple) else value, dtype=np_dtype)
        assert got.dtype == want.dtype and got.shape == () and got == want
    finally:
        shim.delete(t)


def test_scalar_to_tensor_refuses_a_null_result_pointer(lib):
    assert lib.aoti_torch_scalar_to_tensor_int64(ctypes.c_int64(2), None) != 0
    assert b"ret_new_tensor" in lib.aotishim_last_error()

"""The constant shims return c10's numbers, which generated code hard-codes."""

import pytest

import aotishim
from aotishim import shim

# c10::ScalarType, c10::DeviceType and c10::Layout values (PyTorch 2.13).
EXPECTED = {
    "device_type_cpu": 0,
    "device_type_cuda": 1,
    "device_type_mps": 13,
    "device_type_privateuse1": 20,
    "dtype_uint8": 0,
    "dtype_int8": 1,
    "dtype_int16": 2,
    "dtype_int32": 3,
    "dtype_int64": 4,
    "dtype_float16": 5,
    "dtype_float32": 6,
    "dtype_float64": 7,
    "dtype_bool": 11,
    "dtype_bfloat16": 15,
    "dtype_uint16": 27,
    "dtype_uint32": 28,
    "dtype_uint64": 29,
    "dtype_complex32": 8,
    "dtype_complex64": 9,
    "dtype_complex128": 10,
    "dtype_float8_e5m2": 23,
    "dtype_float8_e4m3fn": 24,
    "dtype_float8_e5m2fnuz": 25,
    "dtype_float8_e4m3fnuz": 26,
    "dtype_float8_e8m0fnu": 44,
    "dtype_float4_e2m1fn_x2": 45,
    "layout_strided": 0,
}


def test_constants_match_c10():
    assert shim.constants() == EXPECTED


def test_element_sizes():
    from aotishim import _core

    torch = __import__("torch")
    for name, code in EXPECTED.items():
        if name.startswith("dtype_"):
            dtype = getattr(torch, name[len("dtype_"):])
            assert _core.element_size(code) == dtype.itemsize, name
    # The C function has no error channel (it returns 0 and sets the last
    # error); the binding turns that into an exception.
    with pytest.raises(aotishim.ShimError, match="unsupported dtype 99"):
        _core.element_size(99)
    assert "unsupported dtype 99" in shim.last_error()


def _torch_header_scalar_types() -> dict[str, int]:
    """c10::ScalarType's numbering as torch's own header lists it."""
    import pathlib
    import re

    torch = __import__("torch")
    header = (pathlib.Path(torch.__file__).parent / "include/torch/headeronly/core/ScalarType.h")
    found = re.findall(r"_\([^,]+, (\w+)\) /\* (\d+) \*/", header.read_text())
    assert len(found) > 40, "the header's numbered list was not found"
    return {name: int(number) for name, number in found}


def test_every_dtype_number_agrees_with_torchs_header():
    numbers = _torch_header_scalar_types()
    header_name = {"uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                   "int64": "Long", "float16": "Half", "float32": "Float", "float64": "Double",
                   "bool": "Bool", "bfloat16": "BFloat16", "uint16": "UInt16",
                   "uint32": "UInt32", "uint64": "UInt64", "complex32": "ComplexHalf",
                   "complex64": "ComplexFloat", "complex128": "ComplexDouble",
                   "float8_e5m2": "Float8_e5m2", "float8_e4m3fn": "Float8_e4m3fn",
                   "float8_e5m2fnuz": "Float8_e5m2fnuz", "float8_e4m3fnuz": "Float8_e4m3fnuz",
                   "float8_e8m0fnu": "Float8_e8m0fnu", "float4_e2m1fn_x2": "Float4_e2m1fn_x2"}
    dtype_constants = {k for k in EXPECTED if k.startswith("dtype_")}
    assert {f"dtype_{n}" for n in header_name} == dtype_constants
    for name, c10_name in header_name.items():
        assert EXPECTED[f"dtype_{name}"] == numbers[c10_name], name


def test_grad_mode_round_trip():
    from aotishim import _core

    assert _core.grad_mode_is_enabled() is True  # torch's default
    _core.grad_mode_set_enabled(False)
    try:
        assert _core.grad_mode_is_enabled() is False
    finally:
        _core.grad_mode_set_enabled(True)


def test_warn_is_logged_at_the_default_level(tmp_path):
    import os
    import subprocess
    import sys

    # A fresh process: the level is read once, from AOTISHIM_LOG.
    code = "from aotishim import _core; _core.warn('careful: something odd')"
    env = {k: v for k, v in os.environ.items() if k != "AOTISHIM_LOG"}
    shown = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert "careful: something odd" in shown.stderr
    env["AOTISHIM_LOG"] = "off"
    hidden = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert hidden.returncode == 0 and "careful" not in hidden.stderr

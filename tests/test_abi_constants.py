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
    "layout_strided": 0,
}


def test_constants_match_c10():
    assert shim.constants() == EXPECTED


def test_element_sizes():
    from aotishim import _core

    sizes = {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 2, 6: 4, 7: 8, 11: 1, 15: 2}
    for code, size in sizes.items():
        assert _core.element_size(code) == size
    # The C function has no error channel (it returns 0 and sets the last
    # error); the binding turns that into an exception.
    with pytest.raises(aotishim.ShimError, match="unsupported dtype 99"):
        _core.element_size(99)
    assert "unsupported dtype 99" in shim.last_error()


def test_dtype_numbers_agree_with_torch():
    """Cross-check against torch's own ScalarType numbering."""
    torch = __import__("torch")
    from torch.onnx._internal.torchscript_exporter._type_utils import JitScalarType

    for name, code in EXPECTED.items():
        if name.startswith("dtype_"):
            dtype = getattr(torch, name[len("dtype_"):])
            assert int(JitScalarType.from_dtype(dtype)) == code, name


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

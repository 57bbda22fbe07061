"""Entry points of torch's shim.h that models of newer torch releases (or
their runtime) call, driven through the C ABI as generated code calls them."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from aotishim import _core, shim

vp, i32, i64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    lib = ctypes.CDLL(_core.library_file())
    lib.aotishim_last_error.restype = ctypes.c_char_p
    lib.aoti_torch_empty_strided_pinned.argtypes = [i64, ctypes.POINTER(i64),
                                                    ctypes.POINTER(i64), i32, i32, i32,
                                                    ctypes.POINTER(vp)]
    lib.aoti_torch_empty_strided_pinned.restype = i32
    lib.aoti_torch_abi_version.restype = ctypes.c_uint64
    return lib


def _array(values: list[int]) -> ctypes.Array:
    return (i64 * len(values))(*values)


def test_empty_strided_pinned_is_a_cpu_tensor_with_its_strides(lib):
    handle = vp()
    sizes, strides = _array([3, 4]), _array([1, 3])
    assert lib.aoti_torch_empty_strided_pinned(2, sizes, strides, 6, 0, -1,
                                               ctypes.byref(handle)) == 0
    t = shim.Tensor(handle.value)
    try:
        assert (t.sizes, t.strides, t.dtype, t.device) == ([3, 4], [1, 3], "float32", "cpu")
        assert t.owns_storage and t.storage_nbytes == 12 * 4
        # Usable memory: what is written through it reads back in its layout.
        values = np.arange(12, dtype=np.float32).reshape(4, 3).T
        shim.copy_(t, shim.from_numpy(np.ascontiguousarray(values)))
        np.testing.assert_array_equal(shim.to_numpy(t), values)
    finally:
        shim.delete(t)


def test_empty_strided_pinned_without_strides_is_contiguous(lib):
    handle = vp()
    assert lib.aoti_torch_empty_strided_pinned(3, _array([2, 3, 5]), None, 4, 0, -1,
                                               ctypes.byref(handle)) == 0
    t = shim.Tensor(handle.value)
    try:
        assert t.strides == [15, 5, 1] and t.dtype == "int64"
    finally:
        shim.delete(t)


@pytest.mark.parametrize("device_type, index", [(1, 0), (13, 0), (20, 0)])
def test_empty_strided_pinned_refuses_device_memory(lib, device_type, index):
    handle = vp()
    assert lib.aoti_torch_empty_strided_pinned(1, _array([4]), _array([1]), 6, device_type,
                                               index, ctypes.byref(handle)) == 1
    message = lib.aotishim_last_error().decode()
    assert message.startswith("aoti_torch_empty_strided_pinned: ")
    assert "only cpu tensors can be pinned" in message


def test_empty_strided_pinned_bad_arguments_are_errors(lib):
    handle = vp()
    assert lib.aoti_torch_empty_strided_pinned(1, _array([4]), _array([1]), 6, 0, -1, None) == 1
    assert b"ret_new_tensor" in lib.aotishim_last_error()
    assert lib.aoti_torch_empty_strided_pinned(1, _array([-2]), _array([1]), 6, 0, -1,
                                               ctypes.byref(handle)) == 1
    assert lib.aoti_torch_empty_strided_pinned(1, _array([4]), _array([1]), 99, 0, -1,
                                               ctypes.byref(handle)) == 1
    assert b"dtype" in lib.aotishim_last_error()


def _abi_version(major: int, minor: int, patch: int, tag: int = 0) -> int:
    """torch's TORCH_ABI_VERSION layout (torch/headeronly/version.h)."""
    return (major << 56) | (minor << 48) | (patch << 40) | tag


def test_abi_version_is_the_newest_release_whose_shim_header_we_follow(lib):
    version = lib.aoti_torch_abi_version()
    assert version == _abi_version(2, 15, 0)
    # Code built against the installed torch, which asks for the runtime's
    # version, finds one at least as new as its own.
    torch = pytest.importorskip("torch")
    major, minor, patch = (int(p) for p in torch.__version__.split("+")[0].split(".")[:3])
    assert version >= _abi_version(major, minor, patch)

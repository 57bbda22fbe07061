"""Bad input gets a clear error code and message, never a crash."""

from __future__ import annotations

import numpy as np
import pytest

import aotishim
from aotishim import _core, shim

GETTERS = ["data_ptr", "sizes", "strides", "dim", "numel", "storage_offset", "storage_size",
           "dtype", "device_type", "device_index", "layout", "is_contiguous"]


def _handle_shims(h):
    """Every shim that takes a tensor handle, called on h."""
    good = shim.empty_strided([2, 2])
    calls = [lambda g=g: _core.get(h, g) for g in GETTERS]
    calls += [
        lambda: _core.get_size(h, 0),
        lambda: _core.get_stride(h, 0),
        lambda: _core.is_defined(h),
        lambda: _core.reinterpret_tensor(h, [1], [1], 0),
        lambda: _core.new_tensor_handle(h),
        lambda: _core.assign_tensors_out(h),
        lambda: _core.clone(h),
        lambda: _core.clone_preserve_strides(h),
        lambda: _core.copy_(h, good.handle),
        lambda: _core.copy_(good.handle, h),
        lambda: shim.cpu_mm_out(h, good.handle, good.handle),
        lambda: shim.cpu_addmm_out(good.handle, h, good.handle, good.handle, 1.0, 1.0),
        lambda: shim.cpu_bmm_out(good.handle, good.handle, h),
        lambda: _core.delete_tensor_object(h),
        lambda: _core.tensor_info(h),
        lambda: _core.copy_to_host(h, np.empty(4, np.float32)),
    ]
    return calls


def test_deleted_handle_is_reported_by_every_shim():
    t = shim.empty_strided([2, 2])
    shim.delete(t)
    for call in _handle_shims(t.handle):
        with pytest.raises(shim.ShimError, match="already deleted"):
            call()


def test_null_handle_is_reported_by_every_shim():
    for call in _handle_shims(0):
        with pytest.raises(shim.ShimError, match="null"):
            call()


def test_foreign_value_is_not_a_handle():
    for call in _handle_shims(0x1234):
        with pytest.raises(shim.ShimError, match="not a tensor handle"):
            call()


def test_double_delete_is_an_error_and_counts_once():
    t = shim.empty_strided([3])
    before = aotishim.memory_stats()["released_handles"]
    shim.delete(t)
    with pytest.raises(shim.ShimError, match="double-deleted"):
        shim.delete(t)
    assert aotishim.memory_stats()["released_handles"] == before + 1
    assert "aoti_torch_delete_tensor_object" in shim.last_error()


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(sizes=[-1, 2]), "negative size"),
        (dict(sizes=[2, 2], strides=[-1, 1]), "negative stride"),
        (dict(sizes=[2**40, 2**40]), "overflows"),
        (dict(sizes=[2, 2], strides=[2**62, 2**62]), "overflows"),
        (dict(sizes=[2], dtype=99), "unsupported dtype 99"),
        (dict(sizes=[2], strides=[1, 1]), "differ in length"),
    ],
)
def test_empty_strided_rejects_bad_geometry(kwargs, message):
    with pytest.raises(shim.ShimError, match=message):
        shim.empty_strided(**kwargs)


def test_unknown_and_unavailable_devices():
    with pytest.raises(shim.ShimError, match="unsupported device type 5"):
        _core.empty_strided([2], None, 6, 5, 0)
    if not any(d.startswith("cuda") for d in aotishim.devices()):
        with pytest.raises(shim.ShimError, match="cuda"):
            shim.empty_strided([2], device="cuda:0")
    with pytest.raises(shim.ShimError, match="not available"):
        _core.empty_strided([2], None, 6, 0, 3)
    with pytest.raises(ValueError, match="invalid device"):
        shim.empty_strided([2], device="gpu")


@pytest.mark.parametrize("name", ["gpu", "cuda:", "cpu:1", "sim:-1", "sim:x", "", ":0", "CPU"])
def test_invalid_device_names(name):
    # One parser (the C++ one) for Python and the runtime alike.
    with pytest.raises(ValueError, match="invalid device"):
        _core.parse_device(name)
    with pytest.raises(ValueError, match="invalid device"):
        shim.empty_strided([2], device=name)
    with pytest.raises(shim.ShimError, match="invalid device"):
        _core.synchronize(name)


def test_device_names_as_the_abi_numbers():
    assert _core.parse_device("cpu") == (0, -1)
    assert _core.parse_device("cpu:0") == (0, -1)
    assert _core.parse_device("sim") == (20, 0)
    assert _core.parse_device("sim:0") == (20, 0)
    assert _core.parse_device("cuda:1") == (1, 1)
    assert _core.parse_device("mps") == (13, 0)
    assert shim.empty_strided([2], device="cpu:0").device == "cpu"


def test_views_must_stay_inside_storage():
    base = shim.empty_strided([4, 4])
    with pytest.raises(shim.ShimError, match="outside its storage"):
        shim.reinterpret_tensor(base, [4, 4], [4, 1], 1)
    with pytest.raises(shim.ShimError, match="outside its storage"):
        shim.reinterpret_tensor(base, [2, 2], [16, 1], 0)
    with pytest.raises(shim.ShimError, match="negative storage offset"):
        shim.reinterpret_tensor(base, [1], [1], -1)
    # the base is untouched by the failed calls
    assert base.sizes == [4, 4] and shim.is_live(base)
    ok = shim.reinterpret_tensor(base, [1, 4], [4, 1], 12)
    assert ok.data_ptr == base.data_ptr + 48


def test_from_blob_rejects_null_and_bad_layout():
    with pytest.raises(shim.ShimError, match="null"):
        shim.from_blob(0, [4], dtype="float32")
    assert shim.get(shim.from_blob(0, [0], dtype="float32"), "numel") == 0
    buf = np.zeros(4, np.float32)
    f32, cpu = _core.constants()["dtype_float32"], _core.constants()["device_type_cpu"]
    strided = _core.constants()["layout_strided"]
    args = (buf.ctypes.data, [4], None, 0, f32, cpu, -1)
    live = aotishim.memory_stats()["live_tensors"]
    with pytest.raises(shim.ShimError, match=r"^aoti_torch_create_tensor_from_blob_v2: unsupported layout 2"):
        _core.create_tensor_from_blob(*args, layout=strided + 2)
    with pytest.raises(shim.ShimError, match=r"^aoti_torch_create_tensor_from_blob_v2: opaque metadata"):
        _core.create_tensor_from_blob(*args, opaque_metadata=b"\x01\x02")
    assert aotishim.memory_stats()["live_tensors"] == live  # nothing made on failure
    t = shim.Tensor(_core.create_tensor_from_blob(*args, layout=strided, opaque_metadata=b""))
    assert t.sizes == [4] and t.data_ptr == buf.ctypes.data and not t.owns_storage


def test_from_blob_v1_borrows_with_offset_and_checks_like_v2():
    buf = np.arange(10, dtype=np.float32)
    f32, cpu = _core.constants()["dtype_float32"], _core.constants()["device_type_cpu"]
    t = shim.Tensor(_core.create_tensor_from_blob_v1(buf.ctypes.data, [2, 3], [4, 1], 1, f32, cpu, -1))
    assert (t.sizes, t.strides, t.storage_offset) == ([2, 3], [4, 1], 1)
    assert t.data_ptr == buf.ctypes.data + 4 and not t.owns_storage
    np.testing.assert_array_equal(shim.to_numpy(t), np.array([[1, 2, 3], [5, 6, 7]], np.float32))
    with pytest.raises(shim.ShimError, match=r"^aoti_torch_create_tensor_from_blob: data pointer is null"):
        _core.create_tensor_from_blob_v1(0, [4], None, 0, f32, cpu, -1)
    with pytest.raises(shim.ShimError, match="storage offset"):
        _core.create_tensor_from_blob_v1(buf.ctypes.data, [2], None, 2**63 - 1, f32, cpu, -1)


def test_from_blob_rejects_an_offset_that_overflows():
    buf = np.zeros(4, np.float32)
    # offset + extent, and that in bytes, must not wrap into a small storage size
    for offset in (2**63 - 1, 2**62):
        with pytest.raises(shim.ShimError, match="storage offset"):
            shim.from_blob(buf.ctypes.data, [2], storage_offset=offset, dtype="float32")


def test_empty_tensor_with_huge_other_sizes():
    # The product of the non-zero sizes does not fit in int64; numel and
    # is_contiguous must not compute it (signed overflow under UBSan).
    buf = np.zeros(1, np.float32)
    for sizes, strides in (([0, 2**40, 2**40], [1, 2**40, 1]), ([2**40, 2**40, 0], [0, 0, 1])):
        t = shim.from_blob(buf.ctypes.data, sizes, strides, dtype="float32")
        assert shim.get(t, "numel") == 0
        assert shim.get(t, "is_contiguous") is True
        out = shim.empty_strided(sizes, strides, dtype="float32")
        shim.copy_(out, t)  # nothing to copy


def test_copy_shape_mismatch():
    a = shim.empty_strided([2, 3])
    b = shim.empty_strided([3, 2])
    with pytest.raises(shim.ShimError, match="broadcast"):
        shim.copy_(a, b)


def test_size_and_stride_dimension_checks():
    t = shim.empty_strided([2, 3], [1, 2])
    assert _core.get(t.handle, "dim") == 2
    with pytest.raises(ValueError, match="unknown getter"):
        _core.get(t.handle, "nonsense")
    assert [_core.get_size(t.handle, d) for d in (0, 1, -1, -2)] == [2, 3, 3, 2]
    assert [_core.get_stride(t.handle, d) for d in (0, 1, -1, -2)] == [1, 2, 2, 1]
    for d in (2, -3, 2**62):
        with pytest.raises(shim.ShimError, match=r"^aoti_torch_get_size: dimension .* out of range for a 2-d"):
            _core.get_size(t.handle, d)
        with pytest.raises(shim.ShimError, match=r"^aoti_torch_get_stride: dimension .* out of range for a 2-d"):
            _core.get_stride(t.handle, d)
    scalar = shim.empty_strided([])
    with pytest.raises(shim.ShimError, match="out of range for a 0-d"):
        _core.get_size(scalar.handle, 0)
    with pytest.raises(shim.ShimError, match="out of range for a 0-d"):
        _core.get_stride(scalar.handle, -1)


def test_is_defined_for_live_tensors():
    assert _core.is_defined(shim.empty_strided([2]).handle) is True
    assert _core.is_defined(shim.empty_strided([0]).handle) is True


def test_read_only_array_cannot_be_borrowed():
    arr = np.arange(4, dtype=np.float32)
    arr.setflags(write=False)
    with pytest.raises(shim.ShimError, match="read-only"):
        shim.from_numpy(arr)
    t = shim.from_numpy(arr, copy=True)
    np.testing.assert_array_equal(shim.to_numpy(t), arr)


def test_unsupported_numpy_dtype():
    import ml_dtypes

    with pytest.raises(ValueError, match="unsupported dtype"):
        shim.from_numpy(np.zeros(3, ml_dtypes.float8_e4m3fn))


def test_zero_dim_view():
    base = shim.from_numpy(np.arange(6, dtype=np.float32))
    scalar = shim.reinterpret_tensor(base, [], [], 4)
    assert shim.get(scalar, "dim") == 0
    assert float(shim.to_numpy(scalar)) == 4.0

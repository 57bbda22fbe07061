"""The cuda device on a real GPU: memory, views at offsets, copies, and the
cuBLAS-backed mm/addmm/bmm shims. Skipped where no CUDA device is present."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

import aotishim
from aotishim import shim

pytestmark = pytest.mark.skipif("cuda:0" not in aotishim.devices(),
                                reason="no CUDA device in this process")

import cuda_helpers as ch  # noqa: E402  (after the skip: it loads the plugin)

DEV = "cuda:0"
BF16 = ml_dtypes.bfloat16
rng = np.random.default_rng(1234)


def to_dev(a: np.ndarray) -> shim.Tensor:
    return shim.from_numpy(a, copy=True, device=DEV)


def device_stats() -> dict:
    for d in aotishim.memory_stats()["devices"]:
        if d["device"] == DEV:
            return d
    return {"allocations": 0, "bytes": 0, "synchronizes": 0, "commands": 0}


# ---- memory ----

def test_empty_strided_allocates_and_frees_device_memory():
    before = device_stats()["allocations"]
    t = shim.empty_strided([3, 5], [5, 1], "float32", DEV)
    assert t.device == DEV
    assert t.owns_storage and t.storage_nbytes == 60 and t.data_ptr != 0
    assert shim.get(t, "device_type") == shim.constants()["device_type_cuda"]
    assert device_stats()["allocations"] == before + 1
    shim.delete(t)
    assert device_stats()["allocations"] == before


def test_empty_tensor_gets_a_distinct_address():
    a = shim.empty_strided([0, 4], None, "float32", DEV)
    b = shim.empty_strided([0], None, "float32", DEV)
    assert a.data_ptr != b.data_ptr
    assert shim.to_numpy(a).shape == (0, 4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, BF16, np.int64,
                                   np.int32, np.uint8, np.bool_])
def test_host_round_trip(dtype):
    a = (rng.standard_normal((7, 9)) * 10).astype(dtype)
    t = to_dev(a)
    assert t.device == DEV and t.dtype == shim.Tensor(t.handle).dtype
    np.testing.assert_array_equal(shim.to_numpy(t), a)


def test_non_contiguous_host_input():
    base = rng.standard_normal((6, 10)).astype(np.float32)
    a = base[::2, 1::3]
    np.testing.assert_array_equal(shim.to_numpy(to_dev(a)), a)


def test_reading_to_host_waits_once_on_the_stream():
    # Reading device memory is a download on the stream plus one stream wait.
    t = to_dev(np.arange(12, dtype=np.float32))
    before = device_stats()["synchronizes"]
    shim.to_numpy(t)
    assert device_stats()["synchronizes"] == before + 1


# ---- views at storage offsets (chunk / split / cat patterns) ----

def test_views_at_offsets_read_their_own_elements():
    a = rng.standard_normal((12, 16)).astype(np.float32)
    base = to_dev(a)
    last = shim.reinterpret_tensor(base, [12, 8], [16, 1], 8)    # chunk(2, dim=-1)[1]
    first = shim.reinterpret_tensor(base, [6, 16], [16, 1], 96)  # chunk(2, dim=0)[1]
    col = shim.reinterpret_tensor(base, [12], [16], 3)
    assert last.data_ptr == base.data_ptr + 8 * 4
    np.testing.assert_array_equal(shim.to_numpy(last), a[:, 8:])
    np.testing.assert_array_equal(shim.to_numpy(first), a[6:])
    np.testing.assert_array_equal(shim.to_numpy(col), a[:, 3])


def test_view_keeps_storage_alive_after_base_is_deleted():
    a = rng.standard_normal((4, 4)).astype(np.float32)
    base = to_dev(a)
    v = shim.reinterpret_tensor(base, [2, 4], [4, 1], 8)
    shim.delete(base)
    np.testing.assert_array_equal(shim.to_numpy(v), a[2:])


def test_view_outside_storage_is_an_error():
    base = shim.empty_strided([4, 4], None, "float32", DEV)
    with pytest.raises(aotishim.ShimError, match="outside its storage"):
        shim.reinterpret_tensor(base, [4, 4], [4, 1], 1)


# ---- copies ----

def test_copy_host_into_device_view_writes_through():
    a = np.zeros((4, 8), np.float32)
    base = to_dev(a)
    view = shim.reinterpret_tensor(base, [4, 3], [8, 1], 5)  # cat-style slot
    src = rng.standard_normal((4, 3)).astype(np.float32)
    shim.copy_(view, shim.from_numpy(src))
    expected = a.copy()
    expected[:, 5:8] = src
    np.testing.assert_array_equal(shim.to_numpy(base), expected)


def test_copy_device_strided_view_to_host():
    a = rng.standard_normal((5, 6)).astype(np.float32)
    base = to_dev(a)
    t = shim.reinterpret_tensor(base, [6, 5], [1, 6], 0)  # transpose
    host = shim.from_numpy(np.zeros((6, 5), np.float32))
    shim.copy_(host, t)
    np.testing.assert_array_equal(shim.to_numpy(host), a.T)


def test_copy_device_to_device_strided_same_dtype():
    a = np.arange(6 * 7 * 3, dtype=np.int64)
    src = shim.reinterpret_tensor(to_dev(a), [3, 7, 2], [42, 3, 2], 1)
    dst_base = to_dev(np.full(84, -1, np.int64))
    dst = shim.reinterpret_tensor(dst_base, [3, 7, 2], [4, 12, 1], 2)
    shim.copy_(dst, src)
    expected = np.full(84, -1, np.int64)
    for i in range(3):
        for j in range(7):
            for k in range(2):
                expected[2 + 4 * i + 12 * j + k] = a[1 + 42 * i + 3 * j + 2 * k]
    np.testing.assert_array_equal(shim.to_numpy(dst_base), expected)


FLOATS = [np.float32, np.float64, np.float16, BF16]


@pytest.mark.parametrize("src_dtype", FLOATS)
@pytest.mark.parametrize("dst_dtype", FLOATS)
def test_copy_on_device_converts_float_dtypes(src_dtype, dst_dtype):
    # float32-exact values, so every conversion rounds once whatever the path
    a = (rng.standard_normal((9, 5)) * 3).astype(np.float32).astype(src_dtype)
    src = shim.reinterpret_tensor(to_dev(a), [5, 9], [1, 5], 0)  # transposed
    dst = shim.empty_strided([5, 9], None, np.dtype(dst_dtype).name, DEV)
    shim.copy_(dst, src)
    expected = a.T.astype(np.float64).astype(dst_dtype)
    got = shim.to_numpy(dst)
    assert got.dtype == np.dtype(dst_dtype)
    np.testing.assert_array_equal(got.astype(np.float64), expected.astype(np.float64))


def test_copy_broadcasts_on_device():
    row = to_dev(np.arange(4, dtype=np.float32))
    dst = shim.empty_strided([3, 4], None, "float32", DEV)
    shim.copy_(dst, row)
    np.testing.assert_array_equal(shim.to_numpy(dst), np.tile(np.arange(4, dtype=np.float32), (3, 1)))


def test_overlapping_copy_on_device():
    a = np.arange(10, dtype=np.float32)
    base = to_dev(a)
    dst = shim.reinterpret_tensor(base, [8], [1], 2)
    src = shim.reinterpret_tensor(base, [8], [1], 0)
    shim.copy_(dst, src)
    expected = a.copy()
    expected[2:] = a[:8]
    np.testing.assert_array_equal(shim.to_numpy(base), expected)


def test_integer_to_float_conversion_on_device():
    # once refused (no cuda conversion of int32 to float32); now converted
    # as numpy rounds, values past 2**24 included
    a = np.array([0, -1, 7, 2**24 + 1, -(2**31), 2**31 - 1], dtype=np.int32)
    dst = shim.empty_strided([6], None, "float32", DEV)
    shim.copy_(dst, to_dev(a))
    np.testing.assert_array_equal(shim.to_numpy(dst), a.astype(np.float32))


@pytest.mark.parametrize("real,cplx", [("float32", "complex64"), ("float64", "complex64"),
                                       ("float16", "complex128"), ("float32", "complex128")])
def test_real_to_complex_copy_on_device(real, cplx):
    a = rng.standard_normal(24).astype(np.float64) * 3
    src = shim.reinterpret_tensor(to_dev(a.astype(real)), [3, 4], [8, 2], 1)  # strided
    dst = shim.empty_strided([3, 4], [1, 3], cplx, DEV)  # column-major
    shim.copy_(dst, src)
    want = np.lib.stride_tricks.as_strided(a.astype(real)[1:], (3, 4),
                                           (8 * np.dtype(real).itemsize, 2 * np.dtype(real).itemsize))
    got = shim.to_numpy(dst)
    assert got.dtype == np.dtype(cplx)
    np.testing.assert_array_equal(got, want.astype(cplx))  # the real rounded once, imag 0


def test_clone_of_device_view():
    a = rng.standard_normal(24).astype(np.float32)
    v = shim.reinterpret_tensor(to_dev(a), [3, 4], [8, 2], 1)
    c = shim.clone(v)
    assert c.device == DEV and c.strides == [4, 1] and c.storage_offset == 0
    expected = np.lib.stride_tricks.as_strided(a[1:], (3, 4), (32, 8))
    np.testing.assert_array_equal(shim.to_numpy(c), expected)


# ---- matrix products through the exported aoti_torch_cuda_* shims ----

def dev_matrix(a: np.ndarray, layout: str, offset: int = 0) -> tuple[shim.Tensor, np.ndarray]:
    """`a` placed on the device as a view with the given layout at an offset:
    'row' (row-major, padded rows), 'col' (column-major), 'strided' (no unit
    stride: packed by the backend)."""
    rows, cols = a.shape
    if layout == "row":
        ld = cols + 3
        buf = np.zeros(offset + rows * ld, a.dtype)
        np.lib.stride_tricks.as_strided(buf[offset:], a.shape, (ld * a.itemsize, a.itemsize))[:] = a
        strides = [ld, 1]
    elif layout == "col":
        ld = rows + 2
        buf = np.zeros(offset + cols * ld, a.dtype)
        np.lib.stride_tricks.as_strided(buf[offset:], a.shape, (a.itemsize, ld * a.itemsize))[:] = a
        strides = [1, ld]
    else:
        buf = np.zeros(offset + rows * cols * 4, a.dtype)
        np.lib.stride_tricks.as_strided(buf[offset:], a.shape,
                                        (cols * 4 * a.itemsize, 2 * a.itemsize))[:] = a
        strides = [cols * 4, 2]
    base = to_dev(buf)
    return shim.reinterpret_tensor(base, [rows, cols], strides, offset), a


def tol(dtype, k):
    if dtype is BF16:
        return dict(rtol=2e-2, atol=2e-2 * np.sqrt(k))
    if dtype is np.float16:
        return dict(rtol=2e-3, atol=2e-3 * np.sqrt(k))
    return dict(rtol=1e-4, atol=1e-4 * np.sqrt(k))


def rand(shape, dtype):
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, BF16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("la", ["row", "col", "strided"])
@pytest.mark.parametrize("lb", ["row", "col", "strided"])
@pytest.mark.parametrize("lo", ["row", "col", "strided"])
def test_mm_layouts_and_offsets(dtype, la, lb, lo):
    m, k, n = 13, 7, 10
    a, a_np = dev_matrix(rand((m, k), dtype), la, offset=3)
    b, b_np = dev_matrix(rand((k, n), dtype), lb, offset=5)
    out, _ = dev_matrix(np.full((m, n), np.nan, np.float32).astype(dtype), lo, offset=1)
    ch.call("aoti_torch_cuda_mm_out", out.handle, a.handle, b.handle)
    ref = a_np.astype(np.float64) @ b_np.astype(np.float64)
    np.testing.assert_allclose(shim.to_numpy(out).astype(np.float64), ref, **tol(dtype, k))


def test_mm_writes_only_its_view():
    # The cat pattern: mm_out into reinterpret_tensor(buf, {10, 3}, {8, 1}, 5).
    buf_np = np.full(10 * 8, 7.0, np.float32)
    buf = to_dev(buf_np)
    out = shim.reinterpret_tensor(buf, [10, 3], [8, 1], 5)
    a_np, b_np = rand((10, 4), np.float32), rand((4, 3), np.float32)
    ch.call("aoti_torch_cuda_mm_out", out.handle, to_dev(a_np).handle, to_dev(b_np).handle)
    got = shim.to_numpy(buf)
    expected = buf_np.copy()
    np.lib.stride_tricks.as_strided(expected[5:], (10, 3), (32, 4))[:] = a_np @ b_np
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, BF16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("bias_shape", [(10,), (1, 10), (13, 10)])
def test_addmm(dtype, bias_shape):
    m, k, n = 13, 9, 10
    a_np, b_np, bias_np = rand((m, k), dtype), rand((n, k), dtype), rand(bias_shape, dtype)
    a = to_dev(a_np)
    b = shim.reinterpret_tensor(to_dev(b_np), [k, n], [1, k], 0)  # weight.t(), as linear does
    out = shim.empty_strided([m, n], None, "bfloat16" if dtype is BF16 else "float32", DEV)
    ch.call("aoti_torch_cuda_addmm_out", out.handle, to_dev(bias_np).handle, a.handle, b.handle,
            0.5, 2.0)
    ref = 0.5 * bias_np.astype(np.float64) + 2.0 * (a_np.astype(np.float64) @
                                                    b_np.T.astype(np.float64))
    np.testing.assert_allclose(shim.to_numpy(out).astype(np.float64), ref, **tol(dtype, k))


def test_addmm_beta_zero_ignores_nan_in_bias_and_out():
    a_np, b_np = rand((4, 3), np.float32), rand((3, 5), np.float32)
    bias = to_dev(np.full((5,), np.nan, np.float32))
    out = to_dev(np.full((4, 5), np.nan, np.float32))
    ch.call("aoti_torch_cuda_addmm_out", out.handle, bias.handle, to_dev(a_np).handle,
            to_dev(b_np).handle, 0.0, 1.0)
    np.testing.assert_allclose(shim.to_numpy(out), a_np @ b_np, rtol=1e-5, atol=1e-5)


DTYPE_NAMES = {np.float32: "float32", BF16: "bfloat16", np.float16: "float16",
               np.float64: "float64"}


@pytest.mark.parametrize("dtype", list(DTYPE_NAMES), ids=list(DTYPE_NAMES.values()))
@pytest.mark.parametrize("bias_shape", [(10,), (1, 10)])
@pytest.mark.parametrize("alpha", [1.0, 2.0])
@pytest.mark.parametrize("out_layout", ["row", "col"])
def test_addmm_bias_in_the_epilogue(dtype, bias_shape, alpha, out_layout):
    """linear's addmm (beta 1, a bias vector per row) adds the bias in
    cuBLASLt's epilogue: one command where a copy of the bias into out
    came first (two), at any offset of the bias. Into a column-major out
    the epilogue does not apply and the bias is copied first, as before."""
    m, k, n = 13, 9, 10
    a_np, b_np = rand((m, k), dtype), rand((n, k), dtype)
    bias_np = rand(bias_shape, dtype)
    a = to_dev(a_np)
    b = shim.reinterpret_tensor(to_dev(b_np), [k, n], [1, k], 0)  # weight.t(), as linear does
    bias_buf = to_dev(np.concatenate([rand((1,), dtype), bias_np.reshape(-1)]))
    bias = shim.reinterpret_tensor(bias_buf, list(bias_shape),
                                   [1] if len(bias_shape) == 1 else [n, 1], 1)  # misaligned
    out, _ = dev_matrix(np.full((m, n), np.nan, np.float32).astype(dtype), out_layout, offset=2)
    before = device_stats()["commands"]
    ch.call("aoti_torch_cuda_addmm_out", out.handle, bias.handle, a.handle, b.handle, 1.0, alpha)
    commands = device_stats()["commands"] - before
    ref = bias_np.astype(np.float64) + alpha * (a_np.astype(np.float64) @ b_np.T.astype(np.float64))
    np.testing.assert_allclose(shim.to_numpy(out).astype(np.float64), ref, **tol(dtype, k))
    fused = out_layout == "row" and os.environ.get("AOTISHIM_CUBLAS_API") != "legacy"
    assert commands == (1 if fused else 2)


@pytest.mark.parametrize("dtype", [np.float16, np.float64], ids=["float16", "float64"])
@pytest.mark.parametrize("la", ["row", "col"])
@pytest.mark.parametrize("lo", ["row", "col"])
def test_mm_more_dtypes(dtype, la, lo):
    m, k, n = 17, 33, 12
    a, a_np = dev_matrix(rand((m, k), dtype), la, offset=1)
    b, b_np = dev_matrix(rand((k, n), dtype), "row", offset=3)
    out, _ = dev_matrix(np.full((m, n), np.nan, dtype), lo, offset=1)
    ch.call("aoti_torch_cuda_mm_out", out.handle, a.handle, b.handle)
    ref = a_np.astype(np.float64) @ b_np.astype(np.float64)
    np.testing.assert_allclose(shim.to_numpy(out).astype(np.float64), ref,
                               **(tol(dtype, k) if dtype is np.float16
                                  else dict(rtol=1e-10, atol=1e-10)))


def test_gemms_of_one_problem_take_each_calls_pointers():
    """A plan is made once per problem and kept, the bias pointer included
    in its descriptor: calls with the same shapes and new data (another
    allocation each time) must each read their own bias and operands; a
    plan that kept the first call's bias gives the first answer again."""
    m, k, n = 64, 32, 48
    for step in range(4):
        a_np, b_np, bias_np = rand((m, k), np.float32), rand((k, n), np.float32), rand((n,), np.float32)
        out = shim.empty_strided([m, n], None, "float32", DEV)
        ch.call("aoti_torch_cuda_addmm_out", out.handle, to_dev(bias_np).handle,
                to_dev(a_np).handle, to_dev(b_np).handle, 1.0, 1.0)
        ref = bias_np.astype(np.float64) + a_np.astype(np.float64) @ b_np.astype(np.float64)
        np.testing.assert_allclose(shim.to_numpy(out), ref, **tol(np.float32, k))


@pytest.mark.parametrize("dtype", [np.float32, BF16], ids=["float32", "bfloat16"])
def test_bmm_with_batch_views(dtype):
    bsz, m, k, n = 4, 6, 5, 7
    a_np, b_np = rand((bsz, m, k), dtype), rand((bsz, n, k), dtype)
    a = to_dev(a_np)
    b = shim.reinterpret_tensor(to_dev(b_np), [bsz, k, n], [n * k, 1, k], 0)  # transposed
    out_buf = to_dev(np.zeros((bsz, m, n + 2), np.float32).astype(dtype))
    out = shim.reinterpret_tensor(out_buf, [bsz, m, n], [m * (n + 2), n + 2, 1], 1)
    ch.call("aoti_torch_cuda_bmm_out", out.handle, a.handle, b.handle)
    ref = a_np.astype(np.float64) @ b_np.transpose(0, 2, 1).astype(np.float64)
    np.testing.assert_allclose(shim.to_numpy(out).astype(np.float64), ref, **tol(dtype, k))


def test_bmm_with_broadcast_batch_operand():
    a_np, w_np = rand((3, 4, 8), np.float32), rand((8, 5), np.float32)
    w = shim.reinterpret_tensor(to_dev(w_np), [3, 8, 5], [0, 5, 1], 0)
    out = shim.empty_strided([3, 4, 5], None, "float32", DEV)
    ch.call("aoti_torch_cuda_bmm_out", out.handle, to_dev(a_np).handle, w.handle)
    np.testing.assert_allclose(shim.to_numpy(out), a_np @ w_np, rtol=1e-5, atol=1e-5)


def test_mm_with_empty_inner_dimension_gives_zeros():
    a = shim.empty_strided([3, 0], None, "float32", DEV)
    b = shim.empty_strided([0, 4], None, "float32", DEV)
    out = to_dev(np.full((3, 4), np.nan, np.float32))
    ch.call("aoti_torch_cuda_mm_out", out.handle, a.handle, b.handle)
    np.testing.assert_array_equal(shim.to_numpy(out), np.zeros((3, 4), np.float32))


def test_large_mm_float32_matches_numpy():
    m, k, n = 300, 257, 129
    a_np, b_np = rand((m, k), np.float32), rand((k, n), np.float32)
    out = shim.empty_strided([m, n], None, "float32", DEV)
    ch.call("aoti_torch_cuda_mm_out", out.handle, to_dev(a_np).handle, to_dev(b_np).handle)
    ref = a_np.astype(np.float64) @ b_np.astype(np.float64)
    np.testing.assert_allclose(shim.to_numpy(out), ref, rtol=1e-4, atol=1e-3)


def test_cuda_mm_rejects_cpu_tensors():
    a = shim.from_numpy(np.ones((2, 2), np.float32))
    out = shim.empty_strided([2, 2], None, "float32", DEV)
    with pytest.raises(aotishim.ShimError, match=r"^aoti_torch_cuda_mm_out: self is on cpu, but this op runs on the cuda device"):
        ch.call("aoti_torch_cuda_mm_out", out.handle, a.handle, to_dev(np.ones((2, 2), np.float32)).handle)


def test_cuda_mm_rejects_a_deleted_handle():
    a = to_dev(np.ones((2, 2), np.float32))
    shim.delete(a)
    out = shim.empty_strided([2, 2], None, "float32", DEV)
    assert ch.status("aoti_torch_cuda_mm_out", out.handle, a.handle, a.handle) == 1
    assert shim.last_error()


# ---- streams and guards ----

def test_current_stream_is_the_device_stream_and_stream_guard_overrides_it():
    own = ch.current_stream()
    assert own != 0  # the device's own stream, not the legacy default stream
    s = ch.new_stream()
    g = ctypes.c_void_p()
    ch.call("aoti_torch_create_cuda_stream_guard", ctypes.c_void_p(s), 0, ctypes.byref(g))
    try:
        assert ch.current_stream() == s
        # Work issued under the guard goes on the guard's stream.
        a_np, b_np = rand((64, 32), np.float32), rand((32, 16), np.float32)
        a, b = to_dev(a_np), to_dev(b_np)
        out = shim.empty_strided([64, 16], None, "float32", DEV)
        ch.call("aoti_torch_cuda_mm_out", out.handle, a.handle, b.handle)
    finally:
        ch.call("aoti_torch_delete_cuda_stream_guard", g)
    assert ch.current_stream() == own
    ch.sync_stream(s)
    np.testing.assert_allclose(shim.to_numpy(out), a_np @ b_np, rtol=1e-4, atol=1e-4)
    ch.destroy_stream(s)


def test_stream_guard_deleted_twice_is_an_error_not_a_crash():
    g = ctypes.c_void_p()
    ch.call("aoti_torch_create_cuda_stream_guard", None, 0, ctypes.byref(g))
    assert ch.current_stream() == 0  # the legacy default stream, as given
    ch.call("aoti_torch_delete_cuda_stream_guard", g)
    assert ch.status("aoti_torch_delete_cuda_stream_guard", g) == 1
    assert "not a live guard" in shim.last_error()


def test_device_guard():
    g = ctypes.c_void_p()
    ch.call("aoti_torch_create_cuda_guard", 0, ctypes.byref(g))
    assert ch.current_device() == 0
    ch.call("aoti_torch_cuda_guard_set_index", g, 0)
    assert ch.status("aoti_torch_cuda_guard_set_index", g, 99) == 1
    assert "does not exist" in shim.last_error()
    ch.call("aoti_torch_delete_cuda_guard", g)
    assert ch.status("aoti_torch_delete_cuda_guard", g) == 1
    assert ch.status("aoti_torch_create_cuda_guard", 99, ctypes.byref(g)) == 1


def test_missing_cublas_is_a_clear_error_at_the_first_gemm():
    code = textwrap.dedent("""
        import numpy as np, aotishim
        from aotishim import shim
        import sys; sys.path[:0] = [%r, %r]  # cuda_helpers, and tests/ for its tf32
        import cuda_helpers as ch
        a = shim.from_numpy(np.ones((2, 3), np.float32), copy=True, device="cuda:0")
        b = shim.from_numpy(np.ones((3, 2), np.float32), copy=True, device="cuda:0")
        out = shim.empty_strided([2, 2], None, "float32", "cuda:0")
        shim.copy_(out, shim.from_numpy(np.zeros((2, 2), np.float32)))  # no cuBLAS needed
        try:
            ch.call("aoti_torch_cuda_mm_out", out.handle, a.handle, b.handle)
        except aotishim.ShimError as e:
            print("ERROR:", e)
    """ % (os.path.dirname(__file__), os.path.dirname(os.path.dirname(__file__))))
    env = dict(os.environ, AOTISHIM_CUBLAS_PATH="/nonexistent/libcublas.so.13")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ERROR:" in r.stdout and "cuBLAS" in r.stdout and "AOTISHIM_CUBLAS_PATH" in r.stdout

"""The mps device: the scenarios the sim tests check, through the same
aoti_torch_* / aoti_torch_mps_* C shims that generated code calls.

It runs wherever the build has the mps device: on Apple's Metal (the macOS
workflow, on Apple silicon), and on Linux over the host Metal (a build with
AOTISHIM_METAL_HOST, as .ci/run makes), where the same device code runs with
MSL compiled as C++ and command buffers on a worker thread. Skipped
elsewhere; with AOTISHIM_REQUIRE_MPS=1 (set by CI) a missing mps device is
an error instead of a skip.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import aotishim
from aotishim import _core, shim

from chunk_replay import CASES, ChunkReplay
from views import (NP_DTYPES, draw_input_view, draw_output_view, expect_buffer, f64,
                   produced_on_device)

REQUIRED = os.environ.get("AOTISHIM_REQUIRE_MPS") == "1"
if REQUIRED and "mps" not in aotishim.devices():
    raise RuntimeError(f"AOTISHIM_REQUIRE_MPS=1 but aotishim.devices() is {aotishim.devices()}")
pytestmark = pytest.mark.skipif("mps" not in aotishim.devices(),
                                reason="no mps device (needs an Apple-platform build and a Metal GPU)")

GEMM_PATHS = ["mps", "kernel"]


def _torch_has_mps() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.backends.mps.is_available()


# Models compiled for mps need torch with mps. torch on Linux cannot place a
# tensor on mps, not even a fake one ("PyTorch is not linked with support
# for mps devices"), so nothing can be exported for mps there: those tests
# are collected only where torch has mps (or must have it: CI on macOS), and
# the host Metal runs the switching scenario below, which drives the shim
# ABI in the order generated code does, instead.
MODEL_TESTS = _torch_has_mps() or (REQUIRED and sys.platform == "darwin")


def collected_if(condition: bool):
    return lambda test: test if condition else None  # MPSMatrixMultiplication where it fits / our strided kernel

# ---- the C shims, called through ctypes ----

VP = ctypes.c_void_p
CALLBACK = ctypes.CFUNCTYPE(None, VP, VP)


def _library() -> ctypes.CDLL:
    here = pathlib.Path(aotishim.__file__).resolve().parent
    for name in ("libaotishim.dylib", "libaotishim.so"):
        if (here / name).exists():
            return ctypes.CDLL(str(here / name), mode=ctypes.RTLD_GLOBAL)
    raise FileNotFoundError(f"libaotishim not found in {here}")


def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    u64p = ctypes.POINTER(ctypes.c_uint64)
    sigs = {
        "create_shader_library": [ctypes.c_char_p, ctypes.POINTER(VP)],
        "delete_shader_library": [VP],
        "get_kernel_function": [VP, ctypes.c_char_p, ctypes.POINTER(VP)],
        "start_encoding": [VP],
        "set_arg_tensor": [VP, ctypes.c_uint, VP],
        "set_arg_int": [VP, ctypes.c_uint, ctypes.c_int64],
        "dispatch_single": [VP, ctypes.c_uint64],
        "dispatch_single_with_group_size": [VP, ctypes.c_uint64, ctypes.c_uint64],
        "dispatch_array": [VP, u64p, ctypes.c_size_t],
        "dispatch_array_with_group_size": [VP, u64p, ctypes.c_size_t, u64p, ctypes.c_size_t],
        "run_command_block": [VP, CALLBACK, VP],
        "malloc": [ctypes.POINTER(VP), ctypes.c_size_t],
        "free": [VP],
        "memcpy": [VP, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_size_t, VP],
        "copy_buffer": [VP, VP, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_size_t],
        "mm_out": [VP, VP, VP],
        "addmm_out": [VP, VP, VP, VP, ctypes.c_double, ctypes.c_double],
        "bmm_out": [VP, VP, VP],
    }
    for name, args in sigs.items():
        fn = getattr(lib, "aoti_torch_mps_" + name)
        fn.argtypes = args
        fn.restype = ctypes.c_int32
    return lib


C = _declare(_library()) if "mps" in aotishim.devices() else None


def ok(rc: int) -> None:
    assert rc == 0, shim.last_error()


def h(t: shim.Tensor) -> VP:
    return VP(t.handle)


def mm(out, a, b) -> None:
    ok(C.aoti_torch_mps_mm_out(h(out), h(a), h(b)))


def addmm(out, bias, a, b, beta=1.0, alpha=1.0) -> None:
    ok(C.aoti_torch_mps_addmm_out(h(out), h(bias), h(a), h(b), beta, alpha))


def bmm(out, a, b) -> None:
    ok(C.aoti_torch_mps_bmm_out(h(out), h(a), h(b)))


# ---- helpers ----

@pytest.fixture(autouse=True)
def _mps_clean(monkeypatch):
    """Each test leaves the queue drained and its tensors released."""
    monkeypatch.delenv("AOTISHIM_MPS_GEMM", raising=False)
    yield
    try:
        aotishim.synchronize("mps")
    finally:
        shim.cleanup_memory()


@pytest.fixture(params=GEMM_PATHS)
def gemm_path(request, monkeypatch):
    if request.param == "kernel":
        monkeypatch.setenv("AOTISHIM_MPS_GEMM", "kernel")
    return request.param


def counters() -> dict:
    for d in aotishim.memory_stats()["devices"]:
        if d["device"] == "mps:0":
            return {"synchronizes": d["synchronizes"], "commands": d["commands"]}
    return {"synchronizes": 0, "commands": 0}


def delta(before: dict) -> dict:
    after = counters()
    return {k: after[k] - before[k] for k in before}


def to_mps(a: np.ndarray) -> shim.Tensor:
    return shim.from_numpy(np.ascontiguousarray(a), copy=True, device="mps")


def rand(shape, dtype: str, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(NP_DTYPES[dtype])


def tol(dtype: str) -> float:
    return 1e-4 if dtype == "float32" else 3e-2


# ---- host reads of views at offsets right after device writes ----

def test_read_of_a_packed_view_at_an_offset_waits_exactly_once():
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    buf = produced_on_device(x, "mps")
    view = shim.reinterpret_tensor(buf, [2, 8], [8, 1], 16)
    before = counters()
    np.testing.assert_array_equal(shim.to_numpy(view), x[2:])
    assert delta(before)["synchronizes"] == 1
    # Nothing pending any more: reading again does not wait.
    before = counters()
    np.testing.assert_array_equal(shim.to_numpy(view), x[2:])
    assert delta(before) == {"synchronizes": 0, "commands": 0}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_read_of_a_strided_view_at_an_offset_sees_the_writes(dtype):
    x = rand((12, 16), dtype, 1)
    buf = produced_on_device(x, "mps")
    view = shim.reinterpret_tensor(buf, [12, 8], [16, 1], 8)
    np.testing.assert_array_equal(f64(shim.to_numpy(view)), f64(x[:, 8:]))


def test_host_write_waits_for_pending_readers():
    """An upload into memory a pending command still reads waits for it."""
    x = np.arange(64, dtype=np.float32)
    src = produced_on_device(x, "mps")
    dst = shim.empty_strided([64], None, dtype="float32", device="mps")
    shim.copy_(dst, src)  # pending: reads src
    shim.copy_(src, shim.from_numpy(np.zeros(64, np.float32), copy=False))  # host -> src
    np.testing.assert_array_equal(shim.to_numpy(dst), x)
    np.testing.assert_array_equal(shim.to_numpy(src), np.zeros(64, np.float32))


@pytest.mark.parametrize("src_dtype,dst_dtype", [
    ("float32", "bfloat16"), ("bfloat16", "float32"), ("float32", "float16"),
    ("float16", "float32"), ("bfloat16", "float16"), ("int64", "float32"),
    ("float32", "int32"), ("int32", "bool"), ("uint8", "int64")])
def test_strided_copy_converts_dtypes(src_dtype, dst_dtype):
    rng = np.random.default_rng(3)
    ref = (rng.standard_normal((6, 10)) * 50).astype(np.float32)
    if src_dtype == "uint8":
        ref = np.abs(ref)
    x = ref.astype(np.dtype(ml_dtypes.bfloat16) if src_dtype == "bfloat16" else src_dtype)
    src = produced_on_device(np.ascontiguousarray(x), "mps")
    view = shim.reinterpret_tensor(src, [5, 4], [10, 2], 11)  # strided, at an offset
    dst_np = np.dtype(ml_dtypes.bfloat16) if dst_dtype == "bfloat16" else np.dtype(dst_dtype)
    dst = shim.empty_strided([5, 4], [1, 5], dtype=dst_dtype, device="mps")  # column-major
    shim.copy_(dst, view)
    expected = np.lib.stride_tricks.as_strided(
        x.reshape(-1)[11:], (5, 4), (10 * x.itemsize, 2 * x.itemsize)).astype(dst_np)
    got = shim.to_numpy(dst)
    if dst_dtype in ("float32", "float16", "bfloat16"):
        np.testing.assert_allclose(f64(got), f64(expected), rtol=1e-2, atol=1e-2)
    else:
        np.testing.assert_array_equal(got, expected)


def test_float64_conversion_is_refused_with_a_message():
    src = to_mps(np.ones(4, np.float64))
    dst = shim.empty_strided([4], None, dtype="float32", device="mps")
    with pytest.raises(shim.ShimError, match="float64"):
        shim.copy_(dst, src)


# ---- the chunk-view call sequences (AOTInductor's LinearChunk* models) ----

def replay(case, dtype) -> ChunkReplay:
    """The LinearChunk call sequence through the exported mps addmm shim."""
    return ChunkReplay(case, dtype, "mps", addmm=addmm)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_chunk_view_reads_finished_data(case, dtype, gemm_path):
    model = replay(case, dtype)
    buf0 = model.first_linear()
    chunk = shim.reinterpret_tensor(buf0, list(case.sizes), list(case.strides), case.offset)
    assert chunk.data_ptr == buf0.data_ptr + case.offset * NP_DTYPES[dtype].itemsize
    buf1 = model.second_linear(chunk)
    # Read right after the writes were queued: the chunk itself (an interior
    # address), then the consumer's result.
    t = tol(dtype)
    np.testing.assert_allclose(f64(shim.to_numpy(chunk)), model.chunk, rtol=t, atol=t)
    np.testing.assert_allclose(f64(shim.to_numpy(buf1)), model.expected, rtol=t, atol=t)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_chunk_result_without_reading_the_chunk(case, gemm_path):
    """Only the consumer's output is read: its wait covers the chunk's producer."""
    model = replay(case, "float32")
    buf0 = model.first_linear()
    chunk = shim.reinterpret_tensor(buf0, list(case.sizes), list(case.strides), case.offset)
    before = counters()
    result = shim.to_numpy(model.second_linear(chunk))
    assert delta(before)["synchronizes"] == 1
    np.testing.assert_allclose(f64(result), model.expected, rtol=1e-4, atol=1e-4)


# ---- mm / addmm / bmm against numpy ----

@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("transpose_a,transpose_b", [(False, False), (True, False), (False, True)])
def test_mm_matches_numpy(dtype, transpose_a, transpose_b, gemm_path):
    M, K, N = 9, 13, 6
    a = rand((K, M) if transpose_a else (M, K), dtype, 20)
    b = rand((N, K) if transpose_b else (K, N), dtype, 21)
    A, B = produced_on_device(a, "mps"), produced_on_device(b, "mps")
    av = shim.reinterpret_tensor(A, [M, K], [1, M], 0) if transpose_a else A
    bv = shim.reinterpret_tensor(B, [K, N], [1, K], 0) if transpose_b else B
    out = shim.from_numpy(np.full((M, N), np.nan, NP_DTYPES[dtype]), copy=True, device="mps")
    mm(out, av, bv)  # beta = 0: the NaN in out must not leak into the result
    ref = (f64(a).T if transpose_a else f64(a)) @ (f64(b).T if transpose_b else f64(b))
    np.testing.assert_allclose(f64(shim.to_numpy(out)), ref, rtol=tol(dtype), atol=tol(dtype))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_mm_writes_through_a_view_of_a_cat_buffer(dtype, gemm_path):
    """mm_out(reinterpret_tensor(buf2, {10, 3}, {8, 1}, 5), ...): only the
    view's elements change."""
    a, b = rand((10, 4), dtype, 30), rand((4, 3), dtype, 31)
    fill = np.arange(88, dtype=np.float32).astype(NP_DTYPES[dtype])
    buf2 = produced_on_device(fill, "mps")
    out = shim.reinterpret_tensor(buf2, [10, 3], [8, 1], 5)
    mm(out, produced_on_device(a, "mps"), produced_on_device(b, "mps"))
    got = f64(shim.to_numpy(buf2))
    expected = f64(fill).copy()
    view = np.lib.stride_tricks.as_strided(expected[5:], (10, 3), (64, 8))
    view[...] = f64(a) @ f64(b)
    np.testing.assert_allclose(got, expected, rtol=tol(dtype), atol=tol(dtype))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("bias_shape", [(5,), (1, 5), (4, 1), (4, 5)])
def test_addmm_matches_numpy(dtype, bias_shape, gemm_path):
    a, b = rand((4, 7), dtype, 40), rand((7, 5), dtype, 41)
    bias = rand(bias_shape, dtype, 42)
    out = shim.empty_strided([4, 5], None, dtype=dtype, device="mps")
    addmm(out, produced_on_device(bias, "mps"), produced_on_device(a, "mps"),
          produced_on_device(b, "mps"), beta=0.5, alpha=2.0)
    ref = 0.5 * np.broadcast_to(f64(bias), (4, 5)) + 2.0 * (f64(a) @ f64(b))
    np.testing.assert_allclose(f64(shim.to_numpy(out)), ref, rtol=tol(dtype), atol=tol(dtype))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_bmm_matches_numpy(dtype, transpose_b, gemm_path):
    Bn, M, K, N = 3, 4, 6, 5
    a = rand((Bn, M, K), dtype, 50)
    b = rand((Bn, N, K) if transpose_b else (Bn, K, N), dtype, 51)
    A, B = produced_on_device(a, "mps"), produced_on_device(b, "mps")
    bv = shim.reinterpret_tensor(B, [Bn, K, N], [N * K, 1, K], 0) if transpose_b else B
    out = shim.empty_strided([Bn, M, N], None, dtype=dtype, device="mps")
    bmm(out, A, bv)
    ref = f64(a) @ (np.swapaxes(f64(b), 1, 2) if transpose_b else f64(b))
    np.testing.assert_allclose(f64(shim.to_numpy(out)), ref, rtol=tol(dtype), atol=tol(dtype))


def test_float64_matrix_product_is_refused_with_a_message():
    a = to_mps(np.ones((2, 2), np.float64))
    out = shim.empty_strided([2, 2], None, dtype="float64", device="mps")
    assert C.aoti_torch_mps_mm_out(h(out), h(a), h(a)) != 0
    assert "float64" in shim.last_error()


def test_gemm_ops_refuse_tensors_on_other_devices():
    a = shim.from_numpy(np.ones((2, 2), np.float32), copy=True)  # cpu
    out = shim.empty_strided([2, 2], None, dtype="float32", device="mps")
    assert C.aoti_torch_mps_mm_out(h(out), h(a), h(a)) != 0
    assert "cpu" in shim.last_error()


# ---- outputs: one handle in several slots ----

def test_repeated_output_handle_is_deleted_once():
    """A program returning (y, z, y): AOTInductor sets output_handles[2] =
    output_handles[0]. Outputs are right, and each handle is deleted once."""
    model = replay(CASES[1], "float32")
    buf0 = model.first_linear()
    z = model.second_linear(shim.reinterpret_tensor(buf0, [6, 16], [16, 1], 96))
    slots = [buf0, z, buf0]
    values = [shim.to_numpy(t) for t in slots]
    np.testing.assert_allclose(f64(values[1]), model.expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(values[0], values[2])
    released = aotishim.memory_stats()["released_handles"]
    # The product's last-slot rule (what Model.run uses), not a copy of it.
    _core.release_outputs([t.handle for t in slots], None)
    assert aotishim.memory_stats()["released_handles"] == released + 2
    assert not shim.is_live(buf0) and not shim.is_live(z)
    with pytest.raises(shim.ShimError, match="already deleted"):
        shim.delete(slots[2])
    assert aotishim.memory_stats()["released_handles"] == released + 2


# ---- the kernel shims generated Metal code calls ----

KERNEL_SOURCE = b"""
#include <metal_stdlib>
using namespace metal;
kernel void generated_kernel(device float* out_ptr0 [[buffer(0)]],
                             device const float* in_ptr0 [[buffer(1)]],
                             constant long& ks0 [[buffer(2)]],
                             uint xindex [[thread_position_in_grid]]) {
  out_ptr0[xindex] = in_ptr0[xindex] * 2.0f + float(ks0);
}
"""


@pytest.fixture
def kernel():
    lib, fn = VP(), VP()
    ok(C.aoti_torch_mps_create_shader_library(KERNEL_SOURCE, ctypes.byref(lib)))
    ok(C.aoti_torch_mps_get_kernel_function(lib, b"generated_kernel", ctypes.byref(fn)))
    yield fn
    ok(C.aoti_torch_mps_delete_shader_library(lib))


def run_block(fn, body) -> int:
    """run_command_block with a Python callback (what shared_callback does
    with the generated lambda)."""
    @CALLBACK
    def callback(handle, _user):
        body(VP(handle))
    return C.aoti_torch_mps_run_command_block(fn, callback, None)


@pytest.mark.parametrize("dispatch", ["single", "single_group", "array", "array_group"])
def test_generated_kernel_on_views_at_offsets(kernel, dispatch):
    """The kernel reads a chunk at an offset of a buffer still being written
    and writes a view in the middle of another; both read right after."""
    n = 100
    x = np.arange(2 * n, dtype=np.float32)
    src = produced_on_device(x, "mps")
    chunk = shim.reinterpret_tensor(src, [n], [1], n)
    fill = np.full(3 * n, -1.0, np.float32)
    dst = produced_on_device(fill, "mps")
    out = shim.reinterpret_tensor(dst, [n], [1], n)

    def body(fn):
        ok(C.aoti_torch_mps_start_encoding(fn))
        ok(C.aoti_torch_mps_set_arg_tensor(fn, 0, h(out)))
        ok(C.aoti_torch_mps_set_arg_tensor(fn, 1, h(chunk)))
        ok(C.aoti_torch_mps_set_arg_int(fn, 2, 7))
        threads = (ctypes.c_uint64 * 1)(n)
        group = (ctypes.c_uint64 * 1)(32)  # n is not a multiple of it
        if dispatch == "single":
            ok(C.aoti_torch_mps_dispatch_single(fn, n))
        elif dispatch == "single_group":
            ok(C.aoti_torch_mps_dispatch_single_with_group_size(fn, n, 32))
        elif dispatch == "array":
            ok(C.aoti_torch_mps_dispatch_array(fn, threads, 1))
        else:
            ok(C.aoti_torch_mps_dispatch_array_with_group_size(fn, threads, 1, group, 1))

    ok(run_block(kernel, body))
    before = counters()
    np.testing.assert_array_equal(shim.to_numpy(out), x[n:] * 2 + 7)
    assert delta(before)["synchronizes"] == 1
    expected = fill.copy()
    expected[n:2 * n] = x[n:] * 2 + 7
    np.testing.assert_array_equal(shim.to_numpy(dst), expected)


def test_kernel_shims_validate_handles(kernel):
    t = shim.empty_strided([4], None, dtype="float32", device="mps")
    stale = VP(0xDEAD0)
    assert C.aoti_torch_mps_start_encoding(stale) != 0
    assert "not live" in shim.last_error()
    assert C.aoti_torch_mps_set_arg_tensor(kernel, 0, h(t)) != 0  # no start_encoding
    assert "start_encoding" in shim.last_error()
    ok(C.aoti_torch_mps_start_encoding(kernel))
    assert C.aoti_torch_mps_set_arg_tensor(kernel, 40, h(t)) != 0
    assert C.aoti_torch_mps_dispatch_single_with_group_size(kernel, 8, 1 << 20) != 0
    assert "threadgroup" in shim.last_error()
    bad_lib = VP()
    assert C.aoti_torch_mps_create_shader_library(b"kernel void broken(", ctypes.byref(bad_lib)) != 0
    assert "compil" in shim.last_error()
    fn = VP()
    assert C.aoti_torch_mps_get_kernel_function(VP(0xBEEF0), b"x", ctypes.byref(fn)) != 0


def test_a_failure_inside_a_command_block_is_not_lost(kernel):
    """Generated code ignores the codes of the shims inside its lambda; the
    block fails, and so does the next synchronize."""
    cpu = shim.from_numpy(np.ones(4, np.float32), copy=True)

    def body(fn):
        C.aoti_torch_mps_start_encoding(fn)
        C.aoti_torch_mps_set_arg_tensor(fn, 0, h(cpu))  # wrong device; code ignored

    assert run_block(kernel, body) != 0
    assert "not mps" in shim.last_error()
    with pytest.raises(shim.ShimError, match="not mps"):
        aotishim.synchronize("mps")
    aotishim.synchronize("mps")  # reported once


def test_deleted_library_invalidates_its_functions():
    lib, fn = VP(), VP()
    ok(C.aoti_torch_mps_create_shader_library(KERNEL_SOURCE, ctypes.byref(lib)))
    ok(C.aoti_torch_mps_get_kernel_function(lib, b"generated_kernel", ctypes.byref(fn)))
    again = VP()
    ok(C.aoti_torch_mps_get_kernel_function(lib, b"generated_kernel", ctypes.byref(again)))
    assert again.value == fn.value
    assert C.aoti_torch_mps_get_kernel_function(lib, b"missing", ctypes.byref(again)) != 0
    ok(C.aoti_torch_mps_delete_shader_library(lib))
    assert C.aoti_torch_mps_start_encoding(fn) != 0
    assert C.aoti_torch_mps_delete_shader_library(lib) != 0


# ---- raw memory: the constants blob path ----

def test_malloc_memcpy_copy_buffer_and_free():
    values = np.arange(48, dtype=np.float32)
    blob = VP()
    ok(C.aoti_torch_mps_malloc(ctypes.byref(blob), 256))
    # Constants at byte 64 of the blob, read from byte 16 of the host data.
    host = np.concatenate([np.zeros(4, np.float32), values])
    ok(C.aoti_torch_mps_memcpy(blob, 64, 16, values.nbytes, VP(host.ctypes.data)))
    # AOTInductor makes constant tensors at the blob's base with a storage offset.
    const = shim.from_blob(blob.value, [6, 8], None, 16, dtype="float32", device="mps")
    np.testing.assert_array_equal(shim.to_numpy(const), values.reshape(6, 8))

    other = VP()
    ok(C.aoti_torch_mps_malloc(ctypes.byref(other), 256))
    ok(C.aoti_torch_mps_copy_buffer(blob, other, values.nbytes, 64, 32))  # on the queue
    copied = shim.from_blob(other.value, [48], None, 8, dtype="float32", device="mps")
    np.testing.assert_array_equal(shim.to_numpy(copied), values)
    odd = VP()
    ok(C.aoti_torch_mps_malloc(ctypes.byref(odd), 64))
    ok(C.aoti_torch_mps_copy_buffer(blob, odd, 6, 65, 3))  # unaligned: the byte kernel
    odd_bytes = shim.from_blob(odd.value, [6], None, 3, dtype="uint8", device="mps")
    np.testing.assert_array_equal(shim.to_numpy(odd_bytes), host.view(np.uint8)[16 + 1:16 + 7])
    ok(C.aoti_torch_mps_copy_buffer(VP(host.ctypes.data), other, 8, 0, 0))  # host -> mps
    head = shim.from_blob(other.value, [2], None, 0, dtype="float32", device="mps")
    np.testing.assert_array_equal(shim.to_numpy(head), host[:2])

    for t in (const, copied, odd_bytes, head):
        shim.delete(t)
    assert C.aoti_torch_mps_free(VP(blob.value + 16)) != 0  # not a base
    for p in (blob, other, odd):
        ok(C.aoti_torch_mps_free(p))
    assert C.aoti_torch_mps_free(blob) != 0  # freed already
    assert "aoti_torch_mps_malloc" in shim.last_error()
    assert C.aoti_torch_mps_memcpy(VP(host.ctypes.data), 0, 0, 4, VP(host.ctypes.data)) != 0


# ---- real AOTInductor models compiled for mps ----

def _torch():
    torch = pytest.importorskip("torch")
    if not torch.backends.mps.is_available():
        if REQUIRED:
            pytest.fail("AOTISHIM_REQUIRE_MPS=1 but torch cannot use mps on this machine")
        pytest.skip("torch cannot use mps on this machine")
    if not hasattr(aotishim, "load"):
        pytest.skip("this aotishim has no model runner")
    return torch


def _modules(torch):
    from torch import nn

    class LinearChunk(nn.Module):
        def __init__(self, dim: int):
            super().__init__()
            self.dim = dim
            self.fc1 = nn.Linear(7, 16)
            self.fc2 = nn.Linear(8 if dim == 1 else 16, 5)

        def forward(self, x):
            return self.fc2(torch.chunk(self.fc1(x), 2, dim=self.dim)[1])

    class RepeatedOutput(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(7, 4)

        def forward(self, x):
            y = self.fc(x)
            return y, torch.sin(x) + 1, y

    return {"LinearChunkLastDim": lambda: LinearChunk(1),
            "LinearChunkFirstDim": lambda: LinearChunk(0),
            "RepeatedOutput": RepeatedOutput}


def _numpy(t):
    import torch
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


@collected_if(MODEL_TESTS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", ["LinearChunkLastDim", "LinearChunkFirstDim", "RepeatedOutput"])
def test_aoti_mps_model_matches_eager(tmp_path, name, dtype):
    torch = _torch()
    from aotishim import export

    torch.manual_seed(0)
    tdtype = getattr(torch, dtype)
    module = _modules(torch)[name]().eval().to("mps", tdtype)
    x = torch.randn(12, 7).to("mps", tdtype)
    with torch.no_grad():
        expected = module(x)
    expected = expected if isinstance(expected, tuple) else (expected,)
    ep = torch.export.export(module, (x,))
    package = tmp_path / f"{name}.pt2"
    torch._inductor.aoti_compile_and_package(
        ep, package_path=str(package), inductor_configs=dict(export.INDUCTOR_CONFIGS))
    t = tol(dtype)
    for _ in range(2):  # load, run twice, destroy; then again
        with aotishim.load(package, device="mps") as model:
            for _ in range(2):
                outputs = model(_numpy(x))
                assert len(outputs) == len(expected)
                for got, want in zip(outputs, expected):
                    np.testing.assert_allclose(f64(got), f64(_numpy(want)), rtol=t, atol=t)
        assert model.leaks == []


# ---- models switched in turn, as generated code drives the shims ----

SWITCH_SOURCE = """
#include <metal_stdlib>
using namespace metal;
kernel void model_{m}_kernel(device float* out_ptr0 [[buffer(0)]],
                             device const float* in_ptr0 [[buffer(1)]],
                             device const float* constant_ptr [[buffer(2)]],
                             uint xindex [[thread_position_in_grid]]) {{
  out_ptr0[xindex] = in_ptr0[xindex] * constant_ptr[xindex] + {m}.0f;
}}
"""


class ShimModel:
    """What an AOTInductor model compiled for mps does with the shims: at
    load, its constants blob from aoti_torch_mps_malloc filled by
    aoti_torch_mps_memcpy, a constant tensor at an offset of the blob, its
    shader library; per run, a command block that binds the output, the
    input and the constant and dispatches; at destroy, the reverse."""

    N = 64
    BLOB = 1024
    OFFSET = 128  # bytes: where the constant sits in the blob

    def __init__(self, m: int):
        self.m = m
        self.constant = np.random.default_rng(100 + m).standard_normal(self.N).astype(np.float32)
        self.blob = VP()
        ok(C.aoti_torch_mps_malloc(ctypes.byref(self.blob), self.BLOB))
        host = np.concatenate([np.zeros(8, np.float32), self.constant])  # read from byte 32
        ok(C.aoti_torch_mps_memcpy(self.blob, self.OFFSET, 32, self.constant.nbytes,
                                   VP(host.ctypes.data)))
        self.const = shim.from_blob(self.blob.value, [self.N], None, self.OFFSET // 4,
                                    dtype="float32", device="mps")
        self.lib, self.fn = VP(), VP()
        source = SWITCH_SOURCE.format(m=m).encode()
        ok(C.aoti_torch_mps_create_shader_library(source, ctypes.byref(self.lib)))
        ok(C.aoti_torch_mps_get_kernel_function(self.lib, f"model_{m}_kernel".encode(),
                                                ctypes.byref(self.fn)))

    def run(self, x: shim.Tensor) -> shim.Tensor:
        out = shim.empty_strided([self.N], None, dtype="float32", device="mps")

        def body(fn):
            ok(C.aoti_torch_mps_start_encoding(fn))
            ok(C.aoti_torch_mps_set_arg_tensor(fn, 0, h(out)))
            ok(C.aoti_torch_mps_set_arg_tensor(fn, 1, h(x)))
            ok(C.aoti_torch_mps_set_arg_tensor(fn, 2, h(self.const)))
            ok(C.aoti_torch_mps_dispatch_single(fn, self.N))

        ok(run_block(self.fn, body))
        return out

    def expected(self, x: np.ndarray) -> np.ndarray:
        return x * self.constant + np.float32(self.m)

    def destroy(self) -> None:
        shim.delete(self.const)
        ok(C.aoti_torch_mps_free(self.blob))
        ok(C.aoti_torch_mps_delete_shader_library(self.lib))


@pytest.mark.parametrize("read", ["after_destroy", "before_destroy"])
def test_six_models_switched_in_turn_twice(read):
    """Six models loaded, run and destroyed one after another, twice. Their
    constants blobs have one size, so freed blob addresses come back (the
    host Metal reuses freed memory last-freed-first, as Metal's heaps
    often do) and a later model's constants land where an earlier one's
    were. A result read only after its model was destroyed and the next
    loaded must still be its own model's: the command buffer keeps the
    blob alive until the work reading it has run."""
    x_host = np.linspace(-2, 2, ShimModel.N, dtype=np.float32)
    x = to_mps(x_host)
    addresses = []
    pending = None  # (output, expected) of the previous model, not read yet
    for _round in range(2):
        for m in range(6):
            model = ShimModel(m)
            addresses.append(model.blob.value)
            if pending is not None:
                out, want = pending
                np.testing.assert_array_equal(shim.to_numpy(out), want)
                shim.delete(out)
                pending = None
            out = model.run(x)
            want = model.expected(x_host)
            if read == "before_destroy":
                np.testing.assert_array_equal(shim.to_numpy(out), want)
                shim.delete(out)
            model.destroy()
            if read == "after_destroy":
                pending = (out, want)
    out, want = pending if pending is not None else (None, None)
    if out is not None:
        np.testing.assert_array_equal(shim.to_numpy(out), want)
        shim.delete(out)
    assert len(set(addresses)) < len(addresses), "no blob address was reused"


# ---- random views: mm / bmm / copy against numpy ----

RANDOM = settings(max_examples=60, deadline=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture])


def with_gemm_path(path: str, body) -> None:
    saved = os.environ.pop("AOTISHIM_MPS_GEMM", None)
    if path == "kernel":
        os.environ["AOTISHIM_MPS_GEMM"] = "kernel"
    try:
        body()
    finally:
        os.environ.pop("AOTISHIM_MPS_GEMM", None)
        if saved is not None:
            os.environ["AOTISHIM_MPS_GEMM"] = saved
        shim.cleanup_memory()


@RANDOM
@given(data=st.data())
def test_mm_and_bmm_random_views(data):
    path = data.draw(st.sampled_from(GEMM_PATHS))
    dtype = data.draw(st.sampled_from(["float32", "bfloat16"]))
    batch = data.draw(st.sampled_from([None, 1, 3]))
    m, k, n = (data.draw(st.integers(1, 5)) for _ in range(3))
    lead = () if batch is None else (batch,)

    def body():
        a, ra = draw_input_view(data, lead + (m, k), dtype, 1, "mps")
        b, rb = draw_input_view(data, lead + (k, n), dtype, 2, "mps")
        buf, init, out, strides, offset = draw_output_view(data, lead + (m, n), dtype, "mps")
        (mm if batch is None else bmm)(out, a, b)
        expect_buffer(buf, init, strides, offset, lead + (m, n), ra @ rb, dtype)

    with_gemm_path(path, body)


@RANDOM
@given(data=st.data())
def test_copy_random_views(data):
    src_dtype = data.draw(st.sampled_from(["float32", "bfloat16"]))
    dst_dtype = data.draw(st.sampled_from(["float32", "bfloat16"]))
    sizes = tuple(data.draw(st.lists(st.integers(1, 4), min_size=0, max_size=4)))

    def body():
        src, values = draw_input_view(data, sizes, src_dtype, 3, "mps")
        buf, init, dst, strides, offset = draw_output_view(data, sizes, dst_dtype, "mps")
        shim.copy_(dst, src)
        expect_buffer(buf, init, strides, offset, sizes, values, dst_dtype)

    with_gemm_path("mps", body)

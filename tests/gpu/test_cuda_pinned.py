"""Page-locked host memory on a machine with the cuda plugin and a GPU:
aoti_torch_empty_strided_pinned gives memory cudaHostAlloc made, and uploads
from pageable host memory go through the device's page-locked staging
buffers: queued behind the stream's work instead of waiting for it, with
the source read by the time the call returns. Needs a CUDA device and
torch with CUDA (for a kernel that keeps the stream busy)."""

from __future__ import annotations

import ctypes
import threading
import time

import numpy as np
import pytest

import aotishim
from aotishim import _core, shim

pytestmark = pytest.mark.skipif("cuda:0" not in aotishim.devices(),
                                reason="no CUDA device in this process")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch cannot use CUDA here", allow_module_level=True)

import cuda_helpers  # noqa: E402

vp, i32, i64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64
CUDA_MEMORY_TYPE_HOST = 1  # cudaMemoryTypeHost: page-locked host memory
CHUNK = 4 << 20  # pinned_staging.h's chunk


class PointerAttributes(ctypes.Structure):
    # cudaPointerAttributes (CUDA 11 and later; 12 and 13 add reserved words).
    _fields_ = [("type", ctypes.c_int), ("device", ctypes.c_int),
                ("devicePointer", vp), ("hostPointer", vp),
                ("reserved", ctypes.c_long * 8)]


def memory_type(ptr: int) -> int:
    rt = cuda_helpers.cudart()
    attr = PointerAttributes()
    err = rt.cudaPointerGetAttributes(ctypes.byref(attr), vp(ptr))
    if err != 0:
        rt.cudaGetLastError()
        return -1
    return attr.type


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    lib = ctypes.CDLL(_core.library_file())
    lib.aoti_torch_empty_strided_pinned.argtypes = [i64, ctypes.POINTER(i64),
                                                    ctypes.POINTER(i64), i32, i32, i32,
                                                    ctypes.POINTER(vp)]
    lib.aoti_torch_empty_strided_pinned.restype = i32
    return lib


def test_empty_strided_pinned_is_page_locked_owned_and_freed(lib):
    handle = vp()
    sizes, strides = (i64 * 2)(3, 4), (i64 * 2)(1, 3)
    assert lib.aoti_torch_empty_strided_pinned(2, sizes, strides, 6, 0, -1,
                                               ctypes.byref(handle)) == 0
    t = shim.Tensor(handle.value)
    ptr = t.data_ptr
    try:
        assert (t.sizes, t.strides, t.dtype, t.device) == ([3, 4], [1, 3], "float32", "cpu")
        assert t.owns_storage and t.storage_nbytes == 12 * 4
        assert memory_type(ptr) == CUDA_MEMORY_TYPE_HOST
        # Host memory like any other: written and read by the cpu copy.
        values = np.arange(12, dtype=np.float32).reshape(3, 4)
        src = shim.from_numpy(values)
        try:
            shim.copy_(t, src)
        finally:
            shim.delete(src)
        np.testing.assert_array_equal(shim.to_numpy(t), values)
        # And uploaded to the GPU without going through the staging buffers.
        on_gpu = shim.empty_strided([3, 4], None, "float32", "cuda:0")
        try:
            shim.copy_(on_gpu, t)
            np.testing.assert_array_equal(shim.to_numpy(on_gpu), values)
        finally:
            shim.delete(on_gpu)
    finally:
        shim.delete(t)
    assert memory_type(ptr) != CUDA_MEMORY_TYPE_HOST  # cudaFreeHost'd


@pytest.mark.parametrize("nbytes", [1, 4095, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 7,
                                    7 * CHUNK + 4096])
def test_uploads_across_the_staging_chunks_are_exact(nbytes):
    rng = np.random.default_rng(nbytes)
    values = rng.integers(0, 256, nbytes, dtype=np.uint8)
    expected = values.copy()
    t = shim.from_numpy(values, copy=True, device="cuda:0")
    try:
        values[:] = 0  # read by the time the call returned: the device keeps the old bytes
        np.testing.assert_array_equal(shim.to_numpy(t), expected)
    finally:
        shim.delete(t)


def _sleep_ms(cycles: int, stream) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
    end.synchronize()
    return start.elapsed_time(end)


def test_an_upload_is_queued_behind_the_stream_not_waited_for():
    ours = torch.cuda.ExternalStream(_core.device_stream("cuda:0"))
    cycles = 200_000_000
    while _sleep_ms(cycles, ours) < 300:  # at least 0.3 s of GPU time
        cycles *= 2
    busy_ms = _sleep_ms(cycles, ours)
    values = np.arange(2 * CHUNK // 4, dtype=np.float32)  # two chunks: both buffers in use
    with torch.cuda.stream(ours):
        torch.cuda._sleep(cycles)
    t0 = time.perf_counter()
    t = shim.from_numpy(values, copy=True, device="cuda:0")
    took_ms = (time.perf_counter() - t0) * 1e3
    try:
        # A pageable cudaMemcpyAsync would have waited for the sleep first.
        assert took_ms < busy_ms / 3, (took_ms, busy_ms)
        np.testing.assert_array_equal(shim.to_numpy(t), values)  # ordered after the sleep
    finally:
        shim.delete(t)


def test_uploads_from_several_threads():
    errors: list[str] = []

    def worker(k: int) -> None:
        rng = np.random.default_rng(k)
        for i in range(20):
            values = rng.standard_normal(CHUNK // 4 + 1000 * k + i).astype(np.float32)
            t = shim.from_numpy(values, copy=True, device="cuda:0")
            try:
                if not np.array_equal(shim.to_numpy(t), values):
                    errors.append(f"thread {k} upload {i} differs")
            finally:
                shim.delete(t)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[:3]

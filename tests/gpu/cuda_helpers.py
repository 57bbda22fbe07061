"""ctypes access to the cuda backend's exported shims and to the CUDA runtime,
for the GPU tests (the same symbols generated code binds to)."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
from pathlib import Path

import aotishim
from aotishim import shim
from tf32 import tf32_off  # noqa: F401  (the GPU tests import it from here)

_lib = None
_cudart = None


def shim_lib() -> ctypes.CDLL:
    """libaotishim_cuda, the library that defines the aoti_torch_cuda_* shims."""
    global _lib
    if _lib is None:
        aotishim.devices()  # loads the plugin (RTLD_GLOBAL) the way the core does
        lib = ctypes.CDLL(str(Path(aotishim.__file__).parent / "libaotishim_cuda.so"))
        h = ctypes.c_void_p
        for name in ("aoti_torch_cuda_mm_out", "aoti_torch_cuda_bmm_out"):
            getattr(lib, name).argtypes = [h, h, h]
        lib.aoti_torch_cuda_addmm_out.argtypes = [h, h, h, h, ctypes.c_double, ctypes.c_double]
        lib.aoti_torch_create_cuda_guard.argtypes = [ctypes.c_int32, ctypes.POINTER(h)]
        lib.aoti_torch_delete_cuda_guard.argtypes = [h]
        lib.aoti_torch_cuda_guard_set_index.argtypes = [h, ctypes.c_int32]
        lib.aoti_torch_create_cuda_stream_guard.argtypes = [h, ctypes.c_int32, ctypes.POINTER(h)]
        lib.aoti_torch_delete_cuda_stream_guard.argtypes = [h]
        lib.aoti_torch_get_current_cuda_stream.argtypes = [ctypes.c_int32, ctypes.POINTER(h)]
        _lib = lib
    return _lib


# CUDA 13, then 12: the runtimes the plugin may be built against.
CUDART_NAMES = ("libcudart.so.13", "libcudart.so.12")


def cudart() -> ctypes.CDLL:
    """The CUDA runtime the plugin links against (already loaded by it)."""
    global _cudart
    if _cudart is None:
        shim_lib()
        names = [*CUDART_NAMES, ctypes.util.find_library("cudart")]
        names = [n for i, n in enumerate(names) if n and n not in names[:i]]
        # First only a runtime already loaded (the plugin's, so streams made
        # here belong to the runtime it uses), then any that loads.
        for mode in (os.RTLD_NOLOAD | os.RTLD_NOW, ctypes.DEFAULT_MODE):
            for name in names:
                try:
                    _cudart = ctypes.CDLL(name, mode=mode)
                    return _cudart
                except OSError:
                    continue
        raise OSError(f"no CUDA runtime could be loaded (tried {', '.join(names)})")
    return _cudart


def call(name: str, *args) -> None:
    """Call a shim; raise aotishim.ShimError with its message on failure."""
    err = getattr(shim_lib(), name)(*args)
    if err != 0:
        raise aotishim.ShimError(aotishim.shim.last_error())


def status(name: str, *args) -> int:
    return getattr(shim_lib(), name)(*args)


def current_stream(device: int = 0) -> int:
    s = ctypes.c_void_p()
    call("aoti_torch_get_current_cuda_stream", device, ctypes.byref(s))
    return s.value or 0


def new_stream() -> int:
    s = ctypes.c_void_p()
    assert cudart().cudaStreamCreate(ctypes.byref(s)) == 0
    return s.value


def sync_stream(stream: int) -> None:
    assert cudart().cudaStreamSynchronize(ctypes.c_void_p(stream)) == 0


def destroy_stream(stream: int) -> None:
    assert cudart().cudaStreamDestroy(ctypes.c_void_p(stream)) == 0


def current_device() -> int:
    d = ctypes.c_int()
    assert cudart().cudaGetDevice(ctypes.byref(d)) == 0
    return d.value


# The torch tensors borrowed by the running test: a handle does not keep its
# torch tensor alive, and torch's caching allocator hands a freed block to
# the next tensor at once, so a temporary borrowed as `borrow(torch.empty(...))`
# would be read or written through memory that has become another tensor's.
# tests/gpu/conftest.py empties this after each test.
BORROWED: list = []


def borrow(x) -> "shim.Tensor":
    """An aotishim view of a torch cuda tensor: same storage, offset and
    strides; x is kept alive until the end of the test."""
    import torch

    BORROWED.append(x)
    torch.cuda.synchronize()  # torch's writes are on its stream, ours on aotishim's
    return shim.from_blob(x.untyped_storage().data_ptr(), list(x.shape), list(x.stride()),
                          x.storage_offset(), str(x.dtype).replace("torch.", ""), "cuda:0")

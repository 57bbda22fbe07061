"""ctypes access to the cuda backend's exported shims and to the CUDA runtime,
for the GPU tests (the same symbols generated code binds to)."""

from __future__ import annotations

import ctypes
import ctypes.util
from pathlib import Path

import aotishim

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


def cudart() -> ctypes.CDLL:
    """The CUDA runtime the plugin links against (already loaded by it)."""
    global _cudart
    if _cudart is None:
        shim_lib()
        _cudart = ctypes.CDLL("libcudart.so.13")
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

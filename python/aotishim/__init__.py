"""aotishim: run AOTInductor-compiled models without libtorch.

It implements the ``aoti_torch_*`` C shim ABI that models compiled with
``aot_inductor.link_libtorch=False`` call, with a memory model that keeps
switching models, repeated output handles and views at storage offsets
correct.
"""

from __future__ import annotations

import numpy as _numpy  # noqa: F401  (its own BLAS starts first, as the user set it)

from ._native_threads import loading_native_libraries as _loading

with _loading():  # OpenBLAS without threads, OpenMP waiting passively (see _native_threads)
    from . import _core
from . import shim
from .shim import ShimError
from .model import DeviceTensor, LeakWarning, Model, ModelError, ModelInputError, load
from .custom_ops import register_custom_op, registered_custom_ops, unregister_custom_op

__version__ = "0.1.0"


def devices() -> list[str]:
    """Devices usable in this process: 'cpu', 'sim', and 'cuda:N' / 'mps' when built and present."""
    return list(_core.devices())


def memory_stats() -> dict:
    """Live tensors, released handles, per-scope and per-device memory.

    ``{"live_tensors", "released_handles",
    "scopes": [{"id", "name", "tensors", "owned_storages", "owned_bytes", "borrowed_storages"}],
    "devices": [{"device", "allocations", "bytes", "synchronizes", "hazards", "commands"}]}``
    """
    return _core.memory_stats()


def shim_profile(reset: bool = False) -> list[dict]:
    """Calls and host time per C entry point so far, most time first:
    ``[{"name", "calls", "seconds"}]``, with a model's whole run as
    ``"model run (...)"`` (inclusive: an entry point called inside another
    counts in both). Recorded only when the process started with
    ``AOTISHIM_PROFILE_SHIMS=1`` (else empty); ``reset`` starts it again."""
    return [{"name": n, "calls": c, "seconds": ns * 1e-9} for n, c, ns in _core.shim_profile(reset)]


def set_cpu_gemm_library(name: str) -> None:
    """Which library runs float32 GEMMs on the cpu: ``"auto"`` (the default,
    also read from ``AOTISHIM_CPU_GEMM``: oneDNN where its OpenMP build loads,
    from the ``onednn-cpu-gomp`` wheel or ``AOTISHIM_ONEDNN_PATH``, else the
    BLAS), ``"onednn"`` (a ``ShimError`` naming every place tried when it does
    not load; nothing changes then) or ``"blas"`` (OpenBLAS; Accelerate on
    macOS). Other dtypes always use the BLAS."""
    _core.set_cpu_gemm_library(name)


def cpu_gemm_library() -> str:
    """What float32 cpu GEMMs use now: ``"oneDNN 3.2.0 (OpenMP) at PATH"`` or ``"blas"``."""
    return _core.cpu_gemm_library()


def synchronize(device: str = "cpu") -> None:
    """Wait for all work queued on ``device``."""
    _core.synchronize(device)


def manual_seed(seed: int) -> None:
    """Seed the process-wide generator every random op draws from (``rand``,
    ``randn``, dropout, ... and the random kernels a compiled model generates,
    which it seeds from it at each run): the same seed and the same runs in
    the same order give the same numbers. Like ``torch.manual_seed``, a
    negative seed is taken modulo 2**64; the streams are not torch's.
    Until it is called the seed is torch's default (67280421310721)."""
    seed = int(seed)
    if not -(2**63) <= seed < 2**64:
        raise ValueError(f"seed must be within [-2**63, 2**64), got {seed}")
    _core.manual_seed(seed % 2**64)


def seed() -> int:
    """Seed the generator from the system's entropy source; returns the seed."""
    return int(_core.seed())


def initial_seed() -> int:
    """The seed the generator was last seeded with."""
    return int(_core.initial_seed())


def cleanup_memory() -> int:
    """Delete every tensor of the current scope; returns how many."""
    return _core.cleanup_memory()


def cmake_dir() -> str:
    """The folder holding aotishimConfig.cmake, for ``-Daotishim_DIR=...``.

    A native runner then links ``aotishim::aotishim`` with CMake's
    ``find_package(aotishim)``. Available in installed (wheel) builds.
    """
    import pathlib

    path = pathlib.Path(__file__).resolve().parent / "share" / "cmake" / "aotishim"
    if not (path / "aotishimConfig.cmake").is_file():
        raise FileNotFoundError(f"no CMake package at {path}; install aotishim with pip first")
    return str(path)


__all__ = ["DeviceTensor", "LeakWarning", "Model", "ModelError", "ModelInputError", "ShimError", "load", "cleanup_memory", "cmake_dir", "cpu_gemm_library", "devices", "initial_seed", "manual_seed", "memory_stats", "seed", "set_cpu_gemm_library", "shim", "shim_profile", "synchronize"]

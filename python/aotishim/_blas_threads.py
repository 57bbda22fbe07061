"""OpenBLAS (the CPU fallback ops' BLAS) without a thread pool of its own.

Compiled models run their kernels on OpenMP threads, and aotishim splits
large GEMMs over that same team, so OpenBLAS runs every call on the calling
thread. OpenBLAS starts its pool when it loads (with libaotishim) and its
idle threads spin for a while: set to one thread only later, at the first
GEMM, they cost a CPU model's first runs tens of milliseconds. So the library
is loaded with OPENBLAS_NUM_THREADS=1, and the variable is put back at once:
neither the process's other libraries nor its children see the change.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

_VARIABLE = "OPENBLAS_NUM_THREADS"


@contextlib.contextmanager
def loading_blas_single_threaded() -> Iterator[None]:
    before = os.environ.get(_VARIABLE)
    os.environ[_VARIABLE] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ[_VARIABLE]
        else:
            os.environ[_VARIABLE] = before

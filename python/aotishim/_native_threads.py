"""How the native thread pools start: OpenBLAS with none, OpenMP spinning briefly.

Both read their settings from the environment once, when their library loads
(with libaotishim, at ``import aotishim``). The variables are set for that
moment only and put back at once: neither the process's other libraries nor
its children see a change.

- OpenBLAS: compiled models run their kernels on OpenMP threads, and
  aotishim splits large GEMMs over that same team, so OpenBLAS runs every
  call on the calling thread. Its own pool, started when it loads, spins for
  a while when idle: set to one thread only later, at the first GEMM, it
  cost a CPU model's first runs tens of milliseconds. So it loads with
  ``OPENBLAS_NUM_THREADS=1``.
- OpenMP (libgomp): generated kernels fork a team per parallel loop and join
  it at a barrier. By default a thread that reaches the barrier first spins
  300,000 rounds (milliseconds) before it sleeps. On a busy machine the thread
  it waits for is often not running, and the spinning takes the core it
  needs: beside two CPU-bound processes on two cores, GPT-2 calls took up to
  100x their quiet time (``benchmarks/contention.py``). Sleeping at once
  (``OMP_WAIT_POLICY=PASSIVE``) made its quiet calls 5x slower (a wake-up per
  barrier); 10,000 rounds (``GOMP_SPINCOUNT``, a fraction of a millisecond)
  cost nothing measurable when quiet and bound the waste under load. (Runs
  also shrink their team while the cores are busy: ``cpu_team.h``.)
  A policy the user set (``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT``, LLVM's
  ``KMP_BLOCKTIME``) is left as it is; so is an OpenMP runtime some other
  module loaded first. LLVM's libomp (macOS) is left at its defaults: not
  measured.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

# Any of these means the user chose how OpenMP threads wait.
_OPENMP_POLICY_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")
# The runtimes libaotishim can link, by file name. (torch's wheel brings a
# libgomp under another name: a separate instance that does not matter here.)
_OPENMP_RUNTIMES = ("libgomp.so.1", "libomp.so", "libomp.so.5", "libiomp5.so")


def _openmp_loaded() -> bool:
    """Whether our OpenMP runtime is already in this process (it read its environment then)."""
    try:
        with open("/proc/self/maps") as maps:
            return any(line.rstrip().rsplit("/", 1)[-1] in _OPENMP_RUNTIMES for line in maps)
    except OSError:  # not Linux: no cheap way to tell; assume not loaded
        return False


def _openmp_policy_before_load() -> str:
    """Says who chose OpenMP's wait policy; recorded as ``openmp_wait_policy``."""
    chosen = [f"{v}={os.environ[v]}" for v in _OPENMP_POLICY_VARIABLES if v in os.environ]
    if chosen:
        return "set by the environment: " + ", ".join(chosen)
    if _openmp_loaded():
        return "left to the OpenMP runtime another module loaded before aotishim"
    return f"{SPIN_COUNT} spins, then sleep (chosen by aotishim)"


SPIN_COUNT = 10000
openmp_wait_policy = "not loaded yet"


@contextlib.contextmanager
def _variables_while_loading(values: dict[str, str]) -> Iterator[None]:
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v


@contextlib.contextmanager
def loading_native_libraries() -> Iterator[None]:
    global openmp_wait_policy
    openmp_wait_policy = _openmp_policy_before_load()
    values = {"OPENBLAS_NUM_THREADS": "1"}
    if openmp_wait_policy.endswith("(chosen by aotishim)"):
        values["GOMP_SPINCOUNT"] = str(SPIN_COUNT)
    with _variables_while_loading(values):
        yield

"""CUDA runtime errors: an error left on the thread by someone else is not
blamed on a later shim, and one raised inside a model's own code reaches the
Python exception (models report it only on stderr)."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import aotishim
from aotishim import shim

pytestmark = pytest.mark.skipif("cuda:0" not in aotishim.devices(),
                                reason="no CUDA device in this process")

import cuda_helpers as ch  # noqa: E402

DEV = "cuda:0"
CC = shutil.which("cc") or shutil.which("gcc")


def leave_an_error_on_the_thread() -> None:
    # An invalid device: the runtime records cudaErrorInvalidDevice as this
    # thread's last error (and changes nothing else).
    assert ch.cudart().cudaSetDevice(1 << 20) != 0


def test_an_earlier_runtime_error_is_not_blamed_on_a_later_product():
    """A model's failed CUDA call left its error on the thread; the next
    addmm (whose bias copy launches a kernel) failed with that error."""
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (4, 5)))
    bias = rng.standard_normal(5).astype(np.float32)
    before = ch.current_device()
    leave_an_error_on_the_thread()
    out = shim.empty_strided([3, 5], None, "float32", DEV)
    shim.addmm(out, shim.from_numpy(bias, copy=True, device=DEV),
               shim.from_numpy(a, copy=True, device=DEV), shim.from_numpy(b, copy=True, device=DEV))
    np.testing.assert_allclose(shim.to_numpy(out), a @ b + bias, rtol=1e-5, atol=1e-5)
    assert ch.current_device() == before


# Stands in for a model whose own CUDA runtime call fails during a run, as
# generated code does: it prints the error to stderr and returns a failure,
# with no AOTInductorGetLastError to ask (older torch).
FAILING_MODEL = r"""
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
typedef struct Opaque* Handle;
static int container;
int32_t AOTInductorModelContainerCreateWithDevice(Handle* h, size_t n, const char* d, const char* c) {
  *h = (Handle)&container;
  return 0;
}
int32_t AOTInductorModelContainerDelete(Handle h) { return 0; }
int32_t AOTInductorModelContainerRun(Handle h, void* i, size_t ni, void* o, size_t no, void* s, void* p) {
  void* rt = dlopen("CUDART", RTLD_NOW | RTLD_NOLOAD);  /* the runtime aotishim uses */
  if (!rt) { fprintf(stderr, "Error: CUDA runtime not loaded\n"); return 1; }
  int (*set_device)(int) = (int (*)(int))dlsym(rt, "cudaSetDevice");
  int err = set_device(1 << 20);
  fprintf(stderr, "Error: CUDA error %d\n", err);
  return 1;
}
int32_t AOTInductorModelContainerGetNumInputs(Handle h, size_t* n) { *n = 0; return 0; }
int32_t AOTInductorModelContainerGetNumOutputs(Handle h, size_t* n) { *n = 0; return 0; }
int32_t AOTInductorModelContainerGetInputName(Handle h, size_t i, const char** n) { return 1; }
int32_t AOTInductorModelContainerGetOutputName(Handle h, size_t i, const char** n) { return 1; }
"""


@pytest.mark.skipif(CC is None, reason="needs a C compiler")
def test_cuda_error_inside_a_model_run_reaches_the_exception(tmp_path):
    cudart_name = ch.cudart()._name
    src, so = tmp_path / "failing.c", tmp_path / "failing.so"
    src.write_text(FAILING_MODEL.replace("CUDART", cudart_name))
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(so), str(src), "-ldl"], check=True)
    before = ch.current_device()
    base = aotishim.memory_stats()["live_tensors"]
    with aotishim.load(so, device=DEV) as model:
        with pytest.raises(aotishim.ModelError) as info:
            model.run()
        # Was only "running model '...' failed", the reason on stderr alone.
        assert "cudaErrorInvalidDevice" in str(info.value)
        assert ch.current_device() == before
        # Taken with the failure: not reported again by the next call.
        out = shim.empty_strided([2, 2], None, "float32", DEV)
        a = shim.from_numpy(np.eye(2, dtype=np.float32), copy=True, device=DEV)
        row = shim.reinterpret_tensor(a, [2], [1], 0)
        shim.addmm(out, row, a, a)
        for t in (out, row, a):
            shim.delete(t)
    assert aotishim.memory_stats()["live_tensors"] == base

"""aoti_torch_check: a model's failed runtime check (an index out of bounds)
fails that run with a ModelError naming the check; the process lives and
the next good run is right."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import aotishim

CXX = shutil.which("c++") or shutil.which("g++")
needs_cxx = pytest.mark.skipif(CXX is None, reason="needs a C++ compiler")


@pytest.fixture(scope="module")
def embedding_model(model_cache):
    """An embedding lookup (indirect indexing: Inductor emits a bounds check)."""
    torch = pytest.importorskip("torch")
    from aotishim import export

    class Embed(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = torch.nn.Embedding(100, 16)

        def forward(self, ids):
            return self.emb(ids) * 2

    torch.manual_seed(0)
    module = Embed().eval()
    ids = torch.arange(0, 64, dtype=torch.int64).reshape(4, 16) % 100
    so = export.compile_cached(module, (ids,), model_cache, name="embedding_check")
    weight = module.emb.weight.detach().numpy() * 2
    return so, ids.numpy(), weight


@pytest.mark.parametrize("bad", [100, 131, -101])
def test_index_out_of_bounds_fails_the_run(embedding_model, bad):
    # Near misses only: the check fails inside the kernel's parallel region,
    # where the kernel still reads the row it was given (see shim_check.cpp).
    so, ids, weight = embedding_model
    live = aotishim.memory_stats()["live_tensors"]
    with aotishim.load(so) as m:
        np.testing.assert_allclose(m(ids)[0], weight[ids], rtol=1e-6)
        wrong = ids.copy()
        wrong[2, 7] = bad
        with pytest.raises(aotishim.ModelError, match=r"check failed: index out of bounds"):
            m(wrong)
        # The model and the process carry on; nothing leaked.
        np.testing.assert_allclose(m(ids)[0], weight[ids], rtol=1e-6)
    assert m.leaks == []
    assert aotishim.memory_stats()["live_tensors"] == live


# A stand-in for a model container: its run makes one failing check, either
# on the calling thread or inside an OpenMP parallel region (where generated
# CPU kernels make theirs), and converts exceptions to an error code as
# AOTInductor's container does.
FAKE_MODEL = r"""
#include <cstddef>
#include <cstdint>
#include <exception>
extern "C" void aoti_torch_check(bool, const char*, const char*, uint32_t, const char*);
typedef struct Opaque* Handle;
static int runs = 0;
extern "C" {
int32_t AOTInductorGetLastError(const char** msg) { *msg = ""; return 0; }
int32_t AOTInductorModelContainerCreateWithDevice(Handle* h, size_t, const char*, const char*) {
  *h = reinterpret_cast<Handle>(&runs);
  return 0;
}
int32_t AOTInductorModelContainerDelete(Handle) { return 0; }
int32_t AOTInductorModelContainerRun(Handle, void*, size_t, void*, size_t, void*, void*) {
  const bool fail = runs++ % 2 == 0;  // every other run fails its check
  try {
    BODY
  } catch (const std::exception&) {
    return 1;
  }
  return 0;
}
int32_t AOTInductorModelContainerGetNumInputs(Handle, size_t* n) { *n = 0; return 0; }
int32_t AOTInductorModelContainerGetNumOutputs(Handle, size_t* n) { *n = 0; return 0; }
int32_t AOTInductorModelContainerGetInputName(Handle, size_t, const char**) { return 1; }
int32_t AOTInductorModelContainerGetOutputName(Handle, size_t, const char**) { return 1; }
int32_t AOTInductorModelContainerGetNumConstants(Handle, size_t* n) { *n = 0; return 0; }
}
"""

SERIAL = 'aoti_torch_check(!fail, "kernel", "fake.cpp", 7, "row < rows");'
PARALLEL = """
    #pragma omp parallel for num_threads(2)
    for (int i = 0; i < 64; ++i)
      aoti_torch_check(!(fail && i == 40), "kernel", "fake.cpp", 9, "row < rows");
"""


@needs_cxx
@pytest.mark.parametrize("body", [SERIAL, PARALLEL], ids=["serial", "parallel"])
def test_failed_check_in_a_container(tmp_path: Path, body: str):
    src, so = tmp_path / "fake.cpp", tmp_path / "fake.so"
    src.write_text(FAKE_MODEL.replace("BODY", body))
    subprocess.run([CXX, "-shared", "-fPIC", "-fopenmp", "-o", str(so), str(src)], check=True)
    with aotishim.load(so) as m:
        for _ in range(2):
            with pytest.raises(aotishim.ModelError,
                               match=r"check failed: row < rows \(in kernel at fake.cpp:[79]\)"):
                m()
            assert tuple(m()) == ()

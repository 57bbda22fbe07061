"""Bad models, bad weights and bad inputs: each a clear Python exception, and
the process (and every other model) carries on."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import aotishim
from aotishim import _core

CC = shutil.which("cc") or shutil.which("gcc")
needs_cc = pytest.mark.skipif(CC is None, reason="needs a C compiler")

# A library that looks like a model to the loader: the container entry points,
# plus whatever shims IMPORTS names (resolved at load time).
FAKE_MODEL = r"""
#include <stddef.h>
#include <stdint.h>
typedef struct Opaque* Handle;
IMPORTS
static const char* last = "";
int32_t AOTInductorGetLastError(const char** msg) { *msg = last; return 0; }
int32_t AOTInductorModelContainerCreateWithDevice(Handle* h, size_t n, const char* d, const char* c) {
  USE;
  last = "the fake container refuses to be created";
  return 1;
}
int32_t AOTInductorModelContainerDelete(Handle h) { return 0; }
int32_t AOTInductorModelContainerRun(Handle h, void* i, size_t ni, void* o, size_t no, void* s, void* p) { return 1; }
int32_t AOTInductorModelContainerGetNumInputs(Handle h, size_t* n) { *n = 0; return 0; }
int32_t AOTInductorModelContainerGetNumOutputs(Handle h, size_t* n) { *n = 0; return 0; }
int32_t AOTInductorModelContainerGetInputName(Handle h, size_t i, const char** n) { return 1; }
int32_t AOTInductorModelContainerGetOutputName(Handle h, size_t i, const char** n) { return 1; }
"""


def build_library(tmp_path: Path, name: str, source: str) -> Path:
    c = tmp_path / f"{name}.c"
    so = tmp_path / f"{name}.so"
    c.write_text(source)
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(so), str(c)], check=True)
    return so


def fake_model(tmp_path: Path, name: str, shims: list[str], body: str | None = None) -> Path:
    """A fake model importing `shims`; its container creation runs `body`
    (default: calls each shim) and then fails with its own message."""
    imports = "".join(f"extern int {s}(void);\n" for s in shims)
    use = body if body is not None else "(void)(" + (" + ".join(f"{s}()" for s in shims) or "0") + ")"
    return build_library(tmp_path, name, FAKE_MODEL.replace("IMPORTS", imports).replace("USE", use))


def state() -> tuple[int, set[int]]:
    stats = aotishim.memory_stats()
    return stats["live_tensors"], {s["id"] for s in stats["scopes"]}


@pytest.fixture
def unchanged():
    """Asserts a test leaves no tensors or scopes behind."""
    before = state()
    yield
    assert state() == before


@pytest.fixture
def model_copy(compiled, tmp_path):
    """copy(with_weights=True, with_spec=True) -> a private copy of the mlp model."""
    c = compiled("mlp")

    def copy(with_weights: bool = True, with_spec: bool = True) -> Path:
        so = tmp_path / "mlp.so"
        shutil.copy(c.so, so)
        if with_weights:
            shutil.copy(c.so.with_name(c.so.stem + ".weights.blob"), tmp_path / "mlp.weights.blob")
        if with_spec:
            shutil.copy(c.so.with_name(c.so.stem + ".spec.json"), tmp_path / "mlp.spec.json")
        return so

    return copy


def still_works(compiled) -> None:
    c = compiled("linear_chunk_last_dim")
    with aotishim.load(c.so) as m:
        c.check(m(*c.inputs))
    assert m.leaks == []


def test_wrong_inputs_with_spec(compiled, unchanged):
    c = compiled("mlp")
    x = c.inputs[0]
    with aotishim.load(c.so) as m:
        with pytest.raises(aotishim.ModelInputError, match=r"takes 1 input\(s\).*got 2"):
            m(x, x)
        with pytest.raises(aotishim.ModelInputError, match=r"takes 1 input\(s\).*got 0"):
            m()
        with pytest.raises(aotishim.ModelInputError, match="dtype float64, the model expects float32"):
            m(x.astype(np.float64))
        with pytest.raises(aotishim.ModelInputError, match=r"shape \[5, 9\], the model expects \[5, 8\]"):
            m(np.zeros((5, 9), np.float32))
        with pytest.raises(aotishim.ModelInputError, match="dtype complex64, the model expects float32"):
            m(np.zeros((5, 8), np.complex64))
        with pytest.raises(aotishim.ModelInputError, match="unsupported dtype"):
            m(np.zeros((5, 8), ml_dtypes.float8_e4m3fn))
        c.check(m(x))  # the model is fine afterwards


def test_wrong_inputs_without_spec_use_the_models_own_checks(model_copy, compiled, unchanged):
    so = model_copy(with_spec=False)
    with aotishim.load(so) as m:
        assert m.input_specs is None
        # The model's own check messages (AOTI_RUNTIME_CHECK_INPUTS); the file's
        # path, which holds this test's name, is also in the message.
        with pytest.raises(aotishim.ModelError,
                           match=r"input_handles\[0\]: unmatched dim value at 1, expected: 8, "
                                 r"but got: 9"):
            m(np.zeros((5, 9), np.float32))
        with pytest.raises(aotishim.ModelError,
                           match=r"input_handles\[0\]: unmatched dtype, expected: 6\(at::kFloat\), "
                                 r"but got: 7"):
            m(np.zeros((5, 8), np.float64))
        with pytest.raises(aotishim.ModelInputError, match="takes 1 input"):
            m()
        c = compiled("mlp")
        c.check(m(*c.inputs))
    assert m.leaks == []  # the rejected inputs were released too
    still_works(compiled)


def test_missing_weights(model_copy, compiled, unchanged):
    so = model_copy(with_weights=False)
    with pytest.raises(aotishim.ModelError, match=r"weights of .* were not found.*mlp\.weights\.blob"):
        aotishim.load(so)
    with pytest.raises(aotishim.ModelError, match="does not exist"):
        aotishim.load(so, weights=so.with_name("nowhere.blob"))
    still_works(compiled)


def test_truncated_weights(model_copy, compiled, unchanged):
    so = model_copy()
    blob = so.with_name("mlp.weights.blob")
    size = blob.stat().st_size
    blob.write_bytes(blob.read_bytes()[: size // 2])
    with pytest.raises(aotishim.ModelError, match=rf"truncated: it holds {size // 2} bytes but the model expects {size}"):
        aotishim.load(so)
    blob.write_bytes(b"")
    with pytest.raises(aotishim.ModelError, match="truncated"):
        aotishim.load(so)
    still_works(compiled)


def test_explicit_weights_path(model_copy, compiled, tmp_path, unchanged):
    so = model_copy(with_weights=False)
    c = compiled("mlp")
    elsewhere = tmp_path / "w" / "weights.bin"
    elsewhere.parent.mkdir()
    shutil.copy(c.so.with_name(c.so.stem + ".weights.blob"), elsewhere)
    with aotishim.load(so, weights=elsewhere) as m:
        assert m.weights_path == str(elsewhere)
        c.check(m(*c.inputs))


def test_files_that_are_not_models(tmp_path, compiled, unchanged):
    text = tmp_path / "notes.so"
    text.write_text("not a library")
    with pytest.raises(aotishim.ModelError, match="not a shared library"):
        aotishim.load(text)
    other = tmp_path / "data.bin"
    other.write_bytes(b"\x00" * 64)
    with pytest.raises(aotishim.ModelError, match="neither a compiled model library"):
        aotishim.load(other)
    with pytest.raises(aotishim.ModelError, match="no such model file"):
        aotishim.load(tmp_path / "missing.so")
    with pytest.raises(aotishim.ModelError, match="directory"):
        aotishim.load(tmp_path)
    bad_zip = tmp_path / "empty.pt2"
    import zipfile

    with zipfile.ZipFile(bad_zip, "w") as z:
        z.writestr("x/archive_format", "pt2")
    with pytest.raises(aotishim.ModelError, match="holds no compiled model library"):
        aotishim.load(bad_zip)
    still_works(compiled)


@needs_cc
def test_shared_library_that_is_not_a_model(tmp_path, compiled, unchanged):
    so = build_library(tmp_path, "plain", "int answer(void) { return 42; }\n")
    with pytest.raises(aotishim.ModelError, match="not an AOTInductor model.*AOTInductorModelContainerCreateWithDevice"):
        aotishim.load(so)
    assert _core.inspect_library(str(so))["is_model"] is False
    still_works(compiled)


@needs_cc
def test_model_needing_unknown_shims_lists_them_all(tmp_path, compiled, unchanged):
    so = fake_model(tmp_path, "needs_more",
                    ["aoti_torch_does_not_exist", "aoti_torch_empty_strided", "aoti_torch_nor_this"])
    with pytest.raises(aotishim.ModelError) as info:
        aotishim.load(so)
    message = str(info.value)
    assert "2 shim function(s) that aotishim does not provide" in message
    assert "aoti_torch_does_not_exist" in message and "aoti_torch_nor_this" in message
    assert "aoti_torch_empty_strided" not in message
    report = _core.inspect_library(str(so))
    assert report["is_model"] is True
    assert report["missing_shims"] == ["aoti_torch_does_not_exist", "aoti_torch_nor_this"]
    assert "aoti_torch_empty_strided" in report["needed_shims"]
    still_works(compiled)


@needs_cc
def test_container_failure_carries_the_models_message(tmp_path, compiled, unchanged):
    so = fake_model(tmp_path, "refuses", ["aoti_torch_device_type_cpu"])
    with pytest.raises(aotishim.ModelError,
                       match="creating the model container.*the fake container refuses to be created"):
        aotishim.load(so)
    still_works(compiled)


@needs_cc
def test_failure_of_a_model_without_get_last_error_says_where_its_message_went(
        tmp_path, compiled, unchanged):
    """Models of torch 2.11 and 2.12 have no AOTInductorGetLastError: they
    print what they caught to stderr and return a bare failure. The error
    says so rather than ending at "failed"."""
    source = FAKE_MODEL.replace(
        "int32_t AOTInductorGetLastError(const char** msg) { *msg = last; return 0; }\n", "")
    source = source.replace("IMPORTS", "").replace("USE", "(void)0")
    so = build_library(tmp_path, "no_last_error", source)
    with pytest.raises(aotishim.ModelError) as info:
        aotishim.load(so)
    message = str(info.value)
    assert "creating the model container" in message
    assert "compiled by a torch before 2.13, keeps no error message: its own went to stderr" \
        in message
    # A model that has the entry point is not blamed for lacking it.
    with pytest.raises(aotishim.ModelError) as info:
        aotishim.load(fake_model(tmp_path, "with_last_error", []))
    assert "keeps no error message" not in str(info.value)
    still_works(compiled)


# A container with one constant, described by name and FQN, but no way to
# read it out (neither AOTInductorModelContainerExtractConstantsMapEntries
# nor the map-based AOTInductorModelContainerExtractConstantsMap), nor
# AOTInductorGetLastError; it loads and runs.
OLD_CONSTANTS_MODEL = r"""
#include <stddef.h>
#include <stdint.h>
typedef struct Opaque* Handle;
static int container;
int32_t AOTInductorModelContainerCreateWithDevice(Handle* h, size_t n, const char* d, const char* c) {
  *h = (Handle)&container;
  return 0;
}
int32_t AOTInductorModelContainerDelete(Handle h) { return 0; }
int32_t AOTInductorModelContainerRun(Handle h, void* i, size_t ni, void* o, size_t no, void* s, void* p) { return 0; }
int32_t AOTInductorModelContainerGetNumInputs(Handle h, size_t* n) { *n = 0; return 0; }
int32_t AOTInductorModelContainerGetNumOutputs(Handle h, size_t* n) { *n = 0; return 0; }
int32_t AOTInductorModelContainerGetInputName(Handle h, size_t i, const char** n) { return 1; }
int32_t AOTInductorModelContainerGetOutputName(Handle h, size_t i, const char** n) { return 1; }
int32_t AOTInductorModelContainerGetNumConstants(Handle h, size_t* n) { *n = 1; return 0; }
int32_t AOTInductorModelContainerGetConstantName(Handle h, size_t i, const char** n) { *n = "fc_weight"; return 0; }
int32_t AOTInductorModelContainerGetConstantOriginalFQN(Handle h, size_t i, const char** n) { *n = "fc.weight"; return 0; }
int32_t AOTInductorModelContainerUpdateUserManagedConstantBufferPairs(Handle h, const void* p, size_t n, _Bool a, _Bool b) { return 1; }
"""


@needs_cc
def test_constants_of_a_model_without_constant_entries_are_refused_by_name(
        tmp_path, compiled, unchanged):
    """Before, such a model listed no constants and refused every FQN as
    unknown ("has no constant 'fc.weight' (its constants: )")."""
    so = build_library(tmp_path, "old_constants", OLD_CONSTANTS_MODEL)
    with aotishim.load(so) as m:
        assert m.run() == ()
        with pytest.raises(aotishim.ModelError,
                           match="AOTInductorModelContainerExtractConstantsMapEntries"):
            m.get_constant_fqns()
        with pytest.raises(aotishim.ModelError,
                           match="cannot read or change its constants: its container lacks "
                                 "AOTInductorModelContainerExtractConstantsMapEntries"):
            m.load_constants({"fc.weight": np.zeros((2, 2), np.float32)})
    still_works(compiled)


def test_shims_already_global_from_another_library_are_refused(compiled):
    """With libtorch loaded RTLD_GLOBAL first, a model would bind to libtorch's
    shims and hand our runtime foreign tensors; the load refuses instead."""
    import os
    import sys

    c = compiled("mlp")
    code = ("import torch, aotishim\n"
            f"try:\n    aotishim.load({str(c.so)!r})\n"
            "except aotishim.ModelError as e:\n    print('REFUSED', e)\n")
    env = dict(os.environ, TORCH_USE_RTLD_GLOBAL="1",
               PYTHONPATH=str(Path(aotishim.__file__).resolve().parents[1]))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "REFUSED" in r.stdout and "libtorch" in r.stdout and "aoti_torch_empty_strided" in r.stdout


@needs_cc
def test_container_failure_also_carries_aotishims_message(tmp_path, compiled, unchanged):
    # The fake container deletes a handle that was never made: the shim fails
    # with its own reason, which the load error must include.
    so = fake_model(tmp_path, "stale", [], body=(
        "extern int32_t aoti_torch_delete_tensor_object(void*);"
        " (void)aoti_torch_delete_tensor_object((void*)0x10)"))
    with pytest.raises(aotishim.ModelError) as info:
        aotishim.load(so)
    message = str(info.value)
    assert "the fake container refuses to be created" in message
    assert "aotishim:" in message and "aoti_torch_delete_tensor_object" in message
    still_works(compiled)


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_a_model_refuses_to_be_copied_or_pickled(compiled, how):
    """Before: copy.copy and copy.deepcopy returned a Model sharing the
    original's container, and dropping the copy closed the original."""
    import copy
    import gc
    import pickle

    c = compiled("mlp")
    model = aotishim.load(c.so)
    duplicate = {"copy": copy.copy, "deepcopy": copy.deepcopy,
                 "pickle": lambda m: pickle.loads(pickle.dumps(m))}[how]
    with pytest.raises(TypeError, match="cannot be (copied|pickled)"):
        other = duplicate(model)
        del other
        gc.collect()
    assert not model.closed
    c.check(model.run(*c.inputs))
    model.close()


def test_another_models_larger_weights_are_refused(compiled, unchanged):
    """Before: a blob larger than the model's constants only logged a warning
    and the model ran on the first bytes of another model's weights."""
    small, large = sorted((compiled("mlp"), compiled("softmax_head")),
                          key=lambda c: c.so.with_name(c.so.stem + ".weights.blob").stat().st_size)
    blob = large.so.with_name(large.so.stem + ".weights.blob")
    expected = small.so.with_name(small.so.stem + ".weights.blob").stat().st_size
    assert blob.stat().st_size > expected
    with pytest.raises(aotishim.ModelError,
                       match=rf"holds {blob.stat().st_size} bytes, more than the {expected} the "
                             "model expects: it is another model's weights"):
        aotishim.load(small.so, weights=blob)
    assert aotishim.memory_stats()["live_tensors"] == 0
    still_works(compiled)

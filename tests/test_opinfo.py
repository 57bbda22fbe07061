"""Every fallback op with a cpu kernel against torch on torch's own OpInfo
samples (tests/opinfo_cases.py): every dtype torch's function takes that the
ABI carries, each sample in several memory layouts. Where aotishim and
torch both have a GPU, every op with a cuda kernel (CUDA_DTYPES) runs on
cuda too, against torch cuda with TF32 off. A dtype the kernel does
not run must be refused with an error, never answered wrongly.

Sampling keeps this quick: at most MAX_SAMPLES samples per op and dtype
(spread over torch's list), every layout for each;
AOTISHIM_OPINFO_SAMPLES=100000 runs them all."""

from __future__ import annotations

import functools
import os

import pytest
import torch

import aotishim
from opinfo_cases import ADAPTERS, COMPLEX_DTYPES, CUDA_DTYPES, LAYOUTS, SHIM_DTYPES, run_case
from tf32 import tf32_off

pytest.importorskip("expecttest")  # torch's testing internals import it
from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

# cuda (the ops with a cuda kernel, CUDA_DTYPES) against torch cuda, where
# both aotishim and torch have a GPU
DEVICES = ["cpu", "cuda"]
HAS_CUDA = "cuda:0" in aotishim.devices() and torch.cuda.is_available()
MAX_SAMPLES = int(os.environ.get("AOTISHIM_OPINFO_SAMPLES", "8"))


@functools.cache
def _opinfo(name, variant):
    for op in op_db:
        if op.name == name and op.variant_test_name == variant:
            return op
    raise LookupError(f"no OpInfo {name!r} ({variant!r})")


def _kernel_dtypes(adapter, device):
    return adapter.dtypes if device == "cpu" else CUDA_DTYPES[adapter.name]


def _cases():
    for device in DEVICES:
        for a in ADAPTERS:
            if device == "cuda" and a.name not in CUDA_DTYPES:
                continue
            # (samples are made, and adapted, on the cpu: a dtype only torch
            # cuda takes, float16 FFTs, has none)
            dtypes = (a.torch_dtypes if a.samples
                      else _opinfo(a.opinfo, a.variant).supported_dtypes(device)
                      & _opinfo(a.opinfo, a.variant).supported_dtypes("cpu"))
            marks = ([pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device for aotishim and torch")]
                     if device == "cuda" else [])
            for dtype in sorted(dtypes, key=str):
                if dtype in SHIM_DTYPES or (dtype in COMPLEX_DTYPES and dtype in a.dtypes):
                    yield pytest.param(a, dtype, device, id=f"{a.name}-{str(dtype)[6:]}-{device}",
                                       marks=marks)


@pytest.fixture
def _no_tf32():
    """torch cuda's matmuls without TF32: its answer must be float32's."""
    if not HAS_CUDA:
        yield
        return
    with tf32_off():
        yield


def _calls(adapter, dtype):
    """The adapted calls of an op's samples, at most MAX_SAMPLES of the
    OpInfo's (spread over its list). Those the adapter declines (a 2-D
    sample of an op the adapter takes only in 3-D) are dropped before the
    cap, so a small cap still leaves some to run."""
    torch.manual_seed(0)
    if adapter.samples:
        samples = list(adapter.samples(dtype))
    else:
        samples = list(_opinfo(adapter.opinfo, adapter.variant).sample_inputs("cpu", dtype))
    calls = [(n, c) for n, c in ((n, adapter.adapt(s)) for n, s in enumerate(samples))
             if c is not None]
    if adapter.samples:
        return calls
    step = max(1, len(calls) // MAX_SAMPLES)
    return calls[::step][:MAX_SAMPLES]


@pytest.mark.parametrize("adapter,dtype,device", list(_cases()))
def test_op_matches_torch_on_opinfo_samples(adapter, dtype, device, _no_tf32):
    supported = dtype in _kernel_dtypes(adapter, device)
    problems, ran = [], 0
    for n, call in _calls(adapter, dtype):
        for layout in LAYOUTS:
            found = run_case(call, layout, device)
            if found is None:
                continue
            ran += 1
            if not supported and found and all(p.startswith("refused") for p in found):
                continue  # a clear refusal of a dtype the kernel does not run
            problems += [f"sample {n} ({layout}): {p}" for p in found]
    assert not problems, f"{len(problems)} mismatches:\n" + "\n".join(problems[:20])
    if supported:
        assert ran > 0, "no sample ran"

"""DLPack exchange on a cpu model: torch and numpy tensors in without a copy,
outputs out to torch and numpy sharing memory, freed when the last holder
drops them, and clear refusals."""

from __future__ import annotations

import gc
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import aotishim
from aotishim import _core, export

torch = pytest.importorskip("torch")


class TwoInTwoOut(torch.nn.Module):
    def __init__(self, dtype=torch.float32) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8, 5, dtype=dtype))

    def forward(self, x, y):
        return x * 2 + y, torch.relu(x @ self.w)


class AddOneInPlace(torch.nn.Module):
    """Writes its input: the model visibly works on the caller's memory."""

    def forward(self, x):
        x.add_(1)
        return x * 3


@pytest.fixture(scope="module")
def two(model_cache):
    torch.manual_seed(0)
    module = TwoInTwoOut().eval()
    args = (torch.randn(4, 8), torch.randn(4, 8))
    so = export.compile_cached(module, args, model_cache, name="dlpack_two")
    with aotishim.load(so) as model:
        yield model, module


@pytest.fixture(scope="module")
def two_bf16(model_cache):
    torch.manual_seed(1)
    module = TwoInTwoOut(torch.bfloat16).eval()
    args = (torch.randn(4, 8, dtype=torch.bfloat16), torch.randn(4, 8, dtype=torch.bfloat16))
    so = export.compile_cached(module, args, model_cache, name="dlpack_two_bf16")
    with aotishim.load(so) as model:
        yield model, module


def eager(module, *args):
    with torch.no_grad():
        return module(*[a.clone() for a in args])


def live():
    return aotishim.memory_stats()["live_tensors"]


def cpu_allocations():
    for d in aotishim.memory_stats()["devices"]:
        if d["device"] == "cpu":
            return d["allocations"], d["bytes"]
    return 0, 0


def test_borrowed_input_is_the_producers_memory():
    base = torch.arange(60, dtype=torch.float32).reshape(6, 10)
    view = base[1:4, 2:9:2]  # offset and strided
    h = _core.borrow_dlpack(view.__dlpack__(), "cpu")
    try:
        info = _core.tensor_info(h)
        assert info["data_ptr"] == view.data_ptr()
        assert info["sizes"] == [3, 4] and info["strides"] == [10, 2]
        assert not info["owns_storage"]
        np.testing.assert_array_equal(aotishim.shim.to_numpy(aotishim.shim.Tensor(h)),
                                      view.numpy())
    finally:
        aotishim.shim.delete(h)
    a = np.arange(24, dtype=np.float32).reshape(4, 6)[1:, 3:]
    h = _core.borrow_dlpack(a.__dlpack__(), "cpu")
    try:
        assert _core.tensor_info(h)["data_ptr"] == a.ctypes.data
    finally:
        aotishim.shim.delete(h)


def test_producer_kept_alive_until_last_view_dies():
    t = torch.arange(12, dtype=torch.float32)
    storage_refs = lambda: t.untyped_storage()._weak_ref()  # noqa: E731
    h = _core.borrow_dlpack(t.__dlpack__(), "cpu")
    ptr = t.data_ptr()
    del t
    gc.collect()
    # Only our borrowed storage holds torch's memory now; it is still readable.
    np.testing.assert_array_equal(aotishim.shim.to_numpy(aotishim.shim.Tensor(h)),
                                  np.arange(12, dtype=np.float32))
    assert _core.tensor_info(h)["data_ptr"] == ptr
    aotishim.shim.delete(h)
    del storage_refs


def test_model_writes_callers_memory(model_cache):
    so = export.compile_cached(AddOneInPlace(), (torch.zeros(3, 4),), model_cache,
                               name="dlpack_inplace")
    with aotishim.load(so) as model:
        x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
        (y,) = model.run(x)
        # The model added 1 to the tensor the caller holds: it ran on its memory.
        np.testing.assert_array_equal(x.numpy(), np.arange(12).reshape(3, 4) + 1)
        np.testing.assert_array_equal(y, (np.arange(12).reshape(3, 4) + 1) * 3)
        n = np.zeros((3, 4), np.float32)
        model.run(torch.from_numpy(n))
        np.testing.assert_array_equal(n, 1)


def test_torch_and_numpy_inputs_match_eager(two):
    model, module = two
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    want = eager(module, x, y)
    for inputs in [(x, y), (x, y.numpy()), (x.numpy(), y)]:
        got = model.run(*inputs)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5)


def test_strided_and_offset_producers(two):
    model, module = two
    big = torch.randn(9, 20)
    x = big[2:6, 3:19:2]  # offset, non-unit stride
    y = torch.randn(8, 4).t()  # transposed
    assert not x.is_contiguous() and not y.is_contiguous()
    want = eager(module, x, y)
    got = model.run(x, y, outputs="dlpack")
    for g, w in zip(got, want):
        torch.testing.assert_close(torch.from_dlpack(g), w, rtol=1e-5, atol=1e-5)
    # The producers are untouched by the packing copy.
    assert torch.equal(big[2:6, 3:19:2], x)


def test_outputs_share_memory_with_torch_and_numpy(two):
    model, module = two
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    want = eager(module, x, y)
    outs = model.run(x, y, outputs="dlpack")
    assert all(isinstance(o, aotishim.DeviceTensor) for o in outs)
    assert outs[0].device == "cpu" and outs[0].dtype == "float32" and outs[0].shape == (4, 8)
    t = torch.from_dlpack(outs[0])
    n = np.from_dlpack(outs[1])
    assert t.data_ptr() == outs[0].data_ptr
    assert n.ctypes.data == outs[1].data_ptr
    torch.testing.assert_close(t, want[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(n, want[1].numpy(), rtol=1e-5, atol=1e-5)
    # One memory: a write through torch is seen by numpy of the same output.
    t2 = torch.from_dlpack(outs[1])
    t2[0, 0] = 1234.5
    assert n[0, 0] == 1234.5
    # Both protocols: the unversioned capsule too.
    legacy = outs[0].__dlpack__()
    assert "dltensor" in repr(legacy)
    del legacy


def test_output_memory_freed_when_last_holder_drops(two):
    model, _ = two
    gc.collect()
    before_live, before_alloc = live(), cpu_allocations()
    outs = model.run(torch.randn(4, 8), torch.randn(4, 8), outputs="dlpack")
    assert live() == before_live  # no handle is left behind: the objects hold storage
    assert cpu_allocations()[0] == before_alloc[0] + 2
    t = torch.from_dlpack(outs[0])
    n = np.from_dlpack(outs[1])
    expect0 = t.clone()
    del outs
    gc.collect()
    # The consumers keep the memory: still allocated, still the values.
    assert cpu_allocations()[0] == before_alloc[0] + 2
    torch.testing.assert_close(t, expect0)
    del t
    gc.collect()
    assert cpu_allocations()[0] == before_alloc[0] + 1
    del n
    gc.collect()
    assert cpu_allocations() == before_alloc
    assert live() == before_live


def test_unconsumed_capsule_frees_its_reference(two):
    model, _ = two
    gc.collect()
    before = cpu_allocations()
    (o, _o2) = model.run(torch.randn(4, 8), torch.randn(4, 8), outputs="dlpack")
    del _o2
    cap = o.__dlpack__(max_version=(1, 0))
    del o
    gc.collect()
    assert cpu_allocations()[0] == before[0] + 1  # the capsule still owns it
    del cap
    gc.collect()
    assert cpu_allocations() == before


def test_inputs_released_after_run(two):
    model, _ = two
    gc.collect()
    before = live()
    x = torch.randn(4, 8)
    refs_before = x.untyped_storage().data_ptr()
    model.run(x, torch.randn(4, 8))
    gc.collect()
    assert live() == before
    # torch's tensor is no longer referenced by aotishim: deleting it frees it.
    import weakref
    ref = weakref.ref(x)
    del x
    gc.collect()
    assert ref() is None
    del refs_before


def test_bfloat16(two_bf16):
    model, module = two_bf16
    x, y = torch.randn(4, 8, dtype=torch.bfloat16), torch.randn(4, 8, dtype=torch.bfloat16)
    want = eager(module, x, y)
    outs = model.run(x, y, outputs="dlpack")
    assert outs[0].dtype == "bfloat16"
    for o, w in zip(outs, want):
        t = torch.from_dlpack(o)
        assert t.dtype == torch.bfloat16 and t.data_ptr() == o.data_ptr
        torch.testing.assert_close(t, w, rtol=2e-2, atol=2e-2)
    # numpy outputs from DLPack inputs: ml_dtypes' bfloat16.
    got = model.run(x, y)
    np.testing.assert_allclose(got[0].astype(np.float32), want[0].float().numpy(),
                               rtol=2e-2, atol=2e-2)


def test_wrong_dtype_shape_device(two):
    model, _ = two
    gc.collect()
    before = live()
    y = torch.randn(4, 8)
    with pytest.raises(aotishim.ModelInputError, match=r"input 0 .* has dtype float64, the model expects float32"):
        model.run(torch.randn(4, 8, dtype=torch.float64), y)
    with pytest.raises(aotishim.ModelInputError, match=r"input 1 .*dimension"):
        model.run(torch.randn(4, 8), torch.randn(5, 8))
    with pytest.raises(aotishim.ModelInputError, match=r"has dtype complex64, the model expects float32"):
        model.run(torch.randn(4, 8, dtype=torch.complex64), y)
    with pytest.raises(aotishim.ModelInputError, match=r"unsupported DLPack dtype"):
        model.run(torch.zeros(4, 8, dtype=torch.float8_e4m3fn), y)
    with pytest.raises(aotishim.ModelInputError, match=r"is on cuda:0, the model runs on cpu"):
        model.run(_FakeCuda(torch.randn(4, 8)), y)
    with pytest.raises(aotishim.ModelInputError, match=r"takes 2 input"):
        model.run(y, outputs="dlpack")
    with pytest.raises(ValueError, match="outputs must be"):
        model.run(y, y, outputs="torch")
    # Nothing left behind by the refusals, and the model still runs.
    assert live() == before
    assert model.run(torch.randn(4, 8), y)[0].shape == (4, 8)


def test_refused_strided_inputs_leave_nothing(two):
    """A strided input is borrowed, then packed only once its dtype passes;
    refused for its dtype or its shape, neither the borrowed view nor the
    packed copy outlives the refusal."""
    model, module = two
    gc.collect()
    before = live(), cpu_allocations()
    y = torch.randn(4, 8)
    with pytest.raises(aotishim.ModelInputError, match=r"input 0 .* has dtype float64"):
        model.run(torch.randn(8, 4, dtype=torch.float64).t(), y, outputs="dlpack")
    with pytest.raises(aotishim.ModelInputError, match=r"input 1 .*dimension"):
        model.run(torch.randn(8, 4).t(), torch.randn(8, 5).t(), outputs="dlpack")
    gc.collect()
    assert (live(), cpu_allocations()) == before
    x = torch.randn(8, 4).t()
    for got, want in zip(model.run(x, y), eager(module, x, y)):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


def test_static_model_still_checks_a_relation_without_symbols(two, tmp_path):
    """Inputs matching a static model's shapes skip the symbolic check, which
    could find nothing else, unless the spec has a relation over no symbol
    (evaluated whatever the inputs): then the full check runs and refuses."""
    model, _ = two
    so = Path(str(model.path))
    for suffix in (".so", ".weights.blob"):
        shutil.copy(so.with_suffix(suffix) if suffix == ".so" else so.with_name(so.stem + suffix),
                    tmp_path / f"m{suffix}")
    spec = json.loads(so.with_name(so.stem + ".spec.json").read_text())
    assert all(isinstance(d, int) for t in spec["inputs"] for d in t["shape"])
    spec["relations"] = [{"expr": "3", "min": 5}]
    (tmp_path / "m.spec.json").write_text(json.dumps(spec))
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    with aotishim.load(tmp_path / "m.so") as changed:
        for inputs in [(x, y), (x.numpy(), y.numpy())]:
            with pytest.raises(aotishim.ModelInputError, match=r"3 = 3 .*requires it in \[5, inf\]"):
                changed.run(*inputs)
    assert model.run(x, y)[0].shape == (4, 8)  # the model's own spec: no relation

def test_export_refusals(two):
    model, _ = two
    (o, _) = model.run(torch.randn(4, 8), torch.randn(4, 8), outputs="dlpack")
    with pytest.raises(BufferError, match="does not copy"):
        o.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="copy=True"):
        o.__dlpack__(copy=True)
    with pytest.raises(ValueError, match="takes no stream"):
        o.__dlpack__(stream=5)
    assert o.__dlpack_device__() == (1, 0)
    cap = o.__dlpack__()
    torch.from_dlpack(cap)
    with pytest.raises(ValueError, match="already consumed"):
        _core.borrow_dlpack(cap, "cpu")


class _FakeCuda:
    """A producer that claims to live on cuda:0 (refused before it is asked to export)."""

    def __init__(self, t):
        self.t = t

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        raise AssertionError("a producer on the wrong device must not be asked to export")


def test_torch_inputs_taken_through_the_c_exchange_table(two):
    """torch's tensor type carries DLPack's C exchange table: a cpu model
    borrows a torch input through it, without calling __dlpack__, as the
    producer's own memory (offset and strides as they lie), holding torch's
    tensor exactly while the borrowed view lives."""
    class Recording(torch.Tensor):
        calls = 0

        def __dlpack__(self, *args, **kwargs):
            Recording.calls += 1
            return super().__dlpack__(*args, **kwargs)

    base = torch.arange(60, dtype=torch.float32).reshape(6, 10)
    view = base[1:4, 2:9:2]
    uses = base._use_count()
    handle, code, sizes, packed = _core.borrow_exchange_input(view, "cpu")
    try:
        info = _core.tensor_info(handle)
        assert info["data_ptr"] == view.data_ptr() and info["strides"] == [10, 2]
        assert sizes == (3, 4) and not packed
        np.testing.assert_array_equal(aotishim.shim.to_numpy(aotishim.shim.Tensor(handle)),
                                      view.numpy())
        assert view._use_count() > 1  # torch's tensor is held while borrowed
    finally:
        aotishim.shim.delete(handle)
    assert base._use_count() == uses
    # Producers without the table are left to the protocol.
    assert _core.borrow_exchange_input(_NumpyProducer(np.ones(3, np.float32)), "cpu") is None

    model, module = two
    x = torch.randn(4, 8).as_subclass(Recording)
    y = torch.randn(4, 8)
    for got, want in zip(model.run(x, y), eager(module, x.as_subclass(torch.Tensor), y)):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)
    assert Recording.calls == 0
    p = _NumpyProducer(y.numpy())
    got = model.run(x, p)[0]
    assert p.calls == 1
    np.testing.assert_allclose(got, (x.as_subclass(torch.Tensor) * 2 + y).numpy(), rtol=1e-6)


def test_lazily_negated_torch_view_is_refused(two):
    """torch.imag(z.conj()) is a view whose memory holds the imaginary part
    un-negated, with torch's negative bit set; torch's DLPack export (the
    protocol and the C table) hands over that memory without the negation,
    so borrowing it read every value with the wrong sign. It is refused by
    name; resolve_neg() gives a tensor that runs."""
    model, module = two
    z = torch.complex(torch.randn(4, 8), torch.randn(4, 8))
    x = torch.imag(z.conj())
    assert x.is_neg()
    y = torch.randn(4, 8)
    gc.collect()
    before = live()
    for outputs in ("numpy", "dlpack"):
        with pytest.raises(aotishim.ModelInputError, match=r"input 0 .*negat.*resolve_neg"):
            model.run(x, y, outputs=outputs)
    assert live() == before
    for got, want in zip(model.run(x.resolve_neg(), y), eager(module, x.resolve_neg(), y)):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


class _NumpyProducer:
    """A DLPack producer without a C exchange table (numpy's memory)."""

    def __init__(self, a):
        self.a = a
        self.calls = 0

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        self.calls += 1
        return self.a.__dlpack__(**kwargs)

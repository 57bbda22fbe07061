"""Inputs a model writes in place (torch.export's mutated user inputs).

The spec records which inputs the model writes. Read-only memory is never
handed to the model: an input it does not write is copied, one it writes is
refused. A strided input it writes runs on a packed copy that is copied back
into the caller's view, so the caller sees the writes whatever the layout,
as eager torch would give. Models without that record treat every input as
possibly written: read-only ones copied, strided ones written back.

Before these protections, a read-only mmap input killed the process with
SIGSEGV, a read-only ``np.frombuffer`` of ``bytes`` was changed in place, and
a transposed or sliced view lost the writes (it ran on a copy never written back).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import aotishim
from aotishim import ModelInputError

from test_hardening import run_child

torch = pytest.importorskip("torch")


def eager_updates(cache: np.ndarray, news: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """CacheUpdate run eagerly on a torch copy: the final cache and each output."""
    import models

    module, _ = models.build("cache_update")
    t = torch.from_numpy(np.array(cache))
    outs = [models.to_numpy(module(t, torch.from_numpy(n))) for n in news]
    return t.numpy(), outs


def test_spec_records_the_mutated_input(compiled):
    spec = aotishim.load(compiled("cache_update").so).spec
    assert [(s.name, s.mutated) for s in spec.inputs] == [("cache", True), ("new", False)]


def test_read_only_mmap_input_the_model_writes_is_refused(compiled, tmp_path):
    """Before: the process died with SIGSEGV (the model wrote read-only pages)."""
    so = compiled("cache_update").so
    r = run_child("""
        import sys, numpy as np, aotishim
        np.save(sys.argv[2], np.ones((6, 8), np.float32))
        cache = np.load(sys.argv[2], mmap_mode="r")
        m = aotishim.load(sys.argv[1])
        try:
            m.run(cache, np.ones((6, 8), np.float32))
        except aotishim.ModelInputError as e:
            print("refused:", e)
        np.testing.assert_array_equal(cache, np.ones((6, 8), np.float32))
        print("ok")
    """, str(so), str(tmp_path / "cache.npy"))
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert "refused: input 0 (cache) is a read-only array, and the model writes" in r.stdout
    assert r.stdout.strip().endswith("ok")


def test_read_only_bytes_stay_unchanged(compiled):
    """Before: the model wrote into the memory of an immutable bytes object."""
    c = compiled("cache_update")
    data = np.arange(48, dtype=np.float32).tobytes()
    cache = np.frombuffer(data, dtype=np.float32).reshape(6, 8)
    new = np.ones((6, 8), np.float32)
    with aotishim.load(c.so) as m:
        with pytest.raises(ModelInputError, match=r"input 0 \(cache\) is a read-only array"):
            m.run(cache, new)
        with pytest.raises(ModelInputError, match="read-only"):
            m.run(cache, torch.from_numpy(new))  # the exchange path checks it too
    assert data == np.arange(48, dtype=np.float32).tobytes()


def test_read_only_input_the_model_only_reads_is_copied(compiled):
    """A read-only array for an input the model does not write runs (on a copy)."""
    c = compiled("cache_update")
    new_bytes = np.full((6, 8), 2.0, np.float32).tobytes()
    new = np.frombuffer(new_bytes, dtype=np.float32).reshape(6, 8)
    cache = np.ones((6, 8), np.float32)
    want_cache, (want,) = eager_updates(cache, [np.array(new)])
    with aotishim.load(c.so) as m:
        (out,) = m.run(cache, new)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    np.testing.assert_allclose(cache, want_cache, rtol=1e-6)
    assert new.tobytes() == new_bytes


def strided_views(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Views of (6, 8) float32 caches in layouts the model cannot take as they lie."""
    base = rng.standard_normal((8, 6)).astype(np.float32)
    wide = rng.standard_normal((6, 16)).astype(np.float32)
    flipped = rng.standard_normal((6, 8)).astype(np.float32)
    return {"transposed": base.T, "every other column": wide[:, ::2],
            "reversed rows": flipped[::-1]}


@pytest.mark.parametrize("kind, layout", [
    ("numpy", "transposed"), ("numpy", "every other column"), ("numpy", "reversed rows"),
    ("torch", "transposed"), ("torch", "every other column")])  # torch has no negative strides
def test_writes_reach_a_strided_cache_over_several_runs(compiled, layout, kind):
    """Before: the view ran on a packed copy that was never written back, so
    the cache stayed at its first value and every later output was wrong."""
    c = compiled("cache_update")
    rng = np.random.default_rng(7)
    view = strided_views(rng)[layout]
    news = [rng.standard_normal((6, 8)).astype(np.float32) for _ in range(3)]
    want_cache, want_outs = eager_updates(view, news)
    cache = view
    if kind == "torch":  # the same layout as a torch view of the same memory
        cache = torch.from_numpy(view.base)
        cache = cache.T if layout == "transposed" else cache[:, ::2]
        assert cache.data_ptr() == view.ctypes.data and not cache.is_contiguous()
    with aotishim.load(c.so) as m:
        for new, want in zip(news, want_outs):
            (out,) = m.run(cache, new)
            np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    got = cache if kind == "numpy" else cache.numpy()
    np.testing.assert_allclose(got, want_cache, rtol=1e-5, atol=1e-5)


def test_strided_torch_cache_with_dlpack_outputs(compiled):
    """The exchange path with a numpy and a torch view at once."""
    c = compiled("cache_update")
    rng = np.random.default_rng(8)
    base = torch.from_numpy(rng.standard_normal((8, 6)).astype(np.float32))
    cache = base.T
    new = rng.standard_normal((6, 16)).astype(np.float32)[:, ::2]
    want_cache, (want,) = eager_updates(cache.numpy(), [np.array(new)])
    with aotishim.load(c.so) as m:
        (out,) = m.run(cache, new, outputs="dlpack")
        np.testing.assert_allclose(np.from_dlpack(out), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(cache.numpy(), want_cache, rtol=1e-5, atol=1e-5)


def test_broadcast_view_of_a_mutated_input_is_refused(compiled):
    c = compiled("cache_update")
    row = np.zeros((1, 8), np.float32)
    cache = np.lib.stride_tricks.as_strided(row, (6, 8), (0, 4), writeable=True)
    with aotishim.load(c.so) as m:
        with pytest.raises(ModelInputError, match="share memory"):
            m.run(cache, np.ones((6, 8), np.float32))
        with pytest.raises(ModelInputError, match="share memory"):
            m.run(torch.zeros(1, 8).expand(6, 8), np.ones((6, 8), np.float32))
    assert not row.any()


def install_without_record(c, directory: Path) -> Path:
    """The model with a spec that does not say which inputs it writes."""
    directory.mkdir(parents=True, exist_ok=True)
    for suffix in (".so", ".weights.blob"):
        shutil.copy(c.so.with_name(c.so.stem + suffix), directory / f"m{suffix}")
    spec = json.loads(c.so.with_name(c.so.stem + ".spec.json").read_text())
    for entry in spec["inputs"]:
        del entry["mutated"]
    (directory / "m.spec.json").write_text(json.dumps(spec))
    return directory / "m.so"


@pytest.mark.parametrize("with_spec", [False, True])
def test_without_a_record_every_input_may_be_written(compiled, tmp_path, with_spec):
    """No spec, or one without the record: read-only inputs are copied (the
    caller's memory untouched), strided ones receive the writes."""
    c = compiled("cache_update")
    so = install_without_record(c, tmp_path)
    if not with_spec:
        (tmp_path / "m.spec.json").unlink()
    rng = np.random.default_rng(9)
    view = rng.standard_normal((8, 6)).astype(np.float32).T
    new = rng.standard_normal((6, 8)).astype(np.float32)
    want_cache, (want,) = eager_updates(view, [new])
    frozen = np.array(view)
    frozen.flags.writeable = False
    with aotishim.load(so) as m:
        assert m.spec is None if not with_spec else m.spec.inputs[0].mutated is None
        (out,) = m.run(view, new)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(view, want_cache, rtol=1e-5, atol=1e-5)
        before = frozen.copy()
        (out,) = m.run(frozen, new)
        np.testing.assert_array_equal(frozen, before)

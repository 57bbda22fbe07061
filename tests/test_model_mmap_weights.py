"""mmap_weights=True: a cpu model's constants borrow its weights blob, mapped
copy-on-write, instead of a copy the container makes of it."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import aotishim
from aotishim import export



def mappings_of(path: str) -> list[tuple[int, int]]:
    """Address ranges of this process's mappings of the file at `path`."""
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].strip() == path:
                start, end = (int(x, 16) for x in fields[0].split("-"))
                out.append((start, end))
    return out


def extracted(m) -> dict[str, np.ndarray]:
    views = m.extract_constants_map()
    copies = {k: np.array(v) for k, v in views.items()}
    del views
    gc.collect()
    return copies


@pytest.fixture
def mlp(compiled):
    return compiled("mlp")


def test_values_equal_the_copying_load_and_constants_lie_in_the_mapping(mlp):
    with aotishim.load(mlp.so) as copied, aotishim.load(mlp.so, mmap_weights=True) as mapped:
        blob = mapped.weights_path
        assert blob == copied.weights_path
        want, got = copied(*mlp.inputs), mapped(*mlp.inputs)
        for w, g in zip(want, got):
            assert g.dtype == w.dtype and g.shape == w.shape and g.strides == w.strides
            np.testing.assert_array_equal(g, w)  # the same bytes through the same kernels
        mlp.check(got)
        a, b = extracted(copied), extracted(mapped)
        assert sorted(a) == sorted(b) == sorted(mapped.get_constant_fqns())
        for fqn in a:
            np.testing.assert_array_equal(a[fqn], b[fqn])
        ranges = mappings_of(blob)
        assert ranges, "the blob is not mapped"
        ptrs = [p for p in mapped.constant_data_ptrs if p]
        assert ptrs and all(any(s <= p < e for s, e in ranges) for p in ptrs)
        assert not any(any(s <= p < e for s, e in ranges) for p in copied.constant_data_ptrs if p)
        stats = mapped.memory_stats
        assert stats["mapped_bytes"] == os.path.getsize(blob) == mapped._core.constants_blob_size
        assert copied.memory_stats["mapped_bytes"] == 0
        # The model owns no copy of its weights: what the scope holds is no
        # more than the copying load's scope.
        assert stats["owned_bytes"] <= copied.memory_stats["owned_bytes"]


def test_close_releases_the_mapping_once_no_view_is_left(mlp):
    m = aotishim.load(mlp.so, mmap_weights=True)
    blob = m.weights_path
    mlp.check(m(*mlp.inputs))
    views = m.extract_constants_map()
    with pytest.raises(aotishim.ModelError, match="still viewed"):
        m.close()
    assert mappings_of(blob)
    del views
    gc.collect()
    m.close()
    assert mappings_of(blob) == []
    assert m.memory_stats["mapped_bytes"] == 0


def test_writes_to_constants_copy_pages_and_never_reach_the_file(mlp):
    with aotishim.load(mlp.so, mmap_weights=True) as m:
        blob = Path(m.weights_path)
        before = blob.read_bytes()
        views = m.extract_constants_map()
        views["fc1.weight"][...] = 0  # the model's own memory (copy-on-write pages)
        views["fc1.bias"][...] = 0
        del views
        gc.collect()
        out = m(*mlp.inputs)[0]
        assert blob.read_bytes() == before
        # fc1 now gives zeros: the model's output is fc2 of relu(0).
        with aotishim.load(mlp.so, mmap_weights=True) as fresh:  # its own pages: unchanged
            mlp.check(fresh(*mlp.inputs))
        assert not np.allclose(out, mlp.expected[0])


def test_constants_api_on_mapped_weights(mlp):
    import models

    module, _ = models.build("mlp")
    with aotishim.load(mlp.so, mmap_weights=True) as m:
        blob = m.weights_path
        state = module.state_dict()
        new = {k: (state[k] * -2).numpy().copy() for k in m.get_constant_fqns()}
        m.load_constants(new, use_inactive=True)
        mlp.check(m(*mlp.inputs))  # still the mapped weights
        m.swap_constant_buffer()
        with torch.no_grad():
            module.load_state_dict({k: torch.from_numpy(v) for k, v in new.items()}, strict=False)
            want = module(*(torch.from_numpy(a) for a in mlp.inputs)).numpy()
        np.testing.assert_allclose(m(*mlp.inputs)[0], want, rtol=1e-5, atol=1e-5)
        m.free_inactive_constant_buffer()  # the mapped constants' buffer
        gc.collect()
        assert mappings_of(blob) == []  # nothing views the mapping any more
        np.testing.assert_allclose(m(*mlp.inputs)[0], want, rtol=1e-5, atol=1e-5)


def test_a_borrower_keeps_the_mapping_of_the_model_it_borrows_from(mlp):
    with aotishim.load(mlp.so, mmap_weights=True) as a:
        blob = a.weights_path
        views = a.extract_constants_map()
        b = aotishim.load(mlp.so)
        b.load_constants(views, user_managed=True)
        del views
        gc.collect()
        mlp.check(b(*mlp.inputs))
        with pytest.raises(aotishim.ModelError, match="still viewed"):
            a.close()
        b.close()
    assert mappings_of(blob) == []


def test_several_models_on_one_blob_and_switching_models(compiled):
    mlp, other = compiled("mlp"), compiled("two_inputs")
    loaded = [aotishim.load(mlp.so, mmap_weights=True) for _ in range(3)]
    blob = loaded[0].weights_path
    for m in loaded:
        mlp.check(m(*mlp.inputs))
    assert len(mappings_of(blob)) == 3  # each its own copy-on-write mapping of the file
    for m in loaded:
        m.close()
    assert mappings_of(blob) == []
    # Switching: one model after another, each mapped, run and closed.
    for c in (mlp, other, mlp, other):
        with aotishim.load(c.so, mmap_weights=True) as m:
            c.check(m(*c.inputs))
    assert mappings_of(blob) == []


def test_a_package_from_bytes_a_path_and_a_folder_maps_its_blob(tmp_path, mlp):
    so = Path(mlp.so)
    pt2 = tmp_path / "mlp.pt2"
    import zipfile

    with zipfile.ZipFile(pt2, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("pkg/archive_format", "pt2")
        z.write(so, "pkg/data/aotinductor/model/h0.wrapper.so")
        z.write(so.with_name(so.stem + ".weights.blob"),
                "pkg/data/aotinductor/model/h0.wrapper_weights.blob")
    for source in (pt2, pt2.read_bytes()):
        with aotishim.load(source, mmap_weights=True) as m:
            assert m.memory_stats["mapped_bytes"] > 0
            mlp.check(m(*mlp.inputs))
    folder = tmp_path / "extracted"
    with zipfile.ZipFile(pt2) as z:
        z.extractall(folder)
    with aotishim.load(folder, mmap_weights=True) as m:
        assert m.memory_stats["mapped_bytes"] > 0
        mlp.check(m(*mlp.inputs))


def test_refused_where_it_cannot_apply(mlp):
    with pytest.raises(aotishim.ModelError, match="mmap_weights applies to cpu models"):
        aotishim.load(mlp.so, device="sim", mmap_weights=True)


class _HalfThenFloat(nn.Module):
    """A float16 parameter of an odd length (74 bytes) before float32 weights."""

    def __init__(self) -> None:
        super().__init__()
        self.pre = nn.Module()
        self.pre.scale = nn.Parameter(torch.linspace(0.5, 1.5, 37, dtype=torch.float16),
                                      requires_grad=False)
        self.fc = nn.Linear(37, 16)

    def forward(self, x):
        return self.fc(x * self.pre.scale.float())


class _Counter(nn.Module):
    """Writes one of its buffers at every run."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.register_buffer("count", torch.zeros(8))

    def forward(self, x):
        self.count.add_(1)
        return self.fc(x) + self.count


def test_mixed_dtypes_and_written_buffers_stay_private(model_cache):
    torch.manual_seed(0)
    module = _HalfThenFloat().eval()
    x = torch.randn(3, 37)
    so = export.compile_cached(module, (x,), model_cache, name="mmap_half_then_float")
    with torch.no_grad():
        want = module(x).numpy()
    with aotishim.load(so) as copied, aotishim.load(so, mmap_weights=True) as mapped:
        np.testing.assert_array_equal(mapped(x.numpy())[0], copied(x.numpy())[0])
        np.testing.assert_allclose(mapped(x.numpy())[0], want, rtol=1e-5, atol=1e-5)
        layout = {k: v.ctypes.data for k, v in mapped.extract_constants_map().items()}
        gc.collect()
        assert sorted(layout) == ["fc.bias", "fc.weight", "pre.scale"]
        # The blob pads each constant to 64 bytes: all of them are borrowed,
        # each at a 64-byte boundary of the mapping.
        start, = (s for s, e in mappings_of(mapped.weights_path) if s <= layout["pre.scale"] < e)
        assert sorted(p - start for p in layout.values()) == [0, 128, 2496]
        assert mapped._core.copied_mapped_constants == 0

    counter = _Counter().eval()
    y = torch.randn(2, 8)
    so = export.compile_cached(counter, (y,), model_cache, name="mmap_counter")
    blob = Path(str(so)[: -len(".so")] + ".weights.blob")
    before = blob.read_bytes()
    with aotishim.load(so) as copied, aotishim.load(so, mmap_weights=True) as mapped:
        for _ in range(3):
            np.testing.assert_array_equal(mapped(y.numpy())[0], copied(y.numpy())[0])
    assert blob.read_bytes() == before


_RSS_PROBE = r"""
import json, sys, numpy as np
def status():
    out = {}
    for line in open("/proc/self/status"):
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem"):
            out[key] = int(value.split()[0]) * 1024
    return out
import aotishim
x = np.ones((4, 2048), np.float32)
aotishim.cpu_gemm_library()  # loads oneDNN (54 MB of code) where installed, before the baseline
base = status()
m = aotishim.load(sys.argv[1], mmap_weights=sys.argv[2] == "mmap")
loaded = status()
m(x)
ran = status()
m.close()
closed = status()
print(json.dumps({"base": base, "loaded": loaded, "ran": ran, "closed": closed,
                  "blob": m._core.constants_blob_size}))
"""


def _measure(so: Path, mode: str) -> dict:
    # the aotishim this test imports, built in place or installed
    env = dict(os.environ, PYTHONPATH=str(Path(aotishim.__file__).resolve().parents[1]))
    out = subprocess.run([sys.executable, "-c", _RSS_PROBE, str(so), mode], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(os.environ.get("AOTISHIM_SANITIZED") == "1",
                    reason="resident memory and CPU shares mean nothing under ASan")
def test_rss_holds_one_copy_of_the_weights(model_cache):
    torch.manual_seed(0)
    module = nn.Linear(2048, 4096).eval()  # 32 MiB of weights
    so = export.compile_cached(module, (torch.ones(4, 2048),), model_cache, name="mmap_wide")
    blob_mib = 2048 * 4096 * 4 / 2**20
    for mode in ("copy", "mmap"):
        r = _measure(so, mode)
        blob = r["blob"] / 2**20
        assert abs(blob - blob_mib) < 1
        grow = {k: (r["ran"][k] - r["base"][k]) / 2**20 for k in r["base"]}
        peak = (r["ran"]["VmHWM"] - r["base"]["VmRSS"]) / 2**20
        if mode == "copy":
            assert grow["RssAnon"] > 0.9 * blob, grow  # the container's own copy
            assert peak > 1.8 * blob, peak  # with the mapped file beside it during the load
        else:
            assert grow["RssAnon"] < 0.25 * blob, grow  # no copy of the weights
            assert grow["RssFile"] + grow["RssShmem"] > 0.9 * blob, grow  # the mapped pages
            assert peak < 1.4 * blob, peak  # one copy at the highest
            released = (r["ran"]["RssFile"] - r["closed"]["RssFile"]) / 2**20
            assert released > 0.9 * blob, released  # close unmapped it

"""Loading .pt2 packages as production runners hold them: from bytes, from a
binary file object, from the folder one was extracted into, and one model
chosen by name among several."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

import aotishim


def package(path: Path, models: dict[str, object]) -> Path:
    """A .pt2 in torch's layout, one data/aotinductor/<name>/ folder per model."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("pkg/archive_format", "pt2")
        for i, (name, c) in enumerate(models.items()):
            stem = f"pkg/data/aotinductor/{name}/h{i}.wrapper"
            z.writestr(stem + ".so", c.so.read_bytes())
            z.write(c.so.with_name(c.so.stem + ".weights.blob"), stem + "_weights.blob")
    return path


def check(model, c):
    with model:
        c.check(model(*c.inputs))
    assert model.leaks == []


def test_package_from_bytes_and_file_objects(compiled, tmp_path):
    c = compiled("mlp")
    pt2 = package(tmp_path / "m.pt2", {"model": c})
    check(aotishim.load(pt2.read_bytes()), c)
    check(aotishim.load(bytearray(pt2.read_bytes())), c)
    with open(pt2, "rb") as f:
        check(aotishim.load(f), c)
        assert not f.closed  # the caller's file stays the caller's

    class Stream(io.RawIOBase):  # a pipe-like reader that cannot seek
        def __init__(self, data: bytes) -> None:
            self._data = io.BytesIO(data)

        def readable(self) -> bool:
            return True

        def readinto(self, b) -> int:
            chunk = self._data.read(len(b))
            b[: len(chunk)] = chunk
            return len(chunk)

    check(aotishim.load(Stream(pt2.read_bytes())), c)
    with pytest.raises(aotishim.ModelError, match="<bytes>.pt2.*not a readable .pt2"):
        aotishim.load(b"not a zip")


def test_extracted_package_folder_loads_in_place(compiled, tmp_path):
    c = compiled("mlp")
    pt2 = package(tmp_path / "m.pt2", {"model": c})
    folder = tmp_path / "extracted"
    with zipfile.ZipFile(pt2) as z:
        z.extractall(folder)
    model = aotishim.load(folder)
    so = folder / "pkg/data/aotinductor/model/h0.wrapper.so"
    assert model.path == so.resolve()
    assert Path(model.weights_path) == so.with_name("h0.wrapper_weights.blob").resolve()
    check(model, c)
    empty = tmp_path / "empty_dir"
    empty.mkdir()
    with pytest.raises(aotishim.ModelError, match="directory .* not an extracted package"):
        aotishim.load(empty)


def test_model_name_chooses_among_several(compiled, tmp_path):
    small, other = compiled("mlp"), compiled("softmax_head")
    pt2 = package(tmp_path / "two.pt2", {"small": small, "head": other})
    with pytest.raises(aotishim.ModelError, match="several models \\('head', 'small'\\).*model_name"):
        aotishim.load(pt2)
    with pytest.raises(aotishim.ModelError, match="no model 'big' \\(its models: 'head', 'small'\\)"):
        aotishim.load(pt2, model_name="big")
    check(aotishim.load(pt2, model_name="small"), small)
    check(aotishim.load(pt2.read_bytes(), model_name="head"), other)
    folder = tmp_path / "two"
    with zipfile.ZipFile(pt2) as z:
        z.extractall(folder)
    check(aotishim.load(folder, model_name="head"), other)
    with pytest.raises(aotishim.ModelError, match="several models"):
        aotishim.load(folder)
    with pytest.raises(aotishim.ModelError, match="model_name applies to packages"):
        aotishim.load(small.so, model_name="small")

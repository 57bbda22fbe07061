"""Hostile or broken spec files: a ModelError at load naming the file and the
field, never a raw exception (and never one later, on every run).

Before the spec was validated, these raised RecursionError (JSON nested
100,000 deep; a 50,000-term dimension expression), AttributeError
(``"symbols": []``) and OverflowError (``"min": 1e400``); ``"shape": "24"``
was read as the shape [2, 4]; a relation ``s0 // 0`` loaded and then every
run raised ZeroDivisionError.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import aotishim
from aotishim import ModelError, ModelInputError
from aotishim.model import spec_path


def install(so: Path, directory: Path, spec: dict | str) -> Path:
    """The model `so` (library and weights) in `directory` with the given spec."""
    directory.mkdir(parents=True, exist_ok=True)
    for suffix in (".so", ".weights.blob"):
        shutil.copy(so.with_name(so.stem + suffix), directory / f"m{suffix}")
    text = spec if isinstance(spec, str) else json.dumps(spec)
    (directory / "m.spec.json").write_text(text)
    return directory / "m.so"


def good_spec(so: Path) -> dict:
    return json.loads(spec_path(so).read_text())


def hostile(name: str, spec: dict) -> str:
    """`spec` changed as `name` says, as JSON text."""
    s = json.loads(json.dumps(spec))
    if name == "nested 100000 deep":
        return json.dumps(s)[:-1] + ', "extra": ' + "[" * 100_000 + "]" * 100_000 + "}"
    if name == "50000-term expression":
        s["inputs"][0]["shape"][0] = "+".join(["s0"] * 50_000)
    elif name == "symbols is a list":
        s["symbols"] = []
    elif name == "min 1e400":
        return json.dumps(s).replace('"symbols": {}', '"symbols": {"s0": {"min": 1e400}}')
    elif name == "relation divides by zero":
        s["relations"] = [{"expr": "s0 // 0", "min": 0, "max": None}]
    elif name == "shape is a string":
        s["inputs"][0]["shape"] = "".join(str(d) for d in s["inputs"][0]["shape"])
    elif name == "negative dimension":
        s["inputs"][0]["shape"][0] = -5
    elif name == "name is a number":
        s["inputs"][0]["name"] = 3
    elif name == "min above max":
        s["symbols"] = {"s0": {"min": 9, "max": 2}}
    elif name == "input is a list":
        s["inputs"][0] = [1, 2]
    return json.dumps(s)


CASES = {
    "nested 100000 deep": "JSON nested 100001 levels deep, more than the 16 allowed",
    "50000-term expression": r"inputs\[0\]\.shape\[0\]: dimension expression of \d+ characters",
    "symbols is a list": "symbols: expected an object, found a list",
    "min 1e400": r"symbols\.s0\.min: expected an integer, found a number inf",
    "relation divides by zero": r"relations\[0\]\.expr: .*divides by zero",
    "shape is a string": r"inputs\[0\]\.shape: expected a list, found a string",
    "negative dimension": r"inputs\[0\]\.shape\[0\]: -5 is outside",
    "name is a number": r"inputs\[0\]\.name: expected a string, found an integer 3",
    "min above max": r"symbols\.s0: max 2 is below min 9",
    "input is a list": r"inputs\[0\]: expected an object, found a list",
}


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_spec_is_a_model_error_naming_file_and_field(compiled, tmp_path, case):
    c = compiled("mlp")
    so = install(c.so, tmp_path, hostile(case, good_spec(c.so)))
    with pytest.raises(ModelError, match=CASES[case]) as info:
        aotishim.load(so)
    assert f"model spec '{tmp_path / 'm.spec.json'}' is unreadable" in str(info.value)
    assert aotishim.memory_stats()["live_tensors"] == 0


def test_spec_that_is_not_utf8(compiled, tmp_path):
    c = compiled("mlp")
    so = install(c.so, tmp_path, "{}")
    (tmp_path / "m.spec.json").write_bytes(b'{"format": "\xff"}')
    with pytest.raises(ModelError, match="not UTF-8"):
        aotishim.load(so)


def test_oversized_spec_is_refused_before_it_is_read(compiled, tmp_path):
    c = compiled("mlp")
    spec = good_spec(c.so)
    spec["padding"] = " " * (5 << 20)
    so = install(c.so, tmp_path, spec)
    with pytest.raises(ModelError, match="bytes, more than the"):
        aotishim.load(so)


def test_a_relation_dividing_by_zero_at_run_time_is_an_input_error(compiled_dynamic, tmp_path):
    """A divisor that is zero only for some sizes loads; a run at such a size
    is refused with a clear error instead of ZeroDivisionError."""
    c = compiled_dynamic("mlp")
    spec = good_spec(c.so)
    ((sym, _),) = spec["symbols"].items()
    spec["relations"] = [{"expr": f"{sym} // ({sym} - 3)", "min": 0, "max": None}]
    so = install(c.so, tmp_path, spec)
    features = spec["inputs"][0]["shape"][1]
    with aotishim.load(so) as model:
        (out,) = model.run(np.ones((5, features), np.float32))
        assert out.shape[0] == 5
        with pytest.raises(ModelInputError, match="divides by zero"):
            model.run(np.ones((3, features), np.float32))


def test_the_written_specs_still_read(compiled, compiled_dynamic):
    """What export.compile writes passes the validation."""
    for so in (compiled("mlp").so, compiled_dynamic("paired_cat").so,
               compiled_dynamic("sequence_norm").so, compiled("cache_update").so):
        with aotishim.load(so) as model:
            assert model.spec is not None and model.spec.inputs

"""The spec's symbolic shape check (aotishim._shapes, aotishim.spec), without torch."""

from __future__ import annotations

import json

import pytest

from aotishim._shapes import Expr, Relation, ShapeError, Symbol, check_shapes, parse_dim
from aotishim.spec import SPEC_FORMAT, read_spec

SYMS = {"s0": Symbol("s0", 1, 64, "batch", 4), "s1": Symbol("s1", 2, None)}
LABELS = ["input 0 (x)", "input 1 (y)", "input 2 (z)"]


def check(shapes, specs, symbols=SYMS, relations=()):
    specs = [[parse_dim(d) for d in s] for s in specs]
    return check_shapes(shapes, specs, LABELS[:len(shapes)], symbols, relations)


def test_expressions_evaluate_as_sympy_prints_them():
    assert Expr("2*s0 + 1").evaluate({"s0": 5}) == 11
    assert Expr("(s0//2)").evaluate({"s0": 7}) == 3
    assert Expr("Max(1, s0 - 3)").evaluate({"s0": 2}) == 1
    assert Expr("Mod(s0, 3) + FloorDiv(s1, 2)").evaluate({"s0": 7, "s1": 9}) == 5
    assert Expr("s0*s1").symbols == {"s0", "s1"}
    assert Expr("s0").is_symbol and not Expr("2*s0").is_symbol
    for bad in ("__import__('os')", "s0.real", "s0 ** 2", "[s0]", "f(s0)", "s0 +", "1.5*s0"):
        with pytest.raises(ValueError):
            Expr(bad)


def test_linear_expressions_are_solved():
    assert Expr("2*s0 + 1").solve("s0", 9, {}) == 4
    assert Expr("2*s0 + 1").solve("s0", 8, {}) is None  # no integer solution
    assert Expr("3*s0 - s1").solve("s0", 10, {"s1": 2}) == 4
    assert Expr("s0*s0").solve("s0", 9, {}) is None  # not linear: not guessed
    assert Expr("(s0//2)").solve("s0", 3, {}) is None


def test_shapes_within_the_ranges_pass():
    assert check([(1, 8)], [["s0", 8]]) == {"s0": 1}
    assert check([(64, 8), (64, 3, 2)], [["s0", 8], ["s0", "s1", 2]]) == {"s0": 64, "s1": 3}
    assert check([(5, 100000)], [["s0", "s1"]]) == {"s0": 5, "s1": 100000}  # no upper bound
    assert check([(3, 7)], [["s0", None]]) == {"s0": 3}  # None: unchecked


def test_out_of_range_names_input_dimension_symbol_and_range():
    with pytest.raises(ShapeError) as e:
        check([(65, 8)], [["s0", 8]])
    assert str(e.value) == "input 0 (x) dimension 0 has size 65; the model accepts batch (s0) in [1, 64]"
    with pytest.raises(ShapeError, match=r"input 0 \(x\) dimension 1 has size 1; the model "
                                         r"accepts s1 in \[2, inf\]"):
        check([(4, 1)], [["s0", "s1"]])


def test_static_dimensions_and_rank():
    with pytest.raises(ShapeError, match=r"has shape \[4, 9\], the model expects \[s0, 8\] "
                                         r"\(dimension 1 must be 8\)"):
        check([(4, 9)], [["s0", 8]])
    with pytest.raises(ShapeError, match=r"has shape \[4\] \(1 dimensions\), the model expects "
                                         r"\[s0, 8\] \(2 dimensions\)"):
        check([(4,)], [["s0", 8]])


def test_one_symbol_must_have_one_value():
    with pytest.raises(ShapeError, match=r"input 1 \(y\) dimension 0 has size 5, but input 0 "
                                         r"\(x\) dimension 0 has size 4; both are batch \(s0\)"):
        check([(4, 8), (5, 8)], [["s0", 8], ["s0", 8]])


def test_derived_dimensions():
    specs = [["s0", 3], ["2*s0", 3]]
    assert check([(4, 3), (8, 3)], specs) == {"s0": 4}
    with pytest.raises(ShapeError, match=r"input 1 \(y\) dimension 0 has size 9; the model "
                                         r"expects 2\*s0 = 8 \(batch \(s0\) in \[1, 64\] = 4 "
                                         r"from input 0 \(x\) dimension 0\)"):
        check([(4, 3), (9, 3)], specs)
    # Only the derived dimension given: its root is solved, and range-checked.
    assert check([(9, 3)], [["2*s0 + 1", 3]]) == {"s0": 4}
    with pytest.raises(ShapeError, match=r"dimension 0 \(as 2\*s0 \+ 1 = 131\) has size 65; "
                                         r"the model accepts batch"):
        check([(131, 3)], [["2*s0 + 1", 3]])
    with pytest.raises(ShapeError, match=r"size 8, which is no value of 2\*s0 \+ 1"):
        check([(8, 3)], [["2*s0 + 1", 3]])


def test_relations_are_checked():
    rel = [Relation(Expr("s0 + s1"), 0, 10)]
    assert check([(4, 6)], [["s0", "s1"]], relations=rel) == {"s0": 4, "s1": 6}
    with pytest.raises(ShapeError, match=r"s0 \+ s1 = 11 .*the model requires it in \[0, 10\]"):
        check([(4, 7)], [["s0", "s1"]], relations=rel)


def write(tmp_path, data):
    p = tmp_path / "m.spec.json"
    p.write_text(json.dumps(data))
    return p


def test_read_spec_formats(tmp_path):
    old = read_spec(write(tmp_path, {"format": "aotishim-model-spec/1", "inputs": [
        {"name": "x", "dtype": "float32", "shape": [5, 8]}]}))
    assert old.inputs[0].shape == (5, 8) and old.inputs[0].is_static and not old.symbols
    new = read_spec(write(tmp_path, {
        "format": SPEC_FORMAT,
        "symbols": {"s0": {"min": 1, "max": 64, "name": "batch", "example": 4},
                    "s1": {"min": 2, "max": None}},
        "relations": [{"expr": "2*s0", "min": 2, "max": 128}],
        "inputs": [{"name": "x", "dtype": "float32", "shape": ["s0", "2*s0", "s1"]}],
        "outputs": [{"name": "output0", "dtype": "int64", "shape": [None, 2]}]}))
    assert new.inputs[0].describe() == "x: float32[s0, 2*s0, s1]"
    assert new.outputs[0].describe() == "output0: int64[?, 2]"
    assert new.symbols["s0"] == Symbol("s0", 1, 64, "batch", 4)
    assert new.symbols["s1"].max is None
    assert new.example_shape(new.inputs[0]) == (4, 8, 2)
    new.check_shapes([(3, 6, 9)], ["x"])
    with pytest.raises(ShapeError):
        new.check_shapes([(3, 7, 9)], ["x"])


@pytest.mark.parametrize("data", [
    {"format": "aotishim-model-spec/9", "inputs": []},
    {"format": SPEC_FORMAT, "inputs": [{"name": "x", "dtype": "float32", "shape": ["s9"]}]},
    {"format": SPEC_FORMAT, "inputs": [{"name": "x", "dtype": "float32", "shape": ["s0 **"]}]},
    {"format": SPEC_FORMAT, "symbols": {"s0": {}}, "inputs": []},
])
def test_bad_specs_are_refused(tmp_path, data):
    with pytest.raises((ValueError, KeyError, TypeError)):
        read_spec(write(tmp_path, data))

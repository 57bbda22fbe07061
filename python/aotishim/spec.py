"""Model spec files (``NAME.spec.json``, written by :mod:`aotishim.export`).

A spec records a model's input and output names, dtypes and shapes, so that
wrong inputs are refused with a clear message before the model runs. Format
``aotishim-model-spec/2``::

    {"format": "aotishim-model-spec/2", "torch_version": "...",
     "symbols": {"s17": {"min": 1, "max": 64, "name": "batch", "example": 4}},
     "relations": [{"expr": "2*s17", "min": 2, "max": 128}],
     "inputs":  [{"name": "x", "dtype": "float32", "shape": ["s17", 8], "mutated": false}],
     "outputs": [{"name": "output0", "dtype": "int64", "shape": [null, 2]}]}

A dimension is an int (static), a symbol or an expression over symbols (a
dynamic dimension, as torch.export names it), or null (an output size that
depends on the data, such as ``nonzero``'s). ``symbols`` gives each symbol's
range (``max`` null when unbounded), the user's name for it when known and its
size in the example inputs; ``relations`` are further ranges torch.export
reports for expressions. An input's ``mutated`` says whether the model
writes it in place (torch.export's mutated user inputs); a spec without it
(older ones) leaves that unknown, and :meth:`aotishim.Model.run` then treats
the input as possibly written. Format ``aotishim-model-spec/1`` (static shapes, no
symbols) is still read. :func:`read_spec` validates every field and bounds the
file's size, its JSON nesting and its expressions (:class:`SpecError` names
the field at fault).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ._shapes import Expr, Relation, ShapeError, Symbol, check_shapes, parse_dim, spec_text

__all__ = ["SPEC_FORMAT", "ModelSpec", "ShapeError", "SpecError", "TensorSpec", "read_spec"]

SPEC_FORMAT = "aotishim-model-spec/2"
_READABLE = ("aotishim-model-spec/1", SPEC_FORMAT)


@dataclass(frozen=True)
class TensorSpec:
    """Name, dtype and shape of a model input or output. A dimension is an
    int, an :class:`~aotishim._shapes.Expr` (symbolic) or None (unknown)."""

    name: str
    dtype: str
    shape: tuple[Any, ...]
    # Inputs: whether the model writes it in place (None: the spec does not say).
    mutated: bool | None = None

    def describe(self) -> str:
        return f"{self.name}: {self.dtype}{spec_text(self.shape)}"

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)


@dataclass(frozen=True)
class ModelSpec:
    """What a spec file says about a model."""

    inputs: list[TensorSpec] | None
    outputs: list[TensorSpec] | None
    symbols: dict[str, Symbol] = field(default_factory=dict)
    relations: list[Relation] = field(default_factory=list)

    def check_shapes(self, shapes: Sequence[Sequence[int]], labels: Sequence[str]) -> None:
        """Raises :class:`~aotishim._shapes.ShapeError` when input ``shapes``
        fall outside the spec (``labels`` name the inputs in the message)."""
        assert self.inputs is not None
        check_shapes(shapes, [s.shape for s in self.inputs], labels, self.symbols,
                     self.relations)

    def example_shape(self, spec: TensorSpec) -> tuple[int, ...]:
        """``spec``'s shape at the sizes of the export's example inputs."""
        values = {k: (s.example if s.example is not None else max(s.min, 1))
                  for k, s in self.symbols.items()}
        out = []
        for d in spec.shape:
            if d is None:
                raise ValueError(f"{spec.name} has a dimension of unknown size")
            out.append(d if isinstance(d, int) else d.evaluate(values))
        return tuple(out)


# Bounds on a spec file, checked before and while it is read: a spec lists a
# model's inputs and outputs, a few kilobytes; anything far beyond that is no
# spec, and JSON nested without bound would exhaust the parser's recursion.
MAX_SPEC_BYTES = 4 << 20
MAX_JSON_DEPTH = 16
MAX_ENTRIES = 100_000  # tensors, symbols, relations, dimensions of one tensor
MAX_SIZE = (1 << 63) - 1  # a dimension or bound (int64, as the runtime's sizes)


class SpecError(ValueError):
    """A spec file that is not a valid spec; the message names the field."""


def _json_depth(text: str) -> int:
    """How deep ``text``'s arrays and objects nest, strings skipped, found
    without recursion before the parser (which recurses) sees it."""
    depth = deepest = 0
    for m in _BRACKETS.finditer(text):
        token = m.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth -= 1
    return deepest


# A JSON string (skipped) or a bracket.
_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null", int: "an integer", float: "a number"}.get(type(value),
                                                                          type(value).__name__)


def _expect(value: Any, kind: type, where: str) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SpecError(f"{where}: expected {_type_name(kind())}, found {_type_name(value)} "
                        f"{_short(value)}")
    return value


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _count(items: Any, kind: type, where: str) -> Any:
    _expect(items, kind, where)
    if len(items) > MAX_ENTRIES:
        raise SpecError(f"{where}: {len(items)} entries, more than the {MAX_ENTRIES} allowed")
    return items


def _size(value: Any, where: str, *, optional: bool = False) -> int | None:
    """A non-negative int64 (a bound, an example size); None when optional and null."""
    if value is None and optional:
        return None
    _expect(value, int, where)
    if not 0 <= value <= MAX_SIZE:
        raise SpecError(f"{where}: {value} is outside [0, {MAX_SIZE}]")
    return value


def _dim(value: Any, where: str) -> "int | Expr | None":
    if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= MAX_SIZE:
        raise SpecError(f"{where}: {value} is outside [0, {MAX_SIZE}]")
    try:
        return parse_dim(value)
    except ValueError as e:
        raise SpecError(f"{where}: {e}") from None


def _tensor_specs(data: dict, key: str, inputs: bool) -> list[TensorSpec] | None:
    if key not in data:
        return None
    out = []
    for i, s in enumerate(_count(data[key], list, key)):
        where = f"{key}[{i}]"
        _expect(s, dict, where)
        for field_name in ("name", "dtype", "shape"):
            if field_name not in s:
                raise SpecError(f"{where}: no {field_name!r}")
        name = _expect(s["name"], str, f"{where}.name")
        dtype = _expect(s["dtype"], str, f"{where}.dtype")
        shape = tuple(_dim(d, f"{where}.shape[{j}]")
                      for j, d in enumerate(_count(s["shape"], list, f"{where}.shape")))
        mutated = s.get("mutated") if inputs else None
        if mutated is not None:
            _expect(mutated, bool, f"{where}.mutated")
        out.append(TensorSpec(name, dtype, shape, mutated))
    return out


def _symbol(key: str, v: Any) -> Symbol:
    where = f"symbols.{key}"
    _expect(v, dict, where)
    if "min" not in v:
        raise SpecError(f"{where}: no 'min'")
    lo = _size(v["min"], f"{where}.min")
    hi = _size(v.get("max"), f"{where}.max", optional=True)
    if hi is not None and hi < lo:
        raise SpecError(f"{where}: max {hi} is below min {lo}")
    name = v.get("name")
    if name is not None:
        _expect(name, str, f"{where}.name")
    return Symbol(key, lo, hi, name, _size(v.get("example"), f"{where}.example", optional=True))


def _relation(i: int, r: Any) -> Relation:
    where = f"relations[{i}]"
    _expect(r, dict, where)
    for field_name in ("expr", "min"):
        if field_name not in r:
            raise SpecError(f"{where}: no {field_name!r}")
    try:
        expr = Expr(_expect(r["expr"], str, f"{where}.expr"))
    except SpecError:
        raise
    except ValueError as e:
        raise SpecError(f"{where}.expr: {e}") from None
    # A relation's range may be negative (a difference of symbols).
    lo = _expect(r["min"], int, f"{where}.min")
    hi = r.get("max")
    if hi is not None:
        _expect(hi, int, f"{where}.max")
    return Relation(expr, lo, hi)


def read_spec(path: Path) -> ModelSpec:
    """Parses a spec file. Raises :class:`SpecError` (a ValueError) naming the
    field when it is no valid spec: not JSON, beyond the size and nesting
    bounds above, a field of the wrong type or outside its range, an
    expression that cannot be read (or divides by zero), a symbol used but
    not declared. OSError when the file cannot be read."""
    size = Path(path).stat().st_size
    if size > MAX_SPEC_BYTES:
        raise SpecError(f"{size} bytes, more than the {MAX_SPEC_BYTES} a spec may have")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise SpecError(f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    depth = _json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise SpecError(f"JSON nested {depth} levels deep, more than the {MAX_JSON_DEPTH} allowed")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise SpecError(f"not JSON: {e}") from None
    if not isinstance(data, dict):
        raise SpecError(f"expected a JSON object, found {type(data).__name__}")
    if data.get("format") not in _READABLE:
        raise SpecError(f"format: unknown format {_short(data.get('format'))}")
    symbols = {str(k): _symbol(str(k), v)
               for k, v in _count(data.get("symbols", {}), dict, "symbols").items()}
    relations = [_relation(i, r)
                 for i, r in enumerate(_count(data.get("relations", []), list, "relations"))]
    spec = ModelSpec(_tensor_specs(data, "inputs", True), _tensor_specs(data, "outputs", False),
                     symbols, relations)
    for i, t in enumerate(spec.inputs or []):
        for j, d in enumerate(t.shape):
            if isinstance(d, Expr) and not d.symbols <= symbols.keys():
                raise SpecError(f"inputs[{i}].shape[{j}]: input {t.name} uses undeclared "
                                f"symbol(s) {sorted(d.symbols - symbols.keys())}")
    return spec

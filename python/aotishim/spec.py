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
symbols) is still read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ._shapes import Expr, Relation, ShapeError, Symbol, check_shapes, parse_dim, spec_text

__all__ = ["SPEC_FORMAT", "ModelSpec", "ShapeError", "TensorSpec", "read_spec"]

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


def _tensor_specs(data: dict, key: str) -> list[TensorSpec] | None:
    if key not in data:
        return None
    return [TensorSpec(str(s["name"]), str(s["dtype"]), tuple(parse_dim(d) for d in s["shape"]),
                       s.get("mutated") if key == "inputs" else None)
            for s in data[key]]


def _bound(value: Any) -> int | None:
    return None if value is None else int(value)


def read_spec(path: Path) -> ModelSpec:
    """Parses a spec file; raises ValueError/KeyError/TypeError when it is not one."""
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, found {type(data).__name__}")
    if data.get("format") not in _READABLE:
        raise ValueError(f"unknown format {data.get('format')!r}")
    symbols = {str(k): Symbol(str(k), int(v["min"]), _bound(v.get("max")),
                              v.get("name"), _bound(v.get("example")))
               for k, v in data.get("symbols", {}).items()}
    relations = [Relation(Expr(str(r["expr"])), int(r["min"]), _bound(r.get("max")))
                 for r in data.get("relations", [])]
    spec = ModelSpec(_tensor_specs(data, "inputs"), _tensor_specs(data, "outputs"),
                     symbols, relations)
    for t in spec.inputs or []:
        for d in t.shape:
            if isinstance(d, Expr) and not d.symbols <= symbols.keys():
                raise ValueError(f"input {t.name} uses undeclared symbol(s) "
                                 f"{sorted(d.symbols - symbols.keys())}")
    return spec


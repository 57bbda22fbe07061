"""Symbolic input shapes from a model spec, checked without torch.

A spec (``NAME.spec.json``, written by :mod:`aotishim.export`) gives each
input dimension as an integer (static), a string (a symbol such as ``s17``,
or an expression over symbols such as ``2*s17``, as torch.export reports
derived dimensions) or ``null`` (not checked). Symbols carry the range
torch.export allows for them; relations are further expressions with a range
of their own. :func:`check_shapes` binds every symbol from the inputs that
carry it, so one symbol must have one value across inputs, then checks
ranges, expressions and relations, and raises with the input, the dimension,
the symbol and its range named.
"""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

__all__ = ["Expr", "Symbol", "Relation", "ShapeError", "check_shapes", "parse_dim", "spec_text"]


class ShapeError(ValueError):
    """Input shapes outside what the spec allows (the message says why)."""


# Bounds on a dimension expression, checked before it is parsed: torch.export's
# are a few terms, and a long or deeply nested one would exhaust the
# recursion of parsing and evaluating it.
MAX_EXPR_CHARS = 1000
MAX_EXPR_DEPTH = 64


class Expr:
    """An integer expression over symbols: literals, names, + - * // % and
    unary minus, parentheses, and calls of ``Max``, ``Min``, ``Mod``,
    ``PythonMod`` and ``FloorDiv``: how sympy prints what torch.export reports.
    At most :data:`MAX_EXPR_CHARS` characters and :data:`MAX_EXPR_DEPTH`
    levels of nesting; a divisor that is the literal 0 is refused."""

    _BINARY: dict[type, Callable[[int, int], int]] = {
        ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    }
    _CALLS: dict[str, Callable[..., int]] = {
        "Max": max, "Min": min, "Mod": operator.mod, "PythonMod": operator.mod,
        "FloorDiv": operator.floordiv,
    }

    def __init__(self, text: str) -> None:
        self.text = text.strip()
        if len(self.text) > MAX_EXPR_CHARS:
            raise ValueError(f"dimension expression of {len(self.text)} characters is longer "
                             f"than the {MAX_EXPR_CHARS} allowed")
        if _nesting(self.text) > MAX_EXPR_DEPTH:
            raise ValueError(f"dimension expression {self.text[:40]!r}... nests deeper than "
                             f"{MAX_EXPR_DEPTH} levels")
        try:
            tree = ast.parse(self.text, mode="eval").body
        except (SyntaxError, RecursionError, MemoryError):
            raise ValueError(f"cannot read the dimension expression {text!r}") from None
        if _depth(tree) > MAX_EXPR_DEPTH:
            raise ValueError(f"dimension expression {self.text[:40]!r}... nests deeper than "
                             f"{MAX_EXPR_DEPTH} levels")
        names: set[str] = set()
        self._validate(tree, names)
        self._tree = tree
        self.symbols = frozenset(names)

    def _validate(self, node: ast.AST, names: set[str]) -> None:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return
        if isinstance(node, ast.Name):
            names.add(node.id)
            return
        if isinstance(node, ast.BinOp) and type(node.op) in self._BINARY:
            self._validate(node.left, names)
            self._validate(node.right, names)
            if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and _is_zero(node.right):
                raise ValueError(f"dimension expression {self.text!r} divides by zero")
            return
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            self._validate(node.operand, names)
            return
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in self._CALLS and not node.keywords and node.args):
            for a in node.args:
                self._validate(a, names)
            if (node.func.id in ("Mod", "PythonMod", "FloorDiv")
                    and (len(node.args) != 2 or _is_zero(node.args[1]))):
                raise ValueError(f"dimension expression {self.text!r}: {node.func.id} takes "
                                 "two arguments, the second not zero")
            return
        raise ValueError(f"unsupported dimension expression {self.text!r}")

    @property
    def is_symbol(self) -> bool:
        return isinstance(self._tree, ast.Name)

    def evaluate(self, values: Mapping[str, int]) -> int:
        """The value for ``values`` (every symbol of the expression bound).
        Raises :class:`ShapeError` when it divides by zero for these values."""
        try:
            return self._eval(self._tree, values)
        except ZeroDivisionError:
            raise ShapeError(f"{self.text} divides by zero for "
                             f"{', '.join(f'{k} = {values[k]}' for k in sorted(self.symbols))}"
                             ) from None

    def _eval(self, node: ast.AST, values: Mapping[str, int]) -> int:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return values[node.id]
        if isinstance(node, ast.BinOp):
            return self._BINARY[type(node.op)](self._eval(node.left, values),
                                               self._eval(node.right, values))
        if isinstance(node, ast.UnaryOp):
            v = self._eval(node.operand, values)
            return -v if isinstance(node.op, ast.USub) else v
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        return self._CALLS[node.func.id](*(self._eval(a, values) for a in node.args))

    def solve(self, symbol: str, target: int, values: Mapping[str, int]) -> int | None:
        """The value of ``symbol`` (the only unbound one) that makes the
        expression equal ``target``, when the expression is linear in it
        (torch's derived dimensions are ``a*d + b``); None otherwise."""
        def at(v: int) -> int:
            return self.evaluate({**values, symbol: v})

        try:
            b = at(0)
            a = at(1) - b
            if a == 0 or at(2) != 2 * a + b or at(-3) != -3 * a + b:
                return None
        except ShapeError:  # divides by zero at one of the probes: not linear
            return None
        q, r = divmod(target - b, a)
        return q if r == 0 and at(q) == target else None

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expr) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


def _nesting(text: str) -> int:
    """The deepest parenthesis nesting of ``text`` (checked before parsing)."""
    depth = deepest = 0
    for ch in text:
        if ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth -= 1
    return deepest


def _depth(tree: ast.AST) -> int:
    """The depth of an expression tree, found without recursion."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _is_zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0


@dataclass(frozen=True)
class Symbol:
    """A symbolic dimension: its range (``max`` None when unbounded), the
    name the user gave it (``Dim("batch")``) when known, and the size it had
    in the example inputs."""

    symbol: str
    min: int
    max: int | None
    name: str | None = None
    example: int | None = None

    def describe(self) -> str:
        label = f"{self.name} ({self.symbol})" if self.name else self.symbol
        return f"{label} in {range_text(self.min, self.max)}"


@dataclass(frozen=True)
class Relation:
    """An expression over symbols and the range torch.export requires of it."""

    expr: Expr
    min: int
    max: int | None


def range_text(lo: int, hi: int | None) -> str:
    return f"[{lo}, {'inf' if hi is None else hi}]"


def parse_dim(value: object) -> "int | Expr | None":
    """A spec dimension: an int, an expression string, or None (unchecked)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"bad dimension {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return int(text)
        return Expr(text)
    raise ValueError(f"bad dimension {value!r}")


def check_shapes(shapes: Sequence[Sequence[int]], specs: Sequence[Sequence["int | Expr | None"]],
                 labels: Sequence[str], symbols: Mapping[str, Symbol],
                 relations: Sequence[Relation] = ()) -> dict[str, int]:
    """Checks input ``shapes`` against spec dimensions; returns the symbols'
    values. ``labels[i]`` names input i in messages. Raises :class:`ShapeError`."""
    for shape, spec, label in zip(shapes, specs, labels):
        if len(shape) != len(spec):
            raise ShapeError(f"{label} has shape {list(shape)} ({len(shape)} dimensions), the "
                             f"model expects {spec_text(spec)} ({len(spec)} dimensions)")
    values: dict[str, int] = {}
    origin: dict[str, str] = {}

    def bind(sym: str, value: int, where: str) -> None:
        info = symbols.get(sym)
        if info is not None and (value < info.min or (info.max is not None and value > info.max)):
            raise ShapeError(f"{where} has size {value}; the model accepts {info.describe()}")
        values[sym] = value
        origin[sym] = where

    def where(i: int, d: int) -> str:
        return f"{labels[i]} dimension {d}"

    # Static sizes and plain symbols first: they fix the symbols' values.
    for i, (shape, spec) in enumerate(zip(shapes, specs)):
        for d, (size, want) in enumerate(zip(shape, spec)):
            if isinstance(want, int):
                if size != want:
                    raise ShapeError(f"{labels[i]} has shape {list(shape)}, the model expects "
                                     f"{spec_text(spec)} (dimension {d} must be {want})")
            elif isinstance(want, Expr) and want.is_symbol:
                sym = want.text
                if sym in values and values[sym] != size:
                    raise ShapeError(
                        f"{where(i, d)} has size {size}, but {origin[sym]} has size "
                        f"{values[sym]}; both are {_symbol_label(sym, symbols)} and must agree")
                if sym not in values:
                    bind(sym, size, where(i, d))

    # Symbols that appear only inside expressions (a derived dimension given
    # without its root): solve the linear ones from the sizes given.
    pending = [(i, d, shapes[i][d], want) for i, spec in enumerate(specs)
               for d, want in enumerate(spec) if isinstance(want, Expr) and not want.is_symbol]
    progress = True
    while progress:
        progress = False
        for i, d, size, want in pending:
            unbound = [s for s in want.symbols if s not in values]
            if len(unbound) == 1:
                solved = want.solve(unbound[0], size, values)
                if solved is not None:
                    bind(unbound[0], solved, f"{where(i, d)} (as {want} = {size})")
                    progress = True

    for i, d, size, want in pending:
        unbound = sorted(s for s in want.symbols if s not in values)
        if unbound:
            raise ShapeError(f"{where(i, d)} has size {size}, which is no value of {want} "
                             f"for {', '.join(_symbol_label(s, symbols) for s in unbound)} in "
                             f"range")
        expected = want.evaluate(values)
        if size != expected:
            raise ShapeError(f"{where(i, d)} has size {size}; the model expects {want} = "
                             f"{expected} ({_bindings(want, values, origin, symbols)})")

    for rel in relations:
        if not rel.expr.symbols <= values.keys():
            continue  # about symbols no input carries: the model checks those itself
        v = rel.expr.evaluate(values)
        if v < rel.min or (rel.max is not None and v > rel.max):
            raise ShapeError(f"{rel.expr} = {v} ({_bindings(rel.expr, values, origin, symbols)}); "
                             f"the model requires it in {range_text(rel.min, rel.max)}")
    return values


def _symbol_label(sym: str, symbols: Mapping[str, Symbol]) -> str:
    info = symbols.get(sym)
    return info.describe() if info is not None else sym


def _bindings(expr: Expr, values: Mapping[str, int], origin: Mapping[str, str],
              symbols: Mapping[str, Symbol]) -> str:
    return ", ".join(f"{_symbol_label(s, symbols)} = {values[s]} from {origin[s]}"
                     for s in sorted(expr.symbols))


def spec_text(spec: Sequence["int | Expr | None"]) -> str:
    """``[s17, 8]``: how messages and ``info`` show a spec shape (``?``: unchecked)."""
    return "[" + ", ".join("?" if d is None else str(d) for d in spec) + "]"

"""Compile torch modules into models aotishim can load (needs torch).

:func:`compile` exports a module with ``torch.export`` and compiles it with
AOTInductor into ``<out_dir>/<name>.so`` (the code, linked against no
libtorch), ``<name>.weights.blob`` (the weights, found by
:func:`aotishim.load` beside the ``.so``) and ``<name>.spec.json`` (input
and output names, dtypes and shapes, used to check inputs before a run; see
:mod:`aotishim.spec`). Shapes are those of ``example_args`` unless
``dynamic_shapes`` makes dimensions symbolic, as for ``torch.export.export``.
:func:`compile_exported` compiles a program exported (or saved and loaded)
already; ``python -m aotishim compile`` runs it on a ``torch.export.save`` file.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import inspect
import json
import os
import re
import tempfile
import warnings
import zipfile
from pathlib import Path
from typing import Any, Sequence

import torch

from ._shapes import Expr
from ._torch_fixes import applied as _torch_fixes_applied
from ._torch_fixes import torch_fixes
from .model import extract_package
from .spec import SPEC_FORMAT

__all__ = ["INDUCTOR_CONFIGS", "compile", "compile_cached", "compile_exported",
           "inductor_configs"]

# What makes a model loadable without libtorch, with its weights outside the code.
INDUCTOR_CONFIGS: dict[str, Any] = {
    "aot_inductor.link_libtorch": False,
    "aot_inductor.package_constants_in_so": False,
    "aot_inductor.package_constants_on_disk_format": "binary_blob",
}

def inductor_configs(device: str = "cpu") -> dict[str, Any]:
    """:data:`INDUCTOR_CONFIGS` for ``device``. GPU kernels are separate files
    in the ``.pt2``, which is not kept, and the code would load them from
    Inductor's cache by absolute path: embed them in the ``.so`` instead, so the
    model file stands alone (where this torch can)."""
    configs = dict(INDUCTOR_CONFIGS)
    if device.split(":")[0] == "cuda" and hasattr(torch._inductor.config.aot_inductor,
                                                  "embed_kernel_binary"):
        configs["aot_inductor.embed_kernel_binary"] = True
    return configs


@contextlib.contextmanager
def _quiet_torch():
    """Hide torch's internal deprecation notices, which users cannot act on."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)`",
                                category=FutureWarning)
        warnings.filterwarnings("ignore", message=r"`torch.jit.script_method` is deprecated",
                                category=DeprecationWarning)
        yield


_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _indexed_device(device: str) -> str:
    """``device`` with an explicit index ("cuda" -> "cuda:0"). Tracing
    records the devices of the tensors it meets, which report an index
    ("cuda:0"); a program moved or compiled for a bare "cuda" then holds both
    spellings, and torch's metadata checks refuse the mix ("Tensor device
    mismatch! Expected: cuda, Got: cuda:0")."""
    return device if device in ("cpu", "mps") or ":" in device else f"{device}:0"


def _check_distinct_inputs(example_args: Sequence[Any]) -> None:
    """Refuses example inputs that share memory. ``torch.export`` records
    such aliasing as a fact of the program: given one tensor for ``x`` and
    ``y`` it exports a program that reads only one of them, so the compiled
    model silently ignores an input."""
    seen: dict[int, int] = {}
    leaves = torch.utils._pytree.tree_leaves(tuple(example_args))
    for i, leaf in enumerate(leaves):
        if not isinstance(leaf, torch.Tensor) or leaf.numel() == 0:
            continue
        try:
            base = leaf.untyped_storage().data_ptr()
        except (RuntimeError, NotImplementedError):  # fake or meta tensors: no memory
            continue
        if base in seen:
            raise ValueError(
                f"example inputs {seen[base]} and {i} share memory; torch.export would "
                f"compile a program that reads only one of them. Pass distinct tensors "
                f"(e.g. x.clone())")
        seen[base] = i


def _move(value: Any, device: str) -> Any:
    return torch.utils._pytree.tree_map(
        lambda v: v.to(device) if isinstance(v, torch.Tensor) else v, value)


def _dim_text(expr: Any) -> str | None:
    """A symbolic size as the spec writes it, or None when aotishim's reader
    (:class:`aotishim._shapes.Expr`) could not read it back."""
    text = str(expr)
    try:
        Expr(text)
    except ValueError:
        return None
    return text


def _dims(shape: Sequence[Any]) -> list[int | str | None]:
    """A tensor's sizes for the spec: ints, expressions over the inputs'
    symbols, or None for sizes that depend on the data (unbacked symbols)."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    out: list[int | str | None] = []
    for d in shape:
        if isinstance(d, int):
            out.append(d)
        elif free_unbacked_symbols(d):
            out.append(None)
        else:
            expr = d.node.expr
            out.append(int(expr) if expr.is_number else _dim_text(expr))
    return out


def _bound(value: Any) -> int | None:
    """A range bound as an int, or None when unbounded: torch's integer
    infinities (a Dim without max, Dim.AUTO, Dim.DYNAMIC) and sympy's, which
    int() does not convert (it raises AttributeError for torch's int_oo)."""
    import sympy
    from torch.utils._sympy.numbers import IntInfinity, NegativeIntInfinity

    if value is None or isinstance(value, (IntInfinity, NegativeIntInfinity)):
        return None
    if isinstance(value, sympy.Basic) and (value.has(sympy.oo, -sympy.oo, sympy.zoo)
                                           or not value.is_number):
        return None
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None


def _symbol_names(ep: "torch.export.ExportedProgram", nodes: Sequence[Any]) -> dict[str, str]:
    """The names users gave their dimensions (``Dim("batch")``) where the
    program still knows them; a program read back by torch.export.load does not."""
    names: dict[str, str] = {}
    for node in nodes:
        for d in node.meta["val"].shape:
            if not isinstance(d, torch.SymInt) or not d.node.expr.is_symbol:
                continue
            env = d.node.shape_env
            debug = getattr(env, "source_name_to_debug_name", {})
            for source in getattr(env, "var_to_sources", {}).get(d.node.expr, []):
                key = source.name() if callable(source.name) else source.name
                name = debug.get(key)
                if name and name.isidentifier():
                    names[str(d.node.expr)] = name
    return names


def _mutated_inputs(ep: "torch.export.ExportedProgram") -> set[str]:
    """The user inputs the program writes in place: the compiled model writes
    the caller's memory of those, which Model.run must hand it writable (or
    refuse). A program in torch.export's default (training) IR keeps in-place
    ops as they are and its signature lists no mutation; functionalizing it,
    as the compile does, turns each into a recorded input mutation."""
    names = set(ep.graph_signature.user_inputs_to_mutate.values())
    if names:
        return names
    mutating = any(getattr(getattr(n.target, "_schema", None), "is_mutable", False)
                   for n in ep.graph.nodes if n.op == "call_function")
    if not mutating:
        return names
    with _quiet_torch():
        functional = ep.run_decompositions({})
    return set(functional.graph_signature.user_inputs_to_mutate.values())


def _spec(ep: "torch.export.ExportedProgram") -> dict:
    """Input and output names/dtypes/shapes of an exported program, with its
    symbolic dimensions and their ranges (see :mod:`aotishim.spec`)."""
    from torch.export.graph_signature import InputKind, OutputKind
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    user_nodes = [placeholders[s.arg.name] for s in ep.graph_signature.input_specs
                  if s.kind == InputKind.USER_INPUT]
    # AOTInductor models take tensors only; other inputs were baked in at export.
    user_nodes = [n for n in user_nodes if isinstance(n.meta.get("val"), torch.Tensor)]
    mutated = _mutated_inputs(ep)
    inputs = [{"name": n.name, "dtype": _dtype_name(n.meta["val"].dtype),
               "shape": _dims(n.meta["val"].shape), "mutated": n.name in mutated}
              for n in user_nodes]

    examples: dict[str, int] = {}
    for n in user_nodes:
        for d in n.meta["val"].shape:
            if isinstance(d, torch.SymInt) and d.node.expr.is_symbol and d.node.hint is not None:
                examples[str(d.node.expr)] = int(d.node.hint)
    names = _symbol_names(ep, user_nodes)
    symbols: dict[str, dict] = {}
    relations: list[dict] = []
    for expr, vr in ep.range_constraints.items():
        if free_unbacked_symbols(expr):
            continue  # output sizes found at run time: nothing to check on inputs
        lo, hi = _bound(vr.lower), _bound(vr.upper)
        if expr.is_symbol:
            entry: dict[str, Any] = {"min": 0 if lo is None else lo, "max": hi}
            if str(expr) in names:
                entry["name"] = names[str(expr)]
            if str(expr) in examples:
                entry["example"] = examples[str(expr)]
            symbols[str(expr)] = entry
        elif (text := _dim_text(expr)) is not None:
            relations.append({"expr": text, "min": 0 if lo is None else lo, "max": hi})

    spec: dict[str, Any] = {"format": SPEC_FORMAT, "torch_version": torch.__version__,
                            "symbols": symbols, "relations": relations, "inputs": inputs}
    try:
        output_node = next(n for n in ep.graph.nodes if n.op == "output")
        values = list(output_node.args[0])
        outputs = []
        for s, node in zip(ep.graph_signature.output_specs, values):
            if s.kind != OutputKind.USER_OUTPUT:
                continue
            val = getattr(node, "meta", {}).get("val") if node is not None else None
            if not isinstance(val, torch.Tensor):
                raise ValueError("non-tensor output")
            outputs.append({"name": f"output{len(outputs)}", "dtype": _dtype_name(val.dtype),
                            "shape": _dims(val.shape)})
        spec["outputs"] = outputs
    except (StopIteration, ValueError, TypeError, AttributeError):
        pass  # outputs are descriptive only; inputs are what runs are checked against
    return spec


def _layout_entry(buffer: Any) -> dict:
    layout = buffer.get_layout()

    def dim(d: Any) -> int | str:
        try:
            return int(d)
        except TypeError:
            return str(d)

    return {"dtype": _dtype_name(layout.dtype), "sizes": [dim(d) for d in layout.size],
            "strides": [dim(d) for d in layout.stride]}


def _output_names(node: Any) -> list[str] | None:
    """The buffer names of a serialized extern node's tensor outputs, in the
    order the runtime counts them; None for an output kind it cannot name."""
    names: list[str] = []
    for out in node.outputs:
        if out.type == "as_tensor":
            names.append(out.value.name)
        elif out.type == "as_tensors":
            names.extend(t.name for t in out.value)
        elif out.type == "as_optional_tensor":
            if out.value.type == "as_tensor":
                names.append(out.value.value.name)
        elif out.type != "as_none":
            return None
    return names


@contextlib.contextmanager
def _extern_output_layouts():
    """Records, in each extern-kernel node the package carries (the ops the
    model calls through the proxy executor, such as custom ops), the dtype,
    sizes and strides of the outputs the compiled code reads, as node
    metadata "aotishim.outputs". torch's own file names the outputs only;
    the runtime checks an implementation's results against these and places
    them in these strides. Nodes whose layouts cannot be read are left as
    torch wrote them (the runtime then checks less)."""
    import torch._inductor.extern_node_serializer as serializer
    from torch._inductor.virtualized import V

    original = serializer.extern_node_json_serializer

    def recording(nodes: list) -> str:
        for extern in nodes:
            try:
                names = _output_names(extern.node)
                if names is None:
                    continue
                layouts = [_layout_entry(V.graph.get_buffer(n)) for n in names]
            except Exception:  # noqa: BLE001 (an Inductor internal changed: record nothing)
                continue
            extern.node.metadata["aotishim.outputs"] = json.dumps(layouts)
        return original(nodes)

    serializer.extern_node_json_serializer = recording
    try:
        yield
    finally:
        serializer.extern_node_json_serializer = original


def compile(module: torch.nn.Module, example_args: Sequence[Any], out_dir: str | Path, *,
            name: str | None = None, device: str = "cpu", dynamic_shapes: Any = None) -> Path:
    """Export ``module`` on ``example_args`` and compile it for ``device``.

    Returns the path of ``<out_dir>/<name>.so``; the weights blob
    (``<name>.weights.blob``) and spec (``<name>.spec.json``) lie beside it.
    ``name`` defaults to the module's class name. ``device`` is a torch device
    ("cpu", "cuda:0"); copies of the module and example tensors are moved
    there (the caller's module stays where it is). ``dynamic_shapes`` is what
    ``torch.export.export`` takes (e.g. ``{"x": {0: Dim("batch", min=1,
    max=64)}}``); without it every shape is static.
    Files appear atomically: a failed compile leaves an existing model intact.
    """
    name = name or type(module).__name__
    _check_name_and_device(name, device)
    _check_distinct_inputs(example_args)
    target = _indexed_device(device)
    args = tuple(_move(tuple(example_args), target))
    if device != "cpu":
        # nn.Module.to moves parameters in place: move a copy, not the caller's module.
        module = copy.deepcopy(module).to(target)
    with _quiet_torch(), torch_fixes():
        ep = torch.export.export(module, args, dynamic_shapes=dynamic_shapes)
    return compile_exported(ep, out_dir, name=name, device=device)


def _check_name_and_device(name: str, device: str) -> None:
    if not _NAME.match(name):
        raise ValueError(f"invalid model name {name!r}: use letters, digits, '_', '.', '-'")
    if device.split(":")[0] not in ("cpu", "cuda", "mps"):
        raise ValueError(f"export.compile compiles for torch devices 'cpu', 'cuda[:N]' or "
                         f"'mps', not {device!r}")


def _program_device(ep: "torch.export.ExportedProgram") -> torch.device | None:
    """Where the program's parameters and buffers live (None: it has none)."""
    for t in (*ep.state_dict.values(), *ep.constants.values()):
        if isinstance(t, torch.Tensor):
            return t.device
    return None


def compile_exported(ep: "torch.export.ExportedProgram", out_dir: str | Path, *, name: str,
                     device: str = "cpu") -> Path:
    """:func:`compile` for a program already exported with ``torch.export``
    (or read back with ``torch.export.load``), with the dynamic shapes it was
    exported with: the same files, the same atomicity. A program whose
    weights are on another device is moved to ``device`` first."""
    _check_name_and_device(name, device)
    target = _indexed_device(device)
    held = _program_device(ep)
    if held is not None and held != torch.device(target):
        from torch.export.passes import move_to_device_pass

        ep = move_to_device_pass(ep, target)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec = _spec(ep)
    configs = inductor_configs(device)
    if spec["symbols"]:
        # Inductor assumes symbolic sizes are >= 2 (torch.export specialises 0
        # and 1) and its generated input check would refuse 1 even where the
        # declared range allows it and the code computes it correctly. The
        # spec's check enforces the declared lower bounds instead; the
        # generated check keeps the rest (dtypes, static sizes, upper bounds,
        # strides, device).
        configs["aot_inductor.check_lowerbound"] = False

    with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=out) as tmp:
        package = Path(tmp) / f"{name}.pt2"
        with _quiet_torch(), torch_fixes(), _extern_output_layouts():
            torch._inductor.aoti_compile_and_package(
                ep, package_path=str(package), inductor_configs=configs)
        staged = Path(tmp) / "staged"
        staged.mkdir()
        with zipfile.ZipFile(package) as archive:
            _, blob_member = extract_package(archive, staged / f"{name}.so",
                                             staged / f"{name}.weights.blob")
        (staged / f"{name}.spec.json").write_text(json.dumps(spec, indent=1) + "\n")

        # Stale files from an earlier model of this name.
        for suffix in (".weights.blob", ".json"):
            if not (staged / f"{name}{suffix}").exists() and (out / f"{name}{suffix}").exists():
                (out / f"{name}{suffix}").unlink()
        # The .so goes last: its presence means the set is complete.
        for suffix in (".weights.blob", ".spec.json", ".json", ".so"):
            staged_file = staged / f"{name}{suffix}"
            if staged_file.exists():
                os.replace(staged_file, out / f"{name}{suffix}")
    return out / f"{name}.so"


def _lacks_extern_nodes(so: Path) -> bool:
    """Whether a cached model calls ops through the proxy executor but was
    compiled before its nodes file was kept beside it (it cannot load)."""
    from . import _core

    if so.with_suffix(".json").exists():
        return False
    try:
        needed = _core.inspect_library(str(so))["needed_shims"]
    except Exception:  # noqa: BLE001 (unreadable: let the load say why)
        return False
    return "aoti_torch_proxy_executor_call_function" in needed


def _dynamic_shapes_key(value: Any) -> str:
    """A stable text for a ``dynamic_shapes`` argument: a derived dimension's
    repr ("2*batch") omits its root's range, so the root is spelled out."""
    from torch.export.dynamic_shapes import _DerivedDim

    if isinstance(value, _DerivedDim):
        return f"{value.__name__}<{_dynamic_shapes_key(value.root)}>"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k!r}:{_dynamic_shapes_key(v)}"
                              for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))) + "}"
    if isinstance(value, (list, tuple)):
        inner = ",".join(_dynamic_shapes_key(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    return repr(value)


def _fingerprint(module: torch.nn.Module, args: tuple, name: str, device: str,
                 dynamic_shapes: Any = None) -> str:
    h = hashlib.sha256()
    h.update(f"{torch.__version__}|{device}|{name}|{sorted(inductor_configs(device).items())}".encode())
    if dynamic_shapes is not None:  # static models keep the keys they always had
        h.update(f"|dynamic {_dynamic_shapes_key(dynamic_shapes)}".encode())
    fixes = _torch_fixes_applied()
    if fixes:  # a program compiled without them differs
        h.update(f"|fixes {fixes}".encode())
    for leaf in torch.utils._pytree.tree_leaves(args):
        if isinstance(leaf, torch.Tensor):
            h.update(f"{leaf.dtype}{tuple(leaf.shape)}".encode())
        else:
            h.update(repr(leaf).encode())
    _hash_module(h, module)
    return h.hexdigest()[:16]


def _hash_tensor(h: "hashlib._Hash", key: str, value: torch.Tensor) -> None:
    h.update(f"{key}|{value.dtype}{tuple(value.shape)}".encode())
    # reshape: a 0-d tensor (BatchNorm's num_batches_tracked) has no byte view
    h.update(value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
             if value.numel() else b"")


def _plain(value: Any, depth: int = 0) -> str | None:
    """A configuration value's text, or None for what is not configuration
    (submodules, functions, hooks: covered elsewhere or not part of the math)."""
    if value is None or isinstance(value, (bool, int, float, str, torch.dtype, torch.device,
                                           torch.memory_format)):
        return repr(value)
    if isinstance(value, (tuple, list)) and depth < 4 and len(value) <= 64:
        items = [_plain(v, depth + 1) for v in value]
        return None if None in items else f"{type(value).__name__}({','.join(items)})"
    return None


def _hash_module(h: "hashlib._Hash", module: torch.nn.Module) -> None:
    """Everything of the module that decides what it computes, for every
    submodule: its class and that class's source, train or eval mode, its
    plain attributes (Inception's transform_input, a norm's eps, a conv's
    padding), its weights and every buffer, persistent or not (a rotary
    embedding's inv_freq is not), and tensors kept as plain attributes."""
    sources: dict[type, str] = {}
    for name, sub in module.named_modules(remove_duplicate=False):
        cls = type(sub)
        if cls not in sources:
            try:
                sources[cls] = inspect.getsource(cls)
            except (OSError, TypeError):
                sources[cls] = f"{cls.__module__}.{cls.__qualname__}"
        h.update(f"|module {name} {cls.__module__}.{cls.__qualname__} {sub.training}".encode())
        h.update(sources[cls].encode())
        for attr, value in sorted(vars(sub).items()):
            if attr.startswith("_"):
                continue
            if isinstance(value, torch.Tensor):
                _hash_tensor(h, f"{name}.{attr}", value)
            else:
                text = _plain(value)
                if text is not None:
                    h.update(f"|{name}.{attr}={text}".encode())
    state = module.state_dict(keep_vars=True)
    for key, value in state.items():
        _hash_tensor(h, key, value)
    for key, value in module.named_buffers(remove_duplicate=False):
        if key not in state:  # non-persistent
            _hash_tensor(h, f"buffer {key}", value)


def compile_cached(module: torch.nn.Module, example_args: Sequence[Any],
                   cache_dir: str | Path, *, name: str | None = None,
                   device: str = "cpu", dynamic_shapes: Any = None) -> Path:
    """:func:`compile` into ``cache_dir`` unless an identical model is there.

    The cache key covers the torch version, device, every submodule's class
    and class source, train/eval mode and plain attributes, the weights and
    every buffer (persistent or not), the example inputs' dtypes and shapes
    and the dynamic shapes (their names, ranges and derivations); the model
    is stored as ``<name>-<key>.so``. Inductor's own cache goes to
    ``cache_dir/inductor`` unless TORCHINDUCTOR_CACHE_DIR is set.
    """
    name = name or type(module).__name__
    args = tuple(example_args)
    _check_distinct_inputs(args)  # before the cache: no aliased model is ever reused
    key = _fingerprint(module, args, name, device, dynamic_shapes)
    cache = Path(cache_dir)
    so = cache / f"{name}-{key}.so"
    if so.exists() and not _lacks_extern_nodes(so):
        return so
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache / "inductor"))
    return compile(module, args, cache, name=f"{name}-{key}", device=device,
                   dynamic_shapes=dynamic_shapes)

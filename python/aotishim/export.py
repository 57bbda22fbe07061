"""Compile torch modules into models aotishim can load (needs torch).

:func:`compile` exports a module with ``torch.export`` and compiles it with
AOTInductor into ``<out_dir>/<name>.so`` (the code, linked against no
libtorch), ``<name>.weights.blob`` (the weights, found by
:func:`aotishim.load` beside the ``.so``) and ``<name>.spec.json`` (input
and output names, dtypes and shapes, used to check inputs before a run).
Shapes are static: the model takes inputs shaped like ``example_args``.
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

from .model import SPEC_FORMAT, extract_package

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


def _move(value: Any, device: str) -> Any:
    return torch.utils._pytree.tree_map(
        lambda v: v.to(device) if isinstance(v, torch.Tensor) else v, value)


def _spec(ep: "torch.export.ExportedProgram", args: tuple) -> dict:
    """Input and output names/dtypes/shapes of an exported program."""
    from torch.export.graph_signature import InputKind, OutputKind

    leaves = [a for a in torch.utils._pytree.tree_leaves(args) if isinstance(a, torch.Tensor)]
    user_inputs = [s.arg.name for s in ep.graph_signature.input_specs
                   if s.kind == InputKind.USER_INPUT]
    names = user_inputs if len(user_inputs) == len(leaves) else [f"input{i}" for i in range(len(leaves))]
    inputs = [{"name": n, "dtype": _dtype_name(t.dtype), "shape": list(t.shape)}
              for n, t in zip(names, leaves)]
    spec: dict[str, Any] = {"format": SPEC_FORMAT, "torch_version": torch.__version__,
                            "inputs": inputs}
    try:
        output_node = next(n for n in ep.graph.nodes if n.op == "output")
        values = list(output_node.args[0])
        outputs = []
        for i, (s, node) in enumerate(zip(ep.graph_signature.output_specs, values)):
            if s.kind != OutputKind.USER_OUTPUT:
                continue
            val = getattr(node, "meta", {}).get("val") if node is not None else None
            if not isinstance(val, torch.Tensor):
                raise ValueError("non-tensor output")
            if not all(isinstance(d, int) for d in val.shape):
                # A data-dependent size (nonzero's row count) has no value to
                # record, and reading one would raise a guard error.
                raise ValueError("symbolic output shape")
            outputs.append({"name": f"output{len(outputs)}", "dtype": _dtype_name(val.dtype),
                            "shape": [int(d) for d in val.shape]})
        spec["outputs"] = outputs
    except (StopIteration, ValueError, TypeError, AttributeError):
        pass  # outputs are descriptive only; inputs are what runs are checked against
    return spec


def compile(module: torch.nn.Module, example_args: Sequence[Any], out_dir: str | Path, *,
            name: str | None = None, device: str = "cpu") -> Path:
    """Export ``module`` on ``example_args`` and compile it for ``device``.

    Returns the path of ``<out_dir>/<name>.so``; the weights blob
    (``<name>.weights.blob``) and spec (``<name>.spec.json``) lie beside it.
    ``name`` defaults to the module's class name. ``device`` is a torch device
    ("cpu", "cuda:0"); copies of the module and example tensors are moved
    there (the caller's module stays where it is).
    Files appear atomically: a failed compile leaves an existing model intact.
    """
    name = name or type(module).__name__
    _check_name_and_device(name, device)
    args = tuple(_move(tuple(example_args), device))
    if device != "cpu":
        # nn.Module.to moves parameters in place: move a copy, not the caller's module.
        module = copy.deepcopy(module).to(device)
    with _quiet_torch():
        ep = torch.export.export(module, args)
    return compile_exported(ep, args, out_dir, name=name, device=device)


def _check_name_and_device(name: str, device: str) -> None:
    if not _NAME.match(name):
        raise ValueError(f"invalid model name {name!r}: use letters, digits, '_', '.', '-'")
    if device.split(":")[0] not in ("cpu", "cuda", "mps"):
        raise ValueError(f"export.compile compiles for torch devices 'cpu', 'cuda[:N]' or "
                         f"'mps', not {device!r}")


def compile_exported(ep: "torch.export.ExportedProgram", example_args: Sequence[Any],
                     out_dir: str | Path, *, name: str, device: str = "cpu") -> Path:
    """:func:`compile` for a program already exported with ``torch.export``
    on ``example_args`` (tensors on ``device``): the same files, the same
    atomicity."""
    _check_name_and_device(name, device)
    args = tuple(example_args)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec = _spec(ep, args)

    with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=out) as tmp:
        package = Path(tmp) / f"{name}.pt2"
        with _quiet_torch():
            torch._inductor.aoti_compile_and_package(
                ep, package_path=str(package), inductor_configs=inductor_configs(device))
        staged = Path(tmp) / "staged"
        staged.mkdir()
        with zipfile.ZipFile(package) as archive:
            _, blob_member = extract_package(archive, staged / f"{name}.so",
                                             staged / f"{name}.weights.blob")
        (staged / f"{name}.spec.json").write_text(json.dumps(spec, indent=1) + "\n")

        blob = out / f"{name}.weights.blob"
        if blob_member is None and blob.exists():
            blob.unlink()  # a stale blob from an earlier model of this name
        # The .so goes last: its presence means the set is complete.
        for suffix in (".weights.blob", ".spec.json", ".so"):
            staged_file = staged / f"{name}{suffix}"
            if staged_file.exists():
                os.replace(staged_file, out / f"{name}{suffix}")
    return out / f"{name}.so"


def _fingerprint(module: torch.nn.Module, args: tuple, name: str, device: str) -> str:
    h = hashlib.sha256()
    h.update(f"{torch.__version__}|{device}|{name}|{sorted(inductor_configs(device).items())}".encode())
    try:
        h.update(inspect.getsource(type(module)).encode())
    except (OSError, TypeError):
        h.update(type(module).__qualname__.encode())
    for leaf in torch.utils._pytree.tree_leaves(args):
        if isinstance(leaf, torch.Tensor):
            h.update(f"{leaf.dtype}{tuple(leaf.shape)}".encode())
        else:
            h.update(repr(leaf).encode())
    for key, value in module.state_dict().items():
        h.update(key.encode())
        h.update(f"{value.dtype}{tuple(value.shape)}".encode())
        h.update(value.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes()
                 if value.numel() else b"")
    return h.hexdigest()[:16]


def compile_cached(module: torch.nn.Module, example_args: Sequence[Any],
                   cache_dir: str | Path, *, name: str | None = None,
                   device: str = "cpu") -> Path:
    """:func:`compile` into ``cache_dir`` unless an identical model is there.

    The cache key covers the torch version, device, the module's class
    source, its weights and the example inputs' dtypes and shapes; the model
    is stored as ``<name>-<key>.so``. Inductor's own cache goes to
    ``cache_dir/inductor`` unless TORCHINDUCTOR_CACHE_DIR is set.
    """
    name = name or type(module).__name__
    args = tuple(example_args)
    key = _fingerprint(module, args, name, device)
    cache = Path(cache_dir)
    so = cache / f"{name}-{key}.so"
    if so.exists():
        return so
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache / "inductor"))
    return compile(module, args, cache, name=f"{name}-{key}", device=device)

"""``python -m aotishim``: demo, compile, run and info.

    python -m aotishim demo                    # export small models, run them, compare with eager
    python -m aotishim compile PROGRAM.pt2 [--device D] [--out DIR] [--name N]
    python -m aotishim run MODEL [--input x.npy ...] [--device D] [--repeat N]
    python -m aotishim info MODEL              # inputs, outputs, constants, shims needed/missing
    python -m aotishim serve MODEL_DIR [--port P] [--replicas R] [--max-models M] [--device D]

Errors are one line on stderr. Exit status: 0 done; 1 the model (or a
compile) failed, or info found it cannot run; 2 a bad argument or file (a
missing or unreadable file, not a model, a bad spec, a bad input file, an
option value out of range, inputs the model does not take).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Sequence

import numpy as np

import aotishim
from aotishim import _core
from aotishim._shapes import range_text, spec_text
from aotishim.model import (PACKAGE_MODEL_DIR, Model, ModelError, ModelInputError,
                            extract_package, spec_path)
from aotishim.spec import ModelSpec, read_spec


class UsageError(Exception):
    """A bad argument or file: reported on one line, exit status 2."""


def _one_line(message: object) -> str:
    return "; ".join(line.strip() for line in str(message).splitlines() if line.strip())


def _load(path: str, **kwargs) -> Model:
    """aotishim.load, its refusals (no such file, not a model, a bad spec or
    device, missing shims or weights) reported as bad arguments."""
    try:
        return aotishim.load(path, **kwargs)
    except ModelError as e:
        raise UsageError(str(e)) from None


def _read_input(path: str) -> np.ndarray:
    """One --input file: a .npy array (never a pickle)."""
    try:
        with open(path, "rb") as f:
            head = f.read(6)
        if head != b"\x93NUMPY" and not head.startswith(b"PK"):
            raise UsageError(f"input file '{path}' is not a .npy file (made by numpy.save)")
        value = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise UsageError(f"no such input file: '{path}'") from None
    except IsADirectoryError:
        raise UsageError(f"input file '{path}' is a directory") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise UsageError(f"input file '{path}' is not a readable .npy array: {e}") from None
    if not isinstance(value, np.ndarray):
        value.close()
        raise UsageError(f"input file '{path}' is a .npz archive; pass one .npy file per input")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, not {text}")
    return value


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (status 2, as argparse's own)."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {_one_line(message)} (see --help)\n")


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def _default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aotishim" / "demo"


def _best_device() -> str:
    """A GPU when both aotishim and torch can use it, else the cpu."""
    available = aotishim.devices()
    if "cuda:0" in available:
        import torch

        if torch.cuda.is_available():
            return "cuda:0"
    return "cpu"


# ---- demo ----
def cmd_demo(args: argparse.Namespace) -> int:
    from aotishim import zoo  # torch is needed from here on

    names = args.models.split(",") if args.models else list(zoo.MODELS)
    unknown = [n for n in names if n not in zoo.MODELS]
    if unknown:
        raise UsageError(f"unknown model(s) {unknown}; choose from {', '.join(zoo.MODELS)}")
    import torch

    from aotishim import export

    device = args.device or _best_device()
    cache = Path(args.cache_dir) if args.cache_dir else _default_cache()
    print(f"aotishim demo: {len(names)} model(s) on {device}, {args.loads} load(s) each "
          f"(compiled models cached in {cache})")
    prepared = []
    for name in names:
        module, inputs = zoo.build(name)
        started = time.perf_counter()
        so = export.compile_cached(module, inputs, cache, name=name, device=device)
        with torch.no_grad():
            expected = module.to(device)(*(x.to(device) for x in inputs))
        if isinstance(expected, torch.Tensor):
            expected = (expected,)
        print(f"  {name}: {so.name} ready in {time.perf_counter() - started:.1f} s")
        prepared.append((name, so, [x.numpy() for x in inputs],
                         [e.detach().cpu().numpy() for e in expected]))

    results = {name: {"loads": 0, "error": 0.0, "seconds": 0.0, "failure": ""}
               for name in names}
    # Models are switched on every round: load, run, close one, then the next.
    for _ in range(args.loads):
        for name, so, inputs, expected in prepared:
            r = results[name]
            if r["failure"]:
                continue
            started = time.perf_counter()
            try:
                with aotishim.load(so, device=device) as model:
                    outputs = model(*inputs)
                leaks = model.leaks
                if leaks:
                    raise ModelError(f"{len(leaks)} leaked tensor(s)")
                err = max(float(np.max(np.abs(o.astype(np.float64) - e.astype(np.float64))))
                          for o, e in zip(outputs, expected))
                r["error"] = max(r["error"], err)
                r["loads"] += 1
                if not np.isfinite(err) or err > args.tolerance:
                    r["failure"] = f"max error {err:.3g} > {args.tolerance:g}"
            except aotishim.ShimError as e:
                r["failure"] = str(e).splitlines()[0]
            r["seconds"] += time.perf_counter() - started

    rows = []
    for name in names:
        r = results[name]
        status = "ok" if not r["failure"] else f"FAILED: {r['failure']}"
        per_load = r["seconds"] / max(r["loads"], 1) * 1e3
        rows.append([name, device, str(r["loads"]), f"{r['error']:.2e}",
                     f"{per_load:.1f} ms/load", status])
    print()
    print(_table(["model", "device", "loads", "max error", "time", "status"], rows))
    failed = [n for n in names if results[n]["failure"]]
    stats = aotishim.memory_stats()
    print(f"\nlive tensors after all closes: {stats['live_tensors']}")
    return 1 if failed or stats["live_tensors"] else 0


# ---- compile ----
def cmd_compile(args: argparse.Namespace) -> int:
    program = Path(args.program)
    if not program.is_file():
        raise UsageError(f"no such program file: {program}")
    name = args.name or program.stem
    out = Path(args.out) if args.out else program.parent
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out '{out}' is a file, not a folder")
    # Refuse what is plainly no saved program before torch logs its own attempts.
    if not zipfile.is_zipfile(program):
        raise UsageError(f"'{program}' is not a program saved with torch.export.save "
                         "(not a .pt2 archive)")
    if _is_aoti_package(program):
        raise UsageError(f"'{program}' is an AOTInductor package, compiled already; run it "
                         "with 'python -m aotishim run', or compile the program saved with "
                         "torch.export.save")
    import torch  # compiling needs torch; running the result does not

    from aotishim import export

    try:
        export._check_name_and_device(name, args.device)  # before the slow load
    except ValueError as e:
        raise UsageError(str(e)) from None
    try:
        ep = torch.export.load(str(program))
    except Exception as e:  # torch raises many types for a file that is not a saved program
        raise UsageError(f"'{program}' is not a program saved with torch.export.save: "
                         f"{type(e).__name__}: {e}") from None
    try:
        so = export.compile_exported(ep, out, name=name, device=args.device)
    except Exception as e:  # torch's compile errors are many types; one line each
        print(f"error: compiling '{program}' failed: {type(e).__name__}: {_one_line(e)}",
              file=sys.stderr)
        return 1
    files = [p.name for p in (so, so.with_suffix(".weights.blob"), spec_path(so)) if p.exists()]
    print(f"compiled {program} for {args.device}: {', '.join(files)} in {so.parent}")
    spec = read_spec(spec_path(so))
    for label, specs in (("inputs", spec.inputs), ("outputs", spec.outputs)):
        print(f"{label}:")
        for t in specs or []:
            print(f"  {t.describe()}")
    _print_dynamic(spec)
    return 0


def _print_dynamic(spec: ModelSpec | None) -> None:
    """The symbolic dimensions of a spec, with their ranges and relations."""
    if spec is None or not (spec.symbols or spec.relations):
        return
    print("dynamic dimensions:")
    for sym in spec.symbols.values():
        print(f"  {sym.describe()}")
    for rel in spec.relations:
        print(f"  {rel.expr} in {range_text(rel.min, rel.max)}")


def _is_aoti_package(path: Path) -> bool:
    with zipfile.ZipFile(path) as archive:
        return any(PACKAGE_MODEL_DIR in n for n in archive.namelist())


# ---- run ----
def _random_inputs(model: Model) -> list[np.ndarray]:
    specs = model.input_specs
    if specs is None:
        raise ModelError(f"{model.name} has no spec file (NAME.spec.json); pass one --input "
                         f"per model input ({len(model.input_names)})")
    rng = np.random.default_rng(0)
    from aotishim._dtypes import numpy_dtype

    out = []
    for s in specs:
        dt = numpy_dtype(s.dtype)
        try:
            shape = model.spec.example_shape(s)  # dynamic dimensions at their example sizes
        except ValueError as e:
            raise ModelError(f"{model.name}: {e}; pass --input") from None
        if np.issubdtype(dt, np.integer) or dt == np.bool_:
            out.append(rng.integers(0, 2, size=shape).astype(dt))
        else:
            out.append(rng.standard_normal(shape).astype(dt))
    return out


def _summary(a: np.ndarray) -> str:
    if a.size == 0:
        return "empty"
    f = a.astype(np.float64)
    return f"min {f.min():.4g}  max {f.max():.4g}  mean {f.mean():.4g}"


def cmd_run(args: argparse.Namespace) -> int:
    out_dir = Path(args.save) if args.save else None
    if out_dir is not None and out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--save '{out_dir}' is a file, not a folder")
    inputs = [_read_input(p) for p in args.input]  # before the model: a bad file costs no load
    with _load(args.model, weights=args.weights, device=args.device,
               cuda_graphs=args.cuda_graphs) as model:
        if not inputs:
            try:
                inputs = _random_inputs(model)
            except ModelError as e:
                raise UsageError(str(e)) from None
        times = []
        outputs: tuple = ()
        for _ in range(args.repeat):
            started = time.perf_counter()
            try:
                outputs = model(*inputs)
            except ModelInputError as e:
                raise UsageError(str(e)) from None
            times.append(time.perf_counter() - started)
        names = model.output_names
        print(f"{model.name} on {model.device}: {len(inputs)} input(s), {len(outputs)} output(s)")
        rows = []
        for i, o in enumerate(outputs):
            label = names[i] if i < len(names) else str(i)
            if o is None:
                rows.append([str(i), label, "-", "-", "undefined"])
            else:
                rows.append([str(i), label, str(o.dtype), str(list(o.shape)), _summary(o)])
        print(_table(["#", "output", "dtype", "shape", "values"], rows))
        ms = np.array(times) * 1e3
        print(f"\n{len(times)} run(s): first {ms[0]:.3f} ms, mean {ms.mean():.3f} ms, "
              f"min {ms.min():.3f} ms")
        if out_dir is not None:
            try:
                out_dir.mkdir(parents=True, exist_ok=True)
                for i, o in enumerate(outputs):
                    if o is not None:
                        np.save(out_dir / f"output{i}.npy", o)
            except OSError as e:
                raise UsageError(f"cannot save the outputs in '{out_dir}': {e}") from None
            print(f"outputs saved in {out_dir}")
        for g in model.graphs:
            state = "recorded" if g["recorded"] else f"not recorded: {g['reason']}"
            print(f"CUDA graph for {g['inputs']}: {state} ({g['replays']} replay(s))")
    return 0


# ---- info ----
def cmd_info(args: argparse.Namespace) -> int:
    path = Path(args.model)
    if not path.is_file():
        raise UsageError(f"no such model file: {path}")
    tmp = None
    try:
        so = path
        if zipfile.is_zipfile(path):
            tmp = tempfile.mkdtemp(prefix="aotishim-info-")
            so = Path(tmp) / "model.so"
            with zipfile.ZipFile(path) as archive:
                extract_package(archive, so)
        try:
            report = _core.inspect_library(str(so))
        except aotishim.ShimError as e:
            raise UsageError(str(e)) from None
        print(f"model:   {path}")
        print(f"library: {'an AOTInductor model' if report['is_model'] else 'NOT an AOTInductor model'}")
        needed, missing = report["needed_shims"], set(report["missing_shims"])
        print(f"shims:   {len(needed)} needed, {len(missing)} missing")
        for name in needed:
            print(f"  {'MISSING ' if name in missing else '        '}{name}")
        if not report["is_model"] or missing:
            return 1
        with _load(str(path), weights=args.weights, device=args.device) as model:
            specs = model.input_specs
            print(f"inputs:  {len(model.input_names)}")
            for i, n in enumerate(model.input_names):
                print(f"  {n}" + (f"  ({specs[i].describe()})" if specs else ""))
            ospecs = model.output_specs
            print(f"outputs: {len(model.output_names)}")
            for i, n in enumerate(model.output_names):
                extra = (f"  ({ospecs[i].dtype}{spec_text(ospecs[i].shape)})"
                         if ospecs and i < len(ospecs) else "")
                print(f"  {n}{extra}")
            _print_dynamic(model.spec)
            print(f"constants: {len(model.constant_names)} "
                  f"({model.constants_blob_size} bytes from {model.weights_path or 'nowhere'})")
            for n in model.constant_names:
                print(f"  {n}")
        return 0
    except (aotishim.ShimError, zipfile.BadZipFile) as e:  # an unreadable package
        raise UsageError(str(e)) from None
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


# ---- serve ----
def cmd_serve(args: argparse.Namespace) -> int:
    try:
        from aotishim.serve.local import serve_locally
    except ImportError as e:
        raise UsageError(f'{e} (the serve command needs "aotishim[serve]")') from None
    try:
        serve_locally(args.model_dir, host=args.host, port=args.port, replicas=args.replicas,
                      max_models=args.max_models, device=args.device,
                      max_batch_size=args.batch_size, batch_wait_s=args.batch_wait_ms / 1e3,
                      duration_s=args.duration)
    except ValueError as e:  # a store that is not there, an option out of range
        raise UsageError(str(e)) from None
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = _Parser(prog="python -m aotishim",
                                     description="Run AOTInductor-compiled models without libtorch.")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="export small models, run them, compare with eager")
    demo.add_argument("--models", help=f"comma-separated subset (default: all)")
    demo.add_argument("--loads", type=_positive_int, default=3,
                      help="load/run/close rounds (default 3)")
    demo.add_argument("--device", help="default: the best available ('cuda:0' or 'cpu')")
    demo.add_argument("--cache-dir", help=f"compiled models (default {_default_cache()})")
    demo.add_argument("--tolerance", type=_tolerance, default=1e-4, help="max abs error allowed")
    demo.set_defaults(fn=cmd_demo)

    run = sub.add_parser("run", help="run a model and summarise its outputs and timing")
    run.add_argument("model", help="a model .so (weights beside it) or .pt2 package")
    run.add_argument("--input", action="append", default=[], metavar="X.npy",
                     help="one per model input, in order (default: random, from the spec)")
    run.add_argument("--weights", help="weights blob (default: beside the .so)")
    run.add_argument("--device", default="cpu")
    run.add_argument("--repeat", type=_positive_int, default=1)
    run.add_argument("--cuda-graphs", action="store_true",
                     help="record the run as a CUDA graph and replay it (cuda models)")
    run.add_argument("--save", metavar="DIR", help="save outputs as DIR/output<i>.npy")
    run.set_defaults(fn=cmd_run)

    comp = sub.add_parser("compile", help="compile a program saved with torch.export.save "
                                          "(needs torch)")
    comp.add_argument("program", help="a .pt2 file from torch.export.save")
    comp.add_argument("--device", default="cpu", help="torch device to compile for (default cpu)")
    comp.add_argument("--out", help="output folder (default: the program's folder)")
    comp.add_argument("--name", help="model name (default: the program's file name)")
    comp.set_defaults(fn=cmd_compile)

    info = sub.add_parser("info", help="inputs, outputs, constants, shims needed and missing")
    info.add_argument("model")
    info.add_argument("--weights")
    info.add_argument("--device", default="cpu")
    info.set_defaults(fn=cmd_info)

    srv = sub.add_parser("serve", help="serve the models of a folder over HTTP with Ray Serve "
                                       '(needs "aotishim[serve]")')
    srv.add_argument("model_dir", help="folder of ID.pt2 / ID.so models (a URL with fsspec)")
    srv.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    srv.add_argument("--port", type=int, default=8000)
    srv.add_argument("--replicas", type=_positive_int, default=1)
    srv.add_argument("--max-models", type=_positive_int, default=3,
                     help="models each replica keeps loaded (least recently used evicted)")
    srv.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                     help="cuda: one GPU per replica (default: cuda when available)")
    srv.add_argument("--batch-size", type=int, default=0,
                     help="batch up to N requests for models with a batch dimension (0: off)")
    srv.add_argument("--batch-wait-ms", type=float, default=5.0,
                     help="how long a batch waits to fill (default 5 ms)")
    srv.add_argument("--duration", type=float, help="stop after this many seconds")
    srv.set_defaults(fn=cmd_serve)

    args = parser.parse_args(argv)
    try:
        return args.fn(args)
    except UsageError as e:
        print(f"error: {_one_line(e)}", file=sys.stderr)
        return 2
    except aotishim.ShimError as e:  # the model failed while running
        print(f"error: {_one_line(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - a command line reports, it does not dump a stack
        print(f"error: {type(e).__name__}: {_one_line(e)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""Models compiled by each torch release users compile with, run on aotishim.

aotishim is built once, in the environment that runs this script. For every
torch version (``--versions``), a virtual environment of its own under
``--root`` (default ``~/.cache/aotishim-compat``) gets ``torch==<version>``
(pinned exactly), aotishim's runtime dependencies (from ``pyproject.toml``)
and, where it installs, the ``transformers`` of this environment (for the
GPT-2 model). In that environment, with this checkout's ``python/`` package:

1. every model of ``--models`` (entries of :mod:`aotishim.zoo.real`: an MLP,
   a conv net, a transformer layer, GPT-2 from a tiny config, dynamic-shape
   models, models with fallback ops) is exported and compiled by
   :func:`aotishim.export.compile` (``aot_inductor.link_libtorch=False``,
   cpu), and torch eager's outputs on each input set are saved (npz);
2. back here, each compiled model is loaded and run by aotishim in a fresh
   process (torch never imported there): whether it loads, the shims it
   lacks, and its largest error against that torch's eager outputs
   (relative to the output's scale; dtypes and shapes must match).

Compiles are kept under ``--root``/models/<version>/<model> and reused while
torch, the model's source and the export helper are unchanged
(``--recompile`` compiles again). A failure at any step is that row's
result; the table always completes.

    python benchmarks/torch_compat.py [--root DIR] [--versions 2.11.0,2.15.0]
                                      [--models mlp_static,sdpa] [--out t.md] [--json r.json]

Torch's CUDA wheels (several GB each; they run on the CPU) are what PyPI
serves for Linux; a pip constraint file that caps torch's version (pip's
``constraint`` setting) must allow the versions asked for.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys
import time
import tomllib
import traceback
from pathlib import Path

import numpy as np

from zoo_arrays import load_sets, max_error, save_sets  # beside this file

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python"
VERSIONS = ("2.11.0", "2.12.1", "2.13.0", "2.14.1", "2.15.0")
# An MLP, a conv net, a transformer layer and GPT-2, two dynamic-shape
# models, and fallback ops (attention; topk and sort).
MODELS = ("mlp_static", "conv2d_bn_pool", "nn_transformer_encoder_layer", "hf_gpt2",
          "mlp_dynamic_batch", "tel_dynamic_seq", "sdpa", "topk_sort_argmax")
TOLERANCE = {"float32": 1e-4, "bfloat16": 2e-2}
INSTALL_TIMEOUT_S = 3600
COMPILE_TIMEOUT_S = 1800
RUN_TIMEOUT_S = 300


def _tail(text: str, lines: int = 1) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])[:300]


# ---- the environments ----
def runtime_dependencies() -> list[str]:
    """aotishim's own runtime requirements, as pyproject.toml lists them."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        return list(tomllib.load(f)["project"]["dependencies"])


def venv_python(root: Path, version: str) -> Path:
    return root / f"venv-{version}" / "bin" / "python"


def installed_version(python: Path, package: str) -> str | None:
    if not python.exists():
        return None
    out = subprocess.run([str(python), "-c", f"import importlib.metadata as m; "
                          f"print(m.version({package!r}))"],
                         capture_output=True, text=True, check=False)
    return out.stdout.strip() if out.returncode == 0 else None


def pip_install(python: Path, requirements: list[str], log: Path) -> str | None:
    """None on success, else the reason (the end of pip's output)."""
    cmd = [str(python), "-m", "pip", "install", "--progress-bar", "off", *requirements]
    # pip unpacks the multi-GB wheels in a temporary folder for minutes: one
    # of its own, so a cleaner of the shared /tmp cannot pull it away.
    tmp = log.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        try:
            out = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, text=True,
                                 env=dict(os.environ, TMPDIR=str(tmp)),
                                 timeout=INSTALL_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            return f"pip timed out after {INSTALL_TIMEOUT_S} s"
    if out.returncode == 0:
        return None
    return f"pip failed: {_tail(log.read_text(), 2)} (log: {log})"


def ensure_venv(root: Path, version: str, with_transformers: bool) -> dict:
    """Creates or completes the environment for ``version``:
    ``{"python", "error"?, "transformers"?}``."""
    python = venv_python(root, version)
    log = root / f"install-{version}.log"
    env: dict = {"python": python}
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(python.parents[1])], check=True)
    torch_version = installed_version(python, "torch")
    if torch_version is None or torch_version.split("+")[0] != version:
        print(f"[{version}] installing torch=={version} into {python.parents[1]} "
              f"(log: {log})", flush=True)
        error = pip_install(python, [f"torch=={version}", *runtime_dependencies()], log)
        if error:
            env["error"] = error
            return env
    elif any(installed_version(python, r.split(">")[0].split("=")[0].split(";")[0].strip())
             is None for r in runtime_dependencies()):
        error = pip_install(python, runtime_dependencies(), log)
        if error:
            env["error"] = error
            return env
    if with_transformers:
        wanted = installed_version(Path(sys.executable), "transformers")
        have = installed_version(python, "transformers")
        if wanted is None:
            env["transformers"] = "not installed where this script runs"
        elif have != wanted:
            error = pip_install(python, [f"transformers=={wanted}"], log)
            env["transformers"] = error or wanted
        else:
            env["transformers"] = have
    return env


# ---- compiling (in the version's environment) ----
def model_key(name: str) -> str:
    """What a compile depends on besides torch: the zoo's and the export
    helper's source (a model built or compiled differently is another model)."""
    h = hashlib.sha256(name.encode())
    for part in ("zoo/real.py", "export.py", "_torch_fixes.py", "spec.py"):
        h.update((PACKAGE / "aotishim" / part).read_bytes())
    return h.hexdigest()[:16]


def worker_compile(out: Path, names: list[str]) -> None:
    """Runs in a version's environment: compiles each model into
    ``out/<name>/`` and saves eager's outputs; one result file per model."""
    import torch

    from aotishim import export
    from aotishim.zoo import real

    def numpy(t: torch.Tensor) -> np.ndarray:
        t = t.detach().contiguous()
        if t.dtype == torch.bfloat16:
            import ml_dtypes
            return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return t.numpy()

    for name in names:
        directory = out / name
        directory.mkdir(parents=True, exist_ok=True)
        result: dict = {"torch": torch.__version__, "key": model_key(name)}
        step = "build"
        try:
            if not real.available(name):
                result["skipped"] = f"needs {real.REQUIRES[name]}, not installed"
            else:
                zm = real.build(name)
                result["dtype"] = zm.dtype
                step = "eager"
                with torch.no_grad():
                    expected = [[numpy(o) for o in torch.utils._pytree.tree_leaves(zm.module(*x))]
                                for x in zm.input_sets()]
                save_sets(directory / "inputs.npz", [[numpy(a) for a in x]
                                                     for x in zm.input_sets()])
                save_sets(directory / "expected.npz", expected)
                step = "compile"
                started = time.perf_counter()
                export.compile(zm.module, zm.args, directory, name="model",
                               dynamic_shapes=zm.dynamic_shapes)
                result["compile_s"] = round(time.perf_counter() - started, 1)
        except Exception as e:  # noqa: BLE001 - one model's failure is its row
            result[f"{step}_error"] = f"{type(e).__name__}: {_tail(str(e) or repr(e))}"
            result["traceback"] = traceback.format_exc()[-4000:]
        (directory / "compile.json").write_text(json.dumps(result, indent=1) + "\n")
        print(f"  {name}: " + ("ok" if not any(k.endswith("_error") for k in result)
                               else "failed"), flush=True)


def compile_version(root: Path, version: str, python: Path, names: list[str],
                    threads: int, recompile: bool) -> dict[str, dict]:
    out = root / "models" / version
    todo = []
    for name in names:
        record = out / name / "compile.json"
        if recompile or not record.exists():
            todo.append(name)
            continue
        old = json.loads(record.read_text())
        if old.get("key") != model_key(name) or old.get("torch", "").split("+")[0] != version \
                or "skipped" in old or any(k.endswith("_error") for k in old):
            todo.append(name)
    failure = None
    if todo:
        for name in todo:  # a result left from before must not stand for this run's
            (out / name / "compile.json").unlink(missing_ok=True)
        print(f"[{version}] compiling {', '.join(todo)}", flush=True)
        env = dict(os.environ, OMP_NUM_THREADS=str(threads),
                   PYTHONPATH=os.pathsep.join(filter(None, [str(PACKAGE),
                                                            os.environ.get("PYTHONPATH")])),
                   TORCHINDUCTOR_CACHE_DIR=str(root / "inductor-cache" / version))
        cmd = [str(python), str(Path(__file__).resolve()), "--worker", "compile", str(out),
               *todo]
        try:
            done = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                  timeout=COMPILE_TIMEOUT_S, check=False)
            failure = (None if done.returncode == 0
                       else f"compile worker exit {done.returncode}: {_tail(done.stderr)}")
            sys.stdout.write(done.stdout)
        except subprocess.TimeoutExpired:
            failure = f"compile worker timed out after {COMPILE_TIMEOUT_S} s"
        if failure:
            print(f"[{version}] {failure}", flush=True)
    results = {}
    for name in names:
        record = out / name / "compile.json"
        if record.exists():
            results[name] = json.loads(record.read_text())
        else:
            results[name] = {"compile_error": failure or "no result"}
    return results


# ---- running (here, with aotishim) ----
def worker_run(directory: Path) -> dict:
    """Never imports torch: aotishim and numpy only."""
    import aotishim
    from aotishim import _core

    so = directory / "model.so"
    result: dict = {"missing": list(_core.inspect_library(str(so))["missing_shims"])}
    inputs, expected = load_sets(directory / "inputs.npz"), load_sets(directory / "expected.npz")
    try:
        model = aotishim.load(so)
    except aotishim.ShimError as e:
        result["load_error"] = str(e)
        return result
    result["loaded"] = True
    try:
        worst, dtypes = 0.0, []
        for x, e in zip(inputs, expected):
            outs = model.run(*x)
            dtypes += [f"{o.dtype} != {r.dtype}" for o, r in zip(outs, e) if o.dtype != r.dtype]
            worst = max(worst, max_error(outs, e))
        result["error"] = worst
        if dtypes:
            result["dtype_mismatch"] = sorted(set(dtypes))
        result["error_text"] = model_error_text(model, inputs[0])
        result["constants"] = constants_check(so, model, inputs[0])
    except aotishim.ShimError as e:
        result["run_error"] = str(e)
    finally:
        result["leaks"] = len(model.close())
        result["live_tensors"] = aotishim.memory_stats()["live_tensors"]
    return result


def model_error_text(model, inputs: list[np.ndarray]) -> str:
    """A run the model itself refuses (its first input one element longer in
    its last dim, past aotishim's spec check): the ModelError's text, which
    should carry the model's own message (AOTInductorGetLastError)."""
    import aotishim
    from aotishim import shim

    first = inputs[0]
    if first.ndim == 0:
        return "n/a (0-d input)"
    wrong = np.zeros((*first.shape[:-1], first.shape[-1] + 1), first.dtype)
    tensors = [shim.from_numpy(a, copy=True) for a in [wrong, *inputs[1:]]]
    try:
        outs = model.run_tensors(*tensors)
    except aotishim.ModelError as e:
        return str(e)
    for t in outs:
        if t is not None:
            shim.delete(t)
    return "no error: the model ran on a wrong-shaped input"


def constants_check(so: Path, model, inputs: list[np.ndarray]) -> str:
    """The constants API on the model: its FQNs and their extraction, a load
    of changed weights that must change the outputs, copies of the original
    ones loaded into the inactive buffer and swapped in, which must bring the
    outputs back, and a second load of the model borrowing them with
    user_managed, which must give the same outputs. "ok (N constants)" or
    what failed."""
    import gc

    import aotishim

    try:
        fqns = model.get_constant_fqns()
        if not fqns:
            return "ok (no loadable constants)"
        before = model.run(*inputs)
        original = {k: v.copy() for k, v in model.extract_constants_map().items()}
        if sorted(original) != sorted(fqns):
            return f"extract_constants_map gave {sorted(original)}, not the FQNs {fqns}"
        changed = {k: (v * 0.5 + 1).astype(v.dtype) for k, v in original.items()}
        model.load_constants(changed, check_full_update=True)
        if max_error(model.run(*inputs), before) <= 1e-3:
            return "changed weights left the outputs unchanged"
        model.load_constants(original, use_inactive=True, check_full_update=True)
        model.swap_constant_buffer()
        model.free_inactive_constant_buffer()
        if max_error(model.run(*inputs), before) > 1e-5:
            return "the original weights, swapped back in, did not restore the outputs"
        with aotishim.load(so) as borrower:
            borrower.load_constants(changed)
            borrower.load_constants(model.extract_constants_map(), user_managed=True)
            gc.collect()
            if max_error(borrower.run(*inputs), before) > 1e-5:
                return "weights borrowed with user_managed did not give the lender's outputs"
        return f"ok ({len(fqns)} constants)"
    except aotishim.ShimError as e:
        return f"failed: {_tail(str(e))[:200]}"


def run_model(directory: Path, threads: int) -> dict:
    path = [str(PACKAGE)] if _source_built() else []
    env = dict(os.environ, OMP_NUM_THREADS=str(threads),
               PYTHONPATH=os.pathsep.join(filter(None, [*path, os.environ.get("PYTHONPATH")])))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "run", str(directory)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env,
                             timeout=RUN_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return {"crash": f"timed out after {RUN_TIMEOUT_S} s"}
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        return {"crash": f"exit {out.returncode}: {_tail(out.stderr)}"}
    return json.loads(lines[-1])


def _source_built() -> bool:
    """The checkout's package when it is built there (a development build),
    else the installed one."""
    return any((PACKAGE / "aotishim").glob("_core*"))


# ---- the table ----
def row_cells(r: dict) -> list[str]:
    c, ran = r["compile"], r.get("run", {})
    if "skipped" in c:
        return ["skipped", "", "", c["skipped"]]
    for step in ("install", "build", "eager", "compile"):
        if f"{step}_error" in c:
            return [f"no ({step}: {c[f'{step}_error'][:160]})", "", "", ""]
    if "crash" in ran:
        return ["yes", f"crash: {ran['crash'][:160]}", "", ""]
    missing = ", ".join(f"`{m}`" for m in ran.get("missing", [])) or "none"
    if not ran.get("loaded"):
        return ["yes", f"no: {_tail(ran.get('load_error', ''))[:200]}", "", missing]
    if "run_error" in ran:
        err = "run failed: " + _tail(ran["run_error"])[:200]
    else:
        tol = TOLERANCE.get(c.get("dtype", ""), 1e-4)
        err = f"{ran['error']:.1e}" + ("" if ran["error"] <= tol else " FAIL")
        if ran.get("dtype_mismatch"):
            err += " dtype " + ", ".join(ran["dtype_mismatch"]) + " FAIL"
        if ran.get("leaks") or ran.get("live_tensors"):
            err += f" ({ran.get('leaks')} leaked, {ran.get('live_tensors')} live)"
    return ["yes", "yes", err, missing]


def error_text_cell(r: dict) -> str:
    """Whether a run the model refused reached ModelError in the model's own words."""
    text = r.get("run", {}).get("error_text")
    if text is None:
        return ""
    if "input_handles[0]" in text:
        return "yes"
    if "keeps no error message" in text:  # the model lacks AOTInductorGetLastError
        return "not kept by the model (stderr); the error says so"
    return f"no: {_tail(text)[:120]}"


def table(rows: list[dict]) -> str:
    head = ["torch", "model", "compiles", "loads", "max error", "shims missing",
            "model's error text", "constants API"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|---|---:|---|---|---|"]
    for r in rows:
        lines.append("| " + " | ".join([r["torch"], r["model"], *row_cells(r),
                                        error_text_cell(r),
                                        r.get("run", {}).get("constants", "")]) + " |")
    return "\n".join(lines)


def passed(r: dict) -> bool:
    cells = row_cells(r)
    constants = r.get("run", {}).get("constants", "ok")
    return cells[1] == "yes" and "FAIL" not in cells[2] and "run failed" not in cells[2] \
        and not r.get("run", {}).get("leaks") and constants.startswith("ok")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path.home() / ".cache" / "aotishim-compat",
                    help="where the environments and compiled models live")
    ap.add_argument("--versions", default=",".join(VERSIONS))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--threads", type=int, default=2, help="for compiling and running")
    ap.add_argument("--recompile", action="store_true")
    ap.add_argument("--out", type=Path, help="also write the table (markdown) here")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    ap.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        kind, *rest = args.worker
        if kind == "compile":
            worker_compile(Path(rest[0]), rest[1:])
        else:
            print(json.dumps(worker_run(Path(rest[0]))))
        return

    root = args.root.expanduser().resolve()
    if root.is_relative_to(ROOT):
        sys.exit(f"--root {root} lies inside the checkout: give a folder outside it")
    root.mkdir(parents=True, exist_ok=True)
    names = [m for m in args.models.split(",") if m]
    rows: list[dict] = []
    for version in [v for v in args.versions.split(",") if v]:
        env = ensure_venv(root, version, with_transformers=any(
            n.startswith("hf_") for n in names))
        if "error" in env:
            rows += [{"torch": version, "model": n, "compile": {"install_error": env["error"]}}
                     for n in names]
            continue
        compiled = compile_version(root, version, env["python"], names, args.threads,
                                   args.recompile)
        for name in names:
            row = {"torch": version, "model": name, "compile": compiled[name]}
            if "transformers" in env and name.startswith("hf_"):
                row["transformers"] = env["transformers"]
            if not any(k.endswith("_error") or k == "skipped" for k in compiled[name]):
                row["run"] = run_model(root / "models" / version / name, args.threads)
            rows.append(row)
            print(f"[{version}] {name}: {' / '.join(row_cells(row))}", flush=True)

    text = table(rows)
    ok = sum(passed(r) for r in rows)
    text += f"\n\n{ok}/{len(rows)} load and match eager.\n"
    print("\n" + text)
    if args.out:
        args.out.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()

"""python -m aotishim demo / run / info, as a user runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import aotishim

# The subprocess imports the same aotishim as this test (installed or in-tree).
PACKAGE_PARENT = Path(aotishim.__file__).resolve().parents[1]


def cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_PARENT), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "aotishim", *args], capture_output=True,
                          text=True, env=env, timeout=timeout)


def test_demo_reduced(compiled, model_cache):
    names = ["mlp", "linear_chunk_first_dim"]
    for n in names:
        compiled(n)  # warm the shared cache; the demo finds the same models there
    # The demo's default is the best device (cuda:0 on a GPU machine); the rows
    # below are the cpu's.
    r = cli("demo", "--models", ",".join(names), "--loads", "2", "--device", "cpu",
            "--cache-dir", str(model_cache))
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    header = next(i for i, l in enumerate(lines) if l.startswith("model "))
    assert lines[header].split()[:5] == ["model", "device", "loads", "max", "error"]
    rows = {l.split()[0]: l.split() for l in lines[header + 2: header + 2 + len(names)]}
    assert set(rows) == set(names)
    for row in rows.values():
        assert row[1] == "cpu" and row[2] == "2" and row[-1] == "ok"
        assert float(row[3]) < 1e-4
    assert "live tensors after all closes: 0" in r.stdout


def test_demo_rejects_unknown_model():
    r = cli("demo", "--models", "nope")
    assert r.returncode == 2 and "unknown model" in r.stderr


def test_info_lists_io_constants_and_shims(compiled):
    c = compiled("mlp")
    r = cli("info", str(c.so))
    assert r.returncode == 0, r.stderr
    assert "an AOTInductor model" in r.stdout
    assert "0 missing" in r.stdout and "aoti_torch_empty_strided" in r.stdout
    assert "x: float32[5, 8]" in r.stdout
    assert "fc1_weight" in r.stdout and "outputs: 1" in r.stdout


def test_info_reports_missing_shims(tmp_path):
    from test_model_errors import CC, fake_model

    if CC is None:
        pytest.skip("needs a C compiler")
    so = fake_model(tmp_path, "needs", ["aoti_torch_does_not_exist"])
    r = cli("info", str(so))
    assert r.returncode == 1
    assert "1 missing" in r.stdout
    assert "MISSING aoti_torch_does_not_exist" in r.stdout


def test_run_with_inputs_and_repeat(compiled, tmp_path):
    c = compiled("linear_chunk_last_dim")
    x = tmp_path / "x.npy"
    np.save(x, c.inputs[0])
    out = tmp_path / "out"
    r = cli("run", str(c.so), "--input", str(x), "--repeat", "3", "--save", str(out))
    assert r.returncode == 0, r.stderr
    assert "3 run(s)" in r.stdout and "[12, 5]" in r.stdout and "[12, 8]" in r.stdout
    c.check(tuple(np.load(out / f"output{i}.npy") for i in range(2)))


def test_run_reports_bad_input_clearly(compiled, tmp_path):
    c = compiled("mlp")
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((2, 2), np.float32))
    r = cli("run", str(c.so), "--input", str(x))
    assert r.returncode == 2
    assert "error:" in r.stderr and "the model expects [5, 8]" in r.stderr
    assert "Traceback" not in r.stderr


def test_compile_saved_program_with_dynamic_dimension(tmp_path, model_cache):
    torch = pytest.importorskip("torch")
    import models
    from torch.export import Dim

    module, (x,) = models.zoo.build("mlp")
    program = tmp_path / "mlp_program.pt2"
    ep = torch.export.export(module, (x,), dynamic_shapes=({0: Dim("batch", min=1, max=32)},))
    torch.export.save(ep, str(program))

    out = tmp_path / "out"
    r = cli("compile", str(program), "--device", "cpu", "--out", str(out), "--name", "mlp_dyn")
    assert r.returncode == 0, r.stdout + r.stderr
    so = out / "mlp_dyn.so"
    assert so.is_file() and (out / "mlp_dyn.weights.blob").is_file()
    assert (out / "mlp_dyn.spec.json").is_file()
    assert "dynamic dimensions:" in r.stdout and "in [1, 32]" in r.stdout

    with aotishim.load(so) as model:
        (sym,) = model.spec.symbols  # a loaded program no longer knows the name "batch"
        assert model.input_specs[0].describe() == f"x: float32[{sym}, 8]"
        for batch in (1, 3, 32):
            xb = torch.randn(batch, 8)
            (y,) = model(xb.numpy())
            with torch.no_grad():
                np.testing.assert_allclose(y, module(xb).numpy(), rtol=1e-5, atol=1e-5)
        with pytest.raises(aotishim.ModelInputError, match=rf"size 33; the model accepts {sym} in \[1, 32\]"):
            model(np.zeros((33, 8), np.float32))

    r = cli("run", str(so))  # random inputs at the example size
    assert r.returncode == 0, r.stderr
    assert f"[{x.shape[0]}, 4]" in r.stdout


def test_compile_refuses_what_is_no_saved_program(tmp_path, compiled):
    c = compiled("mlp")
    r = cli("compile", str(c.so))
    assert r.returncode == 2 and "not a .pt2 archive" in r.stderr
    assert "Traceback" not in r.stderr
    r = cli("compile", str(tmp_path / "missing.pt2"))
    assert r.returncode == 2 and "no such program file" in r.stderr
    package = tmp_path / "package.pt2"
    import zipfile

    with zipfile.ZipFile(package, "w") as archive:
        archive.writestr("package/data/aotinductor/model/x.wrapper.so", b"")
    r = cli("compile", str(package))
    assert r.returncode == 2 and "is an AOTInductor package" in r.stderr
    r = cli("compile", str(tmp_path / "missing.pt2"), "--name", "bad name")
    assert r.returncode == 2


def one_line_error(r: subprocess.CompletedProcess, status: int = 2) -> str:
    """The single error line of a refused command (and that it is one)."""
    assert r.returncode == status, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    return lines[0]


def bad_files(c, tmp_path: Path) -> dict[str, list[str]]:
    """Command lines naming a bad argument or file, each run against model `c`."""
    import json
    import shutil

    not_model = tmp_path / "notes.so"
    not_model.write_text("not a library")
    spec_dir = tmp_path / "badspec"
    spec_dir.mkdir()
    for suffix in (".so", ".weights.blob"):
        shutil.copy(c.so.with_name(c.so.stem + suffix), spec_dir / f"m{suffix}")
    (spec_dir / "m.spec.json").write_text(json.dumps({"format": "aotishim-model-spec/2",
                                                      "symbols": []}))
    garbage = tmp_path / "garbage.npy"
    garbage.write_bytes(b"\x93NUMPY but not really")
    archive = tmp_path / "two.npz"
    np.savez(archive, a=np.zeros(3), b=np.ones(3))
    pickled = tmp_path / "objects.npy"
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    so = str(c.so)
    return {
        "missing model": ["run", str(tmp_path / "missing.so")],
        "not a model": ["run", str(not_model)],
        "bad spec": ["run", str(spec_dir / "m.so")],
        "info of a bad spec": ["info", str(spec_dir / "m.so")],
        "missing input": ["run", so, "--input", str(tmp_path / "missing.npy")],
        "garbage input": ["run", so, "--input", str(garbage)],
        "npz input": ["run", so, "--input", str(archive)],
        "pickled input": ["run", so, "--input", str(pickled)],
        "directory input": ["run", so, "--input", str(tmp_path)],
        "repeat 0": ["run", so, "--repeat", "0"],
        "repeat abc": ["run", so, "--repeat", "abc"],
        "bad device": ["run", so, "--device", "tpu:9"],
        "missing weights": ["run", so, "--weights", str(tmp_path / "missing.blob")],
        "save into a file": ["run", so, "--save", str(a_file)],
        "unknown option": ["run", so, "--frobnicate"],
        "info bad device": ["info", so, "--device", "cpu:3"],
        "demo loads -1": ["demo", "--loads", "-1"],
        "demo tolerance nan": ["demo", "--tolerance", "nan"],
    }


BAD_CASES = ["missing model", "not a model", "bad spec", "info of a bad spec", "missing input",
             "garbage input", "npz input", "pickled input", "directory input", "repeat 0",
             "repeat abc", "bad device", "missing weights", "save into a file", "unknown option",
             "info bad device", "demo loads -1", "demo tolerance nan"]


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_arguments_and_files_are_one_line_errors_with_status_2(compiled, tmp_path, case):
    """Before: tracebacks (np.load of a missing or bad file, --save into a
    file), status 1 for refused models, specs and devices, and --repeat 0
    or demo --loads -1 accepted."""
    c = compiled("mlp")
    cases = bad_files(c, tmp_path)
    assert sorted(cases) == sorted(BAD_CASES)
    one_line_error(cli(*cases[case]))


def test_compile_refusals_are_one_line_errors(tmp_path, compiled):
    c = compiled("mlp")
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    for args in (["compile", str(c.so)], ["compile", str(tmp_path / "missing.pt2")],
                 ["compile", str(c.so), "--out", str(a_file)]):
        one_line_error(cli(*args))


def test_compile_cli_with_an_unbounded_dimension(tmp_path):
    """Before: a traceback ending in AttributeError: 'Infinity' object has no
    attribute '_mpf_'."""
    torch = pytest.importorskip("torch")
    from torch.export import Dim

    class Twice(torch.nn.Module):
        def forward(self, x):
            return x * 2

    program = tmp_path / "twice.pt2"
    torch.export.save(torch.export.export(Twice(), (torch.randn(4, 3),),
                                          dynamic_shapes=({0: Dim("rows")},)), str(program))
    r = cli("compile", str(program), "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert ", inf]" in r.stdout
    with aotishim.load(tmp_path / "out" / "twice.so") as model:
        (y,) = model(np.ones((7, 3), np.float32))
        np.testing.assert_array_equal(y, np.full((7, 3), 2, np.float32))

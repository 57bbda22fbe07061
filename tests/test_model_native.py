"""The C++ runner API from a native program (examples/run_model) linked against libaotishim."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import aotishim

ROOT = Path(__file__).resolve().parents[1]
CXX = shutil.which("c++") or shutil.which("g++")


@pytest.mark.skipif(CXX is None, reason="needs a C++ compiler")
def test_native_runner_matches_python(compiled, tmp_path):
    lib_dir = Path(aotishim.__file__).resolve().parent
    libs = sorted(lib_dir.glob("libaotishim.*"))
    if not libs:
        pytest.skip("libaotishim is not beside the package")
    exe = tmp_path / "run_model"
    subprocess.run([CXX, "-std=c++17", "-O1", "-o", str(exe), str(ROOT / "examples/run_model/main.cpp"),
                    f"-I{ROOT / 'csrc/include'}", str(libs[0]), f"-Wl,-rpath,{lib_dir}"],
                   check=True)
    c = compiled("linear_chunk_last_dim")
    rows, cols = c.inputs[0].shape
    r = subprocess.run([str(exe), str(c.so), str(rows), str(cols)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    with aotishim.load(c.so) as m:
        expected = m(np.ones((rows, cols), np.float32))
        assert lines[0] == f"inputs 1 outputs 2 constants {len(m.constant_names)}"
    host = [np.array(l.split()[1:], dtype=np.float32) for l in lines if l.startswith("host")]
    handle = [np.array(l.split()[1:], dtype=np.float32) for l in lines if l.startswith("handle")]
    for got in (host, handle):
        assert len(got) == 2
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e.ravel(), rtol=1e-5, atol=1e-6)
    assert "input consumed 1" in lines
    assert "leaks 0" in lines and "live 0" in lines
    assert any(l.startswith("error ") and "does not exist" in l for l in lines)


@pytest.mark.skipif(CXX is None, reason="needs a C++ compiler")
def test_native_constants_api(compiled, tmp_path):
    """aotishim::Model's constants API from C++: inactive load, swap, free, refusals."""
    lib_dir = Path(aotishim.__file__).resolve().parent
    libs = sorted(lib_dir.glob("libaotishim.*"))
    if not libs:
        pytest.skip("libaotishim is not beside the package")
    exe = tmp_path / "constants_api"
    subprocess.run([CXX, "-std=c++17", "-O1", "-o", str(exe),
                    str(ROOT / "tests/native/constants_api.cpp"), f"-I{ROOT / 'csrc/include'}",
                    str(libs[0]), f"-Wl,-rpath,{lib_dir}"], check=True)
    c = compiled("mlp")
    rows, cols = c.inputs[0].shape
    r = subprocess.run([str(exe), str(c.so), str(rows), str(cols)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout.splitlines()
    line = lambda prefix: next(l for l in out if l.startswith(prefix))
    x = np.ones((rows, cols), np.float32)
    with aotishim.load(c.so) as m:
        assert line("fqns") == "fqns " + " ".join(m.get_constant_fqns())
        before = m(x)[0].ravel()
        m.load_constants({k: v * 2 for k, v in m.extract_constants_map().items()})
        after = m(x)[0].ravel()
    values = lambda key: np.array(line(key + " ")[len(key):].split(), dtype=np.float32)
    np.testing.assert_allclose(values("before"), before, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(values("inactive loaded"), before, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(values("swapped"), after, rtol=1e-6, atol=1e-6)
    assert not np.allclose(before, after)
    assert line("close while viewed") == "close while viewed: refused"
    assert line("unknown fqn") == "unknown fqn: InputError"
    assert "leaks 0" in r.stdout and "live 0" in r.stdout

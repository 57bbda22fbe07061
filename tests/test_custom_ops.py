"""Models calling custom ops through the proxy executor: implementations
registered in Python (aotishim.register_custom_op), refusals at load, errors
of the implementation, results of the wrong dtype or shape."""

from __future__ import annotations

import shutil
import subprocess
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import aotishim  # noqa: E402
from aotishim import export  # noqa: E402

import custom_op_models  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCALE_SHIFT = "aotishim_test::scale_shift"
SPLIT_STATS = "aotishim_test::split_stats"


def np_scale_shift(x, y, alpha, n, dims, bias=None, negate=False):
    out = x * np.float32(alpha) + np.flip(y, dims) + np.float32(n)
    if bias is not None:
        out = out + bias
    return -out if negate else out


def np_split_stats(x):
    return x + np.float32(1), x.sum(0, dtype=np.float64)


def make_net():
    torch.manual_seed(0)
    return custom_op_models.CustomOpNet().eval()


@pytest.fixture(scope="module")
def net_so(model_cache):
    return export.compile_cached(make_net(), custom_op_models.example_inputs(), model_cache,
                                 name="custom_op_net")


@pytest.fixture
def registered():
    """Registers the numpy implementations; removes them afterwards."""
    aotishim.register_custom_op(SCALE_SHIFT, np_scale_shift)
    aotishim.register_custom_op(SPLIT_STATS, np_split_stats)
    yield
    aotishim.unregister_custom_op(SCALE_SHIFT)
    aotishim.unregister_custom_op(SPLIT_STATS)


def eager(x, y):
    net = make_net()
    with torch.no_grad():
        return [t.numpy() for t in net(x, y)]


def check_matches(outputs, expected):
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(4, 5, generator=g), torch.randn(4, 5, generator=g)


def test_python_custom_ops_match_eager(net_so, registered):
    # the nodes file sits beside the model, with the outputs' layouts recorded
    nodes = net_so.with_suffix(".json").read_text()
    assert SCALE_SHIFT in nodes and "aotishim.outputs" in nodes
    with aotishim.load(net_so) as model:
        for seed in range(3):
            x, y = inputs(seed)
            check_matches(model(x.numpy(), y.numpy()), eager(x, y))
    assert model.leaks == []


def test_unregistered_op_is_refused_at_load(net_so):
    aotishim.register_custom_op(SPLIT_STATS, np_split_stats)
    try:
        with pytest.raises(aotishim.ModelError) as info:
            aotishim.load(net_so)
    finally:
        aotishim.unregister_custom_op(SPLIT_STATS)
    message = str(info.value)
    assert SCALE_SHIFT in message and SPLIT_STATS not in message
    assert f'aotishim.register_custom_op("{SCALE_SHIFT}", fn)' in message


def test_missing_nodes_file_is_refused_at_load(net_so, registered, tmp_path):
    lone = tmp_path / "lone.so"
    lone.write_bytes(net_so.read_bytes())
    (tmp_path / "lone.weights.blob").write_bytes(net_so.with_suffix(".weights.blob").read_bytes())
    with pytest.raises(aotishim.ModelError, match="extern-kernel nodes file .*lone.json"):
        aotishim.load(lone)


def test_loaded_model_keeps_its_implementations(net_so, registered):
    x, y = inputs(1)
    with aotishim.load(net_so) as model:
        aotishim.register_custom_op(SPLIT_STATS, lambda x: (x * 0, x.sum(0, dtype=np.float64)))
        check_matches(model(x.numpy(), y.numpy()), eager(x, y))
    with aotishim.load(net_so) as model:  # a later load takes the new one
        out = model(x.numpy(), y.numpy())
        bias = make_net().fc.bias.detach().numpy()  # fc(sin(0)) is its bias
        np.testing.assert_allclose(out[0], np.broadcast_to(bias, out[0].shape), rtol=1e-6)


def test_raising_implementation_is_a_model_error_and_the_model_stays_usable(net_so, registered):
    state = {"fail": True}

    def flaky(x):
        if state["fail"]:
            raise ValueError("no stats today")
        return np_split_stats(x)

    aotishim.register_custom_op(SPLIT_STATS, flaky)
    x, y = inputs(2)
    with aotishim.load(net_so) as model:
        with pytest.raises(aotishim.ModelError, match=f"{SPLIT_STATS}.*ValueError: no stats today"):
            model(x.numpy(), y.numpy())
        state["fail"] = False
        check_matches(model(x.numpy(), y.numpy()), eager(x, y))
    assert model.leaks == []


@pytest.mark.parametrize("bad, message", [
    (lambda x: (x.astype(np.float64), x.sum(0, dtype=np.float64)),
     r"output 0 is float64\[4,5\]; the compiled model expects float32\[4,5\]"),
    (lambda x: (x[:2], x.sum(0, dtype=np.float64)),
     r"output 0 is float32\[2,5\]; the compiled model expects float32\[4,5\]"),
    (lambda x: (x + 1, x.sum(0)),
     r"output 1 is float32\[5\]; the compiled model expects float64\[5\]"),
    (lambda x: x + 1, r"returns 2 values; the implementation returned ndarray"),
    (lambda x: (x + 1, "stats"), r"return value 1 has dtype <U5"),
])
def test_wrong_results_are_clear_errors(net_so, registered, bad, message):
    aotishim.register_custom_op(SPLIT_STATS, bad)
    x, y = inputs(3)
    with aotishim.load(net_so) as model:
        with pytest.raises(aotishim.ModelError, match=message):
            model(x.numpy(), y.numpy())
    assert model.leaks == []


class _CudaProducer:
    """What a torch cuda tensor shows a cpu model's implementation: a DLPack
    producer on device (kDLCUDA, 0)."""

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        raise AssertionError("a cpu model must not import a device tensor")


def test_device_result_of_a_cpu_model_is_a_clear_error(net_so, registered):
    aotishim.register_custom_op(SPLIT_STATS, lambda x: (_CudaProducer(), x.sum(0, dtype=np.float64)))
    x, y = inputs(4)
    with aotishim.load(net_so) as model:
        with pytest.raises(aotishim.ModelError, match="is a device tensor; a cpu model takes host arrays"):
            model(x.numpy(), y.numpy())
    assert model.leaks == []


def test_runs_from_threads(net_so, registered):
    cases = [(*inputs(seed), eager(*inputs(seed))) for seed in range(4)]
    errors: list[BaseException] = []
    with aotishim.load(net_so) as model:
        def work(x, y, expected):
            try:
                for _ in range(5):
                    check_matches(model(x.numpy(), y.numpy()), expected)
            except BaseException as e:  # noqa: BLE001
                errors.append(e)
        threads = [threading.Thread(target=work, args=c) for c in cases]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []


def test_torch_package_without_recorded_layouts(model_cache, registered, tmp_path):
    """A .pt2 straight from torch's aoti_compile_and_package: its nodes file
    names the outputs only, and the model's own checks guard their sizes."""
    ep = torch.export.export(make_net(), custom_op_models.example_inputs())
    package = tmp_path / "net.pt2"
    torch._inductor.aoti_compile_and_package(ep, package_path=str(package),
                                             inductor_configs=export.inductor_configs("cpu"))
    with zipfile.ZipFile(package) as archive:
        nodes = [n for n in archive.namelist() if n.endswith(".wrapper.json")]
        assert nodes and "aotishim.outputs" not in archive.read(nodes[0]).decode()
    x, y = inputs(4)
    with aotishim.load(package) as model:
        check_matches(model(x.numpy(), y.numpy()), eager(x, y))
    folder = tmp_path / "extracted"  # the nodes file beside the library, where it lies
    with zipfile.ZipFile(package) as archive:
        archive.extractall(folder)
    with aotishim.load(folder) as model:
        check_matches(model(x.numpy(), y.numpy()), eager(x, y))
    aotishim.register_custom_op(SPLIT_STATS, lambda x: (x[:2], x.sum(0, dtype=np.float64)))
    with aotishim.load(package) as model:
        with pytest.raises(aotishim.ModelError, match="expected size 2==4"):
            model(x.numpy(), y.numpy())


def test_registration_api():
    with pytest.raises(aotishim.ShimError, match="invalid custom op name 'noname'"):
        aotishim.register_custom_op("noname", np_split_stats)
    with pytest.raises(TypeError, match="must be callable"):
        aotishim.register_custom_op("a::b", 3)
    aotishim.register_custom_op("a::b.out", np_split_stats)
    assert "a::b.out" in aotishim.registered_custom_ops()
    assert aotishim.unregister_custom_op("a::b.out")
    assert not aotishim.unregister_custom_op("a::b.out")


CXX = shutil.which("c++") or shutil.which("g++")


@pytest.mark.skipif(CXX is None, reason="needs a C++ compiler")
def test_cpp_custom_ops_match_eager(net_so, tmp_path):
    """Implementations registered through the C++ API (tests/native/custom_op.cpp)."""
    lib_dir = Path(aotishim.__file__).resolve().parent
    libs = sorted(lib_dir.glob("libaotishim.*"))
    if not libs:
        pytest.skip("libaotishim is not beside the package")
    exe = tmp_path / "custom_op"
    subprocess.run([CXX, "-std=c++17", "-O1", "-o", str(exe),
                    str(ROOT / "tests/native/custom_op.cpp"), f"-I{ROOT / 'csrc/include'}",
                    str(libs[0]), f"-Wl,-rpath,{lib_dir}"], check=True)
    x, y = inputs(5)
    x.numpy().tofile(tmp_path / "x.bin")
    y.numpy().tofile(tmp_path / "y.bin")
    r = subprocess.run([str(exe), str(net_so), str(tmp_path / "x.bin"), str(tmp_path / "y.bin")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    line = lambda prefix: next(l for l in lines if l.startswith(prefix))
    assert SCALE_SHIFT in line("unregistered: ") and "register_custom_op" in line("unregistered: ")
    expected = eager(x, y)
    for k, want in enumerate(expected):
        fields = line(f"output{k} ").split()
        assert fields[1] == str(want.dtype)
        np.testing.assert_allclose(np.array(fields[2:], dtype=want.dtype), want.ravel(),
                                   rtol=1e-5, atol=1e-5)
    assert f"{SPLIT_STATS} (node 1) failed: refusing to split" in line("throwing: ")
    assert lines.count("leaks 0") == 2 and "live 0" in lines

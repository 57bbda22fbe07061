"""Bad input, paths, threads and process events: a clear error of the right
type (or the right result), and the process lives.

Each test was run against the runtime before these protections (the commit
before them, built separately, PYTHONPATH pointing at it); what it did there
is noted in the test. Tests of aborts and hangs run a child process and
check its exit status and output.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest

import aotishim
from aotishim import _core, shim

PACKAGE_ROOT = Path(aotishim.__file__).resolve().parents[1]


def run_child(code: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter against the same aotishim."""
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT), PYTHONFAULTHANDLER="0")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def install(c, directory: Path, name: str = "m") -> Path:
    """Copies a compiled model (library, weights, spec) into `directory` as `name`."""
    directory.mkdir(parents=True, exist_ok=True)
    for suffix in (".so", ".weights.blob", ".spec.json"):
        shutil.copy(c.so.with_name(c.so.stem + suffix), directory / f"{name}{suffix}")
    return directory / f"{name}.so"


def make_package(c, path: Path, so_bytes: bytes | None = None) -> Path:
    blob = c.so.with_name(c.so.stem + ".weights.blob")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("pkg/archive_format", "pt2")
        z.writestr("pkg/data/aotinductor/model/abc.wrapper.so",
                   c.so.read_bytes() if so_bytes is None else so_bytes)
        z.write(blob, "pkg/data/aotinductor/model/abc.wrapper_weights.blob")
    return path


def model_mappings() -> int:
    """Lines of /proc/self/maps that map a model library or its temporary files."""
    with open("/proc/self/maps") as f:
        return sum(1 for line in f if ".so" in line and ("aotishim-" in line or "/copies/" in line))


# ---- row 1: one handle passed for two inputs ----
def test_one_tensor_passed_for_two_inputs(compiled):
    """Before: SIGABRT (exit -6): the model deleted the handle of each slot,
    so the second delete failed inside a destructor. Now each slot gets a
    handle of its own, and the result is the model's on (x, x)."""
    c = compiled("two_inputs")
    r = run_child("""
        import sys, numpy as np, aotishim
        from aotishim import shim
        m = aotishim.load(sys.argv[1])
        x = np.arange(20, dtype=np.float32).reshape(4, 5)
        t = shim.from_numpy(x, copy=True)
        outs = m.run_tensors(t, t)
        assert not t.is_live
        got = [o.numpy() for o in outs]
        np.testing.assert_array_equal(got[0], x * 2 + x)
        np.testing.assert_array_equal(got[1], np.zeros_like(x))
        for o in outs: shim.delete(o)
        assert m.close() == []
        assert aotishim.memory_stats()["live_tensors"] == 0
        print("ok")
    """, str(c.so))
    assert (r.returncode, r.stdout.strip()) == (0, "ok"), r.stderr[-2000:]


# ---- row 2: cleanup_memory on another thread while a model runs ----
def test_cleanup_of_the_callers_scope_during_a_run(compiled):
    """Before: the child died within the 3 s (SIGSEGV here; SIGABRT, "terminate
    called ...", in other runs): the model's inputs stayed in the caller's
    scope and another thread's cleanup_memory deleted them mid-run. Now the model
    owns its inputs for the run; the cleanup can only reach tensors before the
    run takes them (a clear error) or outputs handed back (a clear error on use)."""
    c = compiled("wide_elementwise")
    r = run_child("""
        import sys, threading, time, numpy as np, aotishim
        from aotishim import shim
        m = aotishim.load(sys.argv[1])
        x = np.ones((256, 4096), np.float32)
        stop = time.monotonic() + 3
        runs = errors = 0
        def cleaner():
            while time.monotonic() < stop:
                aotishim.cleanup_memory()
        t = threading.Thread(target=cleaner)
        t.start()
        while time.monotonic() < stop:
            try:
                outs = m.run_tensors(shim.from_numpy(x, copy=True))
                runs += 1
            except (aotishim.ModelError, aotishim.ShimError):
                errors += 1
        t.join()
        aotishim.cleanup_memory()
        assert m.close() == []
        assert aotishim.memory_stats()["live_tensors"] == 0
        print("ok", runs, errors)
    """, str(c.so))
    assert r.returncode == 0 and r.stdout.startswith("ok"), (r.returncode, r.stderr[-2000:])


# ---- rows 3 and 4: relative paths and bare names ----
def test_same_relative_path_in_two_directories_loads_two_models(compiled, tmp_path, monkeypatch):
    """Before: the second load ran the first directory's model (the loader
    matched the relative string it had seen); here that failed on the weights
    size ("truncated" / another model's blob). Now paths are canonical."""
    first, second = compiled("mlp"), compiled("softmax_head")
    install(first, tmp_path / "a" / "sub")
    install(second, tmp_path / "b" / "sub")
    monkeypatch.chdir(tmp_path / "a")
    m1 = aotishim.load("sub/m.so")
    monkeypatch.chdir(tmp_path / "b")
    m2 = aotishim.load("sub/m.so")
    assert m1.path == tmp_path / "a" / "sub" / "m.so"
    assert m2.path == tmp_path / "b" / "sub" / "m.so"
    first.check(m1.run(*first.inputs))
    second.check(m2.run(*second.inputs))
    assert m1.close() == [] and m2.close() == []


def test_bare_name_is_the_file_in_the_current_directory(compiled, tmp_path):
    """Before: load("m.so") searched the library path for a bare name: with
    another model named m.so on LD_LIBRARY_PATH, that one was loaded (with
    this directory's weights, "more than the 320 the model expects", then
    "unmatched dim value" on this model's input); the C++ API did the same. Now "m.so" and "./m.so" are the file in the current directory."""
    here, elsewhere = compiled("mlp"), compiled("softmax_head")
    install(here, tmp_path / "here")
    install(elsewhere, tmp_path / "on_search_path")
    np.save(tmp_path / "x.npy", here.inputs[0])
    code = """
        import os, sys, numpy as np, aotishim
        from aotishim import _core
        x = np.load(sys.argv[1])
        for i, name in enumerate(["m.so", "./m.so"]):
            with aotishim.load(name) as m:
                np.save(f"out{i}.npy", m.run(x)[0])
        core = _core.Model.load("m.so", "", "cpu")  # the C++ API, no Python path handling
        print(core.path)
        core.close()
    """
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_ROOT),
               LD_LIBRARY_PATH=str(tmp_path / "on_search_path"))
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code), str(tmp_path / "x.npy")],
                       cwd=tmp_path / "here", env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == str(tmp_path / "here" / "m.so")
    for i in range(2):
        here.check((np.load(tmp_path / "here" / f"out{i}.npy"),))


# ---- row 5: repeated loads do not grow the process ----
def test_reloading_a_package_or_copies_adds_no_mappings(compiled, tmp_path):
    """Before: every .pt2 load extracted to a new temporary file and mapped
    it again, as did each copy of a library (here 126 mappings after the 19
    loads instead of 12). Now a library is recognised by its bytes and reused."""
    c = compiled("residual_norm")
    package = make_package(c, tmp_path / "m.pt2")
    copies = [install(c, tmp_path / "copies" / str(i)) for i in range(10)]

    def cycle(path: Path) -> None:
        with aotishim.load(path) as m:
            c.check(m.run(*c.inputs))

    cycle(package)
    cycle(copies[0])
    before = model_mappings()
    for path in copies[1:]:
        cycle(path)
    for _ in range(10):
        cycle(package)
    assert model_mappings() == before


def test_a_rewritten_file_still_loads_its_new_bytes(compiled, tmp_path):
    """The library cache keys on content: new bytes at a path (or inode)
    already loaded must load the new model, not the cached one."""
    first, second = compiled("mlp"), compiled("softmax_head")
    target = install(first, tmp_path)
    with aotishim.load(target) as m:
        first.check(m.run(*first.inputs))
    # In place: the same inode gets the other model's bytes.
    for suffix in (".weights.blob", ".spec.json", ".so"):
        data = second.so.with_name(second.so.stem + suffix).read_bytes()
        with open(tmp_path / f"m{suffix}", "r+b") as f:
            f.truncate(0)
            f.write(data)
    with aotishim.load(target) as m:
        second.check(m.run(*second.inputs))


# ---- row 6: interpreter exit while a daemon thread runs a model ----
def test_interpreter_exit_while_a_daemon_thread_runs_a_model(compiled):
    """Before: SIGABRT ("terminate called without an active exception") in
    about half the runs: the daemon thread was ended (pthread_exit) while
    retaking the GIL inside a noexcept destructor. Now it never goes back to
    Python once the interpreter is finalizing. Five exits, all clean."""
    c = compiled("wide_elementwise")
    code = """
        import sys, threading, time, numpy as np, aotishim
        m = aotishim.load(sys.argv[1])
        x = np.ones((256, 4096), np.float32)
        def loop():
            while True:
                m.run(x)
        threading.Thread(target=loop, daemon=True).start()
        time.sleep(0.3)
        print("exiting", flush=True)
    """
    for _ in range(5):
        r = run_child(code, str(c.so))
        assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
        assert "terminate" not in r.stderr and r.stdout.strip() == "exiting"


# ---- row 7: fork after a CPU model ran ----
FORK_CHILD = """
    import os, sys, numpy as np, aotishim
    m = aotishim.load(sys.argv[1])
    x = np.ones((256, 4096), np.float32)
    if sys.argv[2] == "run-first":
        m.run(x)
    pid = os.fork()
    if pid == 0:
        try:
            m.run(x)
            print("child ran", flush=True)
            os._exit(0)
        except aotishim.ModelError as e:
            print("child refused:", e, flush=True)
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    print("child status", os.waitstatus_to_exitcode(status), flush=True)
"""


def test_fork_after_an_openmp_model_ran_refuses_instead_of_hanging(compiled):
    """Before: the child hung forever in libgomp (the test's 60 s timeout
    expired). Now the child gets a ModelError saying why, and exits."""
    c = compiled("wide_elementwise")
    r = run_child(FORK_CHILD, str(c.so), "run-first", timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "child refused:" in r.stdout and "forked from a process that had run cpu models" in r.stdout
    assert "child status 3" in r.stdout


def test_fork_before_any_run_leaves_the_child_free_to_run(compiled):
    """A process that loads and then forks workers (before running) works."""
    c = compiled("wide_elementwise")
    r = run_child(FORK_CHILD, str(c.so), "load-only", timeout=60)
    assert r.returncode == 0 and "child ran" in r.stdout and "child status 0" in r.stdout, r


# ---- row 8: a package that expands far beyond its size ----
def test_package_member_that_expands_absurdly_is_refused_before_writing(tmp_path):
    """Before: extract_package wrote the 256 MiB member out in full without
    a word (load then failed on it as a library). Now it is refused from its declared sizes, before
    anything is written."""
    package = tmp_path / "bomb.pt2"
    with zipfile.ZipFile(package, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("pkg/data/aotinductor/model/abc.wrapper.so", "w", force_zip64=True) as f:
            chunk = bytes(1 << 20)
            for _ in range(256):
                f.write(chunk)
    assert package.stat().st_size < 1 << 20
    target = tmp_path / "out" / "model.so"
    target.parent.mkdir()
    with zipfile.ZipFile(package) as archive:
        with pytest.raises(aotishim.ModelError, match="would expand from .* to 268435456 bytes"):
            aotishim.model.extract_package(archive, target)
    assert not target.exists()
    with pytest.raises(aotishim.ModelError, match=f"'{package}'.*would expand"):
        aotishim.load(package)


# ---- row 9: malformed packages and spec files ----
def _patch(path: Path, find: bytes, offset: int, value: bytes, count: int) -> None:
    """Writes `value` at `offset` after each of the first `count` occurrences of `find`."""
    data = bytearray(path.read_bytes())
    start = 0
    for _ in range(count):
        at = data.index(find, start)
        data[at + offset:at + offset + len(value)] = value
        start = at + 1
    path.write_bytes(bytes(data))


def _stored_package(c, path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.write(c.so, "pkg/data/aotinductor/model/abc.wrapper.so")
    return path


@pytest.mark.parametrize("damage", ["crc", "encrypted", "compression"])
def test_malformed_package_is_a_model_error(compiled, tmp_path, damage):
    """Before: BadZipFile, RuntimeError and NotImplementedError escaped raw."""
    c = compiled("mlp")
    package = _stored_package(c, tmp_path / f"{damage}.pt2")
    if damage == "crc":  # one byte of the library's body
        data = bytearray(package.read_bytes())
        data[data.index(b"\x7fELF") + 100] ^= 0xFF
        package.write_bytes(bytes(data))
        expected = "cannot be extracted.*CRC"
    elif damage == "encrypted":  # general-purpose flag bit 0, local and central headers
        _patch(package, b"PK\x03\x04", 6, b"\x01", 1)
        _patch(package, b"PK\x01\x02", 8, b"\x01", 1)
        expected = "encrypted"
    else:  # compression method 99, local and central headers
        _patch(package, b"PK\x03\x04", 8, b"\x63\x00", 1)
        _patch(package, b"PK\x01\x02", 10, b"\x63\x00", 1)
        expected = "compression method 99"
    with pytest.raises(aotishim.ModelError, match=expected) as info:
        aotishim.load(package)
    assert str(package) in str(info.value)


def test_spec_file_that_is_not_an_object(compiled, tmp_path):
    """Before: AttributeError ('list' object has no attribute 'get')."""
    so = install(compiled("mlp"), tmp_path)
    so.with_name("m.spec.json").write_text("[1, 2, 3]")
    with pytest.raises(aotishim.ModelError, match="unreadable: expected a JSON object, found list"):
        aotishim.load(so)


# ---- row 10: weights that are not files, a wrong device, package messages ----
def test_weights_that_are_not_regular_files(compiled, tmp_path):
    """Before: "does not exist" for a directory, /dev/zero and a FIFO."""
    so = install(compiled("mlp"), tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(aotishim.ModelError, match="is a directory"):
        aotishim.load(so, weights=tmp_path)
    for special in ("/dev/zero", fifo):
        with pytest.raises(aotishim.ModelError, match="not a regular file"):
            aotishim.load(so, weights=special)


def test_cpp_api_refuses_a_fifo_as_weights_without_blocking(compiled, tmp_path):
    """Before: the C++ API opened the FIFO and blocked forever waiting for a
    writer (the child's 30 s timeout expired)."""
    so = install(compiled("mlp"), tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = run_child("""
        import sys, aotishim
        from aotishim import _core
        try:
            _core.Model.load(sys.argv[1], sys.argv[2], "cpu")
        except aotishim.ShimError as e:
            print("refused:", e)
    """, str(so), str(fifo), timeout=30)
    assert r.returncode == 0 and "refused:" in r.stdout and "not a regular file" in r.stdout, r


def test_invalid_device_is_named(compiled):
    """Before: for cpu:1, a long message from deep inside weight loading
    ("loading weights ... failed: aoti_torch_create_tensor_from_blob_v2(...")."""
    c = compiled("mlp")
    for device in ("cpu:1", "gpu", "cuda:-1"):
        with pytest.raises(aotishim.ModelError, match=f"invalid device '{device}'"):
            aotishim.load(c.so, device=device)


def test_cuda_graphs_off_cuda_is_refused_and_leaves_nothing(compiled):
    """Only cuda records graphs: elsewhere the option is an error at load,
    naming the device, and the refused load leaves no scope behind."""
    c, device = compiled("mlp"), "cpu"
    scopes = len(aotishim.memory_stats()["scopes"])
    with pytest.raises(aotishim.ModelError, match=f"'{device}' cannot record CUDA graphs"):
        aotishim.load(c.so, device=device, cuda_graphs=True)
    assert len(aotishim.memory_stats()["scopes"]) == scopes
    with aotishim.load(c.so, device=device) as model:
        assert model.graphs == []


def test_package_errors_name_the_package_not_temporary_files(compiled, tmp_path):
    """Before: "weights file '/tmp/aotishim-pt2-.../model.weights.blob' is
    truncated", a file gone by the time the message is read."""
    c = compiled("mlp")
    blob = c.so.with_name(c.so.stem + ".weights.blob").read_bytes()
    package = tmp_path / "short.pt2"
    with zipfile.ZipFile(package, "w") as z:
        z.write(c.so, "pkg/data/aotinductor/model/abc.wrapper.so")
        z.writestr("pkg/data/aotinductor/model/abc.wrapper_weights.blob", blob[: len(blob) // 2])
    with pytest.raises(aotishim.ModelError, match="truncated") as info:
        aotishim.load(package)
    message = str(info.value)
    assert f"{package}!pkg/data/aotinductor/model/abc.wrapper_weights.blob" in message
    assert "aotishim-pt2-" not in message


# ---- row 11: run_tensors on a closed model ----
def test_run_tensors_on_a_closed_model_consumes_its_inputs(compiled):
    """Before: the inputs stayed live (leaked); the Python layer refused the
    call before the runner could consume them."""
    c = compiled("mlp")
    m = aotishim.load(c.so)
    m.close()
    t = shim.from_numpy(c.inputs[0], copy=True)
    with pytest.raises(aotishim.ModelError, match="closed"):
        m.run_tensors(t)
    assert not t.is_live


# ---- row 12: copy_ into a destination whose elements overlap ----
def test_copy_into_a_destination_with_overlapping_elements_is_refused():
    """Before: accepted; the last write won (a zero-stride row of 4 got the
    last source value)."""
    base = shim.from_numpy(np.zeros(16, np.float32), copy=True)
    src = shim.from_numpy(np.arange(8, dtype=np.float32).reshape(2, 4), copy=True)
    for sizes, strides in (([2, 4], [4, 0]), ([2, 4], [1, 1])):
        dst = shim.reinterpret_tensor(base, sizes, strides, 0)
        with pytest.raises(aotishim.ShimError, match="elements overlap in memory"):
            shim.copy_(dst, src)
    np.testing.assert_array_equal(base.numpy(), np.zeros(16, np.float32))
    # Padded and permuted destinations are fine.
    padded = shim.reinterpret_tensor(base, [2, 4], [8, 1], 0)
    shim.copy_(padded, src)
    np.testing.assert_array_equal(padded.numpy(), src.numpy())
    transposed = shim.reinterpret_tensor(base, [2, 4], [1, 2], 0)
    shim.copy_(transposed, src)
    np.testing.assert_array_equal(transposed.numpy(), src.numpy())


# ---- row 13: a negative device index, an unknown dtype ----
def test_negative_device_index_and_unknown_dtype_are_errors():
    """Before: device index -7 was taken as 0, element_size(99) returned 0."""
    cpu = shim.constants()["device_type_cpu"]
    f32 = shim.constants()["dtype_float32"]
    with pytest.raises(aotishim.ShimError, match="invalid device index -7"):
        _core.empty_strided([2], None, f32, cpu, -7)
    with pytest.raises(aotishim.ShimError, match="unsupported dtype 99"):
        _core.element_size(99)
    assert _core.element_size(f32) == 4
    t = shim.Tensor(_core.empty_strided([2], None, f32, cpu, -1))  # -1: the current device
    shim.delete(t)

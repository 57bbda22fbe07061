"""Real AOTInductor-compiled models: load, run (against eager), close, reload."""

from __future__ import annotations

import itertools
import os
import threading
from pathlib import Path

import numpy as np
import pytest

import aotishim
from models import SEED_MODELS


def live() -> int:
    return aotishim.memory_stats()["live_tensors"]


def released() -> int:
    return aotishim.memory_stats()["released_handles"]


def scope_ids() -> set[int]:
    return {s["id"] for s in aotishim.memory_stats()["scopes"]}


def run_and_check(model: aotishim.Model, c) -> float:
    return c.check(model(*c.inputs))


def test_seed_scenario_switching_models_and_reloading(compiled):
    """Six distinct models loaded, run, closed in turn for two rounds, then one
    reloaded 20 times: no failure, no leak, and constants blobs land on
    addresses used before (the reuse that broke address-keyed tracking)."""
    models = [compiled(name) for name in SEED_MODELS]
    base_live, base_scopes = live(), scope_ids()
    addresses: list[int] = []
    for _ in range(2):
        for c in models:
            m = aotishim.load(c.so)
            assert m.constants_address is not None
            addresses.append(m.constants_address)
            assert m.memory_stats["borrowed_storages"] == len(m.constant_names) > 0
            run_and_check(m, c)
            run_and_check(m, c)
            assert m.close() == []
            assert live() == base_live
    reload = models[1]
    for _ in range(20):
        with aotishim.load(reload.so) as m:
            addresses.append(m.constants_address)
            run_and_check(m, reload)
        assert m.leaks == []
        assert live() == base_live
    assert scope_ids() == base_scopes  # every model's scope was forgotten
    # The hazard needs a new model's constants at an address an earlier,
    # destroyed model used; make sure this run really exercised it.
    # (Not under AddressSanitizer, whose quarantine never hands freed memory back.)
    if not os.environ.get("AOTISHIM_SANITIZED"):
        assert len(set(addresses)) < len(addresses), "no constants address was ever reused"


@pytest.mark.parametrize("count", [2, 3])
def test_models_alive_together_closed_in_any_order(compiled, count):
    chosen = [compiled(name) for name in SEED_MODELS[:count]]
    base_live = live()
    for order in itertools.permutations(range(count)):
        loaded = [aotishim.load(c.so) for c in chosen]
        for m, c in zip(loaded, chosen):
            run_and_check(m, c)
        closed: set[int] = set()
        for index in order:
            assert loaded[index].close() == []
            closed.add(index)
            for j, (m, c) in enumerate(zip(loaded, chosen)):
                if j not in closed:
                    run_and_check(m, c)  # survivors untouched by the close
        assert live() == base_live


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", ["linear_chunk_last_dim", "linear_chunk_first_dim"])
def test_linear_chunk_equals_eager(compiled, name, dtype):
    c = compiled(name, dtype)
    with aotishim.load(c.so) as m:
        for _ in range(3):
            outputs = m(*c.inputs)
            assert all(o.dtype == np.dtype(c.expected[0].dtype) for o in outputs)
            c.check(outputs)


def wrapper_source(so: Path) -> str:
    """The generated C++ of a compiled test model, from Inductor's cache (the
    ``model_cache`` fixture points TORCHINDUCTOR_CACHE_DIR there): the
    ``.wrapper.cpp`` beside the ``.wrapper.so`` whose bytes are the model's."""
    cache = Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
    code = so.read_bytes()
    for library in cache.rglob("*.wrapper.so"):
        if library.stat().st_size == len(code) and library.read_bytes() == code:
            return library.with_suffix(".cpp").read_text()
    pytest.fail(f"the source of {so.name} is not in Inductor's cache {cache}; "
                "delete the model cache to compile it again")


def test_repeated_output_in_non_adjacent_slots(compiled):
    c = compiled("repeated_output")
    # What this test is about: the compiled model puts ONE handle in slots 0
    # and 2 (had Inductor emitted a copy, nothing below would exercise the
    # last-slot rule).
    source = wrapper_source(c.so)
    assert "output_handles[2] = output_handles[0];" in source
    assert "output_handles[1] = output_handles[0];" not in source
    base_live = live()
    with aotishim.load(c.so) as m:
        deltas = []
        for _ in range(3):
            before = released()
            outputs = m(*c.inputs)
            deltas.append(released() - before)
            c.check(outputs)
            np.testing.assert_array_equal(outputs[0], outputs[2])
            assert live() == base_live + len(m.constant_names)
        # Same handles released every run: the input, the model's temporaries and the
        # two distinct outputs, each once. Deleting slot 2 as well would fail the run
        # (the registry rejects a dead handle) or raise this count.
        assert deltas[0] == deltas[1] == deltas[2]
    assert m.leaks == []
    assert live() == base_live


def test_output_that_is_a_constant(compiled):
    c = compiled("constant_output")
    base_live = live()
    with aotishim.load(c.so) as m:
        stats = m.memory_stats
        for _ in range(3):
            c.check(m(*c.inputs))  # the weight survives its returned copy
        assert m.memory_stats == stats
    assert m.leaks == []
    assert live() == base_live


def test_weights_that_are_views_into_one_buffer(compiled):
    """Weights at storage offsets inside one shared buffer (as torch lays out
    an RNN's parameters on cuda) are reinterpreted relative to where each
    weight starts; reading from the buffer's start gave wrong numbers."""
    c = compiled("shared_buffer_weights")
    with aotishim.load(c.so) as m:
        for _ in range(2):
            c.check(m(*c.inputs))
    assert m.leaks == []


def test_output_that_aliases_an_input(compiled):
    """The model returns its input handle as output 0. When that input borrows
    the caller's array, Model::run must hand back a copy (its clone of outputs
    over storage the model does not own), never a view of the array."""
    from aotishim import shim

    c = compiled("alias_input")
    base_live = live()
    m = aotishim.load(c.so)
    results = []
    for _ in range(3):
        x = c.inputs[0].copy()
        start, end = x.ctypes.data, x.ctypes.data + x.nbytes
        borrowed = shim.from_numpy(x)  # no copy: the tensor is a view of x's memory
        assert not borrowed.owns_storage and borrowed.data_ptr == start
        outputs = m.run_tensors(borrowed)
        assert not borrowed.is_live  # consumed
        alias = outputs[0]
        assert not start <= alias.data_ptr < end, "output 0 is a view of the caller's array"
        assert alias.owns_storage
        c.check(tuple(t.numpy() for t in outputs))
        x[...] = np.nan  # the caller reuses its array: the output must not see it
        del x
        results.append(outputs)
    assert m.close() == []
    for outputs in results:
        c.check(tuple(t.numpy() for t in outputs))  # valid without the input and the model
        for t in outputs:
            shim.delete(t)
    assert live() == base_live


def test_non_contiguous_inputs(compiled):
    c = compiled("mlp")
    x = c.inputs[0]
    transposed = np.asfortranarray(x)
    strided = np.zeros((x.shape[0] * 2, x.shape[1] * 3), dtype=x.dtype)[::2, ::3]
    strided[...] = x
    reversed_rows = x[::-1].copy()[::-1]  # negative strides
    with aotishim.load(c.so) as m:
        broadcast = np.broadcast_to(x[:1], x.shape)  # stride 0
        c_b = m(np.ascontiguousarray(broadcast))
        np.testing.assert_array_equal(m(broadcast)[0], c_b[0])
        for arr in (transposed, strided, reversed_rows):
            assert not arr.flags.c_contiguous
            np.testing.assert_array_equal(arr, x)
            c.check(m(arr))


def test_properties_and_close_semantics(compiled):
    c = compiled("mlp")
    m = aotishim.load(c.so)
    assert m.device == "cpu"
    assert len(m.input_names) == 1 and len(m.output_names) == 1
    assert m.constant_names and all(n.startswith(("fc1_", "fc2_")) for n in m.constant_names)
    assert m.input_specs[0].shape == c.inputs[0].shape
    assert m.weights_path.endswith(".weights.blob")
    assert m.constants_blob_size > 0
    assert m.memory_stats["tensors"] == len(m.constant_names)
    assert m.close() == []
    assert m.close() == []  # idempotent
    assert m.closed
    with pytest.raises(aotishim.ModelError, match="closed"):
        m(*c.inputs)
    with pytest.raises(aotishim.ModelError, match="closed"):
        with m:
            pass


def test_closing_one_model_keeps_another_instance_of_the_same_file(compiled):
    c = compiled("softmax_head")
    a, b = aotishim.load(c.so), aotishim.load(c.so)
    assert a.scope != b.scope
    run_and_check(a, c)
    a.close()
    for _ in range(3):
        run_and_check(b, c)
    b.close()


def test_threads_run_models_concurrently(compiled):
    chosen = [compiled(name) for name in ("mlp", "residual_norm")]
    loaded = [aotishim.load(c.so) for c in chosen]
    errors: list[BaseException] = []

    def work(m, c):
        try:
            for _ in range(25):
                run_and_check(m, c)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(loaded[i % 2], chosen[i % 2])) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for m in loaded:
        assert m.close() == []


def test_pt2_package_loads(compiled, tmp_path):
    import zipfile

    c = compiled("residual_norm")
    package = tmp_path / "residual.pt2"
    blob = c.so.with_name(c.so.stem + ".weights.blob")
    with zipfile.ZipFile(package, "w") as z:
        z.writestr("residual/archive_format", "pt2")
        z.write(c.so, "residual/data/aotinductor/model/abc.wrapper.so")
        z.write(blob, "residual/data/aotinductor/model/abc.wrapper_weights.blob")
    with aotishim.load(package) as m:
        assert m.input_specs is None  # a package carries no spec file
        assert m.weights_path == f"{package}!residual/data/aotinductor/model/abc.wrapper_weights.blob"
        run_and_check(m, c)
    assert m.leaks == []


@pytest.mark.parametrize("name", ["linear_chunk_last_dim", "repeated_output", "constant_output",
                                  "alias_input"])
def test_run_on_tensor_handles(compiled, name):
    """The handle API: inputs consumed, each output a distinct caller-owned
    handle that outlives the model (borrowed outputs are copied)."""
    from aotishim import shim

    c = compiled(name)
    base_live = live()
    m = aotishim.load(c.so)
    inputs = [shim.from_numpy(x, copy=True) for x in c.inputs]
    outputs = m.run_tensors(*inputs)
    assert not any(t.is_live for t in inputs)
    assert len({t.handle for t in outputs}) == len(outputs)
    assert m.close() == []
    c.check(tuple(t.numpy() for t in outputs))  # still valid after close
    for t in outputs:
        shim.delete(t)
    assert live() == base_live


def test_run_on_tensor_handles_consumes_inputs_on_failure(compiled):
    from aotishim import shim

    c = compiled("mlp")
    base_live = live()
    with aotishim.load(c.so) as m:
        bad = shim.from_numpy(np.zeros((5, 9), np.float32), copy=True)
        with pytest.raises(aotishim.ModelError, match="input"):
            m.run_tensors(bad)
        assert not bad.is_live
        extra = [shim.from_numpy(x, copy=True) for x in c.inputs * 2]
        with pytest.raises(aotishim.ModelError, match=r"takes 1 input\(s\), got 2"):
            m.run_tensors(*extra)
        assert not any(t.is_live for t in extra)
    assert live() == base_live


def test_leftovers_in_a_models_scope_are_reported_as_leaks(compiled):
    """Whatever is still in a model's scope after its container is deleted is
    freed and reported; another model's tensors are not touched."""
    from aotishim import _core, shim

    c = compiled("mlp")
    other = aotishim.load(c.so)
    m = aotishim.load(c.so)
    stray = _core.in_scope(m.scope, lambda: shim.empty_strided([4, 4], dtype="float32"))
    assert m.memory_stats["tensors"] == len(m.constant_names) + 1
    with pytest.warns(aotishim.LeakWarning, match="1 tensor"):
        leaks = m.close()
    assert len(leaks) == 1 and m.leaks == leaks
    assert not stray.is_live
    run_and_check(other, c)
    assert other.close() == []


def test_model_file_replaced_in_place_loads_the_new_model(compiled, tmp_path):
    """Compiling again into the same path must not hand back the old library
    (the loader caches libraries by path, and model libraries stay loaded)."""
    import shutil

    first, second = compiled("mlp"), compiled("softmax_head")
    target = tmp_path / "model.so"

    def install(c) -> None:
        for suffix in (".weights.blob", ".spec.json", ".so"):
            staged = tmp_path / f"staged{suffix}"
            shutil.copy(c.so.with_name(c.so.stem + suffix), staged)
            staged.replace(tmp_path / f"model{suffix}")  # atomically, like export.compile

    install(first)
    old = aotishim.load(target)
    run_and_check(old, first)
    install(second)
    with aotishim.load(target) as new:
        run_and_check(new, second)
        run_and_check(old, first)  # the old one still runs its own code
    assert old.close() == []

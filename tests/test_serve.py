"""The Ray Serve deployment on a local cluster: routing by model ID over
HTTP (loopback only), eviction closing models, 4xx for what a client must
fix, request batching, the handle's payload kinds, and a killed replica
being replaced."""

from __future__ import annotations

import concurrent.futures
import io
import json
import shutil
import socket
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray")
serve = pytest.importorskip("ray.serve")

import models  # noqa: E402  (tests/models.py)

from aotishim.model import PACKAGE_MODEL_DIR  # noqa: E402

APP = "aotishim-test"
MAX_MODELS = 2
TIMEOUT_S = 30  # per HTTP request


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _copy_so(so: Path, store: Path, model_id: str) -> None:
    for suffix in (".so", ".weights.blob", ".spec.json"):
        src = so.with_name(so.stem + suffix)
        if src.exists():
            shutil.copy(src, store / (model_id + suffix))


def _write_pt2(so: Path, target: Path) -> None:
    """A .pt2 package laid out as aoti_compile_and_package lays it out."""
    with zipfile.ZipFile(target, "w") as z:
        z.write(so, f"m/{PACKAGE_MODEL_DIR}m.wrapper.so")
        z.write(so.with_name(so.stem + ".weights.blob"),
                f"m/{PACKAGE_MODEL_DIR}m.wrapper_weights.blob")


@pytest.fixture(scope="module")
def server(tmp_path_factory, model_cache):
    static = models.compile_model("mlp", model_cache)
    pair = models.compile_model("two_inputs", model_cache)
    dynamic = models.compile_dynamic("mlp", model_cache)
    store = tmp_path_factory.mktemp("store")
    _copy_so(static.so, store, "mlp")
    _copy_so(static.so, store, "mlp_copy")
    _copy_so(pair.so, store, "pair")
    _copy_so(dynamic.so, store, "dyn")
    _write_pt2(static.so, store / "packaged.pt2")
    (store / "broken.so").write_bytes(b"not a library")

    from aotishim.serve import build_app

    port = _free_port()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        handle = serve.run(build_app(str(store), replicas=1, max_models=MAX_MODELS,
                                     device="cpu", max_batch_size=8, batch_wait_s=0.05),
                           name=APP, route_prefix="/")
        yield {"url": f"http://127.0.0.1:{port}", "handle": handle, "static": static,
               "pair": pair, "dynamic": dynamic}
    finally:
        serve.shutdown()
        ray.shutdown()


def _request(url: str, body: bytes | None = None, model_id: str | None = None,
             media: str = "application/json") -> tuple[int, bytes, str]:
    headers = {"content-type": media}
    if model_id is not None:
        headers["serve_multiplexed_model_id"] = model_id
    req = urllib.request.Request(url, data=body, headers=headers,
                                 method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as r:
            return r.status, r.read(), r.headers.get("content-type", "")
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers.get("content-type", "")


def _post_json(server, model_id, *inputs) -> tuple[int, dict]:
    status, body, _ = _request(server["url"] + "/", json.dumps(
        {"inputs": [np.asarray(x).tolist() for x in inputs]}).encode(), model_id)
    return status, json.loads(body)


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _stats(server) -> dict:
    status, body, _ = _request(server["url"] + "/stats")
    assert status == 200, body
    return json.loads(body)


def _close(got, want) -> None:
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want.astype(np.float64),
                               rtol=1e-5, atol=1e-5)


def test_cli_refuses_a_missing_store_before_starting_ray(tmp_path, capsys):
    """First in this file, before the cluster of the tests below starts."""
    from aotishim.__main__ import main

    assert main(["serve", str(tmp_path / "missing")]) == 2  # a bad file: exit status 2
    assert "is not a folder" in capsys.readouterr().err
    assert not ray.is_initialized()


def test_store_reads_fsspec_urls(model_cache):
    fsspec = pytest.importorskip("fsspec")
    import aotishim
    from aotishim.serve import ModelStore, RequestError

    static = models.compile_model("mlp", model_cache)
    fs = fsspec.filesystem("memory")
    root = f"/store-{time.monotonic_ns()}"
    for suffix in (".so", ".weights.blob", ".spec.json"):
        fs.pipe(f"{root}/m{suffix}", static.so.with_name(static.so.stem + suffix).read_bytes())
    try:
        store = ModelStore(f"memory://{root}")
        assert store.model_ids() == ["m"]
        stored = store.resolve("m")
        path, tmp = store.local_copy(stored)
        try:
            with aotishim.load(path) as model:
                static.check(model(*static.inputs))
        finally:
            tmp.cleanup()
        assert not Path(tmp.name).exists()
        with pytest.raises(RequestError) as missing:
            store.resolve("other")
        assert missing.value.status == 404
        with pytest.raises(RequestError) as invalid:
            store.resolve("../m")
        assert invalid.value.status == 400
    finally:
        fs.rm(root, recursive=True)


def test_an_evicted_model_closes_once_its_runs_finish(model_cache):
    import aotishim
    from aotishim.serve.served_model import ServedModel, _Retired

    static = models.compile_model("mlp", model_cache)
    closed = []
    served = ServedModel("mlp", aotishim.load(static.so), on_close=lambda s, leaks:
                         closed.append(leaks))
    served.acquire()  # a request is running it
    served.__del__()  # what Ray's multiplexer calls on eviction
    assert not served.model.closed and closed == []
    with pytest.raises(_Retired):  # a later request looks the model up again
        served.acquire()
    static.check(served.model(*static.inputs))  # the running request finishes its run
    served.release()
    assert served.model.closed and closed == [[]]
    served.__del__()  # the finalizer later: nothing more
    assert closed == [[]]


def test_requests_route_by_model_id(server):
    static, pair, dynamic = server["static"], server["pair"], server["dynamic"]
    status, out = _post_json(server, "mlp", *static.inputs)
    assert status == 200, out
    assert out["model"] == "mlp" and out["dtypes"] == ["float32"]
    _close(out["outputs"][0], static.expected[0])

    # .npy in, .npy out; a different model behind a different ID
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    status, body, media = _request(server["url"] + "/", _npy(x), "dyn", "application/x-npy")
    assert status == 200, body
    assert media == "application/x-npy"
    _close(np.load(io.BytesIO(body)), dynamic.eager(x)[0])

    # two inputs as .npz, two outputs back as .npz
    buffer = io.BytesIO()
    np.savez(buffer, *pair.inputs)
    status, body, media = _request(server["url"] + "/", buffer.getvalue(), "pair",
                                   "application/x-npy")
    assert status == 200, body
    with np.load(io.BytesIO(body)) as got:
        assert got.files == ["output0", "output1"]
        for i, want in enumerate(pair.expected):
            _close(got[f"output{i}"], want)

    # a .pt2 package from the store
    status, out = _post_json(server, "packaged", *static.inputs)
    assert status == 200, out
    _close(out["outputs"][0], static.expected[0])

    status, body, _ = _request(server["url"] + "/models")
    assert json.loads(body)["models"] == ["broken", "dyn", "mlp", "mlp_copy", "packaged", "pair"]


def test_eviction_closes_models(server):
    static = server["static"]
    before = _stats(server)
    order = ["mlp", "mlp_copy", "pair", "mlp", "packaged", "mlp_copy"]
    for model_id in order:
        inputs = server["pair"].inputs if model_id == "pair" else static.inputs
        status, out = _post_json(server, model_id, *inputs)
        assert status == 200, (model_id, out)
    after = _stats(server)
    assert len(after["loaded"]) == MAX_MODELS
    assert set(after["loaded"]) == {"packaged", "mlp_copy"}
    evicted = after["evictions"] - before["evictions"]
    assert evicted >= len(order) - MAX_MODELS - 1  # at most one of them was still loaded
    # every evicted model was closed through Model.close, leaving nothing behind
    assert after["closed"] == after["evictions"]
    assert after["leaked_tensors"] == 0
    # aotishim's memory: the baseline plus exactly what the loaded models hold
    memory, baseline = after["memory"], after["baseline"]
    assert memory["model_scopes"] == baseline["model_scopes"] + MAX_MODELS
    held = after["models"]
    assert memory["live_tensors"] == baseline["live_tensors"] + sum(
        m["tensors"] for m in held.values())
    assert memory["owned_bytes"] == baseline["owned_bytes"] + sum(
        m["owned_bytes"] for m in held.values())


def test_errors_are_client_errors(server):
    static = server["static"]
    url = server["url"] + "/"
    body = json.dumps({"inputs": [static.inputs[0].tolist()]}).encode()
    cases = [
        ("unknown model", _request(url, body, "no_such_model"), 404, "not in the store"),
        ("invalid model ID", _request(url, body, "../mlp"), 400, "invalid model ID"),
        ("no model ID", _request(url, body), 400, "no model ID"),
        ("not JSON", _request(url, b"{nope", "mlp"), 400, "not valid JSON"),
        ("JSON without inputs", _request(url, b"[1, 2]", "mlp"), 400, '{"inputs"'),
        ("ragged lists", _request(url, b'{"inputs": [[[1, 2], [3]]]}', "mlp"), 400,
         "not a rectangular list"),
        ("strings", _request(url, b'{"inputs": [["a"]]}', "mlp"), 400, "list of numbers"),
        ("not .npy", _request(url, b"\x93NUMPY garbage", "mlp", "application/x-npy"), 400,
         "neither .npy nor .npz"),
        ("wrong shape", _request(url, _npy(np.zeros((2, 8), np.float32)), "mlp",
                                 "application/x-npy"), 422, "dimension 0 must be 5"),
        ("wrong dtype", _request(url, _npy(static.inputs[0].astype(np.float64)), "mlp",
                                 "application/x-npy"), 422, "dtype float64"),
        ("too many inputs", _request(url, json.dumps(
            {"inputs": [static.inputs[0].tolist()] * 2}).encode(), "mlp"), 422,
         "takes 1 input"),
        ("beyond the batch bound", _request(url, _npy(np.zeros((65, 8), np.float32)), "dyn",
                                            "application/x-npy"), 422, "64"),
        ("a model that fails to load", _request(url, body, "broken"), 422,
         "cannot be loaded"),
        ("the same again", _request(url, body, "broken"), 422, "cannot be loaded"),
        ("unknown route", _request(server["url"] + "/nowhere"), 404, "GET /stats"),
    ]
    for what, (status, reply, _), want_status, want_text in cases:
        message = json.loads(reply)["error"]
        assert status == want_status, (what, status, message)
        assert want_text in message, (what, message)
    # the replica is still serving
    status, out = _post_json(server, "mlp", *static.inputs)
    assert status == 200, out
    _close(out["outputs"][0], static.expected[0])


def test_failed_load_evicts_nothing_the_second_time(server):
    static = server["static"]
    for model_id in ("mlp", "mlp_copy"):
        assert _post_json(server, model_id, *static.inputs)[0] == 200
    assert _post_json(server, "broken", *static.inputs)[0] == 422  # known to fail by now
    assert set(_stats(server)["loaded"]) == {"mlp", "mlp_copy"}


def test_requests_are_batched(server):
    dynamic = server["dynamic"]
    rng = np.random.default_rng(1)
    requests = [rng.standard_normal((n, 8)).astype(np.float32) for n in (1, 3, 2, 5, 4, 1, 2, 6)]
    before = _stats(server)

    def call(x):
        return _request(server["url"] + "/", _npy(x), "dyn", "application/x-npy")

    with concurrent.futures.ThreadPoolExecutor(len(requests)) as pool:
        replies = list(pool.map(call, requests, timeout=4 * TIMEOUT_S))
    for x, (status, body, _) in zip(requests, replies):
        assert status == 200, body
        got = np.load(io.BytesIO(body))
        assert got.shape == (x.shape[0], 4)
        _close(got, dynamic.eager(x)[0])
    after = _stats(server)
    assert after["largest_batch"] > 1
    assert after["batches"] - before["batches"] < len(requests)


def test_handle_returns_what_it_was_given(server):
    static = server["static"]
    handle = server["handle"].options(multiplexed_model_id="mlp")
    x = static.inputs[0]
    arrays = handle.infer.remote([x]).result(timeout_s=TIMEOUT_S)
    assert isinstance(arrays[0], np.ndarray)
    _close(arrays[0], static.expected[0])
    lists = handle.infer.remote([x.tolist()]).result(timeout_s=TIMEOUT_S)
    assert isinstance(lists[0], list)
    _close(lists[0], static.expected[0])
    refs = handle.infer.remote([ray.put(x)]).result(timeout_s=TIMEOUT_S)
    assert isinstance(refs[0], ray.ObjectRef)
    _close(ray.get(refs[0], timeout=TIMEOUT_S), static.expected[0])

    from aotishim.serve import RequestError

    with pytest.raises(RequestError, match="dimension 0 must be 5"):
        handle.infer.remote([x[:2]]).result(timeout_s=TIMEOUT_S)
    with pytest.raises(RequestError, match="not in the store"):
        server["handle"].options(multiplexed_model_id="nope").infer.remote([x]).result(
            timeout_s=TIMEOUT_S)


def test_killed_replica_is_replaced(server):
    """Runs last in this file: the replica it kills is replaced by a fresh one."""
    static = server["static"]
    assert _post_json(server, "mlp", *static.inputs)[0] == 200
    old = _stats(server)
    ray.kill(ray.get_actor(old["actor_name"], namespace="serve"), no_restart=True)
    deadline = time.monotonic() + 90
    status = None
    for _ in range(200):  # bounded in count and in time
        if time.monotonic() > deadline:
            break
        try:
            status, out = _post_json(server, "mlp", *static.inputs)
        except (urllib.error.URLError, OSError, ValueError):
            status = None
        if status == 200:
            break
        time.sleep(0.5)
    assert status == 200, "no replica answered after the kill"
    _close(out["outputs"][0], static.expected[0])
    new = _stats(server)
    assert new["replica"] != old["replica"]
    assert new["loaded"] == ["mlp"] and new["loads"] == 1
    for _ in range(5):  # and it keeps serving
        assert _post_json(server, "dyn", static.inputs[0][:3])[0] == 200


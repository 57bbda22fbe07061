"""The Ray Serve deployment: models by ID from a store, an LRU set of them per
replica (``@serve.multiplexed``), optional request batching (``@serve.batch``)
for models whose spec has a batch dimension."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import ray
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

import aotishim
from ..model import Model, ModelError
from . import payloads
from .errors import RequestError
from .served_model import ServedModel, _Retired
from .store import ModelStore, check_model_id

logger = logging.getLogger("aotishim.serve")

# The header Ray's proxy routes multiplexed requests by.
MODEL_ID_HEADER = "serve_multiplexed_model_id"

# How often a request looks its model up again when it was evicted between
# the lookup and the run (each time it is loaded afresh).
_LOOKUPS = 3


def pick_device(device: str) -> str:
    """``"auto"``: the replica's GPU when Ray gave it one, else the cpu."""
    if device == "auto":
        device = "cuda:0" if ray.get_gpu_ids() else "cpu"  # Ray sets CUDA_VISIBLE_DEVICES
    if device not in aotishim.devices():
        raise ValueError(f"device {device!r} is not available to aotishim here "
                         f"({', '.join(aotishim.devices())})")
    return device


def memory_summary() -> dict:
    """What aotishim holds in this process, summed over scopes and devices."""
    stats = aotishim.memory_stats()
    return {
        "live_tensors": stats["live_tensors"],
        "model_scopes": sum(1 for s in stats["scopes"] if s["name"].startswith("model ")),
        "owned_bytes": sum(s["owned_bytes"] for s in stats["scopes"]),
        "device_bytes": sum(d["bytes"] for d in stats["devices"]),
    }


def rss_bytes() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


@serve.deployment(max_ongoing_requests=16)
class ModelServer:
    """Serves the models of a :class:`~aotishim.serve.store.ModelStore` by ID.

    Over HTTP: ``POST /`` with the model ID in the ``serve_multiplexed_model_id``
    header, a JSON body ``{"inputs": [...]}`` or ``.npy``/``.npz`` bytes
    (``Content-Type: application/x-npy``); ``GET /stats`` and ``GET /models``.
    Through a handle: ``handle.options(multiplexed_model_id=ID).infer.remote(inputs)``
    with a list of arrays, nested lists or object refs, and ``stats.remote()``.
    """

    def __init__(self, store: str, *, max_models: int = 3, device: str = "auto",
                 max_batch_size: int = 0, batch_wait_s: float = 0.005) -> None:
        self._store = ModelStore(store)
        self._device = pick_device(device)
        self._baseline = memory_summary()
        # Written from Ray's unload thread (an evicted model's __del__) as well
        # as the event loop.
        self._loaded: dict[str, ServedModel] = {}
        self._loaded_lock = threading.Lock()
        # Models that failed to load, by their files' signature: asked for
        # again unchanged, they are refused at once, without the multiplexer
        # evicting a model to make room for a load that would fail again.
        self._failed: dict[str, tuple[tuple, str]] = {}
        self._counts = {"loads": 0, "load_failures": 0, "evictions": 0, "closed": 0,
                        "leaked_tensors": 0, "requests": 0, "batches": 0, "largest_batch": 0}
        self._batching = max_batch_size > 1
        if self._batching:
            self._run_batch.set_max_batch_size(max_batch_size)
            self._run_batch.set_batch_wait_timeout_s(batch_wait_s)

        # Decorated here, not on the class, so the LRU size is this
        # deployment's argument; a plain function holds the wrapper.
        async def load(model_id: str) -> ServedModel:
            return await self._load(model_id)

        self._get_model = serve.multiplexed(max_num_models_per_replica=max_models)(load)

    # ---- models ----
    def open_model(self, path: Path) -> Model:
        """Loads one model file on the replica's device (blocking). A subclass
        may load with another runtime: the result needs ``run``, ``close``,
        ``input_names``, ``input_specs``, ``spec`` and ``memory_stats``."""
        return aotishim.load(path, device=self._device)

    async def _load(self, model_id: str) -> ServedModel:
        # Off the event loop: a remote store answers over the network.
        stored = await asyncio.to_thread(self._store.resolve, model_id)
        signature = await asyncio.to_thread(self._store.signature, stored)
        try:
            path, tmp = await asyncio.to_thread(self._store.local_copy, stored)
        except OSError as e:
            self._counts["load_failures"] += 1
            raise RequestError(422, f"model {model_id!r} cannot be read from the store: {e}") \
                from None
        try:
            model = await asyncio.to_thread(self.open_model, path)
        except ModelError as e:
            self._counts["load_failures"] += 1
            message = f"model {model_id!r} cannot be loaded on {self._device}: {e}"
            self._failed[model_id] = (signature, message)
            raise RequestError(422, message) from None
        finally:
            if tmp is not None:
                tmp.cleanup()
        self._failed.pop(model_id, None)
        self._counts["loads"] += 1
        served = ServedModel(model_id, model, on_close=self._closed, on_retire=self._retired)
        with self._loaded_lock:
            self._loaded[model_id] = served
        return served

    def _closed(self, served: ServedModel, leaks: list[str]) -> None:
        with self._loaded_lock:
            self._counts["closed"] += 1
            self._counts["leaked_tensors"] += len(leaks)

    def _retired(self, served: ServedModel) -> None:
        with self._loaded_lock:
            if self._loaded.get(served.model_id) is served:
                del self._loaded[served.model_id]
                self._counts["evictions"] += 1

    async def _model(self, model_id: str) -> ServedModel:
        check_model_id(model_id)
        with self._loaded_lock:
            loaded = model_id in self._loaded
        if not loaded:
            # Unknown IDs, and models that failed to load and are unchanged,
            # are refused before anything is evicted.
            stored = await asyncio.to_thread(self._store.resolve, model_id)
            failed = self._failed.get(model_id)
            if failed is not None and failed[0] == await asyncio.to_thread(
                    self._store.signature, stored):
                self._counts["load_failures"] += 1
                raise RequestError(422, failed[1])
        # Ray's multiplexer retires an evicted model through ServedModel.__del__,
        # which updates what _loaded says.
        return await self._get_model(model_id)

    # ---- running ----
    async def _infer(self, model_id: str, arrays_for) -> tuple[tuple, ServedModel]:
        """Runs ``model_id`` on ``arrays_for(served)``; returns the outputs."""
        self._counts["requests"] += 1
        for _ in range(_LOOKUPS):
            served = await self._model(model_id)
            arrays = arrays_for(served)
            served.check(arrays)
            try:
                if self._batching and served.batch_symbol is not None:
                    result = await self._run_batch((served, arrays))
                    if isinstance(result, BaseException):
                        raise result
                    return result, served
                return await asyncio.to_thread(served.run, arrays), served
            except _Retired:
                continue
        raise RuntimeError(f"model {model_id!r} was evicted {_LOOKUPS} times before it ran; "
                           "raise max_models")

    @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.005)
    async def _run_batch(self, items: list[tuple[ServedModel, list[np.ndarray]]]) -> list[Any]:
        """Stacks requests for one model and input signature (beyond the batch
        dimension) along dimension 0, up to the spec's bound, runs each stack
        once and splits its outputs; a failure is every member's result."""
        self._counts["batches"] += 1
        self._counts["largest_batch"] = max(self._counts["largest_batch"], len(items))
        groups: dict[tuple, list[int]] = {}
        for index, (served, arrays) in enumerate(items):
            key = (id(served), tuple((a.shape[1:], a.dtype.str) for a in arrays))
            groups.setdefault(key, []).append(index)
        results: list[Any] = [None] * len(items)
        for members in groups.values():
            served = items[members[0]][0]
            limit = served.batch_symbol[1]
            chunk: list[int] = []
            rows = 0
            for index in members + [None]:
                n = None if index is None else items[index][1][0].shape[0]
                if chunk and (index is None or rows + n > limit):
                    await self._run_stack(served, [items[i][1] for i in chunk], chunk, results)
                    chunk, rows = [], 0
                if index is not None:
                    chunk.append(index)
                    rows += n
        return results

    async def _run_stack(self, served: ServedModel, requests: list[list[np.ndarray]],
                         indices: list[int], results: list[Any]) -> None:
        rows = [r[0].shape[0] for r in requests]
        stacked = [np.concatenate(column) for column in zip(*requests)]
        try:
            outputs = await asyncio.to_thread(served.run, stacked)
        except BaseException as e:  # noqa: BLE001 - handed to each waiting request
            for i in indices:
                results[i] = e
            return
        offsets = np.cumsum([0] + rows)
        for k, i in enumerate(indices):
            results[i] = tuple(None if o is None else o[offsets[k]:offsets[k + 1]]
                               for o in outputs)

    # ---- handle API ----
    async def infer(self, inputs: Sequence[Any]) -> list[Any]:
        """Runs the model of this request's multiplexed ID on ``inputs`` (a list,
        one per model input, of numpy arrays, nested lists or object refs of
        arrays). Returns the outputs as the inputs came: object refs if any
        input was one, else arrays if any was one, else nested lists. Raises
        :class:`RequestError` for what the caller must fix."""
        model_id = serve.get_multiplexed_model_id()
        if not model_id:
            raise RequestError(400, "no model ID: call handle.options(multiplexed_model_id=ID)")
        if not isinstance(inputs, (list, tuple)):
            raise RequestError(400, f"inputs must be a list (one entry per model input), "
                                    f"not {type(inputs).__name__}")
        kind = (payloads.REFS if any(isinstance(v, ray.ObjectRef) for v in inputs)
                else payloads.ARRAYS if any(isinstance(v, np.ndarray) for v in inputs)
                else payloads.JSON)
        values = [await v if isinstance(v, ray.ObjectRef) else v for v in inputs]

        def arrays_for(served: ServedModel) -> list[np.ndarray]:
            served.check_count(len(values))
            if kind == payloads.JSON:
                return [payloads.json_input(v, d, label) for v, d, label in
                        zip(values, served.input_dtypes(), served.labels())]
            for v, label in zip(values, served.labels()):
                if not isinstance(v, np.ndarray):
                    raise RequestError(400, f"{label} is a {type(v).__name__}, not an array")
            return list(values)

        outputs, _ = await self._infer(model_id, arrays_for)
        if kind == payloads.REFS:
            return [None if o is None else ray.put(o) for o in outputs]
        if kind == payloads.ARRAYS:
            return list(outputs)
        return [payloads.json_output(o) for o in outputs]

    def stats(self) -> dict:
        """This replica: its ID and process, models loaded now, loads,
        evictions, closes, and aotishim's memory now and before any model."""
        context = serve.get_replica_context()
        with self._loaded_lock:
            loaded = dict(self._loaded)
            counts = dict(self._counts)
        return {
            "replica": context.replica_id.unique_id,
            "actor_name": context.replica_id.to_full_id_str(),  # for ray.get_actor(namespace="serve")
            "pid": os.getpid(),
            "device": self._device,
            "time": time.time(),
            "loaded": sorted(loaded),
            **counts,
            "rss_bytes": rss_bytes(),
            "memory": memory_summary(),
            "baseline": self._baseline,
            "models": {i: s.model.memory_stats for i, s in loaded.items()},
        }

    # ---- HTTP ----
    async def __call__(self, request: Request) -> Response:
        try:
            return await self._http(request)
        except RequestError as e:
            return JSONResponse({"error": e.message}, status_code=e.status)
        except Exception as e:  # a server fault: reported, the replica keeps serving
            logger.exception("request failed")
            return JSONResponse({"error": f"{type(e).__name__}: {e}"}, status_code=500)

    async def _http(self, request: Request) -> Response:
        path = request.url.path.rstrip("/")
        if request.method == "GET":
            if path.endswith("/stats"):
                return JSONResponse(self.stats())
            if path.endswith("/models"):
                return JSONResponse({"models": self._store.model_ids()})
            raise RequestError(404, "GET /stats or /models; POST / runs a model")
        if request.method != "POST":
            raise RequestError(405, f"{request.method} is not supported; POST / runs a model")
        model_id = serve.get_multiplexed_model_id() or request.headers.get(MODEL_ID_HEADER, "")
        if not model_id:
            raise RequestError(400, f"no model ID: set the '{MODEL_ID_HEADER}' header")
        body = await request.body()
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media in payloads.NPY_TYPES:
            arrays, kind = payloads.decode_numpy(body)
            outputs, _ = await self._infer(model_id, lambda served: arrays)
            data, media_out = payloads.encode_numpy(outputs, kind)
            return Response(data, media_type=media_out)
        values = payloads.decode_json(body)

        def arrays_for(served: ServedModel) -> list[np.ndarray]:
            served.check_count(len(values))
            return [payloads.json_input(v, d, label) for v, d, label in
                    zip(values, served.input_dtypes(), served.labels())]

        outputs, _ = await self._infer(model_id, arrays_for)
        return Response(payloads.encode_json(model_id, outputs), media_type="application/json")


def build_app(store: str, *, replicas: int = 1, max_models: int = 3, device: str = "auto",
              max_batch_size: int = 0, batch_wait_s: float = 0.005, gpus_per_replica: float = 0,
              cpus_per_replica: float = 1):
    """The bound application: ``serve.run(build_app("models/"))``."""
    options: dict[str, Any] = {"num_replicas": replicas,
                               "ray_actor_options": {"num_cpus": cpus_per_replica,
                                                     "num_gpus": gpus_per_replica}}
    if max_batch_size > 1:
        options["max_ongoing_requests"] = max(16, 2 * max_batch_size)
    return ModelServer.options(**options).bind(
        str(store), max_models=max_models, device=device, max_batch_size=max_batch_size,
        batch_wait_s=batch_wait_s)

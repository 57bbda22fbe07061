"""``python -m aotishim serve``: the deployment on a local Ray cluster, until
interrupted or for a set time."""

from __future__ import annotations

import time

import aotishim
from .store import ModelStore

APP_NAME = "aotishim"


def serve_locally(store: str, *, host: str = "127.0.0.1", port: int = 8000, replicas: int = 1,
                  max_models: int = 3, device: str = "auto", max_batch_size: int = 0,
                  batch_wait_s: float = 0.005, duration_s: float | None = None,
                  num_cpus: int | None = None, ready=print) -> None:
    """Starts Ray and Serve, runs the application at ``http://host:port/``,
    blocks until Ctrl-C (or ``duration_s``), then shuts both down."""
    ModelStore(store)  # a bad store is reported before Ray starts
    if device == "auto":
        device = "cuda" if "cuda:0" in aotishim.devices() else "cpu"
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, not {device!r}")
    import ray
    from ray import serve

    from .deployment import build_app

    ray.init(num_cpus=num_cpus, include_dashboard=False, configure_logging=False)
    try:
        serve.start(http_options={"host": host, "port": port})
        app = build_app(store, replicas=replicas, max_models=max_models,
                        device="cuda:0" if device == "cuda" else "cpu",
                        gpus_per_replica=1 if device == "cuda" else 0,
                        max_batch_size=max_batch_size, batch_wait_s=batch_wait_s)
        serve.run(app, name=APP_NAME, route_prefix="/")
        ready(f"serving {store} at http://{host}:{port}/ ({replicas} replica(s) on {device}, "
              f"up to {max_models} model(s) each); POST with header "
              "'serve_multiplexed_model_id: ID'. Ctrl-C stops.")
        deadline = None if duration_s is None else time.monotonic() + duration_s
        try:
            while deadline is None or time.monotonic() < deadline:
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass
    finally:
        serve.shutdown()
        ray.shutdown()

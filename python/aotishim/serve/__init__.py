"""Serving aotishim models with Ray Serve (``pip install "aotishim[serve]"``).

``build_app(store, ...)`` is the application (:class:`ModelServer` bound to a
model store); ``python -m aotishim serve MODEL_DIR`` runs it on a local Ray
cluster. See README, "Serving many models (Ray Serve)".
"""

from __future__ import annotations

try:
    import ray  # noqa: F401
    from ray import serve as _serve  # noqa: F401
except ImportError as e:  # the optional extra is missing
    raise ImportError('aotishim.serve needs Ray Serve: pip install "aotishim[serve]"') from e

from .deployment import MODEL_ID_HEADER, ModelServer, build_app, memory_summary
from .errors import RequestError
from .store import ModelStore

__all__ = ["MODEL_ID_HEADER", "ModelServer", "ModelStore", "RequestError", "build_app",
           "memory_summary"]

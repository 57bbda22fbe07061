"""Import torchvision, also where its compiled extension cannot load.

The torchvision wheels on the package registry are linked against CUDA
torch. With a CPU-only torch their extension fails to load, and importing
torchvision then stops at its fake-tensor registrations for ``nms`` and
``qnms``, which need those operators' schemas to exist. The models are pure
Python and need neither operator, so when (and only when) the plain import
fails that way, the two schemas are declared here and the import is retried.
"""

from __future__ import annotations

import sys
from types import ModuleType

import torch

# Declared schemas live as long as their Library object: keep it for the process.
_library: "torch.library.Library | None" = None

_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)


def _has_op(name: str) -> bool:
    try:
        getattr(torch.ops.torchvision, name)
        return True
    except (AttributeError, RuntimeError):
        return False


def import_torchvision() -> ModuleType:
    """``torchvision``, imported; raises ImportError when it is not installed."""
    global _library
    try:
        import torchvision
        return torchvision
    except RuntimeError as first:
        if "torchvision::" not in str(first):
            raise
        # The failed import left its submodules half initialised: drop them.
        for key in [k for k in sys.modules if k == "torchvision" or k.startswith("torchvision.")]:
            del sys.modules[key]
        if _library is None:
            _library = torch.library.Library("torchvision", "FRAGMENT")
        for schema in _SCHEMAS:
            if not _has_op(schema.split("(", 1)[0]):
                _library.define(schema)
        import torchvision
        return torchvision

"""Shared pytest fixtures."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))  # tests/models.py


@pytest.fixture(scope="session")
def model_cache() -> Path:
    """Where compiled test models live across sessions (AOTISHIM_TEST_MODEL_CACHE,
    default build/test-models); Inductor's cache goes inside it."""
    path = Path(os.environ.get("AOTISHIM_TEST_MODEL_CACHE", ROOT / "build" / "test-models"))
    path.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(path / "inductor"))
    return path


@pytest.fixture(scope="session")
def compiled(model_cache: Path):
    """compiled(name, dtype="float32") -> models.Compiled, compiled once per cache."""
    pytest.importorskip("torch")
    import models
    import torch

    memo: dict[tuple[str, str], models.Compiled] = {}

    def get(name: str, dtype: str = "float32") -> models.Compiled:
        if (name, dtype) not in memo:
            memo[(name, dtype)] = models.compile_model(name, model_cache, getattr(torch, dtype))
        return memo[(name, dtype)]

    return get

"""Shared test configuration."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "aotishim", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "aotishim"))


@pytest.fixture(autouse=True)
def _clean_default_scope():
    """Each test starts and ends with an empty default scope."""
    import aotishim

    aotishim.cleanup_memory()
    yield
    aotishim.cleanup_memory()


# ---- compiled models (tests/test_model*.py) ----
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

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

    memo: dict = {}

    def get(name: str, dtype: str = "float32"):
        if (name, dtype) not in memo:
            memo[(name, dtype)] = models.compile_model(name, model_cache, getattr(torch, dtype))
        return memo[(name, dtype)]

    return get


@pytest.fixture(scope="session")
def compiled_dynamic(model_cache: Path):
    """compiled_dynamic(name) -> models.CompiledDynamic (models.DYNAMIC), compiled once per cache."""
    pytest.importorskip("torch")
    import models

    memo: dict = {}

    def get(name: str):
        if name not in memo:
            memo[name] = models.compile_dynamic(name, model_cache)
        return memo[name]

    return get

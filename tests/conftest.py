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

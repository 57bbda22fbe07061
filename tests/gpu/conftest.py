"""Fixtures of the GPU tests."""

from __future__ import annotations

import pytest

import cuda_helpers


@pytest.fixture(autouse=True)
def _release_borrowed_tensors():
    """The torch tensors a test borrowed live until it ends (cuda_helpers.borrow)."""
    yield
    cuda_helpers.BORROWED.clear()

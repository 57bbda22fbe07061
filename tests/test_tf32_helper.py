"""tests/tf32.py's tf32_off(): TF32 off inside, every flag back after, also
once torch.testing's internals have frozen torch.backends.cudnn's flags (the
state every test module that imports OpInfo leaves behind)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

SCRIPT = r"""
import sys
sys.path.insert(0, {tests!r})
import torch
from tf32 import tf32_off

cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
if {frozen}:
    import torch.testing._internal.common_utils  # noqa: F401  (freezes cudnn's flags)
    assert torch.backends.flags_frozen()
matmul.allow_tf32 = True
before = (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32)
with tf32_off():
    assert not cudnn.allow_tf32 and not matmul.allow_tf32
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == before[:3]
assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == before
assert matmul.allow_tf32
print("ok")
"""


@pytest.mark.parametrize("frozen", [False, True], ids=["plain", "after-torch-testing-import"])
def test_tf32_off_sets_and_restores_the_flags(frozen):
    pytest.importorskip("expecttest")  # torch.testing's internals import it
    tests = str(Path(__file__).parent)
    run = subprocess.run([sys.executable, "-c", SCRIPT.format(tests=tests, frozen=frozen)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr

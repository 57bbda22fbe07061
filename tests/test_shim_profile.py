"""aotishim.shim_profile: calls and host time per C entry point, recorded
only in a process started with AOTISHIM_PROFILE_SHIMS=1 (each case runs a
fresh interpreter, since the switch is read once)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import aotishim

# The package this test imported (the source tree's, or an installed one).
PACKAGE_PARENT = Path(aotishim.__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import aotishim
    so, inputs = sys.argv[1], json.loads(sys.argv[2])
    arrays = [np.asarray(a, dtype=np.float32) for a in inputs]
    with aotishim.load(so) as m:
        m.run(*arrays)
        aotishim.shim_profile(reset=True)
        for _ in range(3):
            m.run(*arrays)
        rows = aotishim.shim_profile()
    print(json.dumps(rows))
""")


def profile_rows(c, switch: str | None) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_PARENT))
    env.pop("AOTISHIM_PROFILE_SHIMS", None)
    if switch is not None:
        env["AOTISHIM_PROFILE_SHIMS"] = switch
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(c.so), json.dumps([x.tolist() for x in c.inputs])],
        capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_profile_counts_each_entry_point_per_run(compiled):
    rows = profile_rows(compiled("mlp"), "1")
    by_name = {r["name"]: r for r in rows}
    run = next(r for name, r in by_name.items() if name.startswith("model run"))
    assert run["calls"] == 3  # the reset dropped the first run
    # The model's linear layers call addmm through the shim, once per layer per run.
    assert by_name["aoti_torch_cpu_addmm_out"]["calls"] % 3 == 0
    assert by_name["aoti_torch_cpu_addmm_out"]["calls"] > 0
    assert all(r["seconds"] >= 0 for r in rows)
    # Most time first, and the whole run holds the entry points it called.
    assert [r["seconds"] for r in rows] == sorted((r["seconds"] for r in rows), reverse=True)
    assert run["seconds"] >= by_name["aoti_torch_cpu_addmm_out"]["seconds"]


def test_profile_is_empty_unless_switched_on(compiled):
    assert profile_rows(compiled("mlp"), None) == []
    assert profile_rows(compiled("mlp"), "0") == []

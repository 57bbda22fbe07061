"""What the zoo benchmarks (coverage.py, cuda_zoo.py) keep on disk and how
they compare: input and output sets as .npz (bfloat16 stored as its bits),
and the error of a model's outputs relative to eager's."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np


def save_sets(path: Path, sets: list[list[np.ndarray]]) -> None:
    """Writes the sets atomically (a reader never sees half a file)."""
    arrays, kinds = {}, {}
    for i, one in enumerate(sets):
        for j, a in enumerate(one):
            key = f"a{i}_{j}"
            kinds[key] = a.dtype.name
            arrays[key] = a.view(np.uint16) if a.dtype.name == "bfloat16" else a
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, __kinds__=np.array(json.dumps(kinds)), **arrays)
    os.replace(tmp, path)


def load_sets(path: Path) -> list[list[np.ndarray]]:
    import ml_dtypes

    with np.load(path) as data:
        kinds = json.loads(str(data["__kinds__"]))
        sets: dict[int, dict[int, np.ndarray]] = {}
        for key, kind in kinds.items():
            i, j = (int(x) for x in key[1:].split("_"))
            a = data[key]
            sets.setdefault(i, {})[j] = a.view(ml_dtypes.bfloat16) if kind == "bfloat16" else a
    return [[s[j] for j in sorted(s)] for _, s in sorted(sets.items())]


def max_error(outputs, expected) -> float:
    """Largest error over outputs, each relative to max |expected| of that
    output (1 when that is 0); shape or count mismatches, and non-finite
    values where eager has finite ones (or the reverse), are infinite."""
    if len(outputs) != len(expected):
        return float("inf")
    worst = 0.0
    for o, e in zip(outputs, expected):
        if o is None or tuple(o.shape) != tuple(e.shape):
            return float("inf")
        o64, e64 = np.asarray(o, np.float64), np.asarray(e, np.float64)
        finite = np.isfinite(e64)
        same_specials = np.array_equal(o64[~finite], e64[~finite], equal_nan=True)
        if not same_specials or not np.all(np.isfinite(o64[finite])):
            return float("inf")
        if not finite.any():
            continue
        scale = float(np.max(np.abs(e64[finite]))) or 1.0
        worst = max(worst, float(np.max(np.abs(o64[finite] - e64[finite]))) / scale)
    return worst

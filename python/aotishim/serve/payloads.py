"""Request and response bodies: JSON lists, numpy ``.npy``/``.npz`` bytes,
numpy arrays and Ray object refs (through a deployment handle).

A response is of the kind its request was: JSON for JSON, ``.npy`` bytes for
``.npy`` bytes (``.npz`` when the model has several outputs, or the request
was ``.npz``), arrays for arrays, object refs for object refs.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import numpy as np

from .._dtypes import dtype_code, numpy_dtype
from .errors import RequestError

JSON, NPY, NPZ, ARRAYS, REFS = "json", "npy", "npz", "arrays", "refs"

NPY_TYPES = ("application/x-npy", "application/octet-stream", "application/x-npz")


def decode_json(body: bytes) -> list[Any]:
    """The per-input values of ``{"inputs": [value, ...]}``."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, ValueError) as e:
        raise RequestError(400, f"the body is not valid JSON: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("inputs"), list):
        raise RequestError(400, 'a JSON request is {"inputs": [input0, input1, ...]}, each input '
                                "a (nested) list of numbers")
    return data["inputs"]


def decode_numpy(body: bytes) -> tuple[list[np.ndarray], str]:
    """Arrays from ``.npy`` bytes (one input) or ``.npz`` bytes (one array per
    input, in the archive's order), and which of the two it was."""
    try:
        loaded = np.load(io.BytesIO(body), allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise RequestError(400, f"the body is neither .npy nor .npz bytes "
                                f"(without pickled objects): {e}") from None
    if isinstance(loaded, np.ndarray):
        return [loaded], NPY
    try:
        with loaded:
            return [loaded[name] for name in loaded.files], NPZ
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise RequestError(400, f"the .npz body cannot be read: {e}") from None


def json_input(value: Any, dtype: str | None, label: str) -> np.ndarray:
    """A JSON value as an array of the model's dtype for that input. Numbers
    convert within their kind or up to a wider one (ints to floats, bools to
    anything); a float for an integer input is refused, not truncated. Without
    a spec, floats become float32 and integers int64."""
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as e:  # ragged lists
        raise RequestError(400, f"{label} is not a rectangular list of numbers: {e}") from None
    if array.dtype.kind not in "biuf":
        raise RequestError(400, f"{label} is not a (nested) list of numbers "
                                f"(numpy reads it as {array.dtype})")
    if dtype is None:
        return array.astype(np.float32) if array.dtype.kind == "f" else array
    target = numpy_dtype(dtype_code(dtype))
    if array.dtype.kind == "f" and np.dtype(target).kind in "biu":
        raise RequestError(422, f"{label} holds non-integer numbers; the model expects {dtype}")
    if array.dtype.kind in "iu" and np.dtype(target).kind == "b":
        raise RequestError(422, f"{label} holds integers; the model expects {dtype} (true/false)")
    converted = array.astype(target)
    if array.dtype.kind in "iu" and np.dtype(target).kind in "iu" and not np.array_equal(
            converted.astype(np.int64), array.astype(np.int64)):
        raise RequestError(422, f"{label} holds integers outside the range of {dtype}")
    return converted


def json_output(array: np.ndarray | None) -> Any:
    if array is None:
        return None
    if array.dtype.kind not in "biuf":  # bfloat16 and other extension dtypes
        array = array.astype(np.float32)
    return array.tolist()


def encode_json(model_id: str, outputs: tuple[np.ndarray | None, ...]) -> bytes:
    return json.dumps({
        "model": model_id,
        "outputs": [json_output(o) for o in outputs],
        "dtypes": [None if o is None else _dtype_text(o) for o in outputs],
        "shapes": [None if o is None else list(o.shape) for o in outputs],
    }).encode()


def encode_numpy(outputs: tuple[np.ndarray | None, ...], kind: str) -> tuple[bytes, str]:
    """``.npy`` bytes for a single output asked for as ``.npy``, else ``.npz``
    with ``output0``, ``output1``, ... (outputs the model leaves empty are
    left out). Returns the bytes and their media type."""
    buffer = io.BytesIO()
    if kind == NPY and len(outputs) == 1 and outputs[0] is not None:
        np.save(buffer, outputs[0], allow_pickle=False)
        return buffer.getvalue(), "application/x-npy"
    np.savez(buffer, **{f"output{i}": o for i, o in enumerate(outputs) if o is not None})
    return buffer.getvalue(), "application/x-npz"


def _dtype_text(array: np.ndarray) -> str:
    return "bfloat16" if array.dtype.name == "bfloat16" else array.dtype.name

"""torch tensors as shim tensors and back, for op tests against torch.

``to_shim`` gives a shim view with the torch tensor's own sizes, strides and
storage offset over a copy of its whole storage, so an op sees exactly the
layout torch saw (transposes, offsets, gaps between rows)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import torch

from aotishim import shim


def _numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy()
    return t.numpy().copy()


def to_shim(t: torch.Tensor) -> shim.Tensor:
    storage = t.untyped_storage()
    flat = torch.empty(0, dtype=t.dtype).set_(storage, 0, (storage.nbytes() // t.element_size(),), (1,))
    base = shim.from_numpy(_numpy(flat), copy=True)
    view = shim.reinterpret_tensor(base, list(t.shape), list(t.stride()), t.storage_offset())
    shim.delete(base)
    return view


def to_torch(t: shim.Tensor) -> torch.Tensor:
    """The values (packed); sizes and strides are checked separately."""
    a = shim.to_numpy(t)
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())


def same(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Bitwise equal values (NaN equal to NaN), same dtype and shape."""
    return (got.dtype == want.dtype and got.shape == want.shape
            and torch.equal(torch.nan_to_num(got, nan=7.25), torch.nan_to_num(want, nan=7.25))
            if got.is_floating_point() else got.dtype == want.dtype and torch.equal(got, want))

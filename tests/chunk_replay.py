"""The call sequence AOTInductor generates for the LinearChunk models, replayed
through the shims on any device: fc2(chunk(fc1(x), 2, dim)[1]) with
fc1 = Linear(7, 16) on x of shape (12, 7). The second chunk is the view
reinterpret_tensor(buf0, sizes, strides, offset) that an asynchronous device
must not read before fc1 has written buf0."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aotishim import shim

from views import NP_DTYPES, f64

OUT2 = 5  # fc2's output features


@dataclass(frozen=True)
class ChunkCase:
    name: str
    sizes: tuple
    strides: tuple
    offset: int

    @property
    def in2(self) -> int:
        return self.sizes[1]


LAST_DIM = ChunkCase("LinearChunkLastDim", (12, 8), (16, 1), 8)
FIRST_DIM = ChunkCase("LinearChunkFirstDim", (6, 16), (16, 1), 96)
CASES = [LAST_DIM, FIRST_DIM]


class ChunkReplay:
    """Weights, the float64 reference, and the two addmm calls on `device`."""

    def __init__(self, case: ChunkCase, dtype: str, device: str, seed: int = 7, addmm=None):
        # addmm(out, bias, a, b): the device-generic shim unless a device's own is given
        self._addmm = addmm or shim.addmm
        rng = np.random.default_rng(seed)
        dt = NP_DTYPES[dtype]
        self.case, self.dtype, self.device = case, dtype, device
        self.x = rng.standard_normal((12, 7)).astype(dt)
        self.w1 = rng.standard_normal((16, 7)).astype(dt)
        self.b1 = rng.standard_normal(16).astype(dt)
        self.w2 = rng.standard_normal((OUT2, case.in2)).astype(dt)
        self.b2 = rng.standard_normal(OUT2).astype(dt)
        # buf0 is rounded to the dtype, as the device stores it
        buf0 = f64((f64(self.x) @ f64(self.w1).T + f64(self.b1)).astype(dt)).reshape(-1)
        self.chunk = np.lib.stride_tricks.as_strided(
            buf0[case.offset:], case.sizes, tuple(s * 8 for s in case.strides)).copy()
        self.expected = self.chunk @ f64(self.w2).T + f64(self.b2)

    def tolerance(self) -> float:
        return 1e-5 if self.dtype == "float32" else 3e-2

    def check(self, result: np.ndarray) -> None:
        t = self.tolerance()
        np.testing.assert_allclose(f64(result), self.expected, rtol=t, atol=t)

    def _on_device(self, a: np.ndarray) -> shim.Tensor:
        return shim.from_numpy(a, copy=True, device=self.device)

    def first_linear(self) -> shim.Tensor:
        """buf0 = addmm(b1, x, w1.T), as the generated code calls it."""
        X, W1, B1 = self._on_device(self.x), self._on_device(self.w1), self._on_device(self.b1)
        buf0 = shim.empty_strided([12, 16], [16, 1], dtype=self.dtype, device=self.device)
        self._addmm(buf0, B1, X, shim.reinterpret_tensor(W1, [7, 16], [1, 7], 0))
        return buf0

    def chunk_view(self, buf0: shim.Tensor) -> shim.Tensor:
        c = self.case
        return shim.reinterpret_tensor(buf0, list(c.sizes), list(c.strides), c.offset)

    def second_linear(self, chunk: shim.Tensor) -> shim.Tensor:
        """buf1 = addmm(b2, chunk, w2.T)."""
        W2, B2 = self._on_device(self.w2), self._on_device(self.b2)
        rows, inner = self.case.sizes
        buf1 = shim.empty_strided([rows, OUT2], [OUT2, 1], dtype=self.dtype, device=self.device)
        self._addmm(buf1, B2, chunk, shim.reinterpret_tensor(W2, [inner, OUT2], [1, inner], 0))
        return buf1

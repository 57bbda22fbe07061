"""torch's matmuls and cuDNN with TF32 off, for references that must be more
exact than aotishim.

torch.testing's internals (OpInfo) freeze torch.backends.cudnn's flags on
import, after which assigning torch.backends.cudnn.allow_tf32 raises; the
cudnn flags are therefore set through torch.backends.cudnn.flags(), which is
allowed either way, keeping every other cudnn flag as it was.
torch.backends.cuda.matmul.allow_tf32 is not frozen and is assigned."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def tf32_off():
    import torch

    cudnn = torch.backends.cudnn
    kept = dict(enabled=cudnn.enabled, benchmark=cudnn.benchmark,
                benchmark_limit=cudnn.benchmark_limit, deterministic=cudnn.deterministic)
    if hasattr(cudnn, "fp32_precision"):
        kept["fp32_precision"] = cudnn.fp32_precision
    if hasattr(cudnn, "depthwise_kernel"):
        kept["depthwise_kernel"] = cudnn.depthwise_kernel
    with cudnn.flags(allow_tf32=False, **kept):
        matmul = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32 = matmul

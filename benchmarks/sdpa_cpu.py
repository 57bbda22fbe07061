"""CPU attention, side by side: aotishim's
``_scaled_dot_product_flash_attention_for_cpu`` against torch's same op, on
the head shapes of the zoo's transformers (tiny decoders, BERT/GPT-2 heads,
a ViT at 197 tokens). Both are called from Python (``shim.call_op`` and
``torch.ops.aten``), so the smallest shapes include each side's call cost;
``--threads`` sets both sides' thread count. Prints the median time per call
over 15 batches and the ratio aotishim / torch (lower is better), with the
largest difference of the outputs.

    PYTHONPATH=python python benchmarks/sdpa_cpu.py [--threads 2] [--calls 3000]
"""

from __future__ import annotations

import argparse
import os
import time

# (B, H, L, E, causal)
SHAPES = [
    (1, 4, 16, 16, True),     # the tiny decoders of the zoo
    (1, 4, 16, 64, True),
    (1, 12, 16, 64, True),    # GPT-2 heads, a short prompt
    (1, 12, 128, 64, False),  # BERT heads at 128 tokens
    (1, 12, 128, 64, True),
    (1, 3, 197, 64, False),   # a tiny ViT at 224x224
]


def median_us(call, calls: int) -> float:
    for _ in range(max(calls // 15, 20)):
        call()
    per_batch = max(calls // 15, 1)
    times = []
    for _ in range(15):
        t = time.perf_counter()
        for _ in range(per_batch):
            call()
        times.append((time.perf_counter() - t) / per_batch)
    return sorted(times)[len(times) // 2] * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # before either runtime starts its team

    import torch

    from aotishim import shim

    torch.set_num_threads(args.threads)
    op = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    print(f"| B, H, L, E | causal | aotishim µs | torch µs | aotishim / torch | max diff |")
    print("|---|:-:|---:|---:|---:|---:|")
    g = torch.Generator().manual_seed(0)
    for b, h, length, e, causal in SHAPES:
        q, k, v = (torch.randn(b, h, length, e, generator=g) for _ in range(3))
        handles = [shim.from_numpy(t.numpy()) for t in (q, k, v)]

        def ours():
            return shim.call_op("_scaled_dot_product_flash_attention_for_cpu", *handles, 0.0,
                                int(causal), None, None, entry="cpu")

        def theirs():
            return op(q, k, v, 0.0, causal)

        diff = float((torch.from_numpy(shim.to_numpy(ours()[0])) - theirs()[0]).abs().max())
        t_ours, t_torch = median_us(ours, args.calls), median_us(theirs, args.calls)
        print(f"| {b}, {h}, {length}, {e} | {'yes' if causal else 'no'} | {t_ours:.1f} | "
              f"{t_torch:.1f} | {t_ours / t_torch:.2f} | {diff:.1e} |")


if __name__ == "__main__":
    main()

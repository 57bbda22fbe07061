"""Convolution on the CPU, side by side: aotishim's kernel against torch eager.

Shapes are ResNet-18's layers at a 1x3x112x112 input (and its 3x3 layers at
224x224, where the first two run Winograd's F(2x2, 3x3)), MobileNetV3's and
EfficientNet-B0's depthwise and pointwise layers at a 64x64 input, ConvNeXt's
depthwise 7x7 layers and a few of DenseNet's, in both layouts AOTInductor hands over:
contiguous, and channels-last (what compiled CNNs pass: Inductor turns
weights and activations channels-last around convolutions). Prints the best
time per call (the least disturbed by other work on the machine) and the ratio aotishim / torch (lower is better).

    PYTHONPATH=python python benchmarks/conv_cpu.py [--repeat 50] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

# (name, N, Cin, H, W, Cout, k, stride, pad, groups)
SHAPES = [
    ("r18.conv1 7x7/2", 1, 3, 112, 112, 64, 7, 2, 3, 1),
    ("r18.layer1 3x3", 1, 64, 28, 28, 64, 3, 1, 1, 1),
    ("r18.layer2.0 3x3/2", 1, 64, 28, 28, 128, 3, 2, 1, 1),
    ("r18.layer2.ds 1x1/2", 1, 64, 28, 28, 128, 1, 2, 0, 1),
    ("r18.layer2 3x3", 1, 128, 14, 14, 128, 3, 1, 1, 1),
    ("r18.layer3.0 3x3/2", 1, 128, 14, 14, 256, 3, 2, 1, 1),
    ("r18.layer3 3x3", 1, 256, 7, 7, 256, 3, 1, 1, 1),
    ("r18.layer4.0 3x3/2", 1, 256, 7, 7, 512, 3, 2, 1, 1),
    ("r18.layer4 3x3", 1, 512, 4, 4, 512, 3, 1, 1, 1),
    ("r18@224.layer1 3x3", 1, 64, 56, 56, 64, 3, 1, 1, 1),
    ("r18@224.layer2 3x3", 1, 128, 28, 28, 128, 3, 1, 1, 1),
    ("r18@224.layer3 3x3", 1, 256, 14, 14, 256, 3, 1, 1, 1),
    ("mnv3 dw 3x3/2 c16", 1, 16, 56, 56, 16, 3, 2, 1, 16),
    ("mnv3 dw 5x5 c96", 1, 96, 7, 7, 96, 5, 1, 2, 96),
    ("mnv3 pw 1x1 c96->576", 1, 96, 4, 4, 576, 1, 1, 0, 1),
    ("cnx dw 7x7 c96 16x16", 1, 96, 16, 16, 96, 7, 1, 3, 96),
    ("cnx dw 7x7 c192 8x8", 1, 192, 8, 8, 192, 7, 1, 3, 192),
    ("cnx dw 7x7 c384 4x4", 1, 384, 4, 4, 384, 7, 1, 3, 384),
    ("effb0 dw 3x3 c32 32x32", 1, 32, 32, 32, 32, 3, 1, 1, 32),
    ("effb0 dw 3x3/2 c96 32x32", 1, 96, 32, 32, 96, 3, 2, 1, 96),
    ("effb0 dw 3x3 c144 16x16", 1, 144, 16, 16, 144, 3, 1, 1, 144),
    ("effb0 dw 5x5/2 c144 16x16", 1, 144, 16, 16, 144, 5, 2, 2, 144),
    ("effb0 dw 5x5 c240 8x8", 1, 240, 8, 8, 240, 5, 1, 2, 240),
    ("effb0 dw 3x3/2 c240 8x8", 1, 240, 8, 8, 240, 3, 2, 1, 240),
    ("effb0 dw 3x3 c480 4x4", 1, 480, 4, 4, 480, 3, 1, 1, 480),
    ("effb0 dw 5x5 c672 4x4", 1, 672, 4, 4, 672, 5, 1, 2, 672),
    ("effb0 dw 5x5/2 c672 4x4", 1, 672, 4, 4, 672, 5, 2, 2, 672),
    ("effb0 dw 5x5 c1152 2x2", 1, 1152, 2, 2, 1152, 5, 1, 2, 1152),
    ("effb0 pw 1x1 16->96 32x32", 1, 16, 32, 32, 96, 1, 1, 0, 1),
    ("effb0 pw 1x1 96->24 16x16", 1, 96, 16, 16, 24, 1, 1, 0, 1),
    ("effb0 pw 1x1 40->240 8x8", 1, 40, 8, 8, 240, 1, 1, 0, 1),
    ("effb0 pw 1x1 240->40 8x8", 1, 240, 8, 8, 40, 1, 1, 0, 1),
    ("effb0 pw 1x1 1152->192 2x2", 1, 1152, 2, 2, 192, 1, 1, 0, 1),
    ("effb0 pw 1x1 320->1280 2x2", 1, 320, 2, 2, 1280, 1, 1, 0, 1),
    ("dn121 1x1 256->128 8x8", 1, 256, 8, 8, 128, 1, 1, 0, 1),
    ("dn121 3x3 128->32 8x8", 1, 128, 8, 8, 32, 3, 1, 1, 1),
]

# How often each shape occurs in ResNet-18 (for the weighted total).
R18_COUNT = {"r18.conv1 7x7/2": 1, "r18.layer1 3x3": 4, "r18.layer2.0 3x3/2": 1,
             "r18.layer2.ds 1x1/2": 1, "r18.layer2 3x3": 3, "r18.layer3.0 3x3/2": 1,
             "r18.layer3 3x3": 3, "r18.layer4.0 3x3/2": 1, "r18.layer4 3x3": 3}


def best_time(fn, repeat: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.min(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1,
                        help="threads on both sides (OMP_NUM_THREADS, torch.set_num_threads)")
    args = parser.parse_args()
    # aotishim's OpenMP team reads OMP_NUM_THREADS when it starts: set it
    # before either library loads.
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    global torch, shim
    import torch
    from aotishim import shim
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{'shape':28} {'layout':14} {'aotishim ms':>11} {'torch ms':>9} {'ratio':>6}")
    totals = {}
    for layout in ("contiguous", "channels_last"):
        fmt = torch.channels_last if layout == "channels_last" else torch.contiguous_format
        for name, n, cin, h, w, cout, k, stride, pad, groups in SHAPES:
            x = torch.randn(n, cin, h, w).to(memory_format=fmt)
            wt = torch.randn(cout, cin // groups, k, k).to(memory_format=fmt)
            b = torch.randn(cout)
            # The shim borrows torch's memory: the same bytes, the same strides.
            def borrow(t):
                return shim.from_blob(t.data_ptr(), list(t.shape), list(t.stride()))
            xs, ws, bs = borrow(x), borrow(wt), borrow(b)
            conv_args = ([stride] * 2, [pad] * 2, [1, 1], 0, [0, 0], groups)

            # The C entry point with its arguments converted once, as generated
            # code calls it: call_op's Python conversion alone takes ~17 us,
            # more than many of these convolutions.
            op = shim.FALLBACK_OPS["convolution"]
            given = dict(zip((p.name for p in op.user_params), (xs, ws, bs, *conv_args)))
            outputs, keep = [], []
            c_args = [op._convert(p, given, outputs, keep) for p in op.params]
            entry = op._function("cpu")

            def ours():
                assert entry(*c_args) == 0
                shim.delete(outputs[0].value)

            def theirs():
                torch.nn.functional.conv2d(x, wt, b, stride, pad, 1, groups)

            with torch.no_grad():
                got = shim.call_op("convolution", xs, ws, bs, *conv_args, entry="cpu")
                want = torch.nn.functional.conv2d(x, wt, b, stride, pad, 1, groups)
                err = np.abs(got.numpy() - want.numpy()).max() / max(want.abs().max().item(), 1e-6)
                shim.delete(got)
                assert err < 1e-4, (name, layout, err)
                t_ours, t_torch = best_time(ours, args.repeat), best_time(theirs, args.repeat)
            print(f"{name:28} {layout:14} {t_ours * 1e3:11.3f} {t_torch * 1e3:9.3f} "
                  f"{t_ours / t_torch:6.2f}")
            count = R18_COUNT.get(name, 0)
            a, t = totals.get(layout, (0.0, 0.0))
            totals[layout] = (a + count * t_ours, t + count * t_torch)
            shim.delete(xs), shim.delete(ws), shim.delete(bs)
    for layout, (a, t) in totals.items():
        print(f"ResNet-18 convolutions, {layout}: aotishim {a * 1e3:.2f} ms, torch {t * 1e3:.2f} ms, "
              f"ratio {a / t:.2f}")


if __name__ == "__main__":
    main()

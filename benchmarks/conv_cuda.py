"""Per-call cost of aotishim's cuda convolution (cuDNN) against torch's, on
the shapes of the zoo's conv models: host time to queue one call, and device
time per call over back-to-back calls (CUDA events). Each algorithm choice
(AOTISHIM_CUDNN_API: cuDNN's graph API or its legacy one; AOTISHIM_CUDNN_ALGO:
candidates timed, or cuDNN's heuristics' first) runs in a fresh process,
since both are read once per process.

    python benchmarks/conv_cuda.py            # both choices, one table
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

SHAPES = [  # name, input, weight, stride, padding, groups, transposed
    ("resnet stem 7x7/2", (1, 3, 224, 224), (64, 3, 7, 7), 2, 3, 1, 0),
    ("resnet 3x3 64", (1, 64, 56, 56), (64, 64, 3, 3), 1, 1, 1, 0),
    ("resnet 3x3 256/2", (1, 128, 28, 28), (256, 128, 3, 3), 2, 1, 1, 0),
    ("1x1 512", (1, 256, 14, 14), (512, 256, 1, 1), 1, 0, 1, 0),
    ("depthwise 3x3 96", (1, 96, 28, 28), (96, 1, 3, 3), 1, 1, 96, 0),
    ("conv1d 16->32 k3", (2, 16, 64), (32, 16, 3), 1, 1, 1, 0),
    ("transposed 16->8 k4/2", (1, 16, 16, 16), (16, 8, 4, 4), 2, 1, 1, 1),
]


def worker(dtype_name: str) -> None:
    import torch

    import aotishim  # noqa: F401
    from aotishim import shim

    torch.backends.cudnn.allow_tf32 = False
    dtype = getattr(torch, dtype_name)
    rows = []
    for name, xs, ws, stride, pad, groups, transposed in SHAPES:
        nsp = len(xs) - 2
        x = torch.randn(xs, device="cuda", dtype=dtype)
        w = torch.randn(ws, device="cuda", dtype=dtype)
        b = torch.randn(ws[1] * groups if transposed else ws[0], device="cuda", dtype=dtype)
        torch.cuda.synchronize()

        def view(t, sizes=None):
            return shim.from_blob(t.data_ptr(), list(sizes or t.shape), list(t.stride()), 0,
                                  dtype_name, "cuda:0")

        args = (view(x), view(w), view(b), [stride] * nsp, [pad] * nsp, [1] * nsp, transposed,
                [0] * nsp, groups)

        def ours():
            shim.call_op("convolution", *args, entry="cuda")

        # The same call on a batch of 0: everything but cuDNN (the Python
        # binding, handles, the op's checks and output allocation).
        empty_args = (view(x, (0, *xs[1:])), *args[1:])

        def ours_path():
            shim.call_op("convolution", *empty_args, entry="cuda")

        conv = torch.nn.functional.conv_transpose2d if transposed else (
            torch.nn.functional.conv1d if nsp == 1 else torch.nn.functional.conv2d)

        def theirs():
            conv(x, w, b, stride=stride, padding=pad, groups=groups)

        row = {"shape": name}
        for side, call in (("aotishim", ours), ("torch", theirs), ("path", ours_path)):
            t0 = time.perf_counter()
            call()
            torch.cuda.synchronize()
            row[side + "_first_ms"] = (time.perf_counter() - t0) * 1e3
            for _ in range(5):
                call()
            torch.cuda.synchronize()
            host = []
            for _ in range(50):
                t0 = time.perf_counter()
                call()
                host.append(time.perf_counter() - t0)
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            device = []
            for _ in range(5):
                start.record()
                for _ in range(20):
                    call()
                end.record()
                end.synchronize()
                device.append(start.elapsed_time(end) / 20)
            row[side + "_host_us"] = statistics.median(host) * 1e6
            row[side + "_device_us"] = statistics.median(device) * 1e3
        rows.append(row)
    print(json.dumps(rows))


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
        return
    for dtype in ("float32", "bfloat16"):
        for api, algo in (("graph", "find"), ("graph", "heuristic"), ("legacy", "find")):
            env = dict(os.environ, AOTISHIM_CUDNN_ALGO=algo, AOTISHIM_CUDNN_API=api)
            out = subprocess.run([sys.executable, __file__, "--worker", dtype], env=env,
                                 capture_output=True, text=True, timeout=300)
            if out.returncode != 0:
                print(f"{dtype} {api} {algo}: failed: {out.stderr.strip().splitlines()[-1:]}")
                continue
            rows = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"\n{dtype}, AOTISHIM_CUDNN_API={api} AOTISHIM_CUDNN_ALGO={algo}: "
                  "µs per call (host to queue / device)")
            print(f"{'shape':24} {'aotishim host':>14} {'torch host':>11} {'aotishim dev':>13} "
                  f"{'torch dev':>10} {'first ms ours/torch':>20} {'no-cuDNN host':>14}")
            for r in rows:
                print(f"{r['shape']:24} {r['aotishim_host_us']:14.1f} {r['torch_host_us']:11.1f} "
                      f"{r['aotishim_device_us']:13.1f} {r['torch_device_us']:10.1f} "
                      f"{r['aotishim_first_ms']:9.1f}/{r['torch_first_ms']:.1f} "
                      f"{r['path_host_us']:14.1f}")


if __name__ == "__main__":
    main()

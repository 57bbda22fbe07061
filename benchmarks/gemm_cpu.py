"""The GEMMs of a float32 MLP layer, OpenBLAS against torch's BLAS, per knob.

The benchmark model of ``cpu_vs_torch.py`` (MLP 512-1024-1024-256, batch 32)
spends its time in three GEMMs, ``x[32,K] @ W[N,K]^T``. This times each one
through the OpenBLAS aotishim links (``scipy-openblas32``, called directly),
optionally oneDNN's ``dnnl_sgemm`` (``--onednn-lib``), and through torch (``torch.addmm``, i.e. torch's BLAS: MKL on x86 wheels),
for 1 and 2 threads and for each OpenBLAS kernel set this CPU can run
(``OPENBLAS_CORETYPE``). Every configuration runs in a fresh process, since
OpenBLAS picks its kernels and threads when it loads.

    python benchmarks/gemm_cpu.py [--repeat 2000] [--coretypes Haswell,Zen] [--onednn-lib libdnnl.so]
        [--shapes 16x64x1000,1x64x1000]   # MxKxN, instead of the MLP's three
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SHAPES = [(32, 512, 1024), (32, 1024, 1024), (32, 1024, 256)]  # M, K, N


def _parse_shapes(text: str) -> list[tuple[int, int, int]]:
    return [tuple(int(v) for v in s.split("x")) for s in text.split(",") if s]


def _median_us(call, repeat: int) -> float:
    for _ in range(max(repeat // 10, 10)):
        call()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def worker_openblas(threads: int, repeat: int) -> dict:
    import numpy as np
    import scipy_openblas32

    lib = ctypes.CDLL(os.path.join(scipy_openblas32.get_lib_dir(),
                                   "lib" + scipy_openblas32.get_library() + ".so"))
    lib.scipy_openblas_get_corename.restype = ctypes.c_char_p
    lib.scipy_openblas_set_num_threads(threads)
    rng = np.random.default_rng(0)
    result = {"kernel": lib.scipy_openblas_get_corename().decode(), "us": []}
    for m, k, n in SHAPES:
        x = rng.standard_normal((m, k), dtype=np.float32)
        w = rng.standard_normal((n, k), dtype=np.float32)
        y = np.empty((m, n), np.float32)
        p = [ctypes.c_void_p(a.ctypes.data) for a in (x, w, y)]
        one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        # Row-major y = x @ w^T: what a linear layer's addmm asks for.
        call = lambda: lib.scipy_cblas_sgemm(101, 111, 112, m, n, k, one, p[0], k, p[1], k,  # noqa: E731
                                             zero, p[2], n)
        call()
        assert np.allclose(y, x @ w.T, rtol=1e-3, atol=1e-3)
        result["us"].append(_median_us(call, repeat))
    return result


def worker_onednn(threads: int, repeat: int) -> dict:
    """oneDNN's dnnl_sgemm (row-major), from the library at $AOTISHIM_ONEDNN_LIB."""
    import numpy as np

    lib = ctypes.CDLL(os.environ["AOTISHIM_ONEDNN_LIB"])
    i64, f32, ptr = ctypes.c_int64, ctypes.c_float, ctypes.c_void_p
    lib.dnnl_sgemm.argtypes = [ctypes.c_char, ctypes.c_char, i64, i64, i64, f32, ptr, i64,
                               ptr, i64, f32, ptr, i64]
    rng = np.random.default_rng(0)
    result = {"kernel": "oneDNN dnnl_sgemm", "us": []}
    for m, k, n in SHAPES:
        x = rng.standard_normal((m, k), dtype=np.float32)
        w = rng.standard_normal((n, k), dtype=np.float32)
        y = np.empty((m, n), np.float32)
        call = lambda: lib.dnnl_sgemm(b"N", b"T", m, n, k, 1.0, x.ctypes.data, k,  # noqa: E731
                                      w.ctypes.data, k, 0.0, y.ctypes.data, n)
        assert call() == 0
        assert np.allclose(y, x @ w.T, rtol=1e-3, atol=1e-3)
        result["us"].append(_median_us(call, repeat))
    return result


def worker_torch(threads: int, repeat: int) -> dict:
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    result = {"kernel": "torch " + ("MKL" if torch.backends.mkl.is_available() else "BLAS"),
              "us": []}
    for m, k, n in SHAPES:
        x, w, b = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
        out = torch.empty(m, n)
        wt = w.t()
        result["us"].append(_median_us(lambda: torch.addmm(b, x, wt, out=out), repeat))
    return result


def run(kind: str, threads: int, repeat: int, coretype: str | None) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               AOTISHIM_GEMM_SHAPES=",".join("x".join(map(str, s)) for s in SHAPES))
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    out = subprocess.run([sys.executable, __file__, "--worker", kind, str(threads), str(repeat)],
                         capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        return {"kernel": coretype or kind, "error": out.stderr.strip().splitlines()[-1:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    global SHAPES
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        SHAPES = _parse_shapes(os.environ["AOTISHIM_GEMM_SHAPES"])
        fn = {"openblas": worker_openblas, "onednn": worker_onednn,
              "torch": worker_torch}[sys.argv[2]]
        print(json.dumps(fn(int(sys.argv[3]), int(sys.argv[4]))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--coretypes", default="",
                        help="OpenBLAS kernel sets to force, besides its own pick "
                             "(e.g. Haswell,Zen,SkylakeX; one this CPU lacks fails)")
    parser.add_argument("--onednn-lib", help="also time oneDNN's sgemm from this libdnnl.so "
                        "(e.g. unpacked from the onednn-cpu-gomp wheel)")
    parser.add_argument("--shapes", default="",
                        help="MxKxN,... (x[M,K] @ W[N,K]^T) instead of the MLP's three")
    ns = parser.parse_args()
    if ns.shapes:
        SHAPES = _parse_shapes(ns.shapes)

    configs = [("torch", None)] + [("openblas", None)]
    configs += [("openblas", c) for c in ns.coretypes.split(",") if c]
    if ns.onednn_lib:
        os.environ["AOTISHIM_ONEDNN_LIB"] = str(Path(ns.onednn_lib).resolve())
        configs.append(("onednn", None))
    shapes = " | ".join(f"{m}x{k} @ {k}x{n}" for m, k, n in SHAPES)
    print(f"| runtime | kernel | threads | {shapes} | sum (us) |")
    print("|---|---|---:|" + "---:|" * (len(SHAPES) + 1))
    for threads in (int(t) for t in ns.threads.split(",")):
        for kind, coretype in configs:
            r = run(kind, threads, ns.repeat, coretype)
            if "error" in r:
                print(f"| {kind} | {r['kernel']} | {threads} | failed: {r['error']} |")
                continue
            label = r["kernel"] + (f" (forced {coretype})" if coretype else "")
            cells = " | ".join(f"{u:.1f}" for u in r["us"])
            print(f"| {kind} | {label} | {threads} | {cells} | {sum(r['us']):.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

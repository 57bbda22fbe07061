"""Why a packed DLPack input's memory goes back to torch early: prints, per
step, how long run() took, whether aotishim's stream was still busy when it
returned, how many borrowed storages aotishim still held, and whether torch
reused the input blocks. Run from tests/gpu: python diag_dlpack_release.py"""
import time

import torch

import aotishim
from aotishim import _core
import test_cuda_dlpack as t


def borrowed() -> int:
    return sum(s["borrowed_storages"] for s in aotishim.memory_stats()["scopes"])


so, module = t.model_for()
producer = torch.cuda.Stream()
ours = torch.cuda.ExternalStream(_core.device_stream("cuda"))
with aotishim.load(so, device="cuda") as model:
    for step in range(3):
        with torch.cuda.stream(producer):
            x = torch.randn(64, 256, device="cuda")
            y = torch.randn(64, 256, device="cuda")
            producer.synchronize()
            with torch.cuda.stream(ours):
                torch.cuda._sleep(t.SLEEP_CYCLES)
            t0 = time.perf_counter()
            outs = model.run(x, y, outputs="dlpack")
            t1 = time.perf_counter()
            busy_after_run = not ours.query()
            held = borrowed()
            freed = {x.data_ptr(), y.data_ptr()}
            del x, y
            held_after_del = borrowed()
            z = [torch.empty(256 * 64, device="cuda").fill_(-1e4) for _ in range(16)]
            reused = sum(v.data_ptr() in freed for v in z)
            busy_at_reuse = not ours.query()
        torch.cuda.synchronize()
        print(f"DIAG step {step}: run {1e3 * (t1 - t0):.2f} ms, our stream busy after run: "
              f"{busy_after_run}, borrowed held {held} -> {held_after_del}, reused {reused}, "
              f"our stream busy at reuse: {busy_at_reuse}", flush=True)
        del z, outs

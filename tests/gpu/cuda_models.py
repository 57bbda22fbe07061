"""Real AOTInductor models compiled for CUDA (torch on the GPU machine), with
their eager outputs, shared by the GPU tests and the precompile step."""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/models.py

import torch  # noqa: E402
from torch import nn  # noqa: E402

import models  # noqa: E402
from aotishim import export, zoo  # noqa: E402

# (model name, dtype): the chunk models are the views-at-offsets cases.
CASES = [
    ("linear_chunk_last_dim", "float32"),
    ("linear_chunk_first_dim", "float32"),
    ("linear_chunk_last_dim", "bfloat16"),
    ("linear_chunk_first_dim", "bfloat16"),
    ("repeated_output", "float32"),
    ("constant_output", "float32"),
    ("alias_input", "float32"),
    ("mlp", "float32"),
    ("residual_norm", "float32"),
    ("batched_matmul", "float32"),
    ("softmax_head", "float32"),
]


def cache_dir() -> Path:
    path = Path(os.environ.get("AOTISHIM_TEST_MODEL_CACHE", HERE.parents[1] / "build" / "test-models")) / "cuda"
    path.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(path / "inductor"))
    return path


def compile_cuda(name: str, dtype: str = "float32") -> models.Compiled:
    """Compiles (or finds in the cache) `name` for cuda; eager outputs from torch on cuda."""
    module, inputs = models.build(name, getattr(torch, dtype))
    so = export.compile_cached(module, inputs, cache_dir(), name=f"{name}_{dtype}_cuda",
                               device="cuda")
    module = module.to("cuda")
    with torch.no_grad():
        expected = module(*[x.to("cuda") for x in inputs])
    if isinstance(expected, torch.Tensor):
        expected = (expected,)
    return models.Compiled(f"{name}_{dtype}_cuda", so,
                           tuple(models.to_numpy(x) for x in inputs),
                           tuple(models.to_numpy(e) for e in expected), dtype)


# ---- recurrent models ----
# On cuda torch flattens an RNN's parameters into one buffer, so each weight
# is a constant at a storage offset, and the unrolled time loop reuses
# buffers and writes each step into views of one output: the model family
# that once ran with wrong numbers. A spec names one configuration:
# "<kind>-i<input>-h<hidden>-l<layers>-bf<batch_first>-bi<bidirectional>-b<batch>-t<steps>".


def _recurrent_specs() -> list[str]:
    specs = ["gru-i32-h64-l2-bf1-bi0-b2-t10", "lstm-i32-h64-l2-bf1-bi0-b2-t10"]
    draw = random.Random(20261130)  # fixed: the compiled models are cached by spec
    for kind in ("gru", "lstm", "rnn") * 3:
        specs.append(f"{kind}-i{draw.choice([3, 16, 33])}-h{draw.choice([8, 40, 96])}"
                     f"-l{draw.choice([1, 2, 3])}-bf{draw.choice([0, 1])}-bi{draw.choice([0, 1])}"
                     f"-b{draw.choice([1, 3])}-t{draw.choice([1, 5, 12])}")
    specs.append("gateloop-i24-h40-l1-bf1-bi0-b3-t8")
    return list(dict.fromkeys(specs))


RECURRENT = _recurrent_specs()


def _parse(spec: str) -> dict:
    kind, *fields = spec.split("-")
    values = {}
    for f in fields:
        key = f.rstrip("0123456789")
        values[key] = int(f[len(key):])
    return dict(kind=kind, **values)


class Recurrent(nn.Module):
    """nn.GRU / nn.LSTM / nn.RNN with its outputs flattened (out, h_n[, c_n])."""

    def __init__(self, kind: str, i: int, h: int, l: int, bf: int, bi: int) -> None:
        super().__init__()
        cls = {"gru": nn.GRU, "lstm": nn.LSTM, "rnn": nn.RNN}[kind]
        self.rnn = cls(i, h, num_layers=l, batch_first=bool(bf), bidirectional=bool(bi))

    def forward(self, x: torch.Tensor):
        out, state = self.rnn(x)
        return (out, *state) if isinstance(state, tuple) else (out, state)


class GateLoop(nn.Module):
    """A hand-written recurrent cell: one fused weight sliced into gates inside
    an unrolled time loop, each step's state written into a stacked output."""

    def __init__(self, i: int, h: int, **_) -> None:
        super().__init__()
        self.h = h
        self.weight = nn.Parameter(torch.randn(3 * h, i + h) / (i + h) ** 0.5)
        self.bias = nn.Parameter(torch.randn(3 * h) * 0.1)

    def forward(self, x: torch.Tensor):
        state = x.new_zeros(x.shape[0], self.h)
        steps = []
        for t in range(x.shape[1]):
            z = torch.cat([x[:, t], state], dim=1) @ self.weight.t() + self.bias
            keep, cand, out = z.split(self.h, dim=1)
            state = torch.sigmoid(keep) * state + (1 - torch.sigmoid(keep)) * torch.tanh(cand)
            steps.append(state * torch.sigmoid(out))
        return torch.stack(steps, dim=1), state


def build_recurrent(spec: str) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    p = _parse(spec)
    shape = (p["b"], p["t"], p["i"]) if p["bf"] else (p["t"], p["b"], p["i"])
    if p["kind"] == "gateloop":
        factory = lambda: GateLoop(p["i"], p["h"])  # noqa: E731
    else:
        factory = lambda: Recurrent(p["kind"], p["i"], p["h"], p["l"], p["bf"], p["bi"])  # noqa: E731
    return zoo.build_seeded(factory, [shape], torch.float32, seed=7)


def compile_recurrent(spec: str) -> models.Compiled:
    """Compiles (or finds in the cache) a recurrent spec for cuda; eager on
    cuda (cuDNN for the RNN modules) with TF32 off as the reference."""
    module, inputs = build_recurrent(spec)
    so = export.compile_cached(module, inputs, cache_dir(), name=f"rec_{spec}", device="cuda")
    module = module.to("cuda")
    with torch.no_grad(), torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        torch.backends.cuda.matmul.allow_tf32 = False
        expected = module(*[x.to("cuda") for x in inputs])
    return models.Compiled(f"rec_{spec}", so, tuple(models.to_numpy(x) for x in inputs),
                           tuple(models.to_numpy(e) for e in expected), "float32")


# ---- zoo models (tests/gpu/test_cuda_zoo.py) ----
# Every model of the zoo, the slowest to compile first (they are compiled in
# a pool).
ZOO = ["vit_b_16", "hf_gpt2", "hf_bert", "hf_llama", "hf_gpt2_bf16", "resnet18",
       "resnet18_bf16", "mobilenet_v3_small", "vit_tiny", "nn_transformer_encoder_layer",
       "nn_transformer_encoder_layer_bf16", "tel_dynamic_seq", "nn_multihead_attention",
       "nn_lstm", "nn_gru", "sdpa", "sdpa_causal", "conv1d", "conv2d_bn_pool", "conv2d_bf16",
       "conv_transpose2d", "conv_dynamic_batch", "embedding_layernorm", "upsample",
       "index_gather_scatter", "topk_sort_argmax", "cumsum", "where_masked_fill", "nonzero",
       "searchsorted", "grid_sample", "mlp_static", "mlp_bf16", "mlp_dynamic_batch"]


def zoo_cache_dir() -> Path:
    path = cache_dir().parent / "cuda-zoo"
    path.mkdir(parents=True, exist_ok=True)
    return path


def compile_zoo(name: str):
    """(zoo model on cuda:0, its example inputs there, the compiled .so),
    compiled once per cache (Inductor's own cache: cache_dir()/inductor)."""
    from aotishim.zoo import real

    zm = real.build(name)
    module = zm.module.to("cuda:0")
    args = tuple(a.to("cuda:0") for a in zm.args)
    so = export.compile_cached(module, args, zoo_cache_dir(), name=f"zoo_{name}_cuda",
                               device="cuda", dynamic_shapes=zm.dynamic_shapes)
    return zm, module, args, so


# ---- torchvision models beyond the zoo (tests/gpu/test_cuda_torchvision.py) ----
# name (torchvision.models[.sub].<builder>): (builder arguments, input shape).
# Their convolutions cover every shape family torchvision uses: asymmetric
# kernels and padding (Inception), groups (ResNeXt, RegNet), depthwise
# (MobileNet, EfficientNet, ConvNeXt's 7x7), dilation (DeepLab), 3-D (video),
# concatenated branches (Inception, GoogLeNet, DenseNet).
TORCHVISION = {
    "inception_v3": (dict(aux_logits=False, init_weights=True), (1, 3, 299, 299)),
    "googlenet": (dict(aux_logits=False, init_weights=True), (1, 3, 224, 224)),
    "densenet121": ({}, (1, 3, 224, 224)),
    "efficientnet_b0": ({}, (1, 3, 224, 224)),
    "convnext_tiny": ({}, (1, 3, 224, 224)),
    "regnet_y_400mf": ({}, (1, 3, 224, 224)),
    "resnext50_32x4d": ({}, (1, 3, 224, 224)),
    "swin_t": ({}, (1, 3, 224, 224)),
    "squeezenet1_1": ({}, (1, 3, 224, 224)),
    "mobilenet_v2": ({}, (1, 3, 224, 224)),
    "shufflenet_v2_x0_5": ({}, (1, 3, 224, 224)),
    "mnasnet0_5": ({}, (1, 3, 224, 224)),
    "segmentation.fcn_resnet50": (dict(weights_backbone=None, aux_loss=False), (1, 3, 160, 160)),
    "segmentation.deeplabv3_mobilenet_v3_large": (dict(weights_backbone=None), (1, 3, 160, 160)),
    "segmentation.lraspp_mobilenet_v3_large": (dict(weights_backbone=None), (1, 3, 160, 160)),
    "video.r3d_18": ({}, (1, 3, 8, 64, 64)),
    "video.r2plus1d_18": ({}, (1, 3, 8, 64, 64)),
    "video.mc3_18": ({}, (1, 3, 8, 64, 64)),
}


class MainOutput(nn.Module):
    """A segmentation model's "out" entry (its dict holds only that one here)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.model(x)
        return y["out"] if isinstance(y, dict) else y


def build_torchvision(name: str) -> tuple[nn.Module, tuple[int, ...]]:
    """The model with random weights (seeded), eval mode, and its input shape."""
    from aotishim.zoo._torchvision import import_torchvision

    tv = import_torchvision()
    kwargs, shape = TORCHVISION[name]
    namespace = tv.models
    *sub, builder = name.split(".")
    for part in sub:
        namespace = getattr(namespace, part)
    torch.manual_seed(0)
    return MainOutput(getattr(namespace, builder)(weights=None, **kwargs)).eval(), shape


def torchvision_input(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


# Also compiled with a dynamic batch (1 to 4), and run at batch 2.
TORCHVISION_DYNAMIC = ["inception_v3"]


def compile_torchvision(name: str, dynamic: bool = False):
    """(the model on the CPU, the input shape to run, the .so compiled for cuda)."""
    module, shape = build_torchvision(name)
    dynamic_shapes = None
    tag = name.replace(".", "_")
    if dynamic:  # exported at batch 2: torch.export specialises a size-1 example
        shape = (2, *shape[1:])
        dynamic_shapes = {"x": {0: torch.export.Dim("batch", min=1, max=4)}}
        tag += "_dynbatch"
    so = export.compile_cached(module.to("cuda"), (torchvision_input(shape, 0).to("cuda"),),
                               zoo_cache_dir(), name=f"tv_{tag}_cuda", device="cuda",
                               dynamic_shapes=dynamic_shapes)
    return module.cpu(), shape, so


def _compile_one(case) -> str:
    if isinstance(case, tuple) and case[0] == "zoo":
        return str(compile_zoo(case[1])[3])
    if isinstance(case, tuple) and case[0] == "tv":
        return str(compile_torchvision(case[1], dynamic=len(case) > 2)[2])
    if isinstance(case, str):
        return str(compile_recurrent(case).so)
    return str(compile_cuda(*case).so)


def _compile_reported(case) -> str:
    try:
        return _compile_one(case)
    except Exception as e:  # noqa: BLE001 - the test that needs it reports it again
        return f"FAILED: {type(e).__name__}: {str(e).strip().splitlines()[-1:]}"


if __name__ == "__main__":
    # Compile every case in parallel processes so the tests find them cached.
    # Each compile spreads its kernels over a few threads only: a pool of
    # processes, each with a pool of cpu-count workers, would swamp the machine.
    import multiprocessing as mp

    from aotishim.zoo import real

    only = os.environ.get("CUDA_MODELS")  # "tv": the torchvision set alone
    cases = [*(("tv", n, "dynamic") for n in TORCHVISION_DYNAMIC),
             *(("tv", n) for n in TORCHVISION)]
    if only != "tv":
        cases += [*(("zoo", n) for n in ZOO if real.available(n)), *CASES, *RECURRENT]
    processes = min(len(cases), os.cpu_count() or 1)
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS",
                          str(max(1, (os.cpu_count() or 1) // processes * 2)))
    with mp.get_context("spawn").Pool(processes) as pool:
        for case, so in zip(cases, pool.imap(_compile_reported, cases, chunksize=1)):
            print(f"{case!s:48s} {so}", flush=True)

"""Real architectures, small and randomly initialised, to measure coverage.

Each entry builds what people ship (torchvision's ResNet-18, MobileNetV3 and
ViTs; transformers' GPT-2, BERT and Llama from tiny configs; ``torch.nn``
layers and ops that AOTInductor hands to fallback kernels) with weights drawn
from a fixed seed, never downloaded. ``build(name)`` returns a
:class:`ZooModel`: the module in eval mode, example inputs, and for models
with dynamic shapes the ``torch.export`` dims and further input sets to run.

torchvision and transformers are optional: :data:`REQUIRES` says which
package an entry needs, so callers can skip it where that is not installed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["NAMES", "REQUIRES", "ZooModel", "available", "build"]


@dataclass
class ZooModel:
    name: str
    family: str            # torchvision, transformers, nn, ops, dynamic
    dtype: str             # float32 or bfloat16: sets the tolerance against eager
    module: nn.Module
    args: tuple            # example inputs, also the first input set to run
    dynamic_shapes: Any = None          # for torch.export; None: static
    run_args: list[tuple] = field(default_factory=list)  # more input sets (dynamic models)

    def input_sets(self) -> list[tuple]:
        return [self.args, *self.run_args]


_BUILDERS: dict[str, tuple[Callable[[], dict], str, str]] = {}
REQUIRES: dict[str, str | None] = {}


def _entry(name: str, family: str, dtype: str = "float32", requires: str | None = None):
    def register(fn: Callable[[], dict]) -> Callable[[], dict]:
        _BUILDERS[name] = (fn, family, dtype)
        REQUIRES[name] = requires
        return fn
    return register


def build(name: str) -> ZooModel:
    """Entry ``name``, built from seed 0 (torch's global generator is restored)."""
    if name not in _BUILDERS:
        raise KeyError(f"unknown zoo model {name!r}; choose from {', '.join(NAMES)}")
    fn, family, dtype = _BUILDERS[name]
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(0)
        parts = fn()
    finally:
        torch.random.set_rng_state(state)
    parts["module"] = parts["module"].eval()
    return ZooModel(name=name, family=family, dtype=dtype, **parts)


def available(name: str) -> bool:
    """Whether the optional package entry ``name`` needs is importable."""
    import importlib.util

    requires = REQUIRES[name]
    return requires is None or importlib.util.find_spec(requires) is not None


def _to_bf16(parts: dict) -> dict:
    def cast(args: tuple) -> tuple:
        return tuple(a.to(torch.bfloat16) if a.is_floating_point() else a for a in args)

    parts["module"] = parts["module"].to(torch.bfloat16)
    parts["args"] = cast(parts["args"])
    parts["run_args"] = [cast(a) for a in parts.get("run_args", [])]
    return parts


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _token_ids(vocab: int = 1000, length: int = 16) -> torch.Tensor:
    return torch.randint(0, vocab, (1, length), generator=_generator(1))


# ---- torchvision ----
def _torchvision():
    from ._torchvision import import_torchvision

    return import_torchvision()


@_entry("resnet18", "torchvision", requires="torchvision")
def _resnet18():
    return dict(module=_torchvision().models.resnet18(weights=None),
                args=(torch.randn(1, 3, 112, 112),))


@_entry("resnet18_bf16", "torchvision", "bfloat16", requires="torchvision")
def _resnet18_bf16():
    return _to_bf16(_resnet18())


@_entry("mobilenet_v3_small", "torchvision", requires="torchvision")
def _mobilenet_v3_small():
    return dict(module=_torchvision().models.mobilenet_v3_small(weights=None),
                args=(torch.randn(1, 3, 112, 112),))


@_entry("vit_tiny", "torchvision", requires="torchvision")
def _vit_tiny():
    vit = _torchvision().models.vision_transformer
    module = vit.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                   hidden_dim=64, mlp_dim=128, num_classes=10)
    return dict(module=_random_head(module), args=(torch.randn(1, 3, 32, 32),))


@_entry("vit_b_16", "torchvision", requires="torchvision")
def _vit_b_16():
    return dict(module=_random_head(_torchvision().models.vit_b_16(weights=None)),
                args=(torch.randn(1, 3, 224, 224),))


def _random_head(vit: nn.Module) -> nn.Module:
    """torchvision starts a ViT's classifier at zero, which would make every
    output 0 and a comparison with eager prove nothing."""
    with torch.no_grad():
        vit.heads.head.weight.normal_(0, 0.02)
        vit.heads.head.bias.normal_(0, 0.02)
    return vit


# ---- transformers (tiny configs, nothing downloaded) ----
def _transformers():
    try:  # transformers imports torchvision when it is installed
        _torchvision()
    except ImportError:
        pass
    import transformers

    return transformers


class OutputField(nn.Module):
    """Calls a transformers model on token ids and returns one output field."""

    def __init__(self, model: nn.Module, field: str, **kwargs: Any) -> None:
        super().__init__()
        self.model = model
        self.field = field
        self.kwargs = kwargs

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return getattr(self.model(input_ids=input_ids, **self.kwargs), self.field)


@_entry("hf_gpt2", "transformers", requires="transformers")
def _hf_gpt2():
    t = _transformers()
    config = t.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=1000, n_positions=64,
                          bos_token_id=0, eos_token_id=0)  # ids inside the tiny vocabulary
    return dict(module=OutputField(t.GPT2LMHeadModel(config), "logits", use_cache=False),
                args=(_token_ids(),))


@_entry("hf_gpt2_bf16", "transformers", "bfloat16", requires="transformers")
def _hf_gpt2_bf16():
    return _to_bf16(_hf_gpt2())  # token ids stay int64


@_entry("hf_bert", "transformers", requires="transformers")
def _hf_bert():
    t = _transformers()
    config = t.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=128, vocab_size=1000, max_position_embeddings=64)
    return dict(module=OutputField(t.BertModel(config, add_pooling_layer=False),
                                   "last_hidden_state"),
                args=(_token_ids(),))


@_entry("hf_llama", "transformers", requires="transformers")
def _hf_llama():
    t = _transformers()
    config = t.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, vocab_size=1000,
                           max_position_embeddings=64)
    return dict(module=OutputField(t.LlamaForCausalLM(config), "logits", use_cache=False),
                args=(_token_ids(),))


# ---- attention ----
@_entry("nn_transformer_encoder_layer", "nn")
def _encoder_layer():
    module = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                        batch_first=True)
    return dict(module=module, args=(torch.randn(2, 16, 64),))


@_entry("nn_transformer_encoder_layer_bf16", "nn", "bfloat16")
def _encoder_layer_bf16():
    return _to_bf16(_encoder_layer())


class SelfAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attention = nn.MultiheadAttention(64, 4, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attention(x, x, x, need_weights=False)[0]


@_entry("nn_multihead_attention", "nn")
def _multihead_attention():
    return dict(module=SelfAttention(), args=(torch.randn(2, 16, 64),))


class Attention(nn.Module):
    def __init__(self, causal: bool) -> None:
        super().__init__()
        self.causal = causal

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)


@_entry("sdpa", "nn")
def _sdpa():
    return dict(module=Attention(False), args=tuple(torch.randn(2, 4, 16, 16) for _ in range(3)))


@_entry("sdpa_causal", "nn")
def _sdpa_causal():
    return dict(module=Attention(True), args=tuple(torch.randn(2, 4, 16, 16) for _ in range(3)))


# ---- recurrent ----
@_entry("nn_lstm", "nn")
def _lstm():
    return dict(module=nn.LSTM(32, 64, num_layers=2, batch_first=True),
                args=(torch.randn(2, 10, 32),))


@_entry("nn_gru", "nn")
def _gru():
    return dict(module=nn.GRU(32, 64, num_layers=2, batch_first=True),
                args=(torch.randn(2, 10, 32),))


# ---- layers ----
class EmbeddingNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(1000, 64)
        self.norm = nn.LayerNorm(64)
        self.fc = nn.Linear(64, 32)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.fc(self.norm(self.embedding(ids)))


@_entry("embedding_layernorm", "nn")
def _embedding_layernorm():
    return dict(module=EmbeddingNorm(), args=(_token_ids(length=32),))


@_entry("conv1d", "nn")
def _conv1d():
    module = nn.Sequential(nn.Conv1d(8, 16, 3, padding=1), nn.ReLU(),
                           nn.Conv1d(16, 16, 5, stride=2), nn.GELU())
    return dict(module=module, args=(torch.randn(2, 8, 64),))


def _small_cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, stride=2), nn.BatchNorm2d(32), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


@_entry("conv2d_bn_pool", "nn")
def _conv2d_bn_pool():
    return dict(module=_small_cnn(), args=(torch.randn(2, 3, 32, 32),))


@_entry("conv2d_bf16", "nn", "bfloat16")
def _conv2d_bf16():
    return _to_bf16(_conv2d_bn_pool())


@_entry("conv_transpose2d", "nn")
def _conv_transpose2d():
    module = nn.Sequential(nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1), nn.Tanh())
    return dict(module=module, args=(torch.randn(1, 8, 16, 16),))


class Upsample(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.nearest = nn.Upsample(scale_factor=2, mode="nearest")
        self.bilinear = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.nearest(x), self.bilinear(x)


@_entry("upsample", "nn")
def _upsample():
    return dict(module=Upsample(), args=(torch.randn(1, 3, 16, 16),))


# ---- indexing, sorting, scans ----
class IndexOps(nn.Module):
    def forward(self, x: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor):
        selected = torch.index_select(x, 0, rows)
        gathered = torch.gather(x, 1, cols)
        scattered = torch.zeros_like(x).scatter(1, cols, gathered)
        added = x.new_zeros(8, 16).scatter_add(0, cols[:8] % 8, x[:8])  # on x's device
        return selected, gathered, scattered, added


@_entry("index_gather_scatter", "ops")
def _index_ops():
    g = _generator(2)
    return dict(module=IndexOps(),
                args=(torch.randn(32, 16), torch.randint(0, 32, (10,), generator=g),
                      torch.randint(0, 16, (32, 16), generator=g)))


class TopkSort(nn.Module):
    def forward(self, x: torch.Tensor):
        values, indices = torch.topk(x, 5, dim=-1)
        ordered, order = torch.sort(x, dim=-1, descending=True)
        return values, indices, ordered, order, torch.argmax(x, dim=-1)


@_entry("topk_sort_argmax", "ops")
def _topk_sort():
    return dict(module=TopkSort(), args=(torch.randn(8, 100),))


class Scans(nn.Module):
    def forward(self, x: torch.Tensor):
        return torch.cumsum(x, dim=1), torch.cumprod(x * 0.1 + 1, dim=0)


@_entry("cumsum", "ops")
def _cumsum():
    return dict(module=Scans(), args=(torch.randn(16, 64),))


class WhereMaskedFill(nn.Module):
    def forward(self, x: torch.Tensor, mask: torch.Tensor):
        return torch.where(mask, x, -x), x.masked_fill(mask, float("-inf")).softmax(-1)


@_entry("where_masked_fill", "ops")
def _where_masked_fill():
    mask = torch.rand(8, 32, generator=_generator(3)) > 0.5
    return dict(module=WhereMaskedFill(), args=(torch.randn(8, 32), mask))


class Nonzero(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nonzero(x > 0)


@_entry("nonzero", "ops")
def _nonzero():
    return dict(module=Nonzero(), args=(torch.randn(8, 8),))


class SearchSorted(nn.Module):
    def forward(self, boundaries: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        return torch.searchsorted(boundaries, values)


@_entry("searchsorted", "ops")
def _searchsorted():
    return dict(module=SearchSorted(),
                args=(torch.sort(torch.randn(64)).values, torch.randn(16)))


class GridSample(nn.Module):
    def forward(self, x: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
        return F.grid_sample(x, grid, align_corners=False)


@_entry("grid_sample", "ops")
def _grid_sample():
    return dict(module=GridSample(),
                args=(torch.randn(1, 3, 16, 16), torch.rand(1, 8, 8, 2) * 2 - 1))


# ---- static and dynamic shapes ----
class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


@_entry("mlp_static", "nn")
def _mlp_static():
    return dict(module=MLP(), args=(torch.randn(4, 32),))


@_entry("mlp_bf16", "nn", "bfloat16")
def _mlp_bf16():
    return _to_bf16(_mlp_static())


@_entry("mlp_dynamic_batch", "dynamic")
def _mlp_dynamic_batch():
    batch = torch.export.Dim("batch", min=1, max=64)
    return dict(module=MLP(), args=(torch.randn(4, 32),), dynamic_shapes=({0: batch},),
                run_args=[(torch.randn(2, 32),), (torch.randn(17, 32),)])


@_entry("conv_dynamic_batch", "dynamic")
def _conv_dynamic_batch():
    batch = torch.export.Dim("batch", min=1, max=16)
    return dict(module=_small_cnn(), args=(torch.randn(2, 3, 32, 32),),
                dynamic_shapes=({0: batch},),
                run_args=[(torch.randn(2, 3, 32, 32),), (torch.randn(5, 3, 32, 32),)])


@_entry("tel_dynamic_seq", "dynamic")
def _encoder_layer_dynamic_seq():
    seq = torch.export.Dim("seq", min=2, max=64)
    parts = _encoder_layer()
    parts.update(dynamic_shapes=({1: seq},),
                 run_args=[(torch.randn(2, 5, 64),), (torch.randn(2, 33, 64),)])
    return parts


# ---- the wider zoo: the shape families real deployments add ----
# Depthwise, grouped and large-kernel convolutions, dense concatenation,
# channel shuffles, windowed attention, 3-D video convolutions, and
# encoder-decoders, speech encoders and recent decoders from tiny configs.
# Small inputs keep a CPU run in milliseconds; the layers are the real ones.
def _vision(builder: str, size: int = 64) -> dict:
    module = getattr(_torchvision().models, builder)(weights=None)
    return dict(module=module, args=(torch.randn(1, 3, size, size),))


for _name in ("convnext_tiny", "efficientnet_b0", "regnet_y_400mf", "densenet121",
              "shufflenet_v2_x0_5", "mobilenet_v2", "swin_t"):
    _entry(_name, "torchvision", requires="torchvision")(
        lambda builder=_name: _vision(builder))


@_entry("r3d_18", "torchvision", requires="torchvision")
def _r3d_18():
    module = _torchvision().models.video.r3d_18(weights=None)
    return dict(module=module, args=(torch.randn(1, 3, 4, 56, 56),))


class Seq2Seq(nn.Module):
    """Calls an encoder-decoder on encoder inputs and decoder token ids and
    returns one output field."""

    def __init__(self, model: nn.Module, field: str, encoder_input: str = "input_ids") -> None:
        super().__init__()
        self.model = model
        self.field = field
        self.encoder_input = encoder_input

    def forward(self, encoder_input: torch.Tensor, decoder_input_ids: torch.Tensor) -> torch.Tensor:
        out = self.model(**{self.encoder_input: encoder_input},
                         decoder_input_ids=decoder_input_ids, use_cache=False)
        return getattr(out, self.field)


_SEQ2SEQ = dict(vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2,
                encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                decoder_ffn_dim=128, max_position_embeddings=64, pad_token_id=1,
                bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)


@_entry("hf_t5", "transformers", requires="transformers")
def _hf_t5():
    t = _transformers()
    config = t.T5Config(vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                        num_decoder_layers=2, num_heads=4, decoder_start_token_id=0)
    return dict(module=Seq2Seq(t.T5ForConditionalGeneration(config), "logits"),
                args=(_token_ids(), _token_ids(length=8)))


@_entry("hf_bart", "transformers", requires="transformers")
def _hf_bart():
    t = _transformers()
    config = t.BartConfig(**_SEQ2SEQ)
    return dict(module=Seq2Seq(t.BartForConditionalGeneration(config), "logits"),
                args=(_token_ids(), _token_ids(length=8)))


@_entry("hf_whisper", "transformers", requires="transformers")
def _hf_whisper():
    t = _transformers()
    config = t.WhisperConfig(**{**_SEQ2SEQ, "max_position_embeddings": None},
                             num_mel_bins=80, max_source_positions=32, max_target_positions=32)
    features = torch.randn(1, 80, 64, generator=_generator(2))  # 2 x max_source_positions frames
    return dict(module=Seq2Seq(t.WhisperForConditionalGeneration(config), "logits",
                               encoder_input="input_features"),
                args=(features, _token_ids(length=8)))


@_entry("hf_wav2vec2", "transformers", requires="transformers")
def _hf_wav2vec2():
    t = _transformers()
    config = t.Wav2Vec2Config(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                              intermediate_size=128, conv_dim=(32, 32, 32), conv_stride=(5, 2, 2),
                              conv_kernel=(10, 3, 3), num_conv_pos_embeddings=16,
                              num_conv_pos_embedding_groups=4, vocab_size=32)
    audio = torch.randn(1, 4000, generator=_generator(3))
    return dict(module=InputField(t.Wav2Vec2Model(config), "input_values", "last_hidden_state"),
                args=(audio,))


@_entry("hf_clip_vision", "transformers", requires="transformers")
def _hf_clip_vision():
    t = _transformers()
    config = t.CLIPVisionConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                num_attention_heads=4, image_size=32, patch_size=8)
    return dict(module=InputField(t.CLIPVisionModel(config), "pixel_values", "pooler_output"),
                args=(torch.randn(1, 3, 32, 32),))


class InputField(nn.Module):
    """Calls a transformers model with one named input and returns one output field."""

    def __init__(self, model: nn.Module, input_name: str, field: str) -> None:
        super().__init__()
        self.model = model
        self.input_name = input_name
        self.field = field

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return getattr(self.model(**{self.input_name: x}), self.field)


_DECODER = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, vocab_size=1000,
                max_position_embeddings=64)


for _name, _config, _extra in (("hf_mistral", "MistralConfig", {"sliding_window": 8}),
                               ("hf_qwen2", "Qwen2Config", {}),
                               ("hf_gemma", "GemmaConfig", {"head_dim": 16}),
                               ("hf_phi", "PhiConfig", {})):
    def _decoder(config_name=_config, extra=_extra):
        t = _transformers()
        config = getattr(t, config_name)(**_DECODER, **extra)
        model = getattr(t, config_name.replace("Config", "ForCausalLM"))(config)
        return dict(module=OutputField(model, "logits", use_cache=False), args=(_token_ids(),))
    _entry(_name, "transformers", requires="transformers")(_decoder)


NAMES: tuple[str, ...] = tuple(_BUILDERS)

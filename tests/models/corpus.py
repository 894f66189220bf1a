"""The test corpus (issue 15): small architectures built here from configs with
seeded random weights (no downloads), exported with torch.onnx.export by both
exporters, for `tests/unit/test_corpus.py`.

Each entry is tiny (2 layers, hidden 32-64, small vocabularies) so an export
plus a run takes seconds on a 2-core CPU, yet keeps its architecture's real
structure: attention with masks, RoPE and grouped-query heads, relative
position buckets, patch and convolutional embeddings, layer and group norms,
depthwise convolutions, the audio front ends. The TorchScript exporter gets
dynamic batch (and sequence) axes; the dynamo exporter (opset 18) static ones.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers as tf
from torch import nn

SEED = 0


@dataclass(frozen=True)
class Entry:
    """One architecture: `build` makes the module (weights seeded), `inputs`
    the example feeds (name -> array), `dynamic` the TorchScript exporter's
    dynamic axes per input (axis -> name), `dynamo` whether the dynamo
    exporter is exercised on it too."""

    name: str
    build: Callable[[], nn.Module]
    inputs: Callable[[], dict[str, np.ndarray]]
    dynamic: dict[str, dict[int, str]] = field(default_factory=dict)
    dynamo: bool = False


class LastHidden(nn.Module):
    """A transformers model with positional inputs returning one tensor (its
    `last_hidden_state`, or `pooler_output` where that is the point)."""

    def __init__(self, model: nn.Module, names: tuple[str, ...], out: str = "last_hidden_state"):
        super().__init__()
        self.model, self.names, self.out = model, names, out

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        return getattr(self.model(**dict(zip(self.names, args, strict=True))), self.out)


def _seeded(make: Callable[[], nn.Module]) -> nn.Module:
    torch.manual_seed(SEED)
    m = make()
    # BatchNorm statistics other than 0/1, so the folded constants are real.
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.5, 0.5)
                mod.running_var.uniform_(0.5, 1.5)
    return m.eval()


def _hf(cls: type, cfg: Any, names: tuple[str, ...], out: str = "last_hidden_state") -> nn.Module:
    return _seeded(lambda: LastHidden(cls(cfg), names, out))


def _text(vocab: int, batch: int = 2, seq: int = 7, mask: bool = True) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    feeds = {"input_ids": rng.integers(0, vocab, (batch, seq), dtype=np.int64)}
    if mask:
        m = np.ones((batch, seq), np.int64)
        m[1, seq - 2 :] = 0  # a padded row: the mask path is live
        feeds["attention_mask"] = m
    return feeds


def _image(batch: int = 2, ch: int = 3, size: int = 32) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    return {"pixel_values": rng.standard_normal((batch, ch, size, size)).astype(np.float32)}


TEXT_AXES = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}
IMAGE_AXES = {"pixel_values": {0: "batch"}}
SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)


def _bert() -> nn.Module:
    cfg = tf.BertConfig(vocab_size=100, max_position_embeddings=64, **SMALL)
    return _hf(tf.BertModel, cfg, ("input_ids", "attention_mask"))


def _roberta() -> nn.Module:
    cfg = tf.RobertaConfig(vocab_size=100, max_position_embeddings=64, **SMALL)
    return _hf(tf.RobertaModel, cfg, ("input_ids", "attention_mask"))


def _distilbert() -> nn.Module:
    cfg = tf.DistilBertConfig(
        vocab_size=100, max_position_embeddings=64, dim=32, n_layers=2, n_heads=4, hidden_dim=64
    )
    return _hf(tf.DistilBertModel, cfg, ("input_ids", "attention_mask"))


def _gpt2() -> nn.Module:
    cfg = tf.GPT2Config(
        vocab_size=100,
        n_positions=64,
        n_embd=32,
        n_layer=2,
        n_head=4,
        bos_token_id=0,
        eos_token_id=0,
    )
    cfg.use_cache = False
    return _hf(tf.GPT2Model, cfg, ("input_ids", "attention_mask"))


def _llama() -> nn.Module:
    # RoPE, RMSNorm, SwiGLU and grouped-query attention (4 query heads, 2 kv heads).
    cfg = tf.LlamaConfig(
        vocab_size=100,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        use_cache=False,
    )
    return _hf(tf.LlamaModel, cfg, ("input_ids", "attention_mask"))


def _bloom() -> nn.Module:
    # ALiBi position biases (no position embeddings).
    cfg = tf.BloomConfig(vocab_size=100, hidden_size=32, n_layer=2, n_head=4, use_cache=False)
    return _hf(tf.BloomModel, cfg, ("input_ids", "attention_mask"))


def _phi() -> nn.Module:
    # Partial rotary embeddings (half the head dims), parallel attention and MLP.
    cfg = tf.PhiConfig(
        vocab_size=100,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=64,
        partial_rotary_factor=0.5,
        use_cache=False,
    )
    return _hf(tf.PhiModel, cfg, ("input_ids", "attention_mask"))


def _deberta_v2() -> nn.Module:
    # Disentangled attention: relative position gathers both ways.
    cfg = tf.DebertaV2Config(vocab_size=100, max_position_embeddings=64, **SMALL)
    return _hf(tf.DebertaV2Model, cfg, ("input_ids", "attention_mask"))


def _albert() -> nn.Module:
    # Factorized embeddings and one layer shared across the depth.
    cfg = tf.AlbertConfig(vocab_size=100, embedding_size=16, max_position_embeddings=64, **SMALL)
    return _hf(tf.AlbertModel, cfg, ("input_ids", "attention_mask"))


def _segformer() -> nn.Module:
    # Overlapping patch embeddings, spatial-reduction attention, Mix-FFN.
    cfg = tf.SegformerConfig(
        num_encoder_blocks=2,
        depths=[1, 1],
        sr_ratios=[2, 1],
        hidden_sizes=[16, 32],
        num_attention_heads=[1, 2],
        patch_sizes=[7, 3],
        strides=[4, 2],
        mlp_ratios=[2, 2],
        decoder_hidden_size=32,
    )
    return _hf(tf.SegformerModel, cfg, ("pixel_values",))


def _t5_encoder() -> nn.Module:
    cfg = tf.T5Config(
        vocab_size=100, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, use_cache=False
    )
    return _hf(tf.T5EncoderModel, cfg, ("input_ids", "attention_mask"))


def _vit() -> nn.Module:
    cfg = tf.ViTConfig(image_size=32, patch_size=8, **SMALL)
    return _hf(tf.ViTModel, cfg, ("pixel_values",))


def _deit() -> nn.Module:
    cfg = tf.DeiTConfig(image_size=32, patch_size=8, **SMALL)
    return _hf(tf.DeiTModel, cfg, ("pixel_values",))


def _convnext() -> nn.Module:
    cfg = tf.ConvNextConfig(num_channels=3, hidden_sizes=[16, 32], depths=[1, 1], num_stages=2)
    return _hf(tf.ConvNextModel, cfg, ("pixel_values",), "pooler_output")


def _resnet() -> nn.Module:
    cfg = tf.ResNetConfig(
        embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="bottleneck"
    )
    return _hf(tf.ResNetModel, cfg, ("pixel_values",), "pooler_output")


def _clip_text() -> nn.Module:
    cfg = tf.CLIPTextConfig(
        vocab_size=100,
        max_position_embeddings=64,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        **SMALL,
    )
    return _hf(tf.CLIPTextModel, cfg, ("input_ids", "attention_mask"))


def _clip_vision() -> nn.Module:
    cfg = tf.CLIPVisionConfig(image_size=32, patch_size=8, **SMALL)
    return _hf(tf.CLIPVisionModel, cfg, ("pixel_values",))


def _wav2vec2() -> nn.Module:
    cfg = tf.Wav2Vec2Config(
        vocab_size=32,
        conv_dim=(16, 16),
        conv_stride=(5, 2),
        conv_kernel=(10, 3),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4,
        do_stable_layer_norm=True,
        feat_extract_norm="layer",
        **SMALL,
    )
    return _hf(tf.Wav2Vec2Model, cfg, ("input_values",))


def _audio() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    return {"input_values": rng.standard_normal((2, 800)).astype(np.float32)}


def _whisper_encoder() -> nn.Module:
    cfg = tf.WhisperConfig(
        vocab_size=100,
        num_mel_bins=16,
        d_model=32,
        encoder_layers=2,
        encoder_attention_heads=4,
        decoder_layers=1,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_source_positions=16,
        max_target_positions=16,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=0,
    )
    return _seeded(lambda: LastHidden(tf.WhisperModel(cfg).get_encoder(), ("input_features",)))


def _mel() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)  # 2 * max_source_positions frames (the stride-2 conv)
    return {"input_features": rng.standard_normal((2, 16, 32)).astype(np.float32)}


def _bart() -> nn.Module:
    # Encoder-decoder: the decoder's causal self-attention and cross-attention.
    cfg = tf.BartConfig(
        vocab_size=100,
        max_position_embeddings=64,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        use_cache=False,
    )
    return _seeded(
        lambda: LastHidden(tf.BartModel(cfg), ("input_ids", "attention_mask", "decoder_input_ids"))
    )


def _seq2seq() -> dict[str, np.ndarray]:
    feeds = _text(100)
    rng = np.random.default_rng(SEED + 1)
    feeds["decoder_input_ids"] = rng.integers(0, 100, (2, 5), dtype=np.int64)
    return feeds


def _qwen2() -> nn.Module:
    # RoPE and grouped-query attention with biased q/k/v projections.
    cfg = tf.Qwen2Config(
        vocab_size=100,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=1,
        max_position_embeddings=64,
        use_cache=False,
    )
    return _hf(tf.Qwen2Model, cfg, ("input_ids", "attention_mask"))


def _swin() -> nn.Module:
    # Shifted windows: rolls, window partition reshapes, relative position bias.
    cfg = tf.SwinConfig(
        image_size=32, patch_size=2, embed_dim=16, depths=[2, 1], num_heads=[2, 4], window_size=4
    )
    return _hf(tf.SwinModel, cfg, ("pixel_values",), "pooler_output")


def _mobilevit() -> nn.Module:
    cfg = tf.MobileViTConfig(
        image_size=32,
        patch_size=2,
        hidden_sizes=[16, 24, 32],
        neck_hidden_sizes=[8, 8, 16, 16, 24, 24, 48],
        num_attention_heads=2,
    )
    return _hf(tf.MobileViTModel, cfg, ("pixel_values",), "pooler_output")


class SmallCNN(nn.Module):
    """A plain CNN: conv-BN-ReLU, max pool, a residual pair, global pool, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1), nn.BatchNorm2d(16), nn.ReLU())
        self.pool = nn.MaxPool2d(2)
        self.a = nn.Conv2d(16, 16, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.b = nn.Conv2d(16, 32, 3, 2, 1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.pool(self.stem(x))
        y = torch.relu(y + self.bn(self.a(y)))
        y = torch.relu(self.b(y))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))


class MobileBlockCNN(nn.Module):
    """Inverted residuals: 1x1 expand, depthwise 3x3, squeeze-excite, hardswish,
    1x1 project, GELU head; avg pool and a softmax over the classes."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.Hardswish())
        self.expand = nn.Sequential(nn.Conv2d(16, 48, 1), nn.BatchNorm2d(48), nn.ReLU6())
        self.dw = nn.Sequential(nn.Conv2d(48, 48, 3, 1, 1, groups=48), nn.BatchNorm2d(48))
        self.se = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Conv2d(48, 12, 1), nn.ReLU(), nn.Conv2d(12, 48, 1)
        )
        self.project = nn.Sequential(nn.Conv2d(48, 16, 1), nn.BatchNorm2d(16))
        self.head = nn.Sequential(nn.Conv2d(16, 32, 1), nn.GELU(), nn.AvgPool2d(2))
        self.fc = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.stem(x)
        z = nn.functional.hardswish(self.dw(self.expand(y)))
        z = z * torch.sigmoid(self.se(z))
        y = y + self.project(z)
        y = self.head(y).mean(dim=(2, 3))
        return torch.softmax(self.fc(y), dim=-1)


def _pixels() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    return {"x": rng.standard_normal((2, 3, 32, 32)).astype(np.float32)}


CORPUS: list[Entry] = [
    Entry("bert", _bert, lambda: _text(100), TEXT_AXES, dynamo=True),
    Entry("roberta", _roberta, lambda: _text(100), TEXT_AXES, dynamo=True),
    Entry("distilbert", _distilbert, lambda: _text(100), TEXT_AXES),
    Entry("gpt2", _gpt2, lambda: _text(100), TEXT_AXES, dynamo=True),
    Entry("llama", _llama, lambda: _text(100), TEXT_AXES, dynamo=True),
    Entry("qwen2", _qwen2, lambda: _text(100), TEXT_AXES, dynamo=True),
    Entry(
        "bart",
        _bart,
        _seq2seq,
        {**TEXT_AXES, "decoder_input_ids": {0: "batch", 1: "dec_seq"}},
        dynamo=True,
    ),
    Entry("t5_encoder", _t5_encoder, lambda: _text(100), TEXT_AXES, dynamo=True),
    Entry("bloom", _bloom, lambda: _text(100), TEXT_AXES),
    Entry("phi", _phi, lambda: _text(100), TEXT_AXES, dynamo=True),
    Entry("deberta_v2", _deberta_v2, lambda: _text(100), TEXT_AXES, dynamo=True),
    Entry("albert", _albert, lambda: _text(100), TEXT_AXES),
    Entry("clip_text", _clip_text, lambda: _text(100), TEXT_AXES),
    Entry("vit", _vit, _image, IMAGE_AXES, dynamo=True),
    Entry("deit", _deit, _image, IMAGE_AXES),
    Entry("clip_vision", _clip_vision, _image, IMAGE_AXES),
    Entry("convnext", _convnext, _image, IMAGE_AXES, dynamo=True),
    Entry("swin", _swin, _image, IMAGE_AXES, dynamo=True),
    Entry("mobilevit", _mobilevit, _image, IMAGE_AXES),
    Entry("segformer", _segformer, _image, IMAGE_AXES),
    Entry("resnet", _resnet, _image, IMAGE_AXES),
    Entry("wav2vec2", _wav2vec2, _audio, {"input_values": {0: "batch", 1: "samples"}}, dynamo=True),
    Entry("whisper_encoder", _whisper_encoder, _mel, {"input_features": {0: "batch"}}, True),
    Entry("small_cnn", lambda: _seeded(SmallCNN), _pixels, {"x": {0: "batch"}}, dynamo=True),
    Entry("mobile_cnn", lambda: _seeded(MobileBlockCNN), _pixels, {"x": {0: "batch"}}),
]
BY_NAME = {e.name: e for e in CORPUS}


def export(entry: Entry, path: Path, exporter: str) -> Path:
    """Export `entry` to `path` with `exporter` ("torchscript": dynamic axes,
    the default opset; "dynamo": static shapes, opset 18); returns `path`."""
    # The TorchScript exporter is used on purpose (it is what export tools
    # with dynamic axes emit); torch's deprecation, tracer and export notes
    # (and transformers' jit.script at build time) are noise here.
    with torch.no_grad(), warnings.catch_warnings():
        for category in (DeprecationWarning, FutureWarning, UserWarning, torch.jit.TracerWarning):
            warnings.simplefilter("ignore", category)
        model = entry.build()
        feeds = entry.inputs()
        args = tuple(torch.from_numpy(v) for v in feeds.values())
        names = list(feeds)
        if exporter == "torchscript":
            torch.onnx.export(
                model,
                args,
                str(path),
                input_names=names,
                output_names=["out"],
                dynamic_axes={**{k: entry.dynamic[k] for k in names if k in entry.dynamic}},
                dynamo=False,
            )
        elif exporter == "dynamo":
            prog = torch.onnx.export(
                model, args, input_names=names, output_names=["out"], opset_version=18, dynamo=True
            )
            prog.save(str(path))
        else:
            raise ValueError(f"unknown exporter {exporter!r}")
    return path

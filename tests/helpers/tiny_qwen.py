"""Tiny random-weight Qwen models built from configs, for CPU tests (no download).

- :func:`tiny_omni`: a Qwen2.5-Omni **thinker** (text 2 layers, hidden 64; 1-layer vision and
  audio encoders) with a ``Qwen2_5OmniProcessor`` assembled from its components.
- :func:`tiny_vl`: a Qwen2.5-VL (text 2 layers, hidden 64; 1-layer vision) with a
  ``Qwen2_5_VLProcessor``.

Both use a byte-level BPE tokenizer trained in-process with ``tokenizers`` and a chat template
that renders media parts like the real checkpoints' templates. Images and videos are bounded to
56x56..112x112 pixels so a prompt stays small.
"""

from __future__ import annotations

from functools import lru_cache


def _corpus() -> list[str]:
    """The prompt wording itself, so the tiny BPE compresses real prompts to few tokens."""
    from dataclasses import astuple

    from interactscope.streaming.protocol.prompts import TEMPLATES

    words = [str(x) for tp in TEMPLATES.values() for x in astuple(tp)]
    words += [
        '```json {"name": "take_photo", "arguments": {}} ``` 0.0 s 1.0 s 2.5 s 7.6 s 12.0 s',
        "Start a voice memo as soon as someone starts talking. request a Take a photo.",
        'Parameters (JSON Schema): {"properties": {}, "type": "object"}',
    ]
    return words * 5


PIXELS = {"shortest_edge": 56 * 56, "longest_edge": 112 * 112}

OMNI_SPECIAL = {
    "pad": "<|endoftext|>",
    "im_start": "<|im_start|>",
    "im_end": "<|im_end|>",
    "audio_token": "<|AUDIO|>",
    "audio_bos_token": "<|audio_bos|>",
    "audio_eos_token": "<|audio_eos|>",
    "image_token": "<|IMAGE|>",
    "video_token": "<|VIDEO|>",
    "vision_bos_token": "<|vision_bos|>",
    "vision_eos_token": "<|vision_eos|>",
}
VL_SPECIAL = {
    "pad": "<|endoftext|>",
    "im_start": "<|im_start|>",
    "im_end": "<|im_end|>",
    "image_token": "<|image_pad|>",
    "video_token": "<|video_pad|>",
    "vision_bos_token": "<|vision_start|>",
    "vision_eos_token": "<|vision_end|>",
}


def _template(image: str, video: str, audio: str) -> str:
    return (
        "{% for message in messages %}<|im_start|>{{ message.role }}\n"
        "{% if message.content is string %}{{ message.content }}{% else %}"
        "{% for c in message.content %}{% if c.type == 'text' %}{{ c.text }}"
        "{% elif c.type == 'image' %}" + image + "{% elif c.type == 'video' %}" + video + ""
        "{% elif c.type == 'audio' %}" + audio + "{% endif %}{% endfor %}{% endif %}"
        "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )


OMNI_TEMPLATE = _template(
    "<|vision_bos|><|IMAGE|><|vision_eos|>",
    "<|vision_bos|><|VIDEO|><|vision_eos|>",
    "<|audio_bos|><|AUDIO|><|audio_eos|>",
)
VL_TEMPLATE = _template(
    "<|vision_start|><|image_pad|><|vision_end|>", "<|vision_start|><|video_pad|><|vision_end|>", ""
)


HIDDEN = 64


def _heads(head_dim: int) -> dict[str, int]:
    """Attention heads of the tiny text model (hidden 64) at ``head_dim``: 16 gives 4 heads and 2
    KV heads; vLLM's CPU attention needs head_dim >= 32 (2 heads, 1 KV head)."""
    n = HIDDEN // head_dim
    return {"num_attention_heads": n, "num_key_value_heads": max(1, n // 2)}


def _mrope(head_dim: int) -> list[int]:
    """M-RoPE sections (temporal, height, width) summing to head_dim / 2: [2, 3, 3] at 16."""
    k = head_dim // 16
    return [2 * k, 3 * k, 3 * k]


def _tokenizer(
    special: dict[str, str],
    template: str,
    extra_tokens: tuple[str, ...] = (),
    words: tuple[str, ...] = (),
):
    """A byte-level BPE (vocabulary 1500) trained on :func:`_corpus` plus ``words``, with the
    ``special`` tokens (``eos``, else ``im_end``, ends a reply; ``bos`` when given) and
    ``extra_tokens`` kept whole."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokens = list(dict.fromkeys([*special.values(), *extra_tokens]))
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1500,
        special_tokens=tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_corpus() + list(words), trainer)
    extra = {k: v for k, v in special.items() if k.endswith("_token")}
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=special.get("eos", special.get("im_end")),
        pad_token=special["pad"],
        bos_token=special.get("bos"),
        chat_template=template,
        extra_special_tokens=extra,
    )


def text_config(vocab: int, head_dim: int = 16, theta: float = 1e6, named_head_dim=False) -> dict:
    """The tiny M-RoPE text model (2 layers, hidden 64) every Qwen builder here uses;
    ``named_head_dim``: the config names ``head_dim`` (Qwen3-VL)."""
    return dict(
        vocab_size=vocab,
        hidden_size=HIDDEN,
        intermediate_size=128,
        num_hidden_layers=2,
        **_heads(head_dim),
        **({"head_dim": head_dim} if named_head_dim else {}),
        max_position_embeddings=8192,
        rope_parameters={
            "rope_type": "default",
            "rope_theta": theta,
            "mrope_section": _mrope(head_dim),
        },
    )


VL25_VISION = dict(
    depth=1,
    hidden_size=32,
    intermediate_size=64,
    num_heads=2,
    out_hidden_size=64,
    fullatt_block_indexes=[0],
)
"""The tiny Qwen2.5-VL / Omni vision tower (1 layer, full attention)."""


def vision_ids(ids: dict[str, int]) -> dict[str, int]:
    """The media token ids a Qwen-VL config names, from the tokenizer's ``ids``."""
    return dict(
        image_token_id=ids["image_token"],
        video_token_id=ids["video_token"],
        vision_start_token_id=ids["vision_bos_token"],
        vision_end_token_id=ids["vision_eos_token"],
    )


def processor_of(cls, tok, template: str, video_cls=None, pixels=PIXELS, **parts):
    """``cls`` (a Qwen processor) over ``tok`` with image/video processors bounded to
    ``pixels``; ``parts``: more components (the Omni feature extractor) or processor options."""
    from transformers import Qwen2VLImageProcessor, Qwen2VLVideoProcessor

    size = {k: v for k, v in parts.items() if k == "patch_size"}
    rest = {k: v for k, v in parts.items() if k != "patch_size"}
    return cls(
        image_processor=Qwen2VLImageProcessor(size=dict(pixels), **size),
        video_processor=(video_cls or Qwen2VLVideoProcessor)(size=dict(pixels), **size),
        tokenizer=tok,
        chat_template=template,
        **rest,
    )


def finish(model_cls, cfg, ids: dict[str, int], seed: int):
    """``model_cls(cfg)`` seeded with ``seed``, in eval mode, ending replies at ``im_end``."""
    import torch

    torch.manual_seed(seed)
    model = model_cls(cfg).eval()
    model.generation_config.eos_token_id = ids["im_end"]
    model.generation_config.pad_token_id = ids["pad"]
    return model


@lru_cache(maxsize=1)
def tiny_omni(seed: int = 0, head_dim: int = 16):
    """(model, processor) of a tiny Qwen2.5-Omni thinker (text ``head_dim`` 16 or 32); eval
    mode, float32, CPU."""
    from transformers import (
        Qwen2_5OmniProcessor,
        Qwen2_5OmniThinkerConfig,
        Qwen2_5OmniThinkerForConditionalGeneration,
        WhisperFeatureExtractor,
    )

    tok = _tokenizer(OMNI_SPECIAL, OMNI_TEMPLATE)
    ids = {k: tok.convert_tokens_to_ids(v) for k, v in OMNI_SPECIAL.items()}
    # a 10 s window (Whisper's default is 30 s) keeps the audio encoder cheap
    features = WhisperFeatureExtractor(feature_size=128, chunk_length=10)
    processor = processor_of(Qwen2_5OmniProcessor, tok, OMNI_TEMPLATE, feature_extractor=features)
    cfg = Qwen2_5OmniThinkerConfig(
        audio_config=dict(
            num_mel_bins=128,
            encoder_layers=1,
            encoder_attention_heads=2,
            encoder_ffn_dim=64,
            d_model=32,
            output_dim=64,
        ),
        vision_config=dict(VL25_VISION),
        text_config=text_config(len(tok), head_dim),
        audio_token_index=ids["audio_token"],
        image_token_index=ids["image_token"],
        video_token_index=ids["video_token"],
        audio_start_token_id=ids["audio_bos_token"],
        audio_end_token_id=ids["audio_eos_token"],
        user_token_id=ids["im_start"],
    )
    cfg.vision_start_token_id = ids["vision_bos_token"]
    cfg.vision_end_token_id = ids["vision_eos_token"]
    return finish(Qwen2_5OmniThinkerForConditionalGeneration, cfg, ids, seed), processor


@lru_cache(maxsize=1)
def tiny_vl(seed: int = 0, head_dim: int = 16):
    """(model, processor) of a tiny Qwen2.5-VL; eval mode, float32, CPU."""
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
    )

    tok = _tokenizer(VL_SPECIAL, VL_TEMPLATE)
    ids = {k: tok.convert_tokens_to_ids(v) for k, v in VL_SPECIAL.items()}
    processor = processor_of(Qwen2_5_VLProcessor, tok, VL_TEMPLATE)
    cfg = Qwen2_5_VLConfig(
        vision_config=dict(VL25_VISION),
        text_config=text_config(len(tok), head_dim),
        **vision_ids(ids),
    )
    return finish(Qwen2_5_VLForConditionalGeneration, cfg, ids, seed), processor


@lru_cache(maxsize=1)
def tiny_qwen3_vl(seed: int = 0, head_dim: int = 16):
    """(model, processor) of a tiny Qwen3-VL (frame timestamps come from video metadata)."""
    from transformers import (
        Qwen3VLConfig,
        Qwen3VLForConditionalGeneration,
        Qwen3VLProcessor,
        Qwen3VLVideoProcessor,
    )

    tok = _tokenizer(VL_SPECIAL, VL_TEMPLATE)
    ids = {k: tok.convert_tokens_to_ids(v) for k, v in VL_SPECIAL.items()}
    pixels = {"shortest_edge": 64 * 64, "longest_edge": 128 * 128}
    processor = processor_of(
        Qwen3VLProcessor, tok, VL_TEMPLATE, Qwen3VLVideoProcessor, pixels, patch_size=16
    )
    cfg = Qwen3VLConfig(
        vision_config=dict(
            depth=2,
            hidden_size=32,
            intermediate_size=64,
            num_heads=2,
            out_hidden_size=64,
            patch_size=16,
            num_position_embeddings=64,
            deepstack_visual_indexes=[1],
        ),
        text_config=text_config(len(tok), head_dim, 5e5, named_head_dim=True),
        **vision_ids(ids),
    )
    return finish(Qwen3VLForConditionalGeneration, cfg, ids, seed), processor

"""Tiny random-weight Qwen checkpoints saved to disk, for the vLLM lane (``pytest -m vllm``).

vLLM loads models from a folder, and its CPU attention refuses head_dim 16, so these are the
models of :mod:`tests.helpers.tiny_qwen` at text head_dim 32 (2 heads, 1 KV head), saved with their
processor and chat template:

- ``text``: a Qwen2 causal LM (the VL tokenizer and template);
- ``vl``: Qwen2.5-VL; ``qwen3_vl``: Qwen3-VL;
- ``omni``: the Qwen2.5-Omni thinker, saved as ``Qwen2_5OmniForConditionalGeneration`` (weights
  prefixed ``thinker.``, no talker, an empty ``spk_dict.pt``): vLLM does not load a thinker-only
  checkpoint.

The weights are random: answers are token soup, but deterministic under greedy decoding, so two
engines on the same folder must give the same text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

KINDS = ("text", "vl", "qwen3_vl", "omni")
HEAD_DIM = 32


def _text_model(seed: int):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from tests.helpers.tiny_qwen import HIDDEN, VL_SPECIAL, VL_TEMPLATE, _heads, _tokenizer

    tok = _tokenizer(VL_SPECIAL, VL_TEMPLATE)
    cfg = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=HIDDEN,
        intermediate_size=128,
        num_hidden_layers=2,
        **_heads(HEAD_DIM),
        max_position_embeddings=8192,
        eos_token_id=tok.convert_tokens_to_ids(VL_SPECIAL["im_end"]),
        pad_token_id=tok.convert_tokens_to_ids(VL_SPECIAL["pad"]),
    )
    torch.manual_seed(seed)
    return Qwen2ForCausalLM(cfg).eval(), tok


def _omni_full(thinker):
    """The thinker inside a ``Qwen2_5OmniForConditionalGeneration`` without talker."""
    from transformers import Qwen2_5OmniConfig, Qwen2_5OmniForConditionalGeneration

    thinker_cfg = thinker.config.to_dict()
    # the thinker's lm_head is its own weight (thinker_config.tie_word_embeddings is false); say so
    # in the text config too, which vLLM's Qwen2 language model reads (else it ties the head)
    thinker_cfg["text_config"]["tie_word_embeddings"] = False
    cfg = Qwen2_5OmniConfig(thinker_config=thinker_cfg, enable_audio_output=False)
    full = Qwen2_5OmniForConditionalGeneration(cfg).eval()
    full.thinker.load_state_dict(thinker.state_dict())
    full.generation_config.eos_token_id = thinker.generation_config.eos_token_id
    full.generation_config.pad_token_id = thinker.generation_config.pad_token_id
    return full


def save_tiny(kind: str, folder: str | Path, seed: int = 0) -> Path:
    """Build the tiny model ``kind`` (one of :data:`KINDS`) and save it with its processor (or
    tokenizer) into ``folder``; returns the folder.

    Raises:
        ValueError: unknown ``kind``.
    """
    from tests.helpers import tiny_qwen

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "text":
        model, processor = _text_model(seed)
    elif kind == "vl":
        model, processor = tiny_qwen.tiny_vl(seed, head_dim=HEAD_DIM)
    elif kind == "qwen3_vl":
        model, processor = tiny_qwen.tiny_qwen3_vl(seed, head_dim=HEAD_DIM)
    elif kind == "omni":
        thinker, processor = tiny_qwen.tiny_omni(seed, head_dim=HEAD_DIM)
        model = _omni_full(thinker)
    else:
        raise ValueError(f"unknown tiny checkpoint kind {kind!r}; known: {', '.join(KINDS)}")
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    if kind == "omni":  # the real checkpoints ship the talker's voices; from_pretrained reads them
        import torch

        torch.save({}, folder / "spk_dict.pt")
    return folder


def messages(kind: str) -> list[Any]:
    """The test conversation of ``kind``: text only for ``text``; a 64x96 frame for the VL
    models; the frame and 1 s of 16 kHz audio for Omni. Deterministic arrays."""
    import numpy as np

    from interactscope.engines.base import AudioPart, ImagePart, Message, TextPart

    system = Message(role="system", content="Answer briefly, or exactly <SILENT>.")
    if kind == "text":
        return [system, Message(role="user", content="Tell me when a car passes.")]
    img = np.random.default_rng(0).integers(0, 255, (64, 96, 3), dtype=np.uint8)
    parts: list[Any] = [ImagePart(image=img, pts_s=0.0)]
    if kind == "omni":
        wave = (0.1 * np.sin(np.arange(16000) / 5.0)).astype(np.float32)
        parts.append(AudioPart(audio=wave, sample_rate=16000))
    parts.append(TextPart(text="What is in the frame?"))
    return [system, Message(role="user", content=parts)]


def reference_config(kind: str, checkpoint: str | Path, max_new_tokens: int) -> dict[str, Any]:
    """The model config of the transformers-side engine for ``kind`` (float32, greedy, frames
    as images like the vLLM side)."""
    generation = {"max_new_tokens": max_new_tokens, "temperature": 0}
    if kind == "text":
        return {"backend": "causal-lm", "checkpoint": str(checkpoint), "generation": generation}
    return {
        "backend": "transformers",
        "checkpoint": str(checkpoint),
        "frames_as": "image",
        "dtype": "float32",
        "generation": generation,
    }


def reference_answer(kind: str, checkpoint: str | Path, max_new_tokens: int) -> str:
    """The transformers engine's greedy answer to :func:`messages` ``(kind)``."""
    from interactscope.engines import load_engine

    engine = load_engine(reference_config(kind, checkpoint, max_new_tokens))
    return engine.chat(messages(kind)).text


if __name__ == "__main__":  # python -m tests.vllm_tiny KIND CHECKPOINT MAX_NEW_TOKENS
    import json
    import sys

    kind, ckpt, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    print(json.dumps({"text": reference_answer(kind, ckpt, n)}))

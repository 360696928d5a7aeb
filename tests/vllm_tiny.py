"""Tiny random-weight Qwen checkpoints saved to disk, for the vLLM lane (``pytest -m vllm``).

vLLM loads models from a folder, and its CPU attention refuses head_dim 16, so these are the
models of :mod:`tests.tiny_qwen` at text head_dim 32 (2 heads, 1 KV head), saved with their
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

KINDS = ("text", "vl", "qwen3_vl", "omni")
HEAD_DIM = 32


def _text_model(seed: int):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from tests.tiny_qwen import HIDDEN, VL_SPECIAL, VL_TEMPLATE, _heads, _tokenizer

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

    cfg = Qwen2_5OmniConfig(thinker_config=thinker.config.to_dict(), enable_audio_output=False)
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
    from tests import tiny_qwen

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

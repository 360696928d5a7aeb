"""VideoLLM-online's model (showlab/videollm-online, "LIVE"): a Llama causal LM whose frame
placeholders carry SigLIP frame embeddings through a 2-layer GELU connector, fed one frame at a
time with a per-frame speak/stay-silent decision.

:class:`LiveStream` holds one session's KV cache. What it does, read from the public
``models/modeling_live.py`` / ``vision_live.py`` / ``demo/inference.py`` (never copied):

- a frame: letterboxed to a black ``resolution`` x ``resolution`` square (384; its ffmpeg
  preprocessing), scaled to [-1, 1] (``x / 255``, mean 0.5, std 0.5), through the SigLIP tower;
  its tokens are the pooled output (``frame_token_cls``) then the last hidden state average-
  pooled to ``frame_token_pooled`` (3 x 3): 10 tokens per frame for ``live1+``, each through the
  connector;
- :meth:`LiveStream.feed` runs text ids then frame embeddings through the LM (one forward pass,
  as the demo's ``inputs_embeds`` concatenation) and returns the next-token probabilities;
- :meth:`LiveStream.reply` is the demo's ``fast_greedy_generate``: greedy from a prompt until
  the EOS id (not fed) or ``max_new_tokens``.

:attr:`LiveStream.fed` records every step's input as ids, a frame's tokens written as the
``<v>`` placeholder id (``frame_token_ids``), for the feed-equality tests.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from interactscope.engines.base import EngineError
from interactscope.engines.causal_lm import _cache_kwarg

__all__ = ["LiveStream", "letterbox", "load_live_llama"]


def letterbox(image: np.ndarray, side: int) -> np.ndarray:
    """(side, side, 3) uint8: ``image`` scaled so its long side is ``side`` px, centred on
    black (ffmpeg's scale + pad, as VideoLLM-online's preprocessing)."""
    from PIL import Image  # optional dependency ([openai])

    h, w = image.shape[:2]
    s = side / max(h, w)
    nw, nh = max(1, round(w * s)), max(1, round(h * s))
    small = np.asarray(Image.fromarray(image).resize((nw, nh), Image.BICUBIC))
    out = np.zeros((side, side, 3), np.uint8)
    y, x = (side - nh) // 2, (side - nw) // 2
    out[y : y + nh, x : x + nw] = small
    return out


def load_live_llama(llm: str, lora: str, vision: str, device: str | None, dtype: str | None):
    """(llm, vision tower, connector, tokenizer) of a VideoLLM-online checkpoint: the base LM
    ``llm`` (e.g. meta-llama/Meta-Llama-3-8B-Instruct) with the LoRA adapter and connector of
    ``lora`` (e.g. chenjoya/videollm-online-8b-v1plus, via peft), and the SigLIP ``vision``
    tower; all from the local HF cache.

    Raises:
        EngineError: torch/transformers/peft missing or a checkpoint not loadable.
    """
    try:
        import torch  # optional dependency ([transformers])
        from peft import PeftModel  # optional dependency (not a declared dependency)
        from transformers import (  # optional dependency ([transformers])
            AutoModel,
            AutoTokenizer,
            LlamaForCausalLM,
        )
    except ImportError as exc:
        raise EngineError(
            "VideoLLM-online needs torch, transformers and peft "
            "(pip install 'interactscope[transformers]' peft)"
        ) from exc

    class _Live(LlamaForCausalLM):
        def __init__(self, config: Any):
            super().__init__(config)
            h = config.hidden_size
            self.connector = torch.nn.Sequential(
                torch.nn.Linear(getattr(config, "vision_hidden_size", 1024), h),
                torch.nn.GELU(),
                torch.nn.Linear(h, h),
            )

    dev = device or ("cuda" if torch.cuda.is_available() else "cpu")
    dt = getattr(torch, dtype or ("bfloat16" if dev != "cpu" else "float32"))
    try:
        base = _Live.from_pretrained(llm, dtype=dt)
        model = PeftModel.from_pretrained(base, lora).merge_and_unload()
        tower = AutoModel.from_pretrained(vision, dtype=dt).vision_model
        tok = AutoTokenizer.from_pretrained(llm)
    except (OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise EngineError(
            f"cannot load VideoLLM-online ({first}); fetch {llm}, {lora} and {vision} with "
            "`huggingface-cli download`, then run with HF_HUB_OFFLINE=1"
        ) from None
    tok.add_special_tokens({"additional_special_tokens": ["<v>"]})
    return model.to(dev).eval(), tower.to(dev).eval(), model.connector, tok


class LiveStream:
    """One VideoLLM-online session's cache (module docstring).

    Args:
        llm: the causal LM (``get_input_embeddings``, forward with ``inputs_embeds``).
        vision: the SigLIP vision tower (``last_hidden_state``, ``pooler_output``).
        connector: vision hidden -> LM hidden.
        frame_token_ids: the id recorded in :attr:`fed` for each frame token (``<v>``).
        resolution: frame side (px); ``pooled``: (h, w) of the pooled grid; ``cls``: the
            pooled output first.
    """

    def __init__(
        self,
        llm: Any,
        vision: Any,
        connector: Any,
        frame_token_ids: int,
        resolution: int = 384,
        pooled: Sequence[int] = (3, 3),
        cls: bool = True,
    ):
        self.llm, self.vision, self.connector = llm, vision, connector
        self.v_id = int(frame_token_ids)
        self.resolution = int(resolution)
        self.pooled = tuple(int(x) for x in pooled)
        self.cls = cls
        self.cache: Any = None
        self.length = 0
        self.fed: list[list[int]] = []
        self.model_s = 0.0

    def frame_embeds(self, image: np.ndarray) -> Any:
        """(n, hidden) LM inputs of one (H, W, 3) uint8 frame."""
        import torch  # optional dependency ([transformers])

        sq = letterbox(image, self.resolution)
        x = torch.from_numpy(sq).permute(2, 0, 1)[None].float() / 255.0
        x = (x - 0.5) / 0.5
        dev = next(self.vision.parameters()).device
        dt = next(self.vision.parameters()).dtype
        out = self.vision(pixel_values=x.to(dev, dt))
        hid = out.last_hidden_state
        s = int(round(hid.shape[1] ** 0.5))
        grid = hid.reshape(1, s, s, -1).permute(0, 3, 1, 2)
        spatial = torch.nn.functional.adaptive_avg_pool2d(grid, self.pooled)
        parts = [spatial.flatten(2).permute(0, 2, 1)]
        if self.cls:
            parts.insert(0, out.pooler_output[:, None])
        tokens = torch.cat(parts, dim=1)
        ldt = next(self.connector.parameters()).dtype
        return self.connector(tokens.to(ldt))[0]

    def feed(self, ids: Sequence[int], frame: np.ndarray | None = None) -> Any:
        """Run ``ids`` (then the frame's tokens) through the LM; returns the next-token
        probabilities (vocab,) float32.

        Raises:
            EngineError: the forward pass failed.
        """
        import torch  # optional dependency ([transformers])
        from transformers import DynamicCache  # optional dependency ([transformers])

        t0 = time.perf_counter()
        try:
            with torch.inference_mode():
                emb = self.llm.get_input_embeddings()
                dev = emb.weight.device
                parts = []
                if ids:
                    parts.append(emb(torch.tensor([list(ids)], device=dev))[0])
                record = list(ids)
                if frame is not None:
                    fe = self.frame_embeds(frame).to(dev, emb.weight.dtype)
                    parts.append(fe)
                    record += [self.v_id] * int(fe.shape[0])
                x = torch.cat(parts, dim=0)[None]
                if self.cache is None:
                    self.cache = DynamicCache(config=self.llm.config)
                n = int(x.shape[1])
                pos = torch.arange(self.length, self.length + n, device=dev)[None]
                out = self.llm(inputs_embeds=x, position_ids=pos, use_cache=True,
                               **{_cache_kwarg(): self.cache})  # fmt: skip
        except Exception as exc:
            raise EngineError(f"VideoLLM-online step failed: {type(exc).__name__}: {exc}") from exc
        self.length += n
        self.fed.append(record)
        self.model_s += time.perf_counter() - t0
        return out.logits[0, -1].float().softmax(-1)

    def reply(self, prompt: Sequence[int], eos_id: int, max_new_tokens: int = 100) -> list[int]:
        """Greedy reply to ``prompt`` ids until ``eos_id`` (kept in the reply, not fed)."""
        gen: list[int] = []
        probs = self.feed(prompt)
        for i in range(max_new_tokens):
            tok = int(probs.argmax())
            gen.append(tok)
            if tok == eos_id or i == max_new_tokens - 1:
                break
            probs = self.feed([tok])
        return gen

    def close(self) -> None:
        self.cache, self.length = None, 0

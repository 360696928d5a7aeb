"""Streaming adapter ``mmduet2``: MMDuet2 (Qwen2.5-VL-3B based; yellow-binary-tree/MMDuet2, fork
PINTO0309/MMDuet2) in its own loop.

The loop, read from ``proactive_eval/inference.py`` (``ProactiveInferenceClient``) and
``demo/api_server.py`` (never copied), as this adapter runs it on our decision grid
(docs/protocol.md, "Streaming models"):

- the conversation starts with its system prompt (``system_prompt``: "... If the information in
  this segment of the video cannot answer the question, output "NO REPLY"."); every
  ``frame_interval`` s of stream (1 s: its ``1_sec_per_frame`` evaluation) ``frames_per_turn``
  frames (1; the live demo uses 2 at 2 s) become one user turn of image parts, the user's request
  text after them in the first turn at or after q;
- at each turn the whole conversation is rendered by the chat template with the generation
  prompt, and the tokens past the ones already in the KV cache are fed (what ``generate`` does
  with ``past_key_values``): the cache holds the previous prompt and the reply less its last
  token, so a turn's fed tokens start at the last reply token as the re-rendered conversation
  tokenizes it;
- a reply: greedy (``do_sample`` false), at most ``max_new_tokens`` (512); it stays in the
  conversation as an assistant turn (the model's own history);
- silence: the reply ``NO REPLY`` (``silence: exact``, its evaluation's rule) or any reply
  starting with ``NO`` (``silence: prefix``, its live demo's rule). Native signal per turn:
  ``p_no``, the probability of the first token of ``NO REPLY`` at the first generated position.

Positions of a later turn: ``rope_index`` (3-D positions over the conversation; MMDuet2 runs its
own Qwen2.5-VL module, whose position code is not in its public repository).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from interactscope.streaming.adapters.base import AdapterError, adapter_errors
from interactscope.streaming.adapters.native_stream import (
    NativeOptions,
    Piece,
    PieceResult,
    QwenVLSession,
    QwenVLStreamAdapter,
)

__all__ = ["MMDuet2Adapter", "MMDuet2Options", "MMDuet2Session", "SYSTEM_PROMPT"]

SYSTEM_PROMPT = (
    "You are a helpful assistant. Your task is to answer questions based on continuously "
    "incoming video frames. Your responses should include information from the video since "
    "your last reply (if any). If the information in this segment of the video cannot answer "
    'the question, output "NO REPLY".'
)
NO_REPLY = "NO REPLY"


class MMDuet2Options(NativeOptions):
    """MMDuet2's loop settings (defaults: its proactive evaluation; module docstring)."""

    fps: float = Field(1.0, gt=0)
    frames_per_turn: int = Field(1, ge=1)
    max_new_tokens: int = Field(512, ge=1)
    system_prompt: str = SYSTEM_PROMPT
    silence: Literal["exact", "prefix"] = "exact"
    positions: Literal["rope_index", "cache_delta"] = "rope_index"


class MMDuet2Adapter(QwenVLStreamAdapter):
    """MMDuet2 through its own loop (module docstring). Online Rolling only."""

    backend: ClassVar[str] = "mmduet2"
    options_class: ClassVar[type[NativeOptions]] = MMDuet2Options


class MMDuet2Session(QwenVLSession):
    """One interaction through MMDuet2's loop; ``history`` is its conversation."""

    adapter: MMDuet2Adapter

    def __init__(self, adapter: MMDuet2Adapter, interaction: Any, frames: Any):
        super().__init__(adapter, interaction, frames)
        o = adapter.options
        self.history: list[dict[str, Any]] = [{"role": "system", "content": o.system_prompt}]
        self.images: list[np.ndarray] = []
        self.prompt_text = ""  # the last prompt rendered (up to the generation prompt)
        self.last_reply: list[int] = []
        tok = adapter.processor.tokenizer
        self.no_id = int(tok(NO_REPLY, add_special_tokens=False).input_ids[0])

    def chunking(self) -> tuple[int, int]:
        n = self.adapter.options.frames_per_turn
        return n, n

    def render(self) -> str:
        """The conversation as MMDuet2's loop renders it before generating."""
        return self.adapter.processor.apply_chat_template(
            self.history, tokenize=False, add_generation_prompt=True
        )

    def delta(self, images: list[np.ndarray]) -> dict[str, Any]:
        """Processor outputs of the tokens past the cache (module docstring): the rendering
        past the previous prompt, tokenized with the new turn's images, less the reply tokens
        the cache already holds (all but the reply's last)."""
        text = self.render()
        if not text.startswith(self.prompt_text):
            raise AdapterError(f"interaction {self.interaction.id}: conversation rewritten")
        inputs = self.stream.encode(text[len(self.prompt_text) :], images=images)
        self.prompt_text = text
        skip = max(0, len(self.last_reply) - 1) if self.stream.ids else 0
        for k in ("input_ids", "attention_mask", "mm_token_type_ids"):
            if k in inputs:
                inputs[k] = inputs[k][:, skip:]
        return inputs

    def run_piece(self, piece: Piece, images: list[np.ndarray], query: str | None) -> PieceResult:
        o = self.adapter.options
        content: list[dict[str, Any]] = [{"type": "image"} for _ in images]
        if query:
            content.append({"type": "text", "text": query})
        self.history.append({"role": "user", "content": content, "time": piece.end_s})
        with adapter_errors(f"interaction {self.interaction.id} turn {piece.end_s:g}s"):
            inputs = self.delta(images)
            res = self.stream.step(inputs, o.max_new_tokens, [self.no_id])
        self.last_reply = res.generated
        self.images.extend(images)
        reply = res.text
        self.history.append({"role": "assistant", "content": reply, "time": piece.end_s})
        s = reply.strip()
        silent = s == NO_REPLY if o.silence == "exact" else s.startswith("NO")
        return PieceResult(end_s=piece.end_s, text=reply, silent=silent or not s,
                           signal={"p_no": round(res.watch.get(self.no_id, 0.0), 6),
                                   "query_fed": bool(query)})  # fmt: skip


MMDuet2Adapter.session_class = MMDuet2Session

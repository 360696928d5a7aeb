"""Streaming adapter ``livecc``: LiveCC (Qwen2-VL based; showlab/livecc) in its own loop.

The loop, read from LiveCC's ``demo/infer.py`` (``LiveCCDemoInfer``; never copied), as this
adapter runs it on our decision grid (docs/protocol.md, "Streaming models"):

- frames at ``fps`` (2 Hz); the first piece holds ``initial_frames`` (6: stream 0-3 s, so the
  model's first call is at 3 s), each later piece ``chunk_frames`` (2: one second);
- a piece is one user turn ``Time={start:.1f}-{stop:.1f}s`` + the piece's frames as one video
  (+ the user's request text after the video in the first piece fed at or after q); the first
  piece is rendered by the chat template with its default system prompt, every later one as
  ``'<|im_end|>\\n'`` + the template's rendering from ``<|im_start|>user`` on, appended to the
  tokens already in the cache (the cache holds the previous prompt and reply less its last
  token, as ``generate`` leaves it);
- a reply: greedy, ``repetition_penalty`` 1.05 over the whole sequence, at most
  ``max_new_tokens`` (32, its evaluation loop's; its live demo uses 16); with
  ``streaming_eos_base_threshold`` set, the demo's threshold on the streaming-EOS token
  ``' ...'`` (probability <= base + step * i at the i-th generated token: token forbidden);
- silence: a reply that is only ``...`` (the streaming EOS) or empty. Native signal per piece:
  ``p_eos``, the probability of ``' ...'`` at the first generated token.

LiveCC hears nothing: no audio reaches it (the paper's "LiveCC has no scene audio").
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from interactscope.streaming.adapters.base import adapter_errors, smart_resize
from interactscope.streaming.adapters.native_stream import (
    NativeOptions,
    Piece,
    PieceResult,
    QwenVLSession,
    QwenVLStreamAdapter,
)

__all__ = ["LiveCCAdapter", "LiveCCOptions", "LiveCCSession"]


class LiveCCOptions(NativeOptions):
    """LiveCC's loop settings (defaults: its ``demo/infer.py``; see the module docstring)."""

    fps: float = Field(2.0, gt=0)
    # frames are held at <= 784 px long side: above the long side of any frame of aspect <= 2:1
    # under the 301,056-pixel budget, so LiveCC's resize still sets the size
    max_side: int | None = Field(784, ge=16)
    initial_frames: int = Field(6, ge=1)
    chunk_frames: int = Field(2, ge=1)
    max_new_tokens: int = Field(32, ge=1)
    max_pixels: int = Field(384 * 28 * 28, ge=3136)
    repetition_penalty: float = Field(1.05, gt=0)
    streaming_eos: str = " ..."
    streaming_eos_base_threshold: float | None = None
    streaming_eos_threshold_step: float = 0.0
    positions: Literal["cache_delta", "rope_index"] = "cache_delta"


class LiveCCAdapter(QwenVLStreamAdapter):
    """LiveCC through its own loop (module docstring). Online Rolling only.

    Raises:
        AdapterError: (construction) an unknown option; (``prepare``) torch/transformers missing
            or the checkpoint not in the HF cache.
    """

    backend: ClassVar[str] = "livecc"
    options_class: ClassVar[type[NativeOptions]] = LiveCCOptions

    @property
    def eos_id(self) -> int:
        """The streaming-EOS token: the last id of ``' ...'`` (as LiveCC's demo takes it)."""
        return int(self.processor.tokenizer(self.options.streaming_eos).input_ids[-1])

    def system_offset(self) -> int:
        """Where ``<|im_start|>user`` starts in a one-message rendering (the demo's
        ``system_prompt_offset``)."""
        msg = [{"role": "user", "content": [{"type": "text", "text": "livecc"}]}]
        return self.processor.apply_chat_template(msg, tokenize=False).index("<|im_start|>user")


def piece_text(
    processor: Any, piece: Piece, query: str | None, first: bool, offset: int, interval: float
) -> str:
    """The text LiveCC's loop renders for one piece (module docstring); ``interval`` = 1/fps."""
    stop = piece.times[-1] + interval
    content: list[dict[str, Any]] = [
        {"type": "text", "text": f"Time={piece.times[0]:.1f}-{stop:.1f}s"},
        {"type": "video"},
    ]
    if query:
        content.append({"type": "text", "text": query})
    text = processor.apply_chat_template(
        [{"role": "user", "content": content}], tokenize=False, add_generation_prompt=True
    )
    return text if first else "<|im_end|>\n" + text[offset:]


class LiveCCSession(QwenVLSession):
    """One interaction through LiveCC's loop (module docstring)."""

    adapter: LiveCCAdapter

    def __init__(self, adapter: LiveCCAdapter, interaction: Any, frames: Any):
        super().__init__(adapter, interaction, frames)
        self.offset = adapter.system_offset()
        self.eos = adapter.eos_id

    def chunking(self) -> tuple[int, int]:
        o = self.adapter.options
        return o.initial_frames, o.chunk_frames

    def repetition_penalty(self) -> float | None:
        return self.adapter.options.repetition_penalty

    def _threshold(self) -> list[Any]:
        o = self.adapter.options
        if o.streaming_eos_base_threshold is None:
            return []
        base, step, eos = o.streaming_eos_base_threshold, o.streaming_eos_threshold_step, self.eos

        def proc(logits: Any, i: int) -> Any:
            if float(logits.softmax(-1)[eos]) <= base + step * i:
                logits = logits.clone()
                logits[eos] = -float("inf")
            return logits

        return [proc]

    def run_piece(self, piece: Piece, images: list[np.ndarray], query: str | None) -> PieceResult:
        o = self.adapter.options
        first = not self.stream.ids
        text = piece_text(self.adapter.processor, piece, query, first, self.offset, 1 / o.fps)
        video = _resized(np.stack(images), o.max_pixels)
        with adapter_errors(f"interaction {self.interaction.id} piece {piece.end_s:g}s"):
            inputs = self.stream.encode(text, videos=[video])
            res = self.stream.step(inputs, o.max_new_tokens, [self.eos], self._threshold())
        reply = res.text
        silent = reply.strip() in ("", o.streaming_eos.strip())
        return PieceResult(end_s=piece.end_s, text=reply, silent=silent,
                           signal={"p_eos": round(res.watch.get(self.eos, 0.0), 6),
                                   "query_fed": bool(query)})  # fmt: skip


LiveCCAdapter.session_class = LiveCCSession


def _resized(video: np.ndarray, max_pixels: int) -> np.ndarray:
    """Frames resized to Qwen-VL's ``smart_resize`` size under ``max_pixels`` (LiveCC's video
    reader resizes so before the processor), (T, H, W, 3) uint8."""
    from PIL import Image  # optional dependency ([openai])

    t, h, w, _ = video.shape
    nh, nw = smart_resize(h, w, 28, 3136, max_pixels)
    if (nh, nw) == (h, w):
        return video
    out = [np.asarray(Image.fromarray(f).resize((nw, nh), Image.BICUBIC)) for f in video]
    return np.stack(out)

"""Streaming adapter ``videollm-online``: VideoLLM-online (LIVE; Llama-3-8B + SigLIP;
showlab/videollm-online) in its own loop.

The loop, read from its ``demo/inference.py`` (``LiveInfer``) and ``models/tokenization_live.py``
(never copied), as this adapter runs it on our decision grid (docs/protocol.md, "Streaming
models"):

- frames at ``fps`` (2 Hz), one at a time, each ``frame_num_tokens`` (10) embeddings; before the
  first frame the stream prompt ``<bos>{system}\\n\\n[``; before each later frame the token the
  model picked after the previous one (the frame interval ``,``), or after a reply its EOS then
  ``\\n[``;
- after each frame the decision: the probability of ``,`` (``p_interval``); below
  ``threshold`` (0.725) it is zeroed; if the arg-max is then not ``,`` the model speaks: the
  prompt ``]\\nAssistant:`` and a greedy reply until its EOS (at most ``max_new_tokens``, 100);
  else it stays silent (our silence);
- the user's request at q: answered before the first frame later than q (or right after the
  frame at q) with the prompt ``]\\nUser: {request}\\nAssistant:`` and a greedy reply.

Native signal per frame: ``p_interval``, the picked token, whether it spoke. VideoLLM-online
hears nothing.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from interactscope.engines.streaming_live import LiveStream, load_live_llama
from interactscope.streaming.adapters.base import adapter_errors
from interactscope.streaming.adapters.native_stream import (
    EPS,
    NativeOptions,
    NativeSession,
    NativeStreamAdapter,
    Piece,
    PieceResult,
)

__all__ = ["VideoLLMOnlineAdapter", "VideoLLMOnlineOptions", "VideoLLMOnlineSession"]

SYSTEM_PROMPT = (
    "A multimodal AI assistant is helping users with some activities. Below is their "
    "conversation, interleaved with the list of video frames received by the assistant."
)


class VideoLLMOnlineOptions(NativeOptions):
    """VideoLLM-online's loop settings (defaults: ``live1+`` and its demo; module docstring).
    ``checkpoint`` is the LoRA adapter; ``llm`` and ``vision`` its base models."""

    fps: float = Field(2.0, gt=0)
    llm: str = "meta-llama/Meta-Llama-3-8B-Instruct"
    vision: str = "google/siglip-large-patch16-384"
    resolution: int = Field(384, ge=16)
    frame_token_cls: bool = True
    frame_token_pooled: tuple[int, int] = (3, 3)
    frame_token_interval: str = ","
    threshold: float = Field(0.725, ge=0, le=1)
    max_new_tokens: int = Field(100, ge=1)
    system_prompt: str = SYSTEM_PROMPT


class VideoLLMOnlineAdapter(NativeStreamAdapter):
    """VideoLLM-online through its own loop (module docstring). Online Rolling only.

    ``model`` (tests): ``(llm, vision, connector)``; ``processor``: the tokenizer (with ``<v>``).
    """

    backend: ClassVar[str] = "videollm-online"
    options_class: ClassVar[type[NativeOptions]] = VideoLLMOnlineOptions

    def build(self) -> tuple[Any, Any]:
        o = self.options
        with adapter_errors(f"model {self.name}"):
            llm, vision, connector, tok = load_live_llama(o.llm, o.checkpoint or "", o.vision,
                                                          o.device, o.dtype)  # fmt: skip
        return (llm, vision, connector), tok

    def ids(self, text: str) -> list[int]:
        """Token ids of ``text`` (no special tokens added)."""
        return list(self.processor(text, add_special_tokens=False).input_ids)


class VideoLLMOnlineSession(NativeSession):
    """One interaction through VideoLLM-online's loop, one piece per frame."""

    adapter: VideoLLMOnlineAdapter

    def __init__(self, adapter: VideoLLMOnlineAdapter, interaction: Any, frames: Any):
        super().__init__(adapter, interaction, frames)
        o = adapter.options
        llm, vision, connector = adapter.model
        tok = adapter.processor
        self.stream = LiveStream(llm, vision, connector, tok.convert_tokens_to_ids("<v>"),
                                 o.resolution, o.frame_token_pooled, o.frame_token_cls)  # fmt: skip
        self.eos = int(tok.eos_token_id)
        self.interval = tok.convert_tokens_to_ids(o.frame_token_interval)
        self.start = [tok.bos_token_id, *adapter.ids(o.system_prompt + "\n" + "\n[")]
        self.last: list[int] = []

    def pieces(self, duration_s: float) -> list[Piece]:
        """One piece per frame; frame k (stream time k / fps) is due at k / fps (its
        ``input_video_stream`` takes every frame with time <= the video time)."""
        fps = self.adapter.options.fps
        n = int(math.floor(duration_s * fps + EPS))
        return [Piece(start_s=k / fps, end_s=round(k / fps, 6), times=[round(k / fps, 6)])
                for k in range(n)]  # fmt: skip

    def _respond(self, prompt: list[int]) -> str:
        o = self.adapter.options
        gen = self.stream.reply(prompt, self.eos, o.max_new_tokens)
        self.last = gen[-1:]
        return self.adapter.processor.decode(gen, skip_special_tokens=True)

    def run_piece(self, piece: Piece, images: list[np.ndarray], query: str | None) -> PieceResult:
        o = self.adapter.options
        t_frame = piece.times[0]
        where = f"interaction {self.interaction.id} frame {t_frame:g}s"
        texts: list[str] = []
        with adapter_errors(where):
            if query is not None and t_frame > self.q + EPS:  # the request before this frame
                texts.append(self._respond(self._query_ids(query)))
                query = None
            if not self.stream.length:
                prefix = self.start
            elif self.last == [self.eos]:
                prefix = [self.eos, *self.adapter.ids("\n[")]
            else:
                prefix = self.last
            probs = self.stream.feed(prefix, images[0])
            p_int = float(probs[self.interval])
            if query is not None:  # the request at this frame's time: answered after it
                texts.append(self._respond(self._query_ids(query)))
                pick = None
            else:
                if p_int < o.threshold:
                    probs = probs.clone()
                    probs[self.interval] = 0
                pick = int(probs.argmax())
                self.last = [pick]
                if pick != self.interval:
                    texts.append(self._respond(self.adapter.ids("]\nAssistant:")))
        text = "\n".join(x for x in texts if x.strip())
        return PieceResult(end_s=t_frame, text=text, silent=not text.strip(),
                           signal={"p_interval": round(p_int, 6), "pick": pick,
                                   "query_fed": bool(texts) and pick is None})  # fmt: skip

    def _query_ids(self, query: str) -> list[int]:
        return self.adapter.ids(f"]\nUser: {query}\nAssistant:")

    def query_for(self, piece: Piece) -> str | None:
        """The request goes to the first frame at or after q (answered before that frame when
        it is later than q, after it when it is at q)."""
        if self.query_fed or piece.times[0] < self.q - EPS:
            return None
        self.query_fed = True
        return self.interaction.query.text or ""


VideoLLMOnlineAdapter.session_class = VideoLLMOnlineSession

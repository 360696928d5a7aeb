"""A Qwen-VL streaming model's own token loop: one KV cache fed piece by piece, greedy replies.

Streaming models built on Qwen2-VL (LiveCC) and Qwen2.5-VL (MMDuet2) run the same kind of loop in
their public inference code: a prompt piece (text with vision placeholders, plus that piece's
frames) is appended to the tokens already in the cache, the model generates a reply, and the
cache keeps the prompt and the reply except its last token (``generate``'s cache never holds the
token it sampled last; the next piece re-adds it, e.g. LiveCC's ``'<|im_end|>\\n' + ...``).
:class:`TokenStream` is that loop with what the adapters need made explicit:

- ``feed`` takes the piece's token ids (already computed by the adapter from the model's own
  chat template) and its processed pixels; every id fed is kept in :attr:`TokenStream.fed` so
  tests can compare it, token for token, with what the model's own loop feeds.
- Rope positions of a later piece (``positions``): ``rope_index`` — the 3-D positions the
  model's ``get_rope_index`` gives the piece, shifted to follow the cache (what encoding the
  whole sequence at once gives, as in training); ``cache_delta`` — 1-D positions continuing
  from the cache (what Qwen2-VL's forward computes for a non-empty cache from the first
  prefill's ``rope_deltas``, the positions LiveCC's demo loop ran with). The first piece always
  gets ``rope_index`` positions.
- Greedy decoding with an optional repetition penalty over every token of the sequence (HF's
  ``RepetitionPenaltyLogitsProcessor`` rule: a positive logit divided by it, a negative one
  multiplied), the probabilities of ``watch`` token ids at the first generated position (a
  model's native decision signal, e.g. LiveCC's ``' ...'`` streaming-EOS token).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from interactscope.engines.base import EngineError
from interactscope.engines.causal_lm import _cache_kwarg, _crop

__all__ = ["StreamStep", "TokenStream", "load_qwen_vl"]

_TEXT_KEYS = ("input_ids", "attention_mask", "mm_token_type_ids")


@dataclass
class StreamStep:
    """One piece fed and answered.

    Attributes:
        fed: the token ids run through the model for the piece (the prompt delta).
        generated: the reply's ids (up to and including the first stop id, if any).
        text: the reply decoded without special tokens.
        watch: probability of each watched id at the first generated position.
        model_s: seconds in the model (prefill + decoding).
    """

    fed: list[int]
    generated: list[int]
    text: str
    watch: dict[int, float] = field(default_factory=dict)
    model_s: float = 0.0


def load_qwen_vl(checkpoint: str, device: str | None, dtype: str | None) -> tuple[Any, Any]:
    """(model, processor) of a Qwen2-VL / Qwen2.5-VL checkpoint from the local HF cache.

    Raises:
        EngineError: torch/transformers missing, or the weights cannot be loaded (the message
            names the checkpoint and the download command).
    """
    try:
        import torch  # optional dependency ([transformers])
        from transformers import (  # optional dependency ([transformers])
            AutoModelForImageTextToText,
            AutoProcessor,
        )
    except ImportError as exc:
        raise EngineError(
            "streaming Qwen models need torch and transformers "
            "(pip install 'interactscope[transformers]')"
        ) from exc
    dev = device or ("cuda" if torch.cuda.is_available() else "cpu")
    dt = getattr(torch, dtype or ("bfloat16" if dev != "cpu" else "float32"))
    try:
        model = AutoModelForImageTextToText.from_pretrained(checkpoint, dtype=dt)
        processor = AutoProcessor.from_pretrained(checkpoint)
    except (OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise EngineError(
            f"cannot load {checkpoint} ({first}); fetch it first: "
            f"`huggingface-cli download {checkpoint}`, then run with HF_HUB_OFFLINE=1"
        ) from None
    return model.to(dev).eval(), processor


class TokenStream:
    """The KV cache of one streaming session (see the module docstring).

    Args:
        model: a Qwen2-VL / Qwen2.5-VL ``...ForConditionalGeneration`` (eval mode).
        processor: its processor (tokenizer + image/video processors).
        positions: ``rope_index`` or ``cache_delta`` (later pieces' rope positions).
        repetition_penalty: HF's rule over the whole sequence; 1.0 or None = off.
        stop_ids: ids that end a reply (default: the model's ``eos_token_id``).

    Attributes:
        ids: every token id in the cache, in order.
        fed: per :meth:`step`, the ids fed (the prompt delta).
    """

    def __init__(
        self,
        model: Any,
        processor: Any,
        positions: Literal["rope_index", "cache_delta"] = "rope_index",
        repetition_penalty: float | None = None,
        stop_ids: Sequence[int] | None = None,
    ):
        if positions not in ("rope_index", "cache_delta"):
            raise EngineError(f"positions must be rope_index or cache_delta, not {positions!r}")
        self.model, self.processor = model, processor
        self.positions = positions
        self.penalty = repetition_penalty if repetition_penalty not in (None, 1.0) else None
        eos = stop_ids if stop_ids is not None else model.generation_config.eos_token_id
        self.stop_ids = {int(x) for x in ([eos] if isinstance(eos, int) else eos or [])}
        self.ids: list[int] = []
        self.fed: list[list[int]] = []
        self.cache: Any = None
        self.next_pos = 0

    @property
    def tokenizer(self) -> Any:
        return getattr(self.processor, "tokenizer", self.processor)

    def encode(
        self, text: str, images: Sequence[Any] = (), videos: Sequence[Any] = ()
    ) -> dict[str, Any]:
        """Processor outputs of one piece: ``text`` with its placeholders expanded for
        ``images`` ((H, W, 3) uint8 arrays) and ``videos`` ((T, H, W, 3) uint8 arrays)."""
        kw: dict[str, Any] = {"text": [text], "return_tensors": "pt"}
        if images:
            kw["images"] = list(images)
        if videos:
            kw["videos"] = list(videos)
            kw["videos_kwargs"] = {"do_sample_frames": False}
        return dict(self.processor(**kw))

    def _positions(self, inputs: dict[str, Any], n: int) -> Any:
        import torch  # optional dependency ([transformers])

        if self.cache is not None and self.positions == "cache_delta":
            return (torch.arange(n) + self.next_pos).view(1, 1, -1).expand(3, 1, -1)
        img, vid = inputs.get("image_grid_thw"), inputs.get("video_grid_thw")
        ids = inputs["input_ids"]
        if img is None and vid is None:
            pos = torch.arange(n).view(1, 1, -1).expand(3, 1, -1)
        else:
            fn = self.model.model.get_rope_index
            params = inspect.signature(fn).parameters
            kw: dict[str, Any] = {"input_ids": ids, "image_grid_thw": img, "video_grid_thw": vid,
                                  "attention_mask": torch.ones_like(ids)}  # fmt: skip
            if "mm_token_type_ids" in params:
                kw["mm_token_type_ids"] = inputs.get("mm_token_type_ids")
            if "second_per_grid_ts" in params:
                kw["second_per_grid_ts"] = inputs.get("second_per_grid_ts")
            pos, _ = fn(**kw)
        return pos + self.next_pos

    def _forward(self, ids: Any, pos: Any, media: dict[str, Any]) -> Any:
        import torch  # optional dependency ([transformers])
        from transformers import DynamicCache  # optional dependency ([transformers])

        if self.cache is None:
            self.cache = DynamicCache(config=self.model.config)
        dev = self.model.device
        media = {k: (v.to(dev) if hasattr(v, "to") else v) for k, v in media.items()}
        if "pixel_values" in media or "pixel_values_videos" in media:
            fdt = self.model.dtype
            for k in ("pixel_values", "pixel_values_videos"):
                if k in media and torch.is_floating_point(media[k]):
                    media[k] = media[k].to(fdt)
        out = self.model(
            input_ids=ids.to(dev),
            position_ids=pos.to(dev),
            use_cache=True,
            **{_cache_kwarg(): self.cache},
            **media,
        )
        return out.logits[0, -1].float()

    def _penalize(self, logits: Any) -> Any:
        import torch  # optional dependency ([transformers])

        if self.penalty is None or not self.ids:
            return logits
        seen = torch.tensor(sorted(set(self.ids)), device=logits.device)
        score = logits.gather(0, seen)
        score = torch.where(score < 0, score * self.penalty, score / self.penalty)
        return logits.scatter(0, seen, score)

    def step(
        self,
        inputs: dict[str, Any],
        max_new_tokens: int,
        watch: Sequence[int] = (),
        processors: Sequence[Any] = (),
    ) -> StreamStep:
        """Feed one piece (processor outputs from :meth:`encode`, ids in ``input_ids``) and
        generate greedily up to ``max_new_tokens``; the cache then holds the piece and the
        reply less its last token (``generate``'s rule).

        Args:
            processors: callables ``(logits, n_generated) -> logits`` applied before each
                greedy pick (e.g. LiveCC's streaming-EOS threshold).

        Raises:
            EngineError: the forward pass failed (the session's cache is dropped).
        """
        import torch  # optional dependency ([transformers])

        ids = inputs["input_ids"]
        n = int(ids.shape[1])
        media = {k: v for k, v in inputs.items() if k not in _TEXT_KEYS}
        pos = self._positions(inputs, n)
        t0 = time.perf_counter()
        gen: list[int] = []
        probs: dict[int, float] = {}
        try:
            with torch.inference_mode():
                logits = self._forward(ids, pos, media)
                self.next_pos = int(pos[:, 0, -1].max()) + 1
                self.ids.extend(int(x) for x in ids[0].tolist())
                for i in range(max_new_tokens):
                    logits = self._penalize(logits)
                    for proc in processors:
                        logits = proc(logits, i)
                    if i == 0 and watch:
                        p = torch.softmax(logits, dim=-1)
                        probs = {int(w): float(p[int(w)]) for w in watch}
                    tok = int(logits.argmax())
                    gen.append(tok)
                    if tok in self.stop_ids or i == max_new_tokens - 1:
                        break
                    one = torch.tensor([[tok]])
                    p1 = torch.full((3, 1, 1), self.next_pos, dtype=torch.long)
                    logits = self._forward(one, p1, {})
                    self.next_pos += 1
                    self.ids.append(tok)
        except Exception as exc:
            self.close()
            raise EngineError(f"streaming step failed: {type(exc).__name__}: {exc}") from exc
        _crop(self.cache, len(self.ids))
        self.fed.append([int(x) for x in ids[0].tolist()])
        text = self.tokenizer.decode(gen, skip_special_tokens=True)
        return StreamStep(fed=self.fed[-1], generated=gen, text=text, watch=probs,
                          model_s=round(time.perf_counter() - t0, 4))  # fmt: skip

    def close(self) -> None:
        """Drop the cache (a later :meth:`step` starts a new sequence)."""
        self.cache, self.ids, self.next_pos = None, [], 0

"""A kept KV cache for Online Rolling on the ``transformers`` Qwen engine (issue 18).

:class:`KeptCache` answers a growing conversation (each step appends a user turn; the model's
own answer is appended by the session as an assistant turn) while processing only what is new:

1. The whole conversation is rendered (:meth:`QwenEngine.render`: chat template + media arrays,
   no tensors). When the rendered text starts with the text held in the cache and the media
   held (frames, images, audio parts) are the first media of the new rendering, the **delta**
   is the rest of the text and the new media; otherwise (a template that rewrites earlier turns,
   frames dropped by the frame cap) the conversation is prefilled again from an empty cache
   (``raw["session_prefill"]`` is true; counted in :attr:`KeptCache.prefills`).
2. Only the delta goes to the processor (placeholders expanded, pixels and audio features of
   the new media only) and to the model. Its 3-D multimodal rope positions are the model's own
   ``get_rope_index`` over the delta alone, shifted by the position after the held prompt's
   last token: Qwen's index gives every segment positions from (previous segment's maximum + 1),
   and the held prompt always ends in text (``...<|im_start|>assistant\\n``), so the shifted
   positions equal those the index gives over the whole sequence.
3. ``generate`` continues from the cache (``input_ids`` = held + delta, ``position_ids`` = the
   delta's; greedy decoding and stopping exactly as in :meth:`QwenEngine.chat`), then the cache
   is cropped back to the prompt (the answer's generated tokens leave it; the session's next
   turn re-renders the answer as text, as re-encoding does), like the GGUF engine's prefix cache
   (:mod:`interactscope.engines.causal_lm`).

Audio parts of the delta are padded to ``n_fft // 2 + 1`` zero samples past their end, rounded up
to the hop (``audio_padding: tight``), not to the feature extractor's window (30 s for Qwen
Omni): the log-mel frames inside each part's attention mask are the same (every valid frame's
window sees the same samples and zeros; padded frames are at the log floor and leave each
part's maximum unchanged), so the audio tokens are the same and the feature extraction costs
the part's length, not the window.

With ``evict`` (``session_window: evict``), when the session dropped whole frame parts (the frame
cap), their token spans (vision start .. vision end) leave the cache and every other token keeps
its KV and position (the rendered text must be the held text less those parts' placeholders,
else the conversation is prefilled again; Qwen3-VL's per-frame timestamps always prefill). The
held tokens are then those re-encoding gives, but not their KV: later tokens were computed with
the evicted frames in view, and positions keep the gap.

Greedy answers equal re-encoding the conversation at every step (``session_cache: false``) up
to floating-point summation order (the tests check texts and logits on tiny random-weight
Qwen2.5-Omni, Qwen2.5-VL and Qwen3-VL models), except after an eviction.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from interactscope.engines.base import ChatResult, EngineError
from interactscope.engines.causal_lm import _cache_kwarg, _crop
from interactscope.engines.qwen_mm import QwenEngine, Rendered

__all__ = ["KeptCache"]

_TEXT_KEYS = ("input_ids", "attention_mask", "mm_token_type_ids")


def rope_index_fn(generator: Any) -> Any:
    """The Qwen multimodal rope-position function of ``generator`` (the thinker): on its inner
    ``model`` in transformers 5.24+ (``Qwen2_5OmniThinkerModel``), on the thinker itself before
    (5.19: the inner model is the text-only ``Qwen2_5OmniThinkerTextModel``).

    Raises:
        AttributeError: neither has ``get_rope_index``."""
    inner = getattr(generator, "model", None)
    fn = getattr(inner, "get_rope_index", None) or getattr(generator, "get_rope_index", None)
    if fn is None:
        raise AttributeError(f"{type(generator).__name__} has no get_rope_index")
    return fn


def _same_arrays(old: Sequence[np.ndarray], new: Sequence[np.ndarray]) -> bool:
    return len(old) == len(new) and all(
        a is b or (a.shape == b.shape and np.array_equal(a, b))
        for a, b in zip(old, new, strict=True)
    )


class KeptCache:
    """The KV cache of one Online Rolling conversation (see the module docstring).

    Args:
        engine: a loaded :class:`QwenEngine` (its model, processor, frame cache and generation
            options are used).
        audio_padding: ``tight`` (default) or ``window`` (the processor's own padding to the
            feature extractor's window).
        evict: when whole visual items left the conversation (``session_window: evict``),
            remove their tokens from the cache instead of prefilling again (:meth:`_evict_to`).

    Attributes:
        prefills: conversations prefilled from an empty cache (1 after the first step).
        evictions: steps at which visual items left the cache.
        processed_tokens: prompt tokens run through the model so far (prefills + deltas).
    """

    def __init__(self, engine: QwenEngine, audio_padding: str = "tight", evict: bool = False):
        if audio_padding not in ("tight", "window"):
            raise EngineError(f"audio_padding must be 'tight' or 'window', not {audio_padding!r}")
        self.engine = engine
        self.audio_padding = audio_padding
        self.evict = evict
        self.prefills = 0
        self.evictions = 0
        self.processed_tokens = 0
        self._reset()

    def _reset(self) -> None:
        self.cache: Any = None
        self.ids: Any = None  # (1, L) prompt tokens held in the cache
        self.next_pos = 0  # rope position after the held prompt's last token
        self.text = ""  # rendered text of the held prompt
        self.images: list[np.ndarray] = []
        self.videos: list[list[np.ndarray]] = []
        self.audios: list[np.ndarray] = []
        self.n_messages = 0  # messages of the held conversation (before the generation prompt)

    def close(self) -> None:
        """Drop the cache (the counters stay)."""
        self._reset()

    # ------------------------------------------------------------------ delta
    def _held_prefix_of(self, r: Rendered) -> bool:
        if self.cache is None or not r.text.startswith(self.text):
            return False
        ni, nv, na = len(self.images), len(self.videos), len(self.audios)
        if len(r.images) < ni or len(r.videos) < nv or len(r.audios) < na:
            return False
        return (
            _same_arrays(self.images, r.images[:ni])
            and all(_same_arrays(a, b) for a, b in zip(self.videos, r.videos[:nv], strict=True))
            and _same_arrays(self.audios, r.audios[:na])
        )

    def _delta(self, r: Rendered) -> Rendered | None:
        """The part of ``r`` past the held prompt, or None when ``r`` does not extend it."""
        if not self._held_prefix_of(r):
            return None
        ni, nv, na = len(self.images), len(self.videos), len(self.audios)
        return Rendered(
            text=r.text[len(self.text) :],
            images=r.images[ni:],
            videos=r.videos[nv:],
            video_fps=r.video_fps[nv:],
            video_pts=r.video_pts[nv:],
            audios=r.audios[na:],
        )

    def _segments(self) -> list[tuple[int, int]] | None:
        """[start, end) token spans of the held visual items (vision start .. vision end)."""
        cfg = self.engine.generator.config
        lo = getattr(cfg, "vision_start_token_id", None)
        hi = getattr(cfg, "vision_end_token_id", None)
        if lo is None or hi is None:
            return None
        ids = self.ids[0].tolist()
        starts = [i for i, x in enumerate(ids) if x == lo]
        ends = [i + 1 for i, x in enumerate(ids) if x == hi]
        if len(starts) != len(ends) or any(b <= a for a, b in zip(starts, ends, strict=True)):
            return None
        return list(zip(starts, ends, strict=True))

    def _visual_order(self, text: str) -> list[tuple[str, int, int]]:
        """(kind, start, end) character spans of the visual placeholders of a rendering, each
        from its vision start string to its vision end string."""
        tok = getattr(self.engine.processor, "tokenizer", None)
        cfg = self.engine.generator.config
        lo = tok.convert_ids_to_tokens(int(cfg.vision_start_token_id))
        hi = tok.convert_ids_to_tokens(int(cfg.vision_end_token_id))
        image = getattr(self.engine.processor, "image_token", None)
        out, i = [], text.find(lo)
        while i >= 0:
            j = text.find(hi, i)
            if j < 0:
                break
            inner = text[i + len(lo) : j]
            out.append(("image" if image and image in inner else "video", i, j + len(hi)))
            i = text.find(lo, j)
        return out

    def _evict_to(self, held: Rendered) -> int:
        """Remove from the cache the visual items that left the held conversation (``held``:
        its rendering now), keeping every other token's KV and position; returns the tokens
        removed, 0 when ``held`` is not the held prompt less whole visual items (then the
        caller prefills)."""
        import torch  # optional dependency ([transformers])

        segs = self._segments()
        if segs is None or not _same_arrays(self.audios, held.audios):
            return 0
        spans = self._visual_order(self.text)
        if len(segs) != len(spans):  # e.g. Qwen3-VL: one segment per frame, timestamps between
            return 0
        kept_img, kept_vid = iter(held.images), iter(held.videos)
        want_img, want_vid = next(kept_img, None), next(kept_vid, None)
        drop, text, cut, i_img, i_vid = [], [], 0, 0, 0
        for k, (kind, a, b) in enumerate(spans):
            if kind == "image":
                item, i_img = self.images[i_img], i_img + 1
                keep = want_img is not None and _same_arrays([item], [want_img])
                want_img = next(kept_img, None) if keep else want_img
            else:
                item, i_vid = self.videos[i_vid], i_vid + 1
                keep = want_vid is not None and _same_arrays(item, want_vid)
                want_vid = next(kept_vid, None) if keep else want_vid
            if not keep:
                drop.append(segs[k])
                text.append(self.text[cut:a])
                cut = b
        text.append(self.text[cut:])
        if not drop or "".join(text) != held.text or want_img is not None or want_vid is not None:
            return 0
        mask = torch.ones(int(self.ids.shape[1]), dtype=torch.bool)
        for a, b in drop:
            mask[a:b] = False
        keep_idx = mask.nonzero().squeeze(1).to(self.ids.device)
        for layer in self.cache.layers:
            layer.keys = layer.keys.index_select(-2, keep_idx.to(layer.keys.device))
            layer.values = layer.values.index_select(-2, keep_idx.to(layer.values.device))
        self.ids = self.ids[:, keep_idx]
        self.text, self.images, self.videos = held.text, held.images, held.videos
        self.evictions += 1
        return int((~mask).sum())

    def _process(self, d: Rendered) -> Any:
        """Processor outputs of a delta (frame and log-mel caches used; the session's audio
        padding)."""
        eng = self.engine
        kw = eng.processor_inputs(d, audio_padding=self.audio_padding)
        with eng.caches_installed():
            return eng.processor(**kw)

    def _positions(self, inputs: Any) -> Any:
        """(3, 1, n) rope positions of the delta's ``n`` tokens from the held prompt on."""
        import torch  # optional dependency ([transformers])

        ids = inputs["input_ids"]
        n = int(ids.shape[1])
        img, vid = inputs.get("image_grid_thw"), inputs.get("video_grid_thw")
        if img is None and vid is None:  # text and audio only: 1-D positions
            pos = torch.arange(n, device=ids.device).view(1, 1, -1).expand(3, 1, -1)
        else:
            fn = rope_index_fn(self.engine.generator)
            params = inspect.signature(fn).parameters
            kw: dict[str, Any] = {"input_ids": ids, "image_grid_thw": img, "video_grid_thw": vid,
                                  "attention_mask": inputs.get("attention_mask")}  # fmt: skip
            if "mm_token_type_ids" in params:
                kw["mm_token_type_ids"] = inputs.get("mm_token_type_ids")
            if "second_per_grid_ts" in params:
                kw["second_per_grid_ts"] = inputs.get("second_per_grid_ts")
            if "second_per_grids" in params:
                kw["second_per_grids"] = inputs.get("video_second_per_grid")
            if "audio_seqlens" in params:
                fam = inputs.get("feature_attention_mask")
                kw["audio_seqlens"] = fam.sum(-1) if fam is not None else None
                kw["use_audio_in_video"] = False
            pos, _ = fn(**kw)
        return pos.to(ids.device) + self.next_pos

    # ------------------------------------------------------------------ chat
    def chat(self, messages: Sequence[Any], **generation: Any) -> ChatResult:
        """One greedy answer to ``messages`` (the whole conversation so far), running only what
        is new since the previous call through the model.

        Returns:
            A :class:`ChatResult`: ``prompt_tokens`` = the whole prompt (as re-encoding counts
            it); ``raw`` adds ``session_cached_tokens`` (reused from the cache),
            ``session_new_tokens`` (run through the model this step), ``session_prefill``, the
            conversation's ``n_frames`` / ``audio_samples`` and the step's ``new_frames``.

        Raises:
            EngineError: rendering or processing failed; the cache is dropped (the next call
                prefills the conversation again).
        """
        import torch  # optional dependency ([transformers])

        eng = self.engine
        if eng.generator is None:
            eng.load()
        start = time.perf_counter()
        r = eng.render(messages)
        delta = self._delta(r)
        evicted = 0
        if delta is None and self.evict and self.cache is not None:
            evicted = self._evict_to(eng.render(list(messages)[: self.n_messages]))
            delta = self._delta(r) if evicted else None
        prefill = delta is None
        if prefill:
            self._reset()
            delta = r
        try:
            inputs = eng._on_device(self._process(delta))
            out, n_new, model_s = self._generate(inputs, generation, torch)
        except Exception:
            self._reset()
            raise
        seq = out.sequences if hasattr(out, "sequences") else out
        n_in = int(self.ids.shape[1])
        text, n_out = eng._decode(seq[0, n_in:])
        self.text, self.images, self.videos, self.audios = r.text, r.images, r.videos, r.audios
        self.n_messages = len(messages)
        self.prefills += int(prefill)
        self.processed_tokens += n_new
        raw = {
            "n_frames": r.n_frames,
            "n_frames_sent": r.n_frames_sent,
            "new_frames_sent": sum(len(v) for v in delta.videos) + len(delta.images),
            "audio_samples": sum(r.audio_samples),
            "model_s": round(model_s, 4),
            "session_cached_tokens": n_in - n_new,
            "session_new_tokens": n_new,
            "session_prefill": prefill,
        }
        if evicted:
            raw["session_evicted_tokens"] = evicted
        if r.audio_dropped_s:
            raw["audio_dropped_s"] = round(r.audio_dropped_s, 3)
        if r.audio_padded_samples:
            raw["audio_padded_samples"] = r.audio_padded_samples
        return ChatResult(text=text, prompt_tokens=n_in, completion_tokens=n_out,
                          latency_s=round(time.perf_counter() - start, 4), raw=raw)  # fmt: skip

    def _generate(
        self, inputs: Any, generation: dict[str, Any], torch: Any
    ) -> tuple[Any, int, float]:
        """``generate`` over held + delta tokens from the cache; keeps the prompt in the cache.
        Returns (generate's output, delta tokens, model seconds)."""
        from transformers import DynamicCache  # optional dependency ([transformers])

        eng = self.engine
        new_ids = inputs["input_ids"]
        n_new = int(new_ids.shape[1])
        pos = self._positions(inputs)
        if self.cache is None:
            self.cache = DynamicCache(config=eng.generator.config)
            full = new_ids
        else:
            full = torch.cat([self.ids, new_ids], dim=1)
        media = {k: v for k, v in inputs.items() if k not in _TEXT_KEYS}
        if "mm_token_type_ids" in inputs:
            media["mm_token_type_ids"] = inputs["mm_token_type_ids"]
        kw = eng._generate_kwargs(generation)
        t_model = time.perf_counter()
        with torch.inference_mode():
            out = eng.generator.generate(
                input_ids=full,
                attention_mask=torch.ones_like(full),
                position_ids=pos,
                use_cache=True,
                **{_cache_kwarg(): self.cache},
                **media,
                **kw,
            )
        model_s = time.perf_counter() - t_model
        _crop(self.cache, int(full.shape[1]))  # the prompt only, not the generated tokens
        self.ids = full
        self.next_pos = int(pos[0, 0, -1]) + 1
        return out, n_new, model_s

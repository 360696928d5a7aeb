"""Token-level shared prefix of consecutive Offline Probing prompts, old vs new prompt layout.

Run by hand (prints figures, asserts nothing):

    . .venv/bin/activate && HF_HUB_OFFLINE=1 python benchmarks/bench_prefix.py [--seconds 48]

For decision points t = 1, 2, ... of one demo request (T1 "taxi", whole tool catalogue) over a
synthetic stream (1 fps frames, native audio), the prompt at t is rendered with the tiny
Qwen2.5-Omni processor of ``tests/helpers/tiny_qwen.py`` exactly as the ``transformers`` backend sends it
(chat template + media placeholders expanded by the processor) and tokenized. For each pair
(t, t + 1) it measures the longest common prefix of the two token sequences as a share of the
shorter one. That share bounds what automatic prefix caching (vLLM, servers) can reuse. Printed
per prompt version, ``frames_as`` (``image``, ``video``, ``video_pairs``) and
``frames.cap_policy``: the mean share for t within the
frame cap (t + 1 < frames.max) and beyond it, and the ratio new / old measured in the same run.
Goal: >= 90 % within the cap for ``v2`` with image frames, and past it for the shipped configs
(``measure_config``; ``v3`` with ``audio.segment_s`` for native audio, docs/protocol.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _observation(t: float, settings, hw: tuple[int, int] = (64, 64)):
    """Synthetic causal observation at t: frames 0..floor(t) (``hw`` px, distinct), audio
    [0, t] (``audio.mode`` native; ``asr``: an empty transcript)."""
    import numpy as np

    from interactscope.media import Frame
    from interactscope.media.causal import select_indices
    from interactscope.streaming.protocol.observation import Observation

    n = int(t) + 1
    keep = select_indices(n, settings.frames.max, settings.frames.cap_policy)
    frames = [Frame(k, float(k), np.full((*hw, 3), k * 7 % 256, np.uint8)) for k in keep]
    if settings.audio.mode != "native":
        return Observation(t=t, frames=frames, n_frames_available=n, has_audio=True,
                           audio_mode=settings.audio.mode, transcript="")  # fmt: skip
    audio = np.sin(np.arange(round(t * 16000), dtype=np.float32) * 0.01) * 0.1
    return Observation(t=t, frames=frames, n_frames_available=n, audio=audio, has_audio=True)


def _token_ids(engine, messages, content: bool = False) -> list:
    """The prompt's token ids; ``content``: each media placeholder token keyed by its item's
    bytes and its place in the item instead, so an item that changed (the one video of
    ``frames_as: video``, the audio [0, t]) shares nothing, as in a content-hashing prefix cache
    (vLLM's) or a kept KV cache: the reusable prefix, not just equal placeholder ids."""
    r = engine.render(messages)
    with engine.caches_installed():  # each distinct frame processed once (equal outputs)
        ids = engine.processor(**engine.processor_inputs(r))["input_ids"][0].tolist()
    return _content_keys(engine.processor, r, ids) if content else ids


def _content_keys(processor, r, ids: list[int]) -> list:
    import hashlib

    import numpy as np

    def digest(arrays) -> str:
        h = hashlib.blake2b(digest_size=8)
        for a in arrays:
            h.update(np.ascontiguousarray(a).tobytes())
        return h.hexdigest()

    items = {"image": [digest([a]) for a in r.images], "video": [digest(v) for v in r.videos],
             "audio": [digest([a[0] if isinstance(a, tuple) else a]) for a in r.audios]}  # fmt: skip
    tok = processor.tokenizer
    kind_of = {}
    for kind in items:
        name = getattr(processor, f"{kind}_token", None)
        if name:
            kind_of[tok.convert_tokens_to_ids(name)] = kind
    out, seen, prev, j = [], dict.fromkeys(items, 0), None, 0
    for x in ids:
        kind = kind_of.get(x)
        if kind is None:
            out.append(x)
            prev = None
            continue
        if kind != prev:  # a new run of placeholders: the next item of this kind
            seen[kind] += 1
            prev, j = kind, 0
        out.append((items[kind][seen[kind] - 1], j))
        j += 1
    return out


def _shared(a: list[int], b: list[int]) -> float:
    n = min(len(a), len(b))
    k = next((i for i in range(n) if a[i] != b[i]), n)
    return k / n


def measure(engine, bench, it, version: str, frames_as: str, policy: str, seconds: int,
            *, settings=None, hw: tuple[int, int] = (64, 64), content: bool = False,
            detail: bool = False):  # fmt: skip
    """(mean share within the cap, mean share beyond it, mean prompt tokens). ``settings``
    (default: the defaults with ``version`` and ``policy``), frame size ``hw`` (px) and
    ``content`` (see :func:`_token_ids`). ``detail``: a 4th item, the re-prefill cost
    ``{recompute_within, recompute_beyond, worst}``: mean tokens of the prompt at t + 1 past the
    prefix it shares with the one at t (what a prefix cache computes anew), and the lowest share."""
    from interactscope.streaming.protocol.prompts import build_messages
    from interactscope.streaming.protocol.requests import request_at
    from interactscope.streaming.settings import Settings

    s = settings or Settings(prompt_version=version, frames={"cap_policy": policy})
    ids = []
    for t in range(1, seconds + 1):
        req = request_at(bench, it, float(t), s, observation=_observation(float(t), s, hw))
        ids.append(_token_ids(engine, build_messages(req, frames_as=frames_as), content))
    within, beyond, new_within, new_beyond = [], [], [], []
    for i in range(len(ids) - 1):
        t_next = i + 2  # prompts at t = i + 1 and i + 2
        share = _shared(ids[i], ids[i + 1])
        inside = t_next + 1 <= s.frames.max
        (within if inside else beyond).append(share)
        n = min(len(ids[i]), len(ids[i + 1]))
        (new_within if inside else new_beyond).append(len(ids[i + 1]) - round(share * n))
    mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")  # noqa: E731
    out = mean(within), mean(beyond), mean([len(x) for x in ids])
    if not detail:
        return out
    cost = {"recompute_within": mean(new_within), "recompute_beyond": mean(new_beyond),
            "worst": min(within + beyond)}  # fmt: skip
    return (*out, cost)


SHIPPED_QWEN = ("qwen2.5-omni-3b", "qwen2.5-omni-7b", "qwen3-omni", "qwen3-vl-8b")
"""The shipped Qwen model configs (``interactscope models``)."""

HELD_720P = (338, 600)
"""(H, W) px a 1280x720 frame is held at under the shipped Qwen budget (``max_pixels`` 200704,
docs/protocol.md#frame-budget-per-backend)."""


def config_engine(name: str):
    """(settings, frames_as, engine) of shipped config ``name``: its settings and
    ``frames_as``, the transformers engine with its processor options over the tiny random model
    of its family (Qwen2.5-Omni for omni, Qwen3-VL for vl)."""
    from interactscope.engines.qwen_mm import QwenEngine
    from interactscope.engines.qwen_options import QwenOptions
    from interactscope.streaming.adapters.registry import load_model
    from interactscope.streaming.collect import resolve_settings
    from tests.helpers.tiny_qwen import tiny_omni, tiny_qwen3_vl

    mc = load_model(name)
    cfg = dict(mc.config)
    settings = resolve_settings(cfg, {})
    keys = set(QwenOptions.model_fields)
    opts = QwenOptions.model_validate({k: v for k, v in {**cfg, **(cfg.get("limits") or {})}.items()
                                       if k in keys and k != "checkpoint"})  # fmt: skip
    model, processor = (tiny_qwen3_vl if cfg.get("family") == "vl" else tiny_omni)()
    fe = getattr(processor, "feature_extractor", None)
    if fe is not None:  # the real Qwen Omni audio window: 300 s (the tiny one: 10 s)
        from transformers import WhisperFeatureExtractor

        processor.feature_extractor = WhisperFeatureExtractor(
            feature_size=fe.feature_size, chunk_length=300
        )
    budget = opts.processor_options().get("max_pixels")
    if budget:  # the real processor's images get the config's budget (the tiny one: 112x112)
        processor.image_processor.size = {"shortest_edge": 3136, "longest_edge": int(budget)}
    engine = QwenEngine(opts, "tiny", model=model, processor=processor)
    engine.load()
    return settings, cfg.get("frames_as") or engine.frames_as, engine


def measure_config(name: str, seconds: int, policy: str | None = None,
                   overrides: dict | None = None, frames_as: str | None = None) -> dict:  # fmt: skip
    """Content-keyed prefix share (see :func:`_token_ids`) of shipped config ``name`` with its
    defaults (``policy``: another ``frames.cap_policy``; ``overrides``: dotted settings as
    ``--set`` takes them, e.g. ``{"prompt_version": "v2", "audio.segment_s": None}``;
    ``frames_as``: instead of the config's) over 720p
    frames held at the shipped budget: ``{within, beyond, tokens, recompute_within,
    recompute_beyond, worst, frames_as, cap_policy, prompt_version, segment_s}``."""
    from interactscope.core.settings import apply_overrides
    from interactscope.streaming.bench import load_benchmark
    from interactscope.streaming.settings import Settings

    settings, shipped_as, engine = config_engine(name)
    frames_as = frames_as or shipped_as
    extra = dict(overrides or {})
    if policy is not None:
        extra["frames.cap_policy"] = policy
    if extra:
        settings = Settings.model_validate(apply_overrides(settings.model_dump(), extra))
    bench = load_benchmark(REPO / "annotations" / "demo", probe_media=False)
    it = next(i for i in bench.interactions if i.id == "t1-taxi")
    w, b, n, cost = measure(engine, bench, it, settings.prompt_version, frames_as,
                            settings.frames.cap_policy, seconds, settings=settings, hw=HELD_720P,
                            content=True, detail=True)  # fmt: skip
    return {"within": w, "beyond": b, "tokens": n, **cost, "frames_as": frames_as,
            "cap_policy": settings.frames.cap_policy, "prompt_version": settings.prompt_version,
            "segment_s": settings.audio.segment_s}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=48, help="decision points t = 1..N")
    args = ap.parse_args()

    from interactscope.engines.qwen_mm import QwenEngine
    from interactscope.engines.qwen_options import QwenOptions
    from interactscope.streaming.bench import load_benchmark
    from tests.helpers.tiny_qwen import tiny_omni

    model, processor = tiny_omni()
    engine = QwenEngine(QwenOptions(), "tiny", model=model, processor=processor)
    engine.load()
    bench = load_benchmark(REPO / "annotations" / "demo", probe_media=False)
    it = next(i for i in bench.interactions if i.id == "t1-taxi")
    print(f"t = 1..{args.seconds}, frames.max = 32; share = common token prefix / shorter prompt")
    print(f"{'frames_as':9} {'cap_policy':10} {'version':7} {'within cap':>10} {'beyond':>8} "
          f"{'tokens':>7}")  # fmt: skip
    for frames_as in ("image", "video", "video_pairs"):
        for policy in ("uniform", "stride"):
            res = {}
            for version in ("v1", "v2"):
                res[version] = measure(engine, bench, it, version, frames_as, policy, args.seconds)
                w, b, n = res[version]
                print(f"{frames_as:9} {policy:10} {version:7} {w:10.1%} {b:8.1%} {n:7.0f}")
            (w1, b1, _), (w2, b2, _) = res["v1"], res["v2"]
            print(f"{'':9} {'':10} {'v2/v1':7} {w2 / w1:9.2f}x {b2 / b1:7.2f}x")


if __name__ == "__main__":
    main()

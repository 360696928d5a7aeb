"""vLLM prefix caching and throughput per prompt layout: the old default vs the new one.

Run by hand in the vLLM lane's venv (prints figures, asserts nothing; ``tests/test_vllm_prefix.py``
asserts the >= 0.9 goal on the same measurement):

    bash .ci/vllm-lane.sh --build
    VLLM_CPU_KVCACHE_SPACE=1 VLLM_ENABLE_V1_MULTIPROCESSING=0 HF_HUB_OFFLINE=1 \\
        ~/.cache/interactscope/venv-vllm/bin/python benchmarks/bench_vllm.py [--seconds 12] \\
        [--family vl qwen3_vl omni] [--checkpoint FOLDER --family vl]

For each model family (tiny random checkpoints of ``tests/vllm_tiny.py``, or ``--checkpoint`` a
real one on a GPU box) one ``vllm.LLM`` serves every layout (its prefix cache reset between
layouts). Decision points t = 1..N of the demo's T1 "taxi" request (whole tool catalogue) over a
synthetic stream (1 fps 112x112 frames; native audio for Omni, a transcript for the VL models)
go in one ``generate`` call, as the collection driver sends one interaction's points. Per layout
(``prompt_version`` x ``frames_as``):

- **hit / shared**: vLLM's ``num_cached_tokens`` of the prompt at t + 1 over the tokens it shares
  with the prompt at t (longest common prefix, a media placeholder token matching only when its
  item's pixels/samples are the same), summed over the pairs within the frame cap;
- **hit / prompt**: cached over all prompt tokens;
- **points/s**: decision points per second of ``generate`` wall time (cold prefix cache, after a
  warm-up call), and the ratio new default / old default measured in the same run.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

OLD = ("v1", "video")
"""The layout of runs made before issue 25 (prompt v1, the shipped configs' ``frames_as: video``)."""
LAYOUTS = (OLD, ("v1", "image"), ("v2", "video"), ("v2", "image"))
FAMILIES = ("vl", "qwen3_vl", "omni")
FRAME_PX = 112


@dataclass
class Figures:
    """One layout's measurement (see the module docstring)."""

    hit_of_shared: float
    hit_of_prompt: float
    points_per_s: float
    mean_prompt_tokens: float
    pairs: int


def observation(t: float, settings: Any, audio: bool = True) -> Any:
    """Synthetic causal observation at t: distinct 112x112 frames 0..floor(t) under the cap,
    a 1 kHz-ish tone [0, t] (or a transcript when ``audio`` is false)."""
    import numpy as np

    from interactscope.media import Frame
    from interactscope.media.causal import select_indices
    from interactscope.streaming.protocol.observation import Observation

    n = int(t) + 1
    keep = select_indices(n, settings.frames.max, settings.frames.cap_policy)
    rng = np.random.default_rng(0)
    base = rng.integers(0, 255, (FRAME_PX, FRAME_PX, 3), dtype=np.uint8)
    frames = [Frame(k, float(k), np.roll(base, 7 * k, axis=1)) for k in keep]
    if not audio:
        words = " ".join(["word"] * int(t * 2))
        return Observation(
            t=t,
            frames=frames,
            n_frames_available=n,
            transcript=words,
            audio_mode="asr",
            has_audio=True,
        )
    wave = (np.sin(np.arange(round(t * 16000), dtype=np.float32) * 0.4) * 0.1).astype(np.float32)
    return Observation(t=t, frames=frames, n_frames_available=n, audio=wave, has_audio=True)


def _item_tags(inp: dict[str, Any], prompt_ids: list[int], ids: dict[int, str]) -> list[Any]:
    """Each prompt token tagged: text tokens by themselves, placeholder tokens by the digest of
    their item (images and audio one run each in prompt order; every video run belongs to the
    one video item, or with several video items, ``frames_as: video_pairs``, one run each)."""
    import numpy as np

    mm = inp.get("multi_modal_data", {})
    digests: dict[str, list[str]] = {}
    for kind, items in mm.items():
        out = []
        for item in items:
            arr = item[0] if isinstance(item, tuple) else item
            out.append(hashlib.sha1(np.ascontiguousarray(arr).tobytes()).hexdigest())
        digests[kind] = out
    one_video = len(digests.get("video", [])) <= 1
    seen = {"image": -1, "audio": -1, "video": -1}
    tags: list[Any] = []
    prev = None
    for tok in prompt_ids:
        kind = ids.get(tok)
        if kind is None:
            tags.append(tok)
        elif kind == "video" and one_video:
            tags.append(("video", digests["video"][0]))
        else:
            if prev != tok:
                seen[kind] += 1
            tags.append((kind, digests[kind][seen[kind]]))
        prev = tok
    assert one_video or seen["video"] + 1 == len(digests["video"]), "one run per video item"
    return tags


def _shared(a: list[Any], b: list[Any]) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def placeholder_ids(tokenizer: Any) -> dict[int, str]:
    """Token id -> modality of the Qwen placeholder tokens the tokenizer knows."""
    names = {
        "<|image_pad|>": "image",
        "<|IMAGE|>": "image",
        "<|video_pad|>": "video",
        "<|VIDEO|>": "video",
        "<|AUDIO|>": "audio",
        "<|audio_pad|>": "audio",
    }
    vocab = tokenizer.get_vocab()
    return {vocab[n]: kind for n, kind in names.items() if n in vocab}


def adapter_for(
    checkpoint: str, version: str, frames_as: str, audio: bool, llm: Any = None, **cfg: Any
):
    """A VLLMAdapter for ``checkpoint`` at one layout (native audio when ``audio``, else the
    transcript; sharing ``llm`` when given)."""
    from interactscope.streaming.adapters.vllm_backend import VLLMAdapter
    from interactscope.streaming.settings import Settings

    settings = Settings(
        prompt_version=version,
        frames={"max": 32},
        audio={"mode": "native" if audio else "asr"},
    )
    config = {
        "backend": "vllm",
        "checkpoint": checkpoint,
        "frames_as": frames_as,
        "max_model_len": 8192,
        "limit_mm_per_prompt": {"image": 36, "video": 1, "audio": 2},
        "generation": {"max_new_tokens": 4},
        "engine_args": {"dtype": "float32", "enforce_eager": True, "seed": 0},
        "preflight": {"on_prepare": "off"},
        **cfg,
    }
    adapter = VLLMAdapter("bench", config, settings)
    if llm is not None:
        adapter.chat_engine._llm = llm
    return adapter


def measure(adapter: Any, seconds: int = 12) -> Figures:
    """Prefix-cache figures of decision points t = 1..``seconds`` in one ``generate`` call
    (the engine's prefix cache reset first)."""
    from interactscope.streaming.bench import load_benchmark
    from interactscope.streaming.protocol.requests import request_at

    bench = load_benchmark(REPO / "interactscope" / "data" / "demo", probe_media=False)
    it = next(i for i in bench.interactions if i.id == "t1-taxi")
    s = adapter.settings
    audio = s.audio.mode == "native"
    reqs = [
        request_at(bench, it, float(t), s, observation=observation(float(t), s, audio))
        for t in range(1, seconds + 1)
    ]
    llm = adapter.engine()
    inputs = [adapter._prepared(r)[1] for r in reqs]
    llm.reset_prefix_cache()
    t0 = time.perf_counter()
    outs = adapter.chat_engine.generate(inputs)
    wall = time.perf_counter() - t0
    ids = placeholder_ids(llm.get_tokenizer())
    tags = [_item_tags(i, list(o.prompt_token_ids), ids) for i, o in zip(inputs, outs, strict=True)]
    shared = cached = 0
    pairs = 0
    for k in range(len(outs) - 1):
        if k + 2 > s.frames.max - 1:  # the prompt at t = k + 2 must keep every frame
            break
        shared += _shared(tags[k], tags[k + 1])
        cached += int(outs[k + 1].num_cached_tokens or 0)
        pairs += 1
    total = sum(len(o.prompt_token_ids) for o in outs)
    return Figures(
        hit_of_shared=cached / shared if shared else float("nan"),
        hit_of_prompt=sum(int(o.num_cached_tokens or 0) for o in outs) / total,
        points_per_s=len(outs) / wall,
        mean_prompt_tokens=total / len(outs),
        pairs=pairs,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=12, help="decision points t = 1..N")
    ap.add_argument("--family", nargs="*", default=list(FAMILIES), choices=FAMILIES)
    ap.add_argument("--checkpoint", help="a real checkpoint folder or hub id (one --family)")
    args = ap.parse_args()

    from tests.vllm_tiny import save_tiny

    from interactscope.streaming.settings import Settings

    new = (Settings().prompt_version, "image")
    tmp = Path(tempfile.mkdtemp(prefix="bench-vllm-"))
    print(f"t = 1..{args.seconds}, one generate call per layout; new default = {new}")
    print(f"{'family':9} {'version':7} {'frames_as':9} {'hit/shared':>10} {'hit/prompt':>10} "
          f"{'points/s':>9} {'tokens':>7}")  # fmt: skip
    for family in args.family:
        ckpt = args.checkpoint or str(save_tiny(family, tmp / family))
        llm = None
        res = {}
        for version, frames_as in LAYOUTS:
            adapter = adapter_for(ckpt, version, frames_as, family == "omni", llm)
            if llm is None:  # warm-up: the first generate calls pay one-off costs
                measure(adapter, 2)
            llm = adapter.engine()
            f = res[(version, frames_as)] = measure(adapter, args.seconds)
            print(f"{family:9} {version:7} {frames_as:9} {f.hit_of_shared:10.1%} "
                  f"{f.hit_of_prompt:10.1%} {f.points_per_s:9.2f} {f.mean_prompt_tokens:7.0f}")  # fmt: skip
        a, b = res[OLD], res[new]
        print(f"{family:9} new/old: points/s {b.points_per_s / a.points_per_s:.2f}x, "
              f"hit/prompt {b.hit_of_prompt:.1%} vs {a.hit_of_prompt:.1%}")  # fmt: skip
        del llm


if __name__ == "__main__":
    main()

"""Processor time per decision point with and without the processed-frame cache.

Run by hand (prints figures, asserts nothing):

    . .venv/bin/activate && HF_HUB_OFFLINE=1 python benchmarks/bench_frames.py
        [--seconds 40] [--size 1280x720] [--frames-as video|image] [--max-pixels 112x112]

Builds the Offline Probing prompts of one request at t = 0..N over a synthetic stream (1 fps
frames of --size, distinct per second; native audio) and times the ``transformers`` engine's
processor call (``QwenEngine.process``: resize, normalise, patchify, log-mel, tokenize) for each
decision point with ``frame_cache_mb: 0`` and with the default cache, in the same run, with the
tiny Qwen2.5-Omni processor of ``tests/helpers/tiny_qwen.py`` (frames resized to at most --max-pixels).
Printed: seconds per point of each, the ratio, and frames processed vs reused. The outputs of the
two are compared tensor by tensor on the way (the run stops if they differ).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _requests(seconds: int, w: int, h: int):
    import numpy as np

    from interactscope.media import Frame
    from interactscope.media.causal import select_indices
    from interactscope.streaming.protocol.observation import Observation
    from interactscope.streaming.settings import Settings
    from tests.test_adapters_transformers import _request

    rng = np.random.default_rng(0)
    base = rng.integers(0, 255, (h, w, 3), dtype=np.uint8)
    store = [np.roll(base, 7 * k, axis=1) for k in range(seconds + 1)]
    s = Settings()
    out = []
    for t in range(seconds + 1):
        keep = select_indices(t + 1, s.frames.max, s.frames.cap_policy)
        frames = [Frame(k, float(k), store[k]) for k in keep]
        audio = np.sin(np.arange(t * 16000, dtype=np.float32) * 0.01) * 0.1
        obs = Observation(t=float(t), frames=frames, n_frames_available=t + 1, audio=audio,
                          has_audio=True)  # fmt: skip
        out.append(_request(float(t), obs, s))
    return out


def _run(engine, messages):
    times, outs = [], []
    for m in messages:
        r = engine.render(m)
        t0 = time.perf_counter()
        outs.append(engine.process(r))
        times.append(time.perf_counter() - t0)
    return sum(times) / len(times), outs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=40)
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--frames-as", default="video", choices=["video", "image"])
    ap.add_argument("--max-pixels", default="112x112")
    args = ap.parse_args()
    w, h = (int(x) for x in args.size.split("x"))
    mw, mh = (int(x) for x in args.max_pixels.split("x"))

    import torch

    from interactscope.engines.qwen_mm import QwenEngine
    from interactscope.engines.qwen_options import QwenOptions
    from interactscope.streaming.protocol.prompts import build_messages
    from tests.helpers.tiny_qwen import tiny_omni

    model, processor = tiny_omni()
    reqs = _requests(args.seconds, w, h)
    msgs = [build_messages(r, frames_as=args.frames_as) for r in reqs]
    res = {}
    for mb in (0, 256):
        opts = {"frames_as": args.frames_as, "frame_cache_mb": mb,
                "processor_kwargs": {"min_pixels": 56 * 56, "max_pixels": mw * mh}}  # fmt: skip
        eng = QwenEngine(QwenOptions.model_validate(opts), "tiny", model=model, processor=processor)
        eng.load()
        _run(eng, msgs[:2])  # warm-up (the cache is then cleared)
        if eng.frame_cache is not None:
            eng.frame_cache = type(eng.frame_cache)(eng.frame_cache.max_bytes)
        res[mb] = (*_run(eng, msgs), eng.frame_cache)
    for a, b in zip(res[0][1], res[256][1], strict=True):
        for k in a.keys():
            same = torch.equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k] == b[k]
            if not same:
                raise SystemExit(f"frame cache changed {k!r}")
    off, on, fc = res[0][0], res[256][0], res[256][2]
    print(f"t = 0..{args.seconds}, frames {w}x{h} -> <= {mw}x{mh} px, frames_as {args.frames_as}")
    print(f"processor without cache: {off * 1000:8.1f} ms/point")
    print(f"processor with cache:    {on * 1000:8.1f} ms/point  "
          f"(frames processed {fc.misses}, reused {fc.hits})")  # fmt: skip
    print(f"ratio without / with: {off / on:.2f}x")


if __name__ == "__main__":
    main()

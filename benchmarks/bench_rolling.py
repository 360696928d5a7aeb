"""Online Rolling with a kept KV cache vs re-encoding, against Offline Probing (issue 18).

Run by hand (prints figures, asserts nothing):

    . .venv/bin/activate && HF_HUB_OFFLINE=1 python benchmarks/bench_rolling.py
        [--points 121] [--frames-max 32] [--reprefill-every 16] [--max-new-tokens 4] [--check]

One request (q = 0) over a synthetic clip of ``--points - 1`` seconds: decision points t = 0, 1,
..., distinct 64x64 noise frames at 1 fps (the observation capped at ``frames.max`` with the
default ``uniform`` policy), noise audio at 16 kHz (native). The tiny random-weight Qwen2.5-Omni
thinker of ``tests/helpers/tiny_qwen.py`` answers every point three ways:

- Offline Probing (``respond``): each point's prompt is processed whole;
- Online Rolling, re-encoding (``session_cache: false``, ``session_reprefill_every: 1``: the old
  session): the whole conversation is processed at each step;
- Online Rolling, kept cache (``session_cache: true``, ``session_reprefill_every`` K as given,
  and K = 1): a step processes only its new tokens, plus a re-prefill when frames leave the
  conversation;
- Online Rolling, kept cache with ``session_window: evict``: frames past the cap leave the
  cache itself, no re-prefill.

"Processed tokens" are the prompt tokens run through the model (``prompt_tokens`` without a
cache; ``session_new_tokens`` with it). Printed: totals and their ratio to Offline Probing's
(goal <= 1.2x for the kept cache), processed tokens at steps 1 / 30 / 60 / last and the
steps' median and maximum (goal: flat in t), re-prefills, and wall time of each run with the ratio
measured in the same run. The kept-cache answers are checked equal to re-encoding's when both
use the same ``session_reprefill_every`` (``--check``, one more run).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SR = 16000


def _observation(t: float, settings, audio):
    """Causal observation at t: frames 0..floor(t) capped by frames.max, audio [0, t]."""
    import numpy as np

    from interactscope.media import Frame
    from interactscope.media.causal import select_indices
    from interactscope.streaming.protocol.observation import Observation

    n = int(t) + 1
    keep = select_indices(n, settings.frames.max, settings.frames.cap_policy)
    frames = []
    for k in keep:
        img = np.random.default_rng(k).integers(0, 256, (64, 64, 3), dtype=np.uint8)
        frames.append(Frame(k, float(k), img))
    return Observation(t=t, frames=frames, n_frames_available=n, audio=audio[: round(t * SR)],
                       has_audio=True)  # fmt: skip


def _requests(settings, points: int):
    import numpy as np

    from interactscope.streaming.protocol.types import DecisionRequest
    from interactscope.streaming.schema import Interaction, VideoRecord

    it = Interaction.model_validate(
        {"id": "long", "video_id": "v", "task": "T1",
         "query": {"time_s": 0.0, "text": "Take a photo when the door opens."},
         "targets": [{"id": "k1", "time_s": 60.0, "tools": ["take_photo"]}]}
    )  # fmt: skip
    audio = np.random.default_rng(7).normal(0, 0.1, points * SR).astype(np.float32)
    video = VideoRecord(id="v", path="v.mp4")
    return it, video, [
        DecisionRequest(interaction=it, video=video, bench_root=Path("."), t=float(t),
                        settings=settings, observation=_observation(float(t), settings, audio))
        for t in range(points)
    ]  # fmt: skip


def _adapter(settings, max_new: int, **cfg):
    from interactscope.streaming.adapters.transformers_backend import TransformersAdapter
    from tests.helpers.tiny_qwen import tiny_omni

    model, proc = tiny_omni()
    base = {"generation": {"max_new_tokens": max_new, "temperature": 0},
            "processor_kwargs": {"min_pixels": 56 * 56, "max_pixels": 112 * 112}}  # fmt: skip
    ad = TransformersAdapter("tiny", {**base, **cfg}, settings, model=model, processor=proc)
    ad.prepare(None)
    return ad


def _offline(settings, reqs, max_new):
    ad = _adapter(settings, max_new)
    t0 = time.perf_counter()
    outs = [ad.respond(r) for r in reqs]
    return time.perf_counter() - t0, [o.prompt_tokens for o in outs], outs


def _online(settings, it, video, reqs, max_new, **cfg):
    ad = _adapter(settings, max_new, **cfg)
    session = ad.open_session(it, video)
    t0 = time.perf_counter()
    outs = [session.step(r) for r in reqs]
    wall = time.perf_counter() - t0
    tokens = [o.extra.get("session_new_tokens", o.prompt_tokens) for o in outs]
    prefills = session.kept.prefills if session.kept is not None else len(outs)
    return wall, tokens, outs, prefills


def _row(name, wall, tokens, ref_total, ref_wall, prefills="-"):
    steps = [s for s in (1, 30, 60) if s < len(tokens)] + [len(tokens)]
    at = " / ".join(str(tokens[s - 1]) for s in steps)
    label = "/".join(str(s) for s in steps)
    print(
        f"{name:<26} total {sum(tokens):>9,}  x{sum(tokens) / ref_total:5.2f} offline   "
        f"steps {label}: {at:<27} median {statistics.median(tokens):>7.0f} "
        f"max {max(tokens):>6}  re-prefills {prefills!s:>3}  wall {wall:6.1f} s "
        f"(x{wall / ref_wall:4.2f})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=121)
    ap.add_argument("--frames-max", type=int, default=32)
    ap.add_argument("--reprefill-every", type=int, default=16, help="K (default: cap // 2)")
    ap.add_argument("--max-new-tokens", type=int, default=4)
    ap.add_argument("--check", action="store_true", help="also compare answers to re-encoding")
    args = ap.parse_args()

    from interactscope.streaming.settings import Settings

    s = Settings(frames={"max": args.frames_max})
    it, video, reqs = _requests(s, args.points)
    n = args.max_new_tokens
    off_wall, off_tok, _ = _offline(s, reqs, n)
    old = _online(s, it, video, reqs, n, session_cache=False, session_reprefill_every=1)
    new = _online(s, it, video, reqs, n, session_cache=True,
                  session_reprefill_every=args.reprefill_every)  # fmt: skip
    new1 = _online(s, it, video, reqs, n, session_cache=True, session_reprefill_every=1)
    ev = _online(s, it, video, reqs, n, session_cache=True, session_window="evict")
    ref = sum(off_tok)
    print(f"{args.points} decision points, frames.max {args.frames_max}, tiny Qwen2.5-Omni")
    _row("offline probing", off_wall, off_tok, ref, off_wall)
    _row("online re-encoding (old)", old[0], old[1], ref, off_wall, old[3])
    _row(f"online kept cache, K={args.reprefill_every}", new[0], new[1], ref, off_wall, new[3])
    _row("online kept cache, K=1", new1[0], new1[1], ref, off_wall, new1[3])
    _row("online kept cache, evict", ev[0], ev[1], ref, off_wall, ev[3])
    print(
        f"kept cache (K={args.reprefill_every}) / re-encoding: tokens "
        f"x{sum(new[1]) / sum(old[1]):.3f}, wall x{new[0] / old[0]:.3f}"
    )
    same = [a.text for a in new1[2]] == [b.text for b in old[2]]
    print(f"kept cache K=1 answers == re-encoding answers: {same}")
    if args.check:
        chk = _online(s, it, video, reqs, n, session_cache=False,
                      session_reprefill_every=args.reprefill_every)  # fmt: skip
        same = [a.text for a in new[2]] == [b.text for b in chk[2]]
        print(f"kept cache K={args.reprefill_every} answers == re-encoding answers: {same}")


if __name__ == "__main__":
    main()

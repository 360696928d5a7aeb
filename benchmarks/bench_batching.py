"""Batched vs one-at-a-time Offline Probing in the ``transformers`` backend (tiny model).

Run by hand (prints figures, asserts nothing):

    . .venv/bin/activate && HF_HUB_OFFLINE=1 python benchmarks/bench_batching.py
        [--batch-size 16] [--repeats 3] [--device cpu|cuda] [--frames-as video|image]

The decision points are those of two requests over the demo's ``city_speech.mp4`` (7.6 s: 9
points each, 18 in all), observed once (``Observer``) before timing. Each repeat answers all of
them twice with the tiny random-weight Qwen2.5-Omni thinker of ``tests/helpers/tiny_qwen.py``: once by
``respond`` one request at a time, once by ``respond_batch`` in chunks of ``--batch-size`` (one
left-padded ``generate`` per chunk). Printed: decision points per second of each, the ratio
batched / one at a time (median over repeats, measured in the same run), and the share of each
run's time spent in ``generate``. A first untimed pass warms both paths up. Greedy answers are
checked equal on the way (the run stops if they differ).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _requests(settings):
    from interactscope.streaming.protocol.observation import Observer
    from tests.test_adapters_transformers import CITY, IT, _request

    ob = Observer(CITY, settings)
    other = IT.model_copy(update={"id": "other"})
    other.query.text = "Tell me when the view changes to a different building."
    grid = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 7.6]
    return [_request(t, ob.observe(t, it), settings, it) for it in (IT, other) for t in grid]


def _one_at_a_time(ad, reqs):
    t0 = time.perf_counter()
    outs = [ad.respond(r) for r in reqs]
    return time.perf_counter() - t0, sum(o.extra["model_s"] for o in outs), outs


def _batched(ad, reqs, size):
    t0 = time.perf_counter()
    outs = []
    for i in range(0, len(reqs), size):
        outs.extend(ad.respond_batch(reqs[i : i + size]))
    bad = [o for o in outs if isinstance(o, Exception)]
    if bad:
        raise SystemExit(f"batched answer failed: {bad[0]}")
    return time.perf_counter() - t0, sum(o.extra["model_s"] for o in outs), outs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--frames-as", default="video", choices=["video", "image"])
    ap.add_argument("--max-new-tokens", type=int, default=8)
    args = ap.parse_args()

    from interactscope.streaming.adapters.transformers_backend import TransformersAdapter
    from interactscope.streaming.settings import Settings
    from tests.helpers.tiny_qwen import tiny_omni

    model, processor = tiny_omni()
    cfg = {
        "generation": {"max_new_tokens": args.max_new_tokens, "temperature": 0},
        "processor_kwargs": {"min_pixels": 56 * 56, "max_pixels": 112 * 112},
        "frames_as": args.frames_as,
    }
    settings = Settings()
    ad = TransformersAdapter(
        "tiny", cfg, settings, model=model.to(args.device), processor=processor
    )
    ad.prepare(None)
    reqs = _requests(settings)
    _one_at_a_time(ad, reqs[:4]), _batched(ad, reqs[:4], args.batch_size)  # warm-up
    rows = []
    for _ in range(args.repeats):
        s_wall, s_model, s_out = _one_at_a_time(ad, reqs)
        b_wall, b_model, b_out = _batched(ad, reqs, args.batch_size)
        if [o.text for o in s_out] != [o.text for o in b_out]:
            raise SystemExit("batched greedy answers differ from one-at-a-time ones")
        rows.append((s_wall, s_model, b_wall, b_model))
    n = len(reqs)
    s_wall = statistics.median(r[0] for r in rows)
    b_wall = statistics.median(r[2] for r in rows)
    print(f"{n} decision points, batch size {args.batch_size}, device {args.device}, "
          f"frames_as {args.frames_as}, {args.repeats} repeats (medians)")  # fmt: skip
    s_share = statistics.median(r[1] / r[0] for r in rows)
    b_share = statistics.median(r[3] / r[2] for r in rows)
    print(f"one at a time: {n / s_wall:7.2f} points/s  (generate {s_share:.0%} of the time)")
    print(f"batched:       {n / b_wall:7.2f} points/s  (generate {b_share:.0%} of the time)")
    print(f"ratio batched / one at a time: {s_wall / b_wall:.2f}x points/s")
    print(
        "ratio of generate time alone: "
        f"{statistics.median(r[1] for r in rows) / statistics.median(r[3] for r in rows):.2f}x"
    )


if __name__ == "__main__":
    main()

"""Where collection time goes: the share of a ``collect`` spent outside the model.

Run by hand (prints figures, asserts nothing):

    . .venv/bin/activate && HF_HUB_OFFLINE=1 python benchmarks/bench_overhead.py
        [--scenario demo,720p] [--seconds 30] [--max-pixels 200704] [--batch-size 16]
        [--max-new-tokens 8] [--limit N] [--device cpu|cuda] [--keep DIR]

The model is the tiny random-weight Qwen2.5-Omni thinker of ``tests/helpers/tiny_qwen.py``, saved to a
temporary checkpoint folder and loaded by the real path (``backend: transformers``), so the
run is a plain ``run_collect`` and its figures are the run's own ``summary.timings``
(docs/protocol.md#run-folder-contract): ``load`` apart, then ``decode`` (observations: media
decode, causal frames and audio), ``process`` (chat template + HF processor + copy to the
device), ``model`` (``generate``), ``write`` and ``other`` (prompt building, scheduling), each
with its share of the collection time after loading.

Scenarios (both in the same run):

- ``demo``: the bundled demo benchmark (``interactscope/data/demo``), as ``interactscope demo``;
- ``720p``: a synthetic 1280x720 25 fps H.264 clip with 48 kHz stereo AAC of ``--seconds``
  (``benchmarks/bench_media.py``'s synthesizer), two interactions from q = 0.

The goal is an outside-model share under 10 %; a tiny model makes ``generate`` cheap, so the
share printed here is an upper bound of a real model's. ``--max-pixels`` is the per-frame
pixel budget (default: the shipped Qwen2.5-Omni configs' 200704 px = 256 tokens per frame).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

STAGES = ("decode_s", "process_s", "model_s", "write_s", "other_s")


def _checkpoint(folder: Path) -> Path:
    from tests.helpers.tiny_qwen import tiny_omni

    model, processor = tiny_omni()
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


PAIRS_LAYOUT = {
    "frames_as": "video_pairs",
    "settings": {"prompt_version": "v3", "audio": {"mode": "native", "segment_s": 8},
                 "frames": {"max": 32, "cap_policy": "stride"}},
}  # fmt: skip
"""The prefix-sharing layout measured for ``qwen2.5-omni-3b`` (docs/protocol.md, frames as
video pairs): 2-frame video items, prompt v3 with 8 s audio segments, ``stride`` past the cap."""


def _config(path: Path, ckpt: Path, args: argparse.Namespace, pairs: bool = False) -> str:
    """A tiny-model copy of ``qwen2.5-omni-3b``'s config (its frames layout: ``video``, prompt
    v2, ``uniform``); ``pairs``: :data:`PAIRS_LAYOUT` instead."""
    cfg = {
        "backend": "transformers",
        "checkpoint": str(ckpt),
        "family": "omni",
        "frames_as": "video",
        "device": args.device,
        "batch_size": args.batch_size,
        "generation": {"max_new_tokens": args.max_new_tokens, "temperature": 0},
        "limits": {"processor_kwargs": {"max_pixels": args.max_pixels}},
        "settings": {"audio": {"mode": "native"}, "frames": {"max": 32}},
    }
    if pairs:
        cfg.update(PAIRS_LAYOUT)
    path.write_text(json.dumps(cfg, indent=2))
    return str(path)


def _clip_bench(root: Path, seconds: int) -> Path:
    from bench_media import synthesize

    (root / "media").mkdir(parents=True, exist_ok=True)
    synthesize(root / "media" / "clip.mp4", seconds, 1280, 720)
    bench = {
        "name": "synthetic-720p",
        "version": "1",
        "tools": [{"name": "take_photo", "description": "Take a photo."}],
        "videos": [{"id": "clip", "path": "media/clip.mp4"}],
    }
    its = [
        {"id": "t2", "video_id": "clip", "task": "T2",
         "query": {"time_s": 0.0, "text": "Tell me when the colour block in the corner flashes."},
         "targets": [{"id": "k1", "reference": "the block flashes", "time_s": seconds / 2}]},
        {"id": "t1", "video_id": "clip", "task": "T1",
         "query": {"time_s": 0.0, "text": "Take a photo when the stripes line up."},
         "targets": [{"id": "k1", "time_s": seconds / 3, "tools": ["take_photo"]}]},
    ]  # fmt: skip
    (root / "benchmark.json").write_text(json.dumps(bench, indent=2))
    (root / "interactions.jsonl").write_text("".join(json.dumps(i) + "\n" for i in its))
    return root


def _report(name: str, summary) -> None:
    t = summary.timings
    c = t.collect_s or 1e-9
    print(f"\n{name}: {summary.written} decision points, {summary.errors} errors, "
          f"wall {summary.wall_s:.2f} s = load {t.load_s:.2f} s + collect {t.collect_s:.2f} s")  # fmt: skip
    for k in STAGES:
        v = getattr(t, k)
        print(f"  {k[:-2]:8s} {v:8.3f} s  {v / c:6.1%}")
    share = t.outside_model_share
    print(f"  outside the model: {share:.1%} of collect (goal < 10 %)" if share is not None else "")
    print(f"  tokens per model second: prompt {t.prompt_tokens_per_s}, "
          f"completion {t.completion_tokens_per_s}; per point: "
          f"{t.prompt_tokens / max(1, summary.written):.0f} prompt tokens")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", default="demo,720p")
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--max-pixels", type=int, default=200704)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--limit", type=int, default=None, help="interactions per scenario")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--keep", type=Path, default=None, help="keep the run folders here")
    args = ap.parse_args()

    import logging

    logging.disable(logging.WARNING)
    from interactscope.streaming.collect import run_collect

    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = args.keep or Path(tmp_s)
        tmp.mkdir(parents=True, exist_ok=True)
        cfg = _config(tmp / "tiny.yaml", _checkpoint(tmp / "tiny-omni"), args)
        print(f"tiny Qwen2.5-Omni thinker, device {args.device}, max_pixels {args.max_pixels}, "
              f"batch size {args.batch_size}, max_new_tokens {args.max_new_tokens}")  # fmt: skip
        benches = {"demo": REPO / "interactscope" / "data" / "demo"}
        wanted = args.scenario.split(",")
        if "720p" in wanted:
            benches["720p"] = _clip_bench(tmp / "clip-bench", args.seconds)
        for name in wanted:
            s = run_collect(model=cfg, bench=benches[name], out=tmp / f"run-{name}",
                            progress=False, limit=args.limit)  # fmt: skip
            _report(name if name != "720p" else f"720p ({args.seconds} s)", s)


if __name__ == "__main__":
    main()

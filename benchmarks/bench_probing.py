"""Offline Probing throughput over the demo benchmark with the tiny random-weight Omni thinker.

Run by hand (prints figures, asserts nothing about time):

    . .venv/bin/activate && HF_HUB_OFFLINE=1 python benchmarks/bench_probing.py [--limit N]
        [--protocol offline|online] [--max-side PX] [--batch-size 16]

It runs the real collection path (``interactscope.streaming.collect.run_collect``: benchmark loading,
decision grids, one decode per video, causal observations, prompt building, the ``transformers``
backend, the run folder) with the tiny Qwen2.5-Omni thinker of ``tests/helpers/tiny_qwen.py`` in place of
a checkpoint, and times each stage by wrapping it:

- media: ``Observer.observe`` (decode once per video, causal frames/audio per decision point);
- prompt: ``prompts.build_messages`` / ``online_turn`` + the chat-template rendering;
- preprocess: the processor call (image resize/patching, log-mel features, tokenization);
- model: ``generate`` (the model call itself);
- rest: everything else (driver, record parsing, run-folder writes, progress).

Printed: decision points per second, and the share of wall time outside the model call. With a
real model the model call dominates; the tiny model makes the overheads visible.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TIMES: dict[str, float] = defaultdict(float)
COUNTS: dict[str, int] = defaultdict(int)


def _timed(stage: str, fn):
    def wrapper(*a, **kw):
        t0 = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            TIMES[stage] += time.perf_counter() - t0
            COUNTS[stage] += 1

    return wrapper


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", default=str(REPO / "annotations" / "demo"))
    ap.add_argument("--limit", type=int, default=None, help="first N interactions only")
    ap.add_argument("--protocol", default="offline", choices=["offline", "online"])
    ap.add_argument("--max-side", type=int, default=None, help="frames.max_side (px)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--assume-model-s", type=float, default=0.5,
                    help="a real model's seconds per call, for the projected share")  # fmt: skip
    args = ap.parse_args()

    import torch

    from interactscope.streaming.adapters import registry
    from interactscope.streaming.adapters import transformers_backend as tb
    from interactscope.streaming.collect import run_collect
    from interactscope.streaming.protocol import observation, prompts
    from tests.helpers.tiny_qwen import tiny_omni

    t0 = time.perf_counter()
    model, processor = tiny_omni()
    build_s = time.perf_counter() - t0

    class Processor:
        def __init__(self, inner):
            self.inner = inner

        def __call__(self, **kw):
            t = time.perf_counter()
            try:
                return self.inner(**kw)
            finally:
                TIMES["preprocess"] += time.perf_counter() - t

        def __getattr__(self, name):
            return getattr(self.inner, name)

    class BenchOmni(tb.TransformersAdapter):
        def __init__(self, name, config, settings):
            super().__init__(name, config, settings, model=model, processor=Processor(processor))

    model.generate = _timed("model", model.generate)
    observation.Observer.observe = _timed("media", observation.Observer.observe)
    prompts.build_messages = _timed("prompt", prompts.build_messages)
    prompts.online_turn = _timed("prompt", prompts.online_turn)
    tb.TransformersAdapter.render = _timed("template", tb.TransformersAdapter.render)
    sys.modules[__name__].BenchOmni = BenchOmni  # importable by the registry
    registry.BACKENDS["bench-omni"] = f"{__name__}:BenchOmni"

    settings: dict = {"audio": {"mode": "native"}}
    if args.max_side:
        settings["frames"] = {"max_side": args.max_side}
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "bench-omni.yaml"
        cfg.write_text(json.dumps({"backend": "bench-omni", "settings": settings,
                                   "processor_kwargs": {"min_pixels": 3136, "max_pixels": 12544},
                                   "generation": {"max_new_tokens": args.max_new_tokens}}))  # fmt: skip
        t0 = time.perf_counter()
        summary = run_collect(model=str(cfg), bench=args.bench, out=Path(tmp) / "run",
                              protocol=args.protocol, limit=args.limit,
                              batch_size=args.batch_size, progress=False)  # fmt: skip
        wall = time.perf_counter() - t0

    n = summary.written
    model_s = TIMES["model"]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; tiny model built in "
          f"{build_s:.2f} s")  # fmt: skip
    print(f"{args.protocol} probing: {summary.interactions} interactions, {n} decision points, "
          f"{summary.errors} errors, wall {wall:.2f} s (incl. benchmark load and first decode)")  # fmt: skip
    print(f"decision points per second: {n / wall:.2f}")
    print(f"prompt tokens {summary.prompt_tokens} ({summary.prompt_tokens / max(n, 1):.0f}/point), "
          f"completion tokens {summary.completion_tokens}")  # fmt: skip
    stages = ["media", "prompt", "template", "preprocess", "model"]
    accounted = sum(TIMES[s] for s in stages)
    print("stage        seconds   share of wall")
    for s in stages:
        print(f"{s:<12} {TIMES[s]:8.2f}   {TIMES[s] / wall:6.1%}")
    print(f"{'rest':<12} {wall - accounted:8.2f}   {(wall - accounted) / wall:6.1%}")
    print(f"share of wall time outside the model call: {(wall - model_s) / wall:.1%} "
          f"(media + prompt + template + preprocess + rest)")  # fmt: skip
    outside_adapter = wall - TIMES["template"] - TIMES["preprocess"] - model_s - TIMES["prompt"]
    print(f"share outside the backend (media, driver, logging): {outside_adapter / wall:.1%}")
    per_point = (wall - model_s) / max(n, 1)
    m = args.assume_model_s
    print(f"overhead per decision point: {per_point * 1000:.1f} ms (model call {model_s / max(n, 1) * 1000:.1f} ms "
          f"with the tiny model); with a real model taking {m:g} s per call the share outside "
          f"the model call would be {per_point / (per_point + m):.1%}")  # fmt: skip


if __name__ == "__main__":
    main()

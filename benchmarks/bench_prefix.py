"""Token-level shared prefix of consecutive Offline Probing prompts, old vs new prompt layout.

Run by hand (prints figures, asserts nothing):

    . .venv/bin/activate && HF_HUB_OFFLINE=1 python benchmarks/bench_prefix.py [--seconds 48]

For decision points t = 1, 2, ... of one demo request (T1 "taxi", whole tool catalogue) over a
synthetic stream (1 fps frames, native audio), the prompt at t is rendered with the tiny
Qwen2.5-Omni processor of ``tests/helpers/tiny_qwen.py`` exactly as the ``transformers`` backend sends it
(chat template + media placeholders expanded by the processor) and tokenized. For each pair
(t, t + 1) it measures the longest common prefix of the two token sequences as a share of the
shorter one. That share bounds what automatic prefix caching (vLLM, servers) can reuse. Printed
per prompt version, ``frames_as`` and ``frames.cap_policy``: the mean share for t within the
frame cap (t + 1 < frames.max) and beyond it, and the ratio new / old measured in the same run.
Goal: >= 90 % within the cap for ``v2`` with image frames.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _observation(t: float, settings):
    """Synthetic causal observation at t: frames 0..floor(t) (64x64, distinct), audio [0, t]."""
    import numpy as np

    from interactscope.media import Frame
    from interactscope.media.causal import select_indices
    from interactscope.streaming.protocol.observation import Observation

    n = int(t) + 1
    keep = select_indices(n, settings.frames.max, settings.frames.cap_policy)
    frames = [Frame(k, float(k), np.full((64, 64, 3), k * 7 % 256, np.uint8)) for k in keep]
    audio = np.sin(np.arange(round(t * 16000), dtype=np.float32) * 0.01) * 0.1
    return Observation(t=t, frames=frames, n_frames_available=n, audio=audio, has_audio=True)


def _token_ids(engine, messages) -> list[int]:
    r = engine.render(messages)
    return engine.processor(**engine.processor_inputs(r))["input_ids"][0].tolist()


def _shared(a: list[int], b: list[int]) -> float:
    n = min(len(a), len(b))
    k = next((i for i in range(n) if a[i] != b[i]), n)
    return k / n


def measure(engine, bench, it, version: str, frames_as: str, policy: str, seconds: int):
    """(mean share within the cap, mean share beyond it, mean prompt tokens)."""
    from interactscope.streaming.protocol.prompts import build_messages
    from interactscope.streaming.protocol.requests import request_at
    from interactscope.streaming.settings import Settings

    s = Settings(prompt_version=version, frames={"cap_policy": policy})
    ids = []
    for t in range(1, seconds + 1):
        req = request_at(bench, it, float(t), s, observation=_observation(float(t), s))
        ids.append(_token_ids(engine, build_messages(req, frames_as=frames_as)))
    within, beyond = [], []
    for i in range(len(ids) - 1):
        t_next = i + 2  # prompts at t = i + 1 and i + 2
        (within if t_next + 1 <= s.frames.max else beyond).append(_shared(ids[i], ids[i + 1]))
    mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")  # noqa: E731
    return mean(within), mean(beyond), mean([len(x) for x in ids])


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
    for frames_as in ("image", "video"):
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

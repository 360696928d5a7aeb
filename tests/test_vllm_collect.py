"""``interactscope collect --model <tiny yaml>`` + ``score`` on the demo with a real ``vllm.LLM``
(the vLLM lane; skipped without vllm).

The tiny model configs are the shipped ones (``qwen2.5-omni-7b`` for the Omni thinker,
``qwen3-vl-8b`` layout for Qwen2.5-VL) with the checkpoint swapped for a tiny random folder, CPU
engine arguments and the tiny processors' pixel budget: the shipped layout (prompt v2, frames as
images) runs end to end. Every decision point of the 11 demo interactions (89) is written with no
error, the run is scored completely, the engine start-up is in ``load_s`` and never in a
record's latency, and the prefix cache served part of the prompts.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

if importlib.util.find_spec("vllm") is None:
    pytest.skip(
        "vllm is not installed (the vLLM lane: bash .ci/vllm-lane.sh)", allow_module_level=True
    )

from interactscope.core.resources import bundled_models_dir, demo_benchmark_dir  # noqa: E402
from interactscope.streaming.bench import load_benchmark  # noqa: E402
from interactscope.streaming.protocol.requests import interaction_grid  # noqa: E402
from interactscope.streaming.settings import Settings  # noqa: E402
from tests.helpers.vllm_tiny import save_tiny  # noqa: E402

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
SHIPPED = {"omni": "qwen2.5-omni-7b", "vl": "qwen3-vl-8b"}


def tiny_config(kind: str, checkpoint: Path) -> dict:
    """The shipped config of ``kind``'s family on the tiny checkpoint (CPU-sized)."""
    cfg = yaml.safe_load((bundled_models_dir() / f"{SHIPPED[kind]}.yaml").read_text())
    cfg["checkpoint"] = str(checkpoint)
    cfg["limits"]["max_model_len"] = 8192
    cfg["limits"]["mm_processor_kwargs"] = {"max_pixels": 112 * 112}
    cfg["vllm"]["engine_args"] = {"dtype": "float32", "enforce_eager": True, "seed": 0}
    cfg["generation"]["max_new_tokens"] = 6
    if kind == "vl":  # the VL model cannot hear; the ASR extra is not in the lane's venv
        cfg["settings"]["audio"] = {"mode": "none"}
    return cfg


def _cli(*args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "interactscope"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "interactscope.cli"]
    return subprocess.run(
        [*cmd, *args],
        cwd=REPO,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=1800,
    )


@pytest.mark.parametrize("kind", ["omni", "vl"])
def test_collect_and_score_the_demo(tmp_path, kind) -> None:
    model = tmp_path / f"tiny-{kind}.yaml"
    model.write_text(yaml.safe_dump(tiny_config(kind, save_tiny(kind, tmp_path / "ckpt"))))
    run = tmp_path / "run"
    demo = demo_benchmark_dir()
    r = _cli("collect", "--model", str(model), "--bench", str(demo), "--out", str(run))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]

    bench = load_benchmark(demo)
    settings = Settings()
    want = {(it.id, t) for it in bench.interactions for t in interaction_grid(bench, it, settings)}
    records = [json.loads(x) for x in (run / "responses.jsonl").read_text().splitlines()]
    assert len(want) == 89 == len(records)
    assert {(x["interaction_id"], x["t"]) for x in records} == want
    assert [x for x in records if x.get("error")] == []
    manifest = json.loads((run / "run.json").read_text())
    # the new defaults: v3 (audio segments on the timeline) for the Omni config, v2 for VL
    assert manifest["settings"]["prompt_version"] == {"omni": "v3", "vl": "v2"}[kind]
    assert manifest["adapter"]["frames_as"] == "image"
    t = manifest["summary"]["timings"]
    # start-up is load time: no record's share of a batch carries it
    assert t["load_s"] > max(x["latency_s"] for x in records)
    assert t["prefix_cache_hit_rate"] > 0

    s = _cli("score", str(run), "--judge", "lexical")
    assert s.returncode == 0, s.stdout[-3000:] + s.stderr[-3000:]
    summary = json.loads((run / "scores" / "summary.json").read_text())
    health = summary["health"]
    assert health["infrastructure_errors"] == 0 and health["interactions_without_records"] == 0
    with open(run / "scores" / "interactions.csv", newline="") as f:
        scored = {row["interaction_id"] for row in csv.DictReader(f)}
    assert scored == {it.id for it in bench.interactions}

"""The vLLM engine starts in ``prepare`` (``timings.load_s``), never inside a timed batch
(issue 25 item 1). Runs in the main suite with the recording fake ``vllm`` of
``tests/test_adapters_vllm.py``; ``tests/test_vllm_engine.py`` checks the same on the real engine."""

from __future__ import annotations

import inspect
import json
import time

import pytest

from interactscope.streaming.collect import run_collect
from tests.helpers.fake_vllm import FakeLLM
from tests.helpers.foundation_fixtures import interaction, write_bench
from tests.helpers.vllm_adapter import fake_vllm  # noqa: F401 - the fixture

START_S = 0.4


class SlowStartLLM(FakeLLM):
    """A fake engine whose construction takes ``START_S`` and records who built it."""

    built_in: list[list[str]] = []

    def __init__(self, **kwargs):
        time.sleep(START_S)
        SlowStartLLM.built_in.append([f.function for f in inspect.stack()])
        super().__init__(**kwargs)


def test_engine_start_up_is_load_time_not_model_time(fake_vllm, tmp_path) -> None:  # noqa: F811
    fake_vllm.LLM = SlowStartLLM
    SlowStartLLM.built_in = []
    bench = write_bench(tmp_path / "b", [interaction("a")])  # 7.6 s from q = 0: 9 points
    model = tmp_path / "tiny-vllm.yaml"
    model.write_text(
        json.dumps(
            {
                "backend": "vllm",
                "checkpoint": "Qwen/Qwen2.5-Omni-7B",
                "template": "tokenizer",
                "preflight": {"on_prepare": "off"},  # no preflight: prepare must still start it
            }
        )
    )
    s = run_collect(model=str(model), bench=bench, out=tmp_path / "r", progress=False)
    assert s.written == 9 and s.errors == 0
    (stack,) = SlowStartLLM.built_in  # started once ...
    assert "prepare" in stack and "respond_batch" not in stack  # ... before any batch
    assert s.timings.load_s >= START_S
    records = [json.loads(x) for x in (tmp_path / "r" / "responses.jsonl").read_text().splitlines()]
    # the fake generates instantly: were the start-up in the first batch, its 9 points would
    # share START_S of latency
    assert sum(r["latency_s"] for r in records) < START_S
    assert s.timings.model_s < START_S


@pytest.mark.parametrize(
    ("checkpoint", "with_meta"),
    [
        ("Qwen/Qwen2.5-VL-7B-Instruct", True),  # vLLM's Qwen2.5-VL parser requires metadata
        ("Qwen/Qwen3-VL-8B-Instruct", True),
        ("Qwen/Qwen2.5-Omni-7B", False),  # the Omni thinkers take bare frames + fps
        ("Qwen/Qwen3-Omni-30B-A3B-Instruct", False),
    ],
)
def test_video_metadata_auto_follows_the_model(
    fake_vllm,  # noqa: F811 - the fixture
    monkeypatch,
    tmp_path,
    checkpoint,
    with_meta,  # noqa: F811
) -> None:
    """``video_metadata: auto`` (issue 25 item 2): 3 frames at 0, 1, 2 s go as 4 frames (the
    newest repeated) with indices [0, 1, 2, 2] on the 1 Hz grid, or bare with ``fps`` 1."""
    from tests.helpers.vllm_adapter import make_adapter, make_request

    adapter = make_adapter(monkeypatch, checkpoint=checkpoint, frames_as="video")
    adapter.respond(make_request(tmp_path, 2.0))
    (inp,) = FakeLLM.instances[-1].calls[-1]
    (video,) = inp["multi_modal_data"]["video"]
    if with_meta:
        arr, meta = video
        assert meta["frames_indices"] == [0, 1, 2, 2] and meta["fps"] == 1.0
        assert "fps" not in inp["mm_processor_kwargs"]
    else:
        arr = video
        assert inp["mm_processor_kwargs"]["fps"] == 1.0
    assert arr.shape[0] == 4

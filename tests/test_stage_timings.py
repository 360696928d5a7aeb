"""Per-stage timings in run.json (issue 18 item 8): load apart, decode / process / model /
write seconds, tokens per model second, prefix-cache hit rate."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from interactscope.engines.openai_compat import to_chat_result
from interactscope.engines.vllm_engine import VLLMEngine
from interactscope.streaming.collect import run_collect
from interactscope.streaming.protocol.driver import CollectSummary
from interactscope.streaming.runlog import RunFolder
from interactscope.streaming.schema import StageTimings
from tests.helpers.foundation_fixtures import interaction, write_bench
from tests.helpers.timed import MODEL_S, configs


@pytest.fixture
def timed(tmp_path, monkeypatch):
    return configs(tmp_path, monkeypatch)


def test_derived_figures_worked_by_hand():
    t = StageTimings(
        load_s=3.0,
        collect_s=10.0,
        decode_s=1.0,
        process_s=2.0,
        model_s=5.0,
        write_s=0.5,
        prompt_tokens=100,
        completion_tokens=20,
        cached_tokens=30,
        cached_of_prompt_tokens=60,
    ).derived()
    assert t.other_s == 1.5  # 10 - (1 + 2 + 5 + 0.5)
    assert t.outside_model_share == 0.5  # (10 - 5) / 10: load is not in it
    assert (t.prompt_tokens_per_s, t.completion_tokens_per_s) == (20.0, 4.0)
    assert t.prefix_cache_hit_rate == 0.5
    assert StageTimings().derived().outside_model_share is None
    assert StageTimings().derived().prefix_cache_hit_rate is None
    both = StageTimings.combine([t, t])
    assert (both.load_s, both.collect_s, both.model_s, both.other_s) == (6.0, 20.0, 10.0, 3.0)
    assert (both.outside_model_share, both.prefix_cache_hit_rate) == (0.5, 0.5)
    line = t.line()
    assert "load 3.0 s" in line and "model 5.0" in line and "50%" in line
    assert "prefix cache 50%" in line and "4.0 tok/s out" in line


def _bench(tmp_path):
    return write_bench(tmp_path / "b", [interaction("a")])  # 7.6 s from q = 0: 9 points


def test_run_json_records_stages_apart_from_the_load(tmp_path, timed):
    s = run_collect(model=timed(load_s=0.3), bench=_bench(tmp_path), out=tmp_path / "r",
                    progress=False)  # fmt: skip
    t = s.timings
    assert s.written == 9
    assert t.load_s >= 0.3  # prepare() slept 0.3 s: the model load, counted apart
    assert s.wall_s == pytest.approx(t.load_s + t.collect_s, abs=0.01)
    assert t.model_s == 9 * MODEL_S and s.model_s == 9 * MODEL_S
    assert t.process_s == pytest.approx(0.9)
    assert t.decode_s > 0 and t.write_s > 0  # the clip decoded, every record fsynced
    assert (t.prompt_tokens, t.completion_tokens) == (90, 18)
    assert t.prompt_tokens_per_s == round(90 / (9 * MODEL_S), 2)
    assert t.prefix_cache_hit_rate == 0.4  # 36 cached of 90 prompt tokens
    assert t.outside_model_share == 0.0  # clipped: the reported model seconds exceed the wall
    m = json.loads((tmp_path / "r" / "run.json").read_text())
    assert m["summary"]["timings"] == t.model_dump()
    assert m["invocations"][0]["summary"]["timings"] == t.model_dump()
    assert "load " in s.line() and "prefix cache 40%" in s.line()


def test_without_engine_model_seconds_latency_is_the_model_time(tmp_path, timed):
    s = run_collect(model=timed(no_model_s=True), bench=_bench(tmp_path), out=tmp_path / "r",
                    progress=False)  # fmt: skip
    assert s.timings.model_s == 4.5 and s.model_s == 4.5  # 9 x latency_s 0.5


def test_summary_timings_sum_the_invocations(tmp_path, timed):
    """4 points (t = 0..3) answered, 5 fail; the retry answers the 5: 9 x 50 model seconds."""
    root, run = _bench(tmp_path), tmp_path / "r"
    first = run_collect(model=timed(fail_from=4), bench=root, out=run, progress=False)
    assert first.errors == 5 and first.timings.model_s == 4 * MODEL_S
    second = run_collect(model=timed(), bench=root, out=run, progress=False, retry_errors=True)
    assert second.timings.model_s == 5 * MODEL_S
    total = StageTimings.model_validate(RunFolder(run).manifest.summary["timings"])
    assert total.model_s == 9 * MODEL_S
    assert total.load_s == round(first.timings.load_s + second.timings.load_s, 3)
    assert (total.prompt_tokens, total.cached_tokens) == (90, 36)


def test_collect_summary_dict_holds_the_timings_block():
    d = CollectSummary(timings=StageTimings()).as_dict()
    assert set(d["timings"]) == set(StageTimings.model_fields)
    assert CollectSummary().as_dict()["timings"] is None  # not measured (collect --ray)
    assert "load" not in CollectSummary().line()


# ----------------------------------------------------------------- engines report cache hits
def test_openai_usage_cached_tokens_reach_raw():
    pytest.importorskip("openai")
    from openai.types.chat import ChatCompletion

    body = {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "<SILENT>"}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 3, "total_tokens": 123,
                  "prompt_tokens_details": {"cached_tokens": 96}},
    }  # fmt: skip
    res = to_chat_result(ChatCompletion.model_validate(body), 0.2)
    assert res.raw["cached_tokens"] == 96 and res.prompt_tokens == 120
    del body["usage"]["prompt_tokens_details"]
    assert "cached_tokens" not in to_chat_result(ChatCompletion.model_validate(body), 0.2).raw


def test_vllm_num_cached_tokens_reach_raw():
    comp = SimpleNamespace(text="hi", token_ids=[5, 6], finish_reason="stop")
    out = SimpleNamespace(outputs=[comp], prompt_token_ids=list(range(10)), num_cached_tokens=8)
    res = VLLMEngine.to_result(out, 0.1)
    assert (res.raw["cached_tokens"], res.prompt_tokens, res.completion_tokens) == (8, 10, 2)
    out.num_cached_tokens = None  # vLLM without prefix caching
    assert "cached_tokens" not in VLLMEngine.to_result(out, 0.1).raw


# --------------------------------------------------------- the transformers engine's split
class _Sink:
    def __init__(self):
        self.done, self.records = set(), []

    def append(self, rec):
        self.done.add(rec.key)
        self.records.append(rec)

    def spoken(self, iid):
        return [r for r in self.records if r.interaction_id == iid and not r.silent]


@pytest.mark.slow
@pytest.mark.parametrize("batch_size", [1, 4])
def test_tiny_qwen_splits_processor_from_generate(tmp_path, batch_size):
    """The processor's seconds are no longer in ``model_s``: each record has ``process_s`` and
    ``model_s`` (``generate`` alone) within its latency, and the run's stages sum them."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from interactscope.streaming.bench import load_benchmark
    from interactscope.streaming.protocol.driver import collect
    from interactscope.streaming.settings import Settings
    from tests.helpers.tiny_qwen import tiny_omni
    from tests.helpers.transformers_adapter import _adapter

    settings = Settings()
    ad, _ = _adapter(tiny_omni(), settings, generation={"max_new_tokens": 2, "temperature": 0})
    bench = load_benchmark(_bench(tmp_path))
    sink = _Sink()
    s = collect(bench, ad, sink, settings, bench.interactions, batch_size=batch_size,
                progress=False)  # fmt: skip
    recs = sink.records
    assert len(recs) == 9 and not any(r.error for r in recs)
    for r in recs:
        assert r.process_s > 0 and r.model_s > 0
        if batch_size == 1:  # one chat each: both inside its own latency
            assert r.process_s + r.model_s <= r.latency_s + 2e-4
    t = s.timings
    assert t.model_s == pytest.approx(sum(r.model_s for r in recs), abs=2e-3)
    assert t.process_s == pytest.approx(sum(r.process_s for r in recs), abs=2e-3)
    assert t.collect_s + 2e-3 >= t.decode_s + t.process_s + t.model_s + t.write_s
    assert s.model_s == pytest.approx(t.model_s, abs=2e-3)


def test_openai_adapter_forwards_the_servers_cached_prompt_tokens():
    # the engine reads usage.prompt_tokens_details.cached_tokens into raw; the adapter must pass
    # it on, or run.json's prefix_cache_hit_rate stays null for openai/vllm runs
    from interactscope.engines.base import ChatResult
    from interactscope.streaming.adapters.openai_backend import to_output

    hit = to_output(ChatResult(text="<SILENT>", prompt_tokens=812, raw={"cached_tokens": 768}))
    assert hit.extra["cached_tokens"] == 768
    miss = to_output(ChatResult(text="<SILENT>", prompt_tokens=812, raw={}))
    assert "cached_tokens" not in miss.extra

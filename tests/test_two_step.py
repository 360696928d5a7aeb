"""The cascade's two-step decision (issue 15 item 3): "speak now?" from next-token p(yes), then the
answer only when p(yes) >= ``adapter.speak_threshold``; ``direct`` (default) is unchanged."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from interactscope.engines.base import ChatResult
from interactscope.streaming.adapters.base import AdapterError, DecisionRequest, output_of
from interactscope.streaming.adapters.cascade import CascadeAdapter, speak_probability
from interactscope.streaming.demo import DemoSettings, _cpu_overrides
from interactscope.streaming.protocol.driver import to_record
from interactscope.streaming.protocol.prompts import SPEAK_PROMPTS, render_speak, render_text
from interactscope.streaming.schema import Interaction, VideoRecord
from interactscope.streaming.settings import Settings

ANSWER = "A cyclist just passed on your left."


def _settings(**adapter) -> Settings:
    return Settings(audio={"mode": "asr"}, adapter=adapter)


def _request(settings: Settings, t: float = 5.0) -> DecisionRequest:
    it = Interaction.model_validate(
        {"id": "i1", "video_id": "v", "task": "T2",
         "query": {"time_s": 0.0, "text": "Tell me when a cyclist passes."},
         "targets": [{"id": "k1", "time_s": 5.0}]}
    )  # fmt: skip
    return DecisionRequest(interaction=it, video=VideoRecord(id="v", path="v.mp4"),
                           bench_root=Path("."), t=t, settings=settings)  # fmt: skip


class StubEngine:
    """Fixed next-token probabilities and a fixed answer; counts the calls of each step."""

    def __init__(self, p_yes: float):
        self.p_yes = p_yes
        self.speak_calls: list = []
        self.chat_calls: list = []
        self.max_new_tokens = 48

    def next_token_logprobs(self, messages, candidates):
        self.speak_calls.append((messages, tuple(candidates)))
        lp = {" yes": math.log(self.p_yes), " no": math.log(1 - self.p_yes)}
        raw = {"model_s": 0.01, "cached_tokens": 0}
        return lp, ChatResult(prompt_tokens=120, completion_tokens=0, latency_s=0.02, raw=raw)

    def chat(self, messages, tools=None, **generation):
        self.chat_calls.append(messages)
        return ChatResult(text=ANSWER, prompt_tokens=110, completion_tokens=9, latency_s=0.5,
                          raw={"model_s": 0.4, "cached_tokens": 100})  # fmt: skip

    def describe(self):
        return {"checkpoint": "stub"}


def _adapter(p_yes: float, **adapter) -> tuple[CascadeAdapter, StubEngine, Settings]:
    settings = _settings(**adapter)
    ad = CascadeAdapter("cascade", {"backend": "cascade"}, settings)
    ad.engine = StubEngine(p_yes)
    return ad, ad.engine, settings


def test_speak_yes_generates_the_answer():
    ad, eng, settings = _adapter(0.8, decision="two_step", speak_threshold=0.5)
    req = _request(settings)
    rec = to_record("i1", 5.0, ad.respond(req), settings)
    assert len(eng.speak_calls) == 1 and len(eng.chat_calls) == 1
    assert eng.chat_calls[0] == render_text(req)  # step 2 is today's full prompt
    assert eng.speak_calls[0][0] == render_speak(req)
    assert not rec.silent and rec.text == ANSWER
    assert rec.speak_p == pytest.approx(0.8) and rec.completion_tokens == 9
    assert rec.latency_s == pytest.approx(0.52)  # both steps


def test_speak_no_is_silent_without_step_two():
    ad, eng, settings = _adapter(0.2, decision="two_step")
    rec = to_record("i1", 5.0, ad.respond(_request(settings)), settings)
    assert len(eng.speak_calls) == 1 and eng.chat_calls == []
    assert rec.silent and rec.text == "<SILENT>" and rec.tool_calls == []
    assert rec.speak_p == pytest.approx(0.2) and rec.completion_tokens == 0
    assert rec.prompt_tokens == 120


def test_threshold_is_applied_and_recorded():
    ad, eng, settings = _adapter(0.8, decision="two_step", speak_threshold=0.9)
    assert to_record("i1", 5.0, ad.respond(_request(settings)), settings).silent
    assert eng.chat_calls == []
    d = ad.describe()
    assert d["decision"] == "two_step" and d["speak_threshold"] == 0.9
    assert d["speak_prompt"] in SPEAK_PROMPTS


def test_direct_default_records_are_unchanged():
    ad, eng, settings = _adapter(0.2)
    req = _request(settings)
    rec = to_record("i1", 5.0, ad.respond(req), settings)
    # the code path before the strategy existed: engine.chat(render_text) -> output_of
    old = StubEngine(0.2).chat(render_text(req))
    before = to_record("i1", 5.0, output_of(old, transcript_chars=0), settings)
    assert rec.model_dump_json() == before.model_dump_json()
    assert "speak_p" not in rec.model_dump() and eng.speak_calls == []
    assert not {"decision", "speak_threshold"} & set(ad.describe())


def test_probability_normalised_over_yes_and_no_only():
    # p(" yes") = 0.3, p(" no") = 0.1, the rest elsewhere -> 0.3 / (0.3 + 0.1) = 0.75
    assert speak_probability({" yes": math.log(0.3), " no": math.log(0.1)}) == pytest.approx(0.75)
    # every variant counts: (0.2 + 0.1) / (0.2 + 0.1 + 0.05 + 0.05)
    lp = {" yes": math.log(0.2), "Yes": math.log(0.1), "no": math.log(0.05), "No": math.log(0.05)}
    assert speak_probability(lp) == pytest.approx(0.75)
    assert speak_probability({}) == 0.0


def test_engine_next_token_logprobs_from_logits():
    torch = pytest.importorskip("torch")
    from interactscope.engines.causal_lm import CausalLMEngine, CausalLMOptions

    vocab = [" yes", "yes", "Yes", " no", "no", "No", "other"]
    probs = torch.tensor([0.3, 0.0, 0.0, 0.1, 0.0, 0.0, 0.6]) + 1e-12

    class Tok:
        chat_template = "stub"
        eos_token_id = pad_token_id = 6

        def apply_chat_template(self, messages, **kw):
            return {"input_ids": torch.tensor([[6] * 20])}

        def encode(self, text, add_special_tokens=False):
            return [vocab.index(text)]

    class Model:
        device = "cpu"

        def __call__(self, input_ids, **kw):
            class Out:
                logits = torch.log(probs).expand(1, input_ids.shape[1], len(vocab))

            return Out()

    eng = CausalLMEngine(CausalLMOptions(prefix_cache=False), model=Model(), tokenizer=Tok())
    lp, res = eng.next_token_logprobs([{"role": "user", "content": "x"}], vocab[:6])
    assert math.exp(lp[" yes"]) == pytest.approx(0.3) and math.exp(lp[" no"]) == pytest.approx(0.1)
    assert res.prompt_tokens == 20 and res.completion_tokens == 0
    assert speak_probability(lp) == pytest.approx(0.75)


def test_decision_typo_is_refused_with_the_valid_values():
    with pytest.raises(AdapterError, match="'direct' or 'two_step'"):
        CascadeAdapter("cascade", {"backend": "cascade"}, _settings(decision="two-step"))
    with pytest.raises(AdapterError, match="unknown option 'decison'.*decision"):
        CascadeAdapter("cascade", {"backend": "cascade"}, _settings(decison="two_step"))
    with pytest.raises(AdapterError, match="speak_threshold"):
        CascadeAdapter("cascade", {"backend": "cascade"}, _settings(speak_threshold=1.5))


def test_speak_prompt_appends_the_question():
    req = _request(_settings())
    msgs = render_speak(req)
    assert msgs[:-1] == render_text(req)
    assert msgs[-1] == {"role": "user", "content": SPEAK_PROMPTS["speak-v1"]}
    with pytest.raises(KeyError, match="speak-v1"):
        render_speak(req, "speak-v9")


def test_demo_runs_cascade_two_step_only():
    s = DemoSettings()
    assert s.cpu_decision == "two_step"
    assert _cpu_overrides("cascade", s) == {"adapter.decision": "two_step"}
    assert _cpu_overrides("blind-fire", s) is None

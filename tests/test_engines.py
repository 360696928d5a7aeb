"""The engine layer: typed options (unknown keys refused), messages with arrays, and each backend
answering ``chat``: an OpenAI-compatible stub server on loopback (image + native tool), the vLLM
engine up to the engine call (fake module), the tiny random-weight Qwen thinker through the
transformers engine."""

from __future__ import annotations

import base64
import io
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from interactscope.engines import (
    AudioPart,
    EngineError,
    ImagePart,
    Message,
    TextPart,
    as_messages,
    load_engine,
)
from interactscope.engines.config import merge_options
from interactscope.streaming.schema import ToolCall, ToolSpec
from tests.helpers.stub_http import send_json

LIGHTS = ToolSpec(
    name="lights_on",
    description="Switch the lights on in a room.",
    parameters={"type": "object", "properties": {"room": {"type": "string"}}},
)


# --------------------------------------------------------------------------- options


def test_unknown_option_is_one_line_naming_the_key_and_the_valid_ones() -> None:
    with pytest.raises(EngineError) as err:
        load_engine({"backend": "openai", "modle": "gpt-4o"})
    msg = str(err.value)
    assert "\n" not in msg
    assert "unknown option 'modle'" in msg
    assert "model" in msg.split("valid options:")[1].split(", ")
    # a nested group names its own keys
    with pytest.raises(EngineError, match=r"'generation.max_tokens'.*max_new_tokens"):
        load_engine({"backend": "openai", "generation": {"max_tokens": 5}})
    with pytest.raises(EngineError, match="backend 'nope' has no engine"):
        load_engine({"backend": "nope"})


def test_set_adapter_typo_is_refused_for_blind_fire() -> None:
    """``--set adapter.dleay_s=5`` used to be accepted and the default 3 s delay used."""
    from interactscope.streaming.adapters.base import AdapterError
    from interactscope.streaming.adapters.registry import build_adapter, load_model_config
    from interactscope.streaming.collect import resolve_settings

    name, cfg = load_model_config("blind-fire")
    with pytest.raises(AdapterError) as err:
        build_adapter(name, cfg, resolve_settings(cfg, {"adapter.dleay_s": 5}))
    assert "'dleay_s'" in str(err.value) and "delay_s" in str(err.value)
    ok = build_adapter(name, cfg, resolve_settings(cfg, {"adapter.delay_s": 5}))
    assert ok.delay_s == 5.0


def test_merge_options_precedence() -> None:
    cfg = {
        "backend": "vllm",
        "notes": "meta keys are not options",
        "max_model_len": 1000,
        "limits": {"max_model_len": 2000, "limit_mm_per_prompt": {"image": 4}},
        "vllm": {"limit_mm_per_prompt": {"image": 9}, "engine_args": {"dtype": "half"}},
        "generation": {"max_new_tokens": 64, "temperature": 0},
    }
    opts = merge_options(cfg, {"generation": {"temperature": 0.5}})
    # top level beats limits:, limits: beats vllm:; generation is merged key by key
    assert opts == {
        "max_model_len": 1000,
        "limit_mm_per_prompt": {"image": 4},
        "engine_args": {"dtype": "half"},
        "generation": {"max_new_tokens": 64, "temperature": 0.5},
    }


def test_every_shipped_model_config_parses() -> None:
    from interactscope.engines import engine_class
    from interactscope.engines.config import parse_options
    from interactscope.streaming.adapters.registry import available_models, load_model_config

    for name in available_models():
        _, cfg = load_model_config(name)
        # baselines have no engine; the streaming models' own loops are checked in test_panel.py
        if cfg["backend"] in (
            "silent", "oracle", "blind-fire", "change-detector", "livecc", "mmduet2", "videollm-online"
        ):  # fmt: skip
            continue
        parse_options(engine_class(cfg["backend"]).Options, merge_options(cfg), name)


# --------------------------------------------------------------------------- messages


def test_messages_from_prompt_dicts_and_bad_arrays() -> None:
    img = np.zeros((4, 6, 3), np.uint8)
    wave = np.zeros(160, np.float64)
    (m,) = as_messages(
        [
            {
                "role": "user",
                "content": [
                    {"type": "image", "image": img, "pts_s": 2.0},
                    {"type": "audio", "audio": wave, "sampling_rate": 8000},
                    {"type": "text", "text": "hi"},
                ],
            }
        ]
    )
    image, audio, text = m.content
    assert isinstance(image, ImagePart) and image.image is img and image.pts_s == 2.0
    assert isinstance(audio, AudioPart) and audio.sample_rate == 8000
    assert audio.audio.dtype == np.float32 and audio.audio.shape == (160,)
    assert isinstance(text, TextPart) and m.text() == "hi"
    with pytest.raises(EngineError, match=r"message 0: .*\(H, W, 3\)"):
        as_messages(
            [{"role": "user", "content": [{"type": "image", "image": np.zeros((2, 2, 5))}]}]
        )
    with pytest.raises(EngineError, match="part of type 'pdf'"):
        as_messages([{"role": "user", "content": [{"type": "pdf"}]}])


# --------------------------------------------------------------------------- openai


class _Stub:
    """OpenAI-compatible server on 127.0.0.1 that records bodies and answers ``reply(body)``."""

    def __init__(self, reply):
        self.bodies: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.bodies.append(body)
                send_json(self, reply(body))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def _completion(content: str | None, calls: list[dict] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 321, "completion_tokens": 7, "total_tokens": 328},
    }


@pytest.fixture
def stub(monkeypatch):
    pytest.importorskip("openai")

    def reply(body):
        if "tools" not in body:
            return _completion(body["messages"][-1]["content"])
        calls = [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "lights_on", "arguments": '{"room": "hall"}'},
            },
            {"id": "call_b", "type": "function", "function": {"name": "x", "arguments": "{oops"}},
        ]
        return _completion(None, calls)

    s = _Stub(reply)
    monkeypatch.setenv("INTERACTSCOPE_TEST_ENGINE_URL", s.url)
    yield s
    s.server.shutdown()


def test_openai_engine_chat_with_an_image_and_a_tool(stub) -> None:
    from PIL import Image

    engine = load_engine(
        {
            "backend": "openai",
            "model": "stub-model",
            "base_url_env": "INTERACTSCOPE_TEST_ENGINE_URL",
            "api_key_optional": True,
            "max_retries": 0,
            "generation": {"max_new_tokens": 20},
        }
    )
    frame = np.zeros((24, 40, 3), np.uint8)
    frame[:, :20] = 255  # left half white
    res = engine.chat(
        [
            Message(role="system", content="You control a smart home."),
            Message(role="user", content=[TextPart(text="Lights on?"), ImagePart(image=frame)]),
        ],
        tools=[LIGHTS],
    )
    # the reply: native calls parsed into name + arguments dict; a broken one is reported
    assert res.tool_calls == [
        ToolCall(name="lights_on", arguments={"room": "hall"}),
        ToolCall(name="x", arguments={"_unparsed": "{oops"}),  # kept, never dropped silently
    ]
    assert res.tool_call_ids == ["call_a", "call_b"]
    assert res.tool_call_errors == ["tool 'x': arguments string is not JSON"]
    assert (res.prompt_tokens, res.completion_tokens) == (321, 7)
    assert res.text == "" and res.latency_s is not None
    # the request: system as a string, the frame as a JPEG data URL of the same size, tools
    (body,) = stub.bodies
    assert body["model"] == "stub-model" and body["max_tokens"] == 20 and body["temperature"] == 0
    assert body["messages"][0] == {"role": "system", "content": "You control a smart home."}
    text, image = body["messages"][1]["content"]
    assert text == {"type": "text", "text": "Lights on?"}
    head, b64 = image["image_url"]["url"].split(",", 1)
    assert head == "data:image/jpeg;base64"
    decoded = np.asarray(Image.open(io.BytesIO(base64.b64decode(b64))))
    assert decoded.shape == (24, 40, 3)
    assert decoded[:, :18].min() > 200 and decoded[:, 22:].max() < 50
    assert body["tools"][0]["function"]["name"] == "lights_on"
    assert body["tools"][0]["function"]["parameters"] == LIGHTS.parameters


def test_openai_engine_plain_chat_batch_and_tool_turns(stub) -> None:
    engine = load_engine(
        {
            "backend": "openai",
            "model": "m",
            "base_url_env": "INTERACTSCOPE_TEST_ENGINE_URL",
            "api_key_optional": True,
            "max_concurrency": 3,
        }
    )
    convs = [[Message(role="user", content=f"echo {i}")] for i in range(5)]
    outs = engine.chat_batch(convs, temperature=0.5)
    assert [o.text for o in outs] == [f"echo {i}" for i in range(5)]
    assert all(b["temperature"] == 0.5 for b in stub.bodies)
    # an assistant turn with native calls and the tool's answer go back in the wire format
    history = [
        Message(role="user", content="Lights on in the hall."),
        Message(
            role="assistant",
            tool_calls=[ToolCall(name="lights_on", arguments={"room": "hall"})],
            tool_call_ids=["call_a"],
        ),  # fmt: skip
        Message(role="tool", content='{"ok": true}', tool_call_id="call_a"),
    ]
    engine.chat(history)
    sent = stub.bodies[-1]["messages"]
    assert sent[1]["tool_calls"][0]["id"] == "call_a"
    assert json.loads(sent[1]["tool_calls"][0]["function"]["arguments"]) == {"room": "hall"}
    assert sent[2] == {"role": "tool", "content": '{"ok": true}', "tool_call_id": "call_a"}
    with pytest.raises(EngineError, match="unknown generation option"):
        engine.chat(convs[0], max_tokens=3)


def test_openai_engine_transport_error_is_an_engine_error(monkeypatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.setenv("INTERACTSCOPE_TEST_ENGINE_URL", "http://127.0.0.1:9/v1")  # refused
    engine = load_engine(
        {
            "backend": "openai",
            "model": "m",
            "base_url_env": "INTERACTSCOPE_TEST_ENGINE_URL",
            "api_key_optional": True,
            "max_retries": 0,
            "timeout_s": 2,
        }
    )
    (out,) = engine.chat_batch([[Message(role="user", content="hi")]])
    assert isinstance(out, EngineError) and "Connection" in str(out)


# --------------------------------------------------------------------------- vllm (fake module)


def test_vllm_engine_batches_conversations_into_one_generate_call(monkeypatch) -> None:
    import types

    from tests.helpers.fake_vllm import IMAGE, FakeLLM, FakeSamplingParams

    mod = types.ModuleType("vllm")
    mod.LLM, mod.SamplingParams, mod.__version__ = FakeLLM, FakeSamplingParams, "0.0.fake"
    FakeLLM.instances = []
    monkeypatch.setitem(sys.modules, "vllm", mod)
    engine = load_engine(
        {"backend": "vllm", "checkpoint": "Qwen/Qwen2.5-Omni-7B", "template": "tokenizer"}
    )
    img = np.full((28, 28, 3), 7, np.uint8)
    wave = np.zeros(8000, np.float32)
    convs = [
        [Message(role="user", content=[ImagePart(image=img), TextPart(text="one")])],
        [Message(role="user", content=[AudioPart(audio=wave), TextPart(text="two")])],
    ]
    outs = engine.chat_batch(convs, max_new_tokens=5)
    llm = FakeLLM.instances[-1]
    assert [len(c) for c in llm.calls] == [2]
    first, second = llm.calls[0]
    assert first["prompt"].count(IMAGE) == 1 and first["multi_modal_data"]["image"][0] is img
    ((w, sr),) = second["multi_modal_data"]["audio"]
    assert np.shares_memory(w, wave) and w.shape == (8000,) and sr == 16000
    assert llm.sampling[0].kwargs == {"temperature": 0.0, "max_tokens": 5}
    assert [o.text for o in outs] == ["<SILENT>", "<SILENT>"]
    assert outs[0].prompt_tokens == len(first["prompt"].split())


# --------------------------------------------------------------------------- transformers


@pytest.fixture(scope="module")
def tiny_omni_folder(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    pytest.importorskip("transformers")
    from tests.helpers.tiny_qwen import tiny_omni

    model, processor = tiny_omni()
    folder = tmp_path_factory.mktemp("tiny-omni")
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_tiny_qwen_thinker_through_load_engine(tiny_omni_folder) -> None:
    """The real loading path (config -> thinker class -> processor) and one chat with a frame and
    1.5 s of audio: the frame goes as a 1-frame video padded to 2 (temporal patch 2), all
    1.5 × 16000 samples reach the processor, and the prompt holds 25 audio tokens per second."""
    engine = load_engine(
        {
            "backend": "transformers",
            "checkpoint": str(tiny_omni_folder),
            "processor_kwargs": {"min_pixels": 56 * 56, "max_pixels": 112 * 112},
            "generation": {"max_new_tokens": 3},
        }
    )
    frame = np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)
    wave = (0.1 * np.sin(np.arange(24000) / 5.0)).astype(np.float32)
    messages = [
        Message(role="system", content="Answer <SILENT> or speak."),
        Message(
            role="user",
            content=[ImagePart(image=frame, pts_s=0.0), AudioPart(audio=wave), TextPart(text="t")],
        ),
    ]
    res = engine.chat(messages)
    assert engine.family == "omni" and engine.model_type() == "qwen2_5_omni_thinker"
    assert res.raw["n_frames"] == 1 and res.raw["n_frames_sent"] == 2
    assert res.raw["audio_samples"] == 24000
    assert 1 <= res.completion_tokens <= 3 and isinstance(res.text, str)
    tok = engine.processor.tokenizer
    ids = engine.processor(**engine.processor_inputs(engine.render(messages)))["input_ids"][0]
    n_audio = ids.tolist().count(tok.convert_tokens_to_ids("<|AUDIO|>"))
    assert abs(n_audio - 1.5 * 25) <= 1
    assert res.prompt_tokens == len(ids)


@pytest.mark.slow
def test_transformers_engine_errors(tmp_path) -> None:
    pytest.importorskip("transformers")
    with pytest.raises(EngineError, match="no 'checkpoint'"):
        load_engine({"backend": "transformers"}).chat([Message(role="user", content="x")])
    with pytest.raises(EngineError, match="huggingface-cli download"):
        load_engine({"backend": "transformers", "checkpoint": str(tmp_path / "none")}).chat(
            [Message(role="user", content="x")]
        )


def test_text_model_refuses_media_parts() -> None:
    from interactscope.engines.causal_lm import CausalLMEngine, CausalLMOptions

    engine = CausalLMEngine(CausalLMOptions(), model=object(), tokenizer=object())
    msg = Message(role="user", content=[ImagePart(image=np.zeros((2, 2, 3), np.uint8))])
    with pytest.raises(EngineError, match="text only: message 0"):
        engine.chat([msg])

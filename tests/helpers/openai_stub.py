"""A stub OpenAI-compatible server and an adapter pointed at it."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

from interactscope.streaming.adapters.base import DecisionRequest  # noqa: E402
from interactscope.streaming.adapters.openai_backend import (  # noqa: E402
    OpenAIAdapter,
)
from interactscope.streaming.schema import Interaction, ToolSpec, VideoRecord  # noqa: E402
from interactscope.streaming.settings import Settings  # noqa: E402
from tests.helpers.stub_http import send_json

KEY_ENV = "INTERACTSCOPE_TEST_OPENAI_KEY"


URL_ENV = "INTERACTSCOPE_TEST_OPENAI_URL"


SECRET = "sk-test-not-a-real-key-123"


TOOLS = [
    ToolSpec(
        name="lights_on",
        description="Switch the lights on in a room.",
        parameters={
            "type": "object",
            "properties": {"room": {"type": "string"}},
            "required": ["room"],
        },
    ),
    ToolSpec(name="call_taxi", description="Order a taxi."),
]


class Stub:
    """Scripted OpenAI-compatible server. ``responder(body) -> (status, json, headers)``;
    ``GET /models`` answers ``models_responder()`` (default: the ids in ``models``)."""

    def __init__(self) -> None:
        self.models: list[str] = ["stub-model"]
        self.models_responder = lambda: (
            200,
            {"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]},
            {},
        )
        self.gets: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.delay_s = 0.0
        self.lock = threading.Lock()
        self.responder = lambda body: (200, completion("<SILENT>"), {})
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def _send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
                send_json(self, payload, status, headers)

            def do_GET(self) -> None:  # noqa: N802 - http.server API
                stub.gets.append(self.path)
                if self.path.rstrip("/").endswith("/models"):
                    self._send(*stub.models_responder())
                else:
                    self._send(404, {"error": {"message": "not found"}}, {})

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                with stub.lock:
                    stub.requests.append(body)
                    stub.headers.append({k.lower(): v for k, v in self.headers.items()})
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                try:
                    if stub.delay_s:
                        time.sleep(stub.delay_s)
                    status, payload, headers = stub.responder(body)
                finally:
                    with stub.lock:
                        stub.in_flight -= 1
                self._send(status, payload, headers)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def completion(
    text: str | None,
    tool_calls: list[dict] | None = None,
    prompt_tokens: int | None = 11,
    finish_reason: str = "stop",
) -> dict:
    """A chat-completions answer; ``prompt_tokens=None`` leaves ``usage`` out."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    out: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }
    if prompt_tokens is not None:
        out["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 3,
            "total_tokens": prompt_tokens + 3,
        }
    return out


def make_request(tmp_path: Path, t: float = 2.0, tools: bool = True) -> DecisionRequest:
    interaction = Interaction(
        id="it-1",
        video_id="v1",
        task="T1" if tools else "T2",
        query={"time_s": 1.0, "text": "Switch the hall lights on when the door opens."},
        targets=[{"id": "k1", "time_s": 3.0, "tools": ["lights_on"] if tools else None}],
    )
    video = VideoRecord(id="v1", path="v1.mp4", duration_s=5.0, has_audio=True)
    return DecisionRequest(
        interaction=interaction,
        video=video,
        bench_root=tmp_path,
        t=t,
        settings=Settings(),
        tools=list(TOOLS) if tools else [],
    )


def fake_messages(t: float, audio_s: float | None = None) -> list[dict[str, Any]]:
    """build_messages()-shaped messages: system text, a frame, optional audio, user text."""
    rng = np.random.default_rng(0)
    parts: list[dict[str, Any]] = [
        {"type": "image", "image": rng.integers(0, 255, (48, 64, 3), dtype=np.uint8), "pts_s": 1.0}
    ]
    if audio_s is not None:
        wave = (0.1 * np.sin(np.arange(round(audio_s * 16000)) / 10.0)).astype(np.float32)
        parts.append({"type": "audio", "audio": wave, "sampling_rate": 16000})
    parts.append({"type": "text", "text": f"Stream time: {t:.1f} s. Answer <SILENT> or act."})
    return [
        {"role": "system", "content": [{"type": "text", "text": "You are a helpful assistant."}]},
        {"role": "user", "content": parts},
    ]


def make_adapter(settings: Settings | None = None, **cfg: Any) -> OpenAIAdapter:
    config = {
        "backend": "openai",
        "model": "stub-model",
        "api_key_env": KEY_ENV,
        "base_url_env": URL_ENV,
        "max_retries": 0,
        "timeout_s": 10,
        "check_audio": False,
    }
    config.update(cfg)
    return OpenAIAdapter("stub", config, settings or Settings())

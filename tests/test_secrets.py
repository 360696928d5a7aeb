"""API keys never leak: the one redaction helper, its log filter, and a server that echoes the
key back (error body and headers) driven through ``collect -v`` on the sequential path and the
LLM judge; the key appears in no output and no file of the run. Servers on 127.0.0.1 only."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from interactscope.core.secrets import (
    MASK,
    RedactingFilter,
    install_log_redaction,
    redact,
    register_key_env,
)

SECRET = "sk-echo-test-0123456789abcdef"
KEY_ENV = "INTERACTSCOPE_TEST_ECHO_KEY"  # a name only the model config makes secret
DEMO = Path(__file__).resolve().parents[1] / "annotations" / "demo"


# --------------------------------------------------------------------------- the helper


def test_redact_masks_configured_common_and_token_looking_values(monkeypatch) -> None:
    monkeypatch.setenv("MY_PROVIDER_KEY_VAR", "plainvalue-1234567")
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-secret-value")
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-abcdefgh-999")
    monkeypatch.setenv("PLACEHOLDER_API_KEY", "EMPTY")
    text = (
        "plainvalue-1234567 gemini-secret-value tok-abcdefgh-999 EMPTY "
        "Authorization: Bearer abc.DEF-123_xyz key sk-proj-AbCdEf012345 AIzaSyA1234567890abcdefghijk"
    )
    assert "plainvalue-1234567" in redact(text)  # not configured yet
    register_key_env("MY_PROVIDER_KEY_VAR")
    out = redact(text)
    for secret in (
        "plainvalue-1234567",
        "gemini-secret-value",
        "tok-abcdefgh-999",
        "abc.DEF-123_xyz",
        "sk-proj-AbCdEf012345",
        "AIzaSyA1234567890abcdefghijk",
    ):
        assert secret not in out
    assert "EMPTY" in out and "Bearer " + MASK in out
    assert redact(ValueError("x sk-abcdefghijkl")) == "x " + MASK
    assert redact("only-here-1234", extra_envs=["NOT_SET_ANYWHERE"]) == "only-here-1234"


def test_filter_masks_message_args_and_chained_tracebacks(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("interactscope.test_secrets")
    logger.addHandler(handler)
    logger.propagate = False
    install_log_redaction(logger)
    install_log_redaction(logger)
    assert sum(isinstance(f, RedactingFilter) for f in handler.filters) == 1
    try:
        try:
            raise RuntimeError(f"server said: bad key {SECRET}")
        except RuntimeError as inner:
            raise ValueError("wrapped") from inner
    except ValueError:
        logger.exception("failed with %s", SECRET)
    logger.removeHandler(handler)
    text = stream.getvalue()
    assert "server said: bad key" in text and "failed with" in text
    assert SECRET not in text


# --------------------------------------------------------------------------- an echoing server


class EchoServer:
    """Serves ``GET /models`` (echoing the key in a header) and answers every chat request
    with HTTP 401 whose body and headers repeat the caller's key."""

    def __init__(self, model: str) -> None:
        self.posts = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: Any) -> None:
                key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                data = json.dumps(payload).replace("{KEY}", key).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("X-Echo-Authorization", f"Bearer {key}")
                self.send_header("X-Echo-Key", key)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server API
                self._send(200, {"object": "list", "data": [{"id": model, "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.posts += 1
                message = "Incorrect API key provided: {KEY}. You sent: Bearer {KEY}"
                self._send(401, {"error": {"message": message, "type": "invalid_request_error"}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _cli(args: list[Any], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "interactscope.cli", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def _assert_nowhere(secret: str, run: subprocess.CompletedProcess, folder: Path) -> None:
    assert secret not in run.stdout
    assert secret not in run.stderr
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert files
    for p in files:
        assert secret.encode() not in p.read_bytes(), p


@pytest.mark.slow
def test_echoed_key_appears_nowhere_collect_verbose_sequential(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    server = EchoServer("echo-model")
    try:
        cfg = tmp_path / "echo.yaml"
        cfg.write_text(
            json.dumps(
                {
                    "backend": "openai",
                    "model": "echo-model",
                    "base_url_env": "INTERACTSCOPE_TEST_ECHO_URL",
                    "api_key_env": KEY_ENV,
                    "max_retries": 0,
                    "check_audio": False,
                }
            )
        )
        env = {**os.environ, KEY_ENV: SECRET, "INTERACTSCOPE_TEST_ECHO_URL": server.url}
        out = tmp_path / "run"
        args = ["collect", "-v", "-m", cfg, "-b", DEMO, "-o", out, "--limit", "1"]
        run = _cli([*args, "--no-progress", "--set", "history.n=1", "--set", "scene=none"], env)
    finally:
        server.close()
    assert server.posts > 0, run.stderr[-2000:]
    assert "Traceback" in run.stderr and "401" in run.stderr  # the -v debug traceback ran
    records = [json.loads(x) for x in (out / "responses.jsonl").read_text().splitlines()]
    assert records and all(r["error"] and "401" in r["error"] for r in records)
    _assert_nowhere(SECRET, run, out)


@pytest.mark.slow
def test_echoed_key_appears_nowhere_llm_judge(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    out = tmp_path / "run"
    base = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    made = _cli(["collect", "-m", "oracle", "-b", DEMO, "-o", out, "--limit", "5"], base)
    assert made.returncode == 0, made.stderr[-2000:]
    server = EchoServer("judge-model")
    try:
        env = {**base, "OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": server.url}
        run = _cli(["score", out, "--judge", "openai:judge-model", "-v"], env)
    finally:
        server.close()
    assert server.posts > 0, run.stderr[-2000:]
    _assert_nowhere(SECRET, run, out)

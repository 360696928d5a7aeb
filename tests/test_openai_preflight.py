"""Backend ``openai`` before a run: ``GET /models`` fails fast naming the URL when the server is
unreachable, has no such model or no ``/models`` at all (``check_models=false`` skips it); a
per-record connection error names the URL too. Stub servers on 127.0.0.1 only."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("openai")

from interactscope.streaming.adapters.base import AdapterError  # noqa: E402
from tests.helpers.openai_stub import (  # noqa: E402
    KEY_ENV,
    SECRET,
    URL_ENV,
    Stub,
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


def _closed_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_unreachable_server_fails_before_the_run(monkeypatch) -> None:
    url = _closed_url()
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.setenv(URL_ENV, url)
    t0 = time.perf_counter()
    with pytest.raises(AdapterError) as err:
        make_adapter(max_retries=4).prepare(bench=None)
    msg = str(err.value)
    assert "cannot reach the server at" in msg and url in msg and "\n" not in msg
    assert "check_models=false" in msg and SECRET not in msg
    assert time.perf_counter() - t0 < 15  # one quick attempt, not the run's retry budget


def test_server_without_the_model_names_what_it_serves(stub: Stub) -> None:
    stub.models = ["other-a", "other-b"]
    with pytest.raises(AdapterError) as err:
        make_adapter().prepare(bench=None)
    msg = str(err.value)
    assert "does not serve model 'stub-model'" in msg and stub.url in msg
    assert "other-a, other-b" in msg and "--set adapter.model=" in msg
    stub.models = ["models/stub-model"]  # Gemini-style ids match too
    make_adapter().prepare(bench=None)


def test_server_without_models_endpoint_can_be_skipped(stub: Stub) -> None:
    stub.models_responder = lambda: (404, {"error": {"message": "no such route"}}, {})
    with pytest.raises(AdapterError, match=r"has no GET /models \(HTTP 404\).*check_models=false"):
        make_adapter().prepare(bench=None)
    n = len(stub.gets)
    make_adapter(check_models=False).prepare(bench=None)
    assert len(stub.gets) == n  # not asked
    assert make_adapter(check_models=False).describe()["check_models"] is False


def test_per_record_connection_error_names_the_url(monkeypatch, tmp_path) -> None:
    url = _closed_url()
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.setenv(URL_ENV, url)
    adapter = make_adapter()
    monkeypatch.setattr(adapter, "_build", lambda r: fake_messages(r.t))
    (out,) = adapter.respond_batch([make_request(tmp_path, 2.0)])
    assert isinstance(out, AdapterError)
    assert "APIConnectionError" in str(out) and url in str(out) and "t=2s" in str(out)


@pytest.mark.slow
def test_cli_collect_against_a_wrong_model_is_one_line(stub: Stub, tmp_path: Path) -> None:
    stub.models = ["served-name"]
    cfg = tmp_path / "stub.yaml"
    cfg.write_text(
        json.dumps(
            {
                "backend": "openai",
                "model": "stub-model",
                "base_url_env": URL_ENV,
                "api_key_env": KEY_ENV,
                "max_retries": 0,
            }
        )
    )
    demo = Path(__file__).resolve().parents[1] / "annotations" / "demo"
    out = tmp_path / "run"
    args = ["collect", "-m", cfg, "-b", demo, "-o", out, "--limit", "1", "--no-progress"]
    run = subprocess.run(
        [sys.executable, "-m", "interactscope.cli", *map(str, args)],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
    )
    assert run.returncode == 1, run.stderr
    assert "Traceback" not in run.stderr
    assert "does not serve model 'stub-model'" in run.stderr and "served-name" in run.stderr
    assert not out.exists()  # nothing half-made left behind
    assert not stub.requests  # no chat request was sent


@pytest.mark.slow  # ~7 s: a real collect subprocess
def test_collect_prints_no_request_log_without_verbose(stub: Stub, tmp_path: Path) -> None:
    """The installed openai client logs each request (``INFO httpx2: HTTP Request: ...`` with
    openai 3.x, ``httpx`` before); without ``-v`` no such line reaches stderr, with it they do."""
    cfg = tmp_path / "stub.yaml"
    cfg.write_text(json.dumps({"backend": "openai", "model": "stub-model", "base_url_env": URL_ENV,
                               "api_key_env": KEY_ENV, "max_retries": 0}))  # fmt: skip
    demo = Path(__file__).resolve().parents[1] / "annotations" / "demo"

    def collect(out: str, *extra: str) -> subprocess.CompletedProcess:
        args = ["collect", "-m", cfg, "-b", demo, "-o", tmp_path / out, "--limit", "1",
                "--no-progress", *extra]  # fmt: skip
        return subprocess.run([sys.executable, "-m", "interactscope.cli", *map(str, args)],
                              capture_output=True, text=True, env=dict(os.environ), timeout=300)  # fmt: skip

    quiet = collect("quiet")
    assert quiet.returncode == 0, quiet.stderr
    assert stub.requests  # chat requests were made
    assert "HTTP Request" not in quiet.stderr, quiet.stderr
    loud = collect("loud", "-v")
    assert "HTTP Request" in loud.stderr  # the line exists: the quiet run really hid it

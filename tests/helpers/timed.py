"""Stub adapters with known per-point engine figures (backend 'timed'): the stage timings of a
run can be worked out by hand (tests/test_stage_timings.py, tests/test_resume_timings.py)."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from interactscope.core import registry as plugins
from interactscope.streaming.adapters.base import Adapter, AdapterOutput
from interactscope.streaming.protocol.types import FatalAdapterError

MODEL_S = 50.0  # far above any real wall time: the outside share clips to 0


def configs(tmp_path: Path, monkeypatch, adapter: str = "Timed") -> Callable[..., str]:
    """Register ``adapter`` (a class here) as backend 'timed' for the test; returns
    ``make(**cfg)``: the path of its model config with ``cfg`` (rewritten each call, one path)."""
    monkeypatch.setitem(plugins.table("backends"), "timed", f"tests.helpers.timed:{adapter}")

    def make(**cfg) -> str:
        p = tmp_path / "timed.yaml"
        p.write_text(json.dumps({"backend": "timed", **cfg}))
        return str(p)

    return make


class Timed(Adapter):
    """Reports engine stage facts on every answer: ``model_s`` (unless ``no_model_s``; then
    ``latency_s`` 0.5 is the model's), ``process_s`` 0.1, ``cached_tokens`` 4 of 10 prompt
    tokens, 2 completion tokens; ``prepare`` sleeps ``load_s``; fails from ``fail_from`` s.
    It takes media, so the driver decodes the clip's causal observations."""

    backend = "timed"
    free_options = True  # reads load_s, fail_from, no_model_s, stop_at, stop
    needs_media = True

    def prepare(self, bench):
        time.sleep(float(self.config.get("load_s", 0)))

    def respond(self, request):
        if request.t >= float(self.config.get("fail_from", 1e9)):
            raise ConnectionError("server hung up")
        extra = {"process_s": 0.1, "cached_tokens": 4}
        if not self.config.get("no_model_s"):
            extra["model_s"] = MODEL_S
        return AdapterOutput(
            text="<SILENT>", latency_s=0.5, prompt_tokens=10, completion_tokens=2, extra=extra
        )


class Stopping(Timed):
    """:class:`Timed` that stops the collect at ``stop_at`` s: ``stop`` = ``interrupt``
    (Ctrl-C), ``fatal`` (an error that ends the run), ``kill`` (SIGKILL) or ``exit`` (a
    SystemExit, which ``collect`` does not account: the run folder is left as a kill leaves it,
    without a child process)."""

    def respond(self, request):
        if request.t >= float(self.config.get("stop_at", 1e9)):
            how = self.config["stop"]
            if how == "interrupt":
                raise KeyboardInterrupt
            if how == "fatal":
                raise FatalAdapterError("the server drops the audio")
            if how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            raise SystemExit(3)
        return super().respond(request)

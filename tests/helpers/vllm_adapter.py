"""The vLLM adapter over the fake vllm module: requests, frames and adapters for its tests."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from interactscope.streaming.adapters.base import DecisionRequest
from interactscope.streaming.schema import Interaction, VideoRecord
from interactscope.streaming.settings import Settings
from tests.helpers.fake_vllm import (
    FakeLLM,
    FakeSamplingParams,
)

SR = 16000
"""Audio sample rate of the fake requests (Hz)."""


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch):
    mod = types.ModuleType("vllm")
    mod.LLM = FakeLLM
    mod.SamplingParams = FakeSamplingParams
    mod.__version__ = "0.0.fake"
    FakeLLM.instances = []
    monkeypatch.setitem(sys.modules, "vllm", mod)
    return mod


def make_request(tmp_path: Path, t: float, interaction_id: str = "it-1") -> DecisionRequest:
    interaction = Interaction(
        id=interaction_id,
        video_id="v1",
        task="T2",
        query={"time_s": 1.0, "text": "Tell me when a car passes."},
        targets=[{"id": "k1", "time_s": 4.0, "reference": "a car passes"}],
    )
    video = VideoRecord(id="v1", path="v1.mp4", duration_s=8.0, has_audio=True)
    return DecisionRequest(
        interaction=interaction, video=video, bench_root=tmp_path, t=t, settings=Settings()
    )


def frame(k: int, h: int = 56, w: int = 84) -> np.ndarray:
    return np.full((h, w, 3), k * 10 % 255, dtype=np.uint8)


def fake_messages(request: DecisionRequest, h: int = 56, w: int = 84) -> list[dict[str, Any]]:
    """build_messages()-shaped: frames at seconds 0..floor(t), audio [0, t], the stream time."""
    t = request.t
    parts: list[dict[str, Any]] = []
    for k in range(int(np.floor(t)) + 1):
        parts.append({"type": "text", "text": f"[{k:.1f} s]"})
        parts.append({"type": "image", "image": frame(k, h, w), "pts_s": float(k)})
    wave = np.linspace(-0.5, 0.5, round(t * SR), dtype=np.float32)
    parts.append({"type": "audio", "audio": wave, "sampling_rate": SR})
    parts.append(
        {
            "type": "text",
            "text": f"Current stream time: {t:.1f} s. {request.interaction.query.text}",
        }
    )
    return [
        {
            "role": "system",
            "content": [
                {"type": "text", "text": "Stay silent unless needed: answer exactly <SILENT>."}
            ],
        },
        {"role": "user", "content": parts},
    ]


def make_adapter(monkeypatch, settings: Settings | None = None, h=56, w=84, **cfg: Any):
    from interactscope.streaming.adapters.vllm_backend import VLLMAdapter

    config: dict[str, Any] = {
        "backend": "vllm",
        "checkpoint": "Qwen/Qwen2.5-Omni-7B",
        "template": "tokenizer",
        "max_model_len": 32768,
        "generation": {"max_new_tokens": 64},
    }
    config.update(cfg)
    adapter = VLLMAdapter("qwen-test", config, settings or Settings())
    monkeypatch.setattr(adapter, "_messages", lambda r: fake_messages(r, h, w))
    return adapter

"""The transformers adapter over a tiny random-weight Qwen model, and requests on the city clip."""

from __future__ import annotations

from pathlib import Path

from interactscope.streaming.adapters.base import DecisionRequest  # noqa: E402
from interactscope.streaming.adapters.transformers_backend import TransformersAdapter  # noqa: E402
from interactscope.streaming.schema import Interaction, ToolSpec, VideoRecord  # noqa: E402
from interactscope.streaming.settings import Settings  # noqa: E402

GEN = {
    "generation": {"max_new_tokens": 3, "temperature": 0},
    "processor_kwargs": {"min_pixels": 56 * 56, "max_pixels": 112 * 112},
}


class SpyProcessor:
    """Records every processor call's keyword arguments; delegates everything else."""

    def __init__(self, inner):
        self.inner = inner
        self.calls: list[dict] = []

    def __call__(self, **kw):
        self.calls.append(kw)
        return self.inner(**kw)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _adapter(omni_or_vl, settings=None, **cfg):
    model, proc = omni_or_vl
    spy = SpyProcessor(proc)
    ad = TransformersAdapter("tiny", {**GEN, **cfg}, settings or Settings(), model=model,
                             processor=spy)  # fmt: skip
    ad.prepare(None)
    return ad, spy


IT = Interaction.model_validate(
    {
        "id": "speech",
        "video_id": "city",
        "task": "T1",
        "query": {"time_s": 0.0, "text": "Start a voice memo as soon as someone starts talking."},
        "targets": [{"id": "k1", "time_s": 2.2, "tools": ["start_voice_memo"]}],
    }
)


VIDEO = VideoRecord(id="city", path="media/city.mp4")


TOOLS = [ToolSpec(name="start_voice_memo", description="Start a voice memo.")]


def _request(t, obs, settings=None, it=IT):
    return DecisionRequest(interaction=it, video=VIDEO, bench_root=Path("."), t=t,
                           settings=settings or Settings(), tools=TOOLS,
                           observation=obs)  # fmt: skip

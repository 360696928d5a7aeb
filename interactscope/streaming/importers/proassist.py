"""ProAssist dialogs (``processed_data/<dataset>/generated_dialogs/*_filtered.json``) ->
T8-C interactions.

Each video object holds ``conversations``, one per simulated user type; each turn has ``role``
(user | assistant), ``time`` (seconds on the video's clock) and ``content``. No dialog data ships
with this project (no licence permits it); the format follows the peer's code.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from interactscope.streaming.importers.common import (
    Conversion,
    Dropped,
    SourceItem,
    ignored_extras,
    parse_each,
)
from interactscope.streaming.schema import Interaction, Query, Target


class Settings(BaseModel):
    """``split``: ``dialog`` — one interaction per dialog, query = the first user turn, targets =
    every later assistant turn (later user turns are dropped); ``user_turn`` — one interaction per
    user turn, targets = the assistant turns up to the next user turn.
    ``min_score``: keep dialogs whose ``auto_quality_eval.final_score`` ≥ this (None keeps all;
    the peer's evaluation keeps ≥ 5)."""

    model_config = ConfigDict(extra="forbid")
    split: Literal["dialog", "user_turn"] = "dialog"
    min_score: float | None = None


class Turn(SourceItem):
    role: str
    time: float = Field(ge=0)
    content: str


class Dialog(SourceItem):
    user_type: str
    conversation: list[Turn]


class VideoAnns(SourceItem):
    dataset: str = "unknown"


class VideoDialogs(SourceItem):
    video_uid: str
    conversations: list[Dialog]
    parsed_video_anns: VideoAnns = Field(default_factory=VideoAnns)


IGNORED = {
    "inferred_goal": "LLM-inferred goal; the query is the user's own turn",
    "inferred_knowledge": "LLM-inferred task knowledge; no field for it",
    "video_labels": "LLM video labels",
    "labels": "turn intentions (initiative/responsive); all assistant turns become targets",
    "progress": "context summaries for long dialogs",
}


def _score(d: Dialog) -> float | None:
    q = (d.model_extra or {}).get("auto_quality_eval")
    if isinstance(q, dict) and isinstance(q.get("final_score"), (int, float)):
        try:
            return float(q["final_score"])
        except OverflowError:  # an integer beyond float range: compare as +-inf
            return math.inf if q["final_score"] > 0 else -math.inf
    return None


def _segments(turns: list[Turn], split: str) -> list[tuple[Turn, list[Turn]]]:
    """(user turn, its assistant turns) pairs in time order; assistant turns before the first user
    turn have no query and are left out."""
    ordered = sorted(turns, key=lambda t: t.time)
    users = [i for i, t in enumerate(ordered) if t.role == "user"]
    if not users:
        return []
    if split == "dialog":
        first = users[0]
        return [(ordered[first], [t for t in ordered[first + 1 :] if t.role == "assistant"])]
    out = []
    for n, i in enumerate(users):
        end = users[n + 1] if n + 1 < len(users) else len(ordered)
        out.append((ordered[i], [t for t in ordered[i + 1 : end] if t.role == "assistant"]))
    return out


def convert(raw: list, settings: Settings) -> Conversion:
    """Dialogs -> T8-C interactions ``<dataset>-<video_uid>-<user_type>`` (``-u<k>`` appended per
    user turn with ``split=user_turn``); targets are assistant turns (reference = content).

    Dropped: items that do not parse, dialogs under ``min_score``, dialogs without a user turn,
    segments without an assistant turn."""
    conv = Conversion()
    videos: list[VideoDialogs] = []
    for _, v in parse_each(conv, VideoDialogs, raw):
        videos.append(v)
        dataset = v.parsed_video_anns.dataset
        for d in v.conversations:
            base = f"{dataset}-{v.video_uid}-{d.user_type}"
            score = _score(d)
            if settings.min_score is not None and (score is None or score < settings.min_score):
                conv.dropped.append(
                    Dropped(source_id=base, reason=f"final_score {score} < {settings.min_score}")
                )
                continue
            segs = _segments(d.conversation, settings.split)
            if not segs:
                conv.dropped.append(Dropped(source_id=base, reason="no user turn"))
                continue
            for k, (user, assistant) in enumerate(segs):
                iid = base if settings.split == "dialog" else f"{base}-u{k}"
                if not assistant:
                    conv.dropped.append(Dropped(source_id=iid, reason="no assistant turn"))
                    continue
                conv.add_video(v.video_uid, f"{dataset}/{v.video_uid}.mp4", cluster=v.video_uid)
                conv.interactions.append(
                    Interaction(
                        id=iid,
                        video_id=v.video_uid,
                        task="T8-C",
                        query=Query(time_s=user.time, text=user.content),
                        targets=[
                            Target(id=f"t{j}", reference=a.content, time_s=a.time)
                            for j, a in enumerate(assistant)
                        ],
                    )
                )
                conv.source_ids[iid] = base
    conv.fields_ignored = dict(IGNORED)
    for name in ignored_extras(videos):
        conv.fields_ignored.setdefault(name, "not part of the mapping")
    return conv

"""Shared records of the importers: what a converter returns and what ``import-report.json`` holds.

A converter turns a peer benchmark's annotation file (a JSON array) into this project's
``Interaction`` and ``VideoRecord`` models. Video paths in a ``Conversion`` are relative to the
videos folder; the writer (``interactscope.streaming.importers.write``) prefixes them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from interactscope.core.errors import InteractScopeError
from interactscope.core.files import FileReadError, read_data
from interactscope.streaming.schema import Interaction, VideoRecord


class ImporterError(InteractScopeError, ValueError):
    """The source file cannot be read or a setting is invalid; the message is one line naming
    the file or setting and the fix."""


class SourceItem(BaseModel):
    """Base of the typed source records: unknown fields are kept (and counted as ignored)."""

    model_config = ConfigDict(extra="allow")


class Dropped(BaseModel):
    """One source item (or part of one) that was not converted."""

    source_id: str
    reason: str


class Conversion(BaseModel):
    """What a converter returns. ``source_ids`` maps each interaction id to the id of the item it
    came from in the peer's file (its ``id`` field, or its position when the file has no ids)."""

    interactions: list[Interaction] = Field(default_factory=list)
    videos: list[VideoRecord] = Field(default_factory=list)
    source_ids: dict[str, str] = Field(default_factory=dict)
    dropped: list[Dropped] = Field(default_factory=list)
    fields_ignored: dict[str, str] = Field(default_factory=dict)
    """Source field name -> why it has no place in the interaction format."""
    notes: list[str] = Field(default_factory=list)

    def add_video(self, video_id: str, file: str, cluster: str | None = None) -> None:
        """Register a video once (by id); ``file`` is relative to the videos folder."""
        if all(v.id != video_id for v in self.videos):
            self.videos.append(VideoRecord(id=video_id, path=file, cluster=cluster))


class ValidationSummary(BaseModel):
    """The outcome of validating the written benchmark."""

    ok: bool
    """True when the only problems are missing video files."""
    summary: str
    videos_missing: list[str] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)


class ImportReport(BaseModel):
    """``import-report.json`` written beside ``benchmark.json``."""

    format: str
    source: str
    videos_dir: str
    settings: dict[str, Any]
    items_read: int
    interactions: int
    targets: int
    per_task: dict[str, int]
    dropped: list[Dropped]
    dropped_by_reason: dict[str, int]
    fields_ignored: dict[str, str]
    source_ids: dict[str, str]
    notes: list[str]
    validation: ValidationSummary


def read_json_array(src: str | Path) -> list[Any]:
    """The JSON array in ``src`` (read by :func:`interactscope.core.files.read_data`). Raises
    ImporterError (one line) when the file cannot be read or parsed, or is not an array."""
    p = Path(src)
    try:
        data = read_data(p, "json")
    except FileReadError as exc:
        raise ImporterError(f"{exc} (give the peer's annotation JSON file)") from None
    if not isinstance(data, list):
        raise ImporterError(f"{p}: expected a JSON array of items, got {type(data).__name__}")
    return data


def parse_item(model: type[SourceItem], raw: Any, source_id: str) -> SourceItem | Dropped:
    """Validate one source item; a ``Dropped`` naming the first bad field when it does not fit."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        e = exc.errors()[0]
        where = ".".join(str(x) for x in e["loc"]) or "<item>"
        return Dropped(source_id=source_id, reason=f"field '{where}': {e['msg']}")


def parse_each(
    conv: Conversion, model: type[SourceItem], raw: list, source_id=lambda pos: f"position {pos}"
) -> Iterator[tuple[int, Any]]:
    """(position, item) of every entry of ``raw`` that parses as ``model`` (:func:`parse_item`,
    source id ``source_id(position)``); an entry that does not is dropped on ``conv``, in order."""
    for pos, obj in enumerate(raw):
        item = parse_item(model, obj, source_id(pos))
        if isinstance(item, Dropped):
            conv.dropped.append(item)
            continue
        yield pos, item


def hms_to_s(text: str) -> int:
    """``"HH:MM:SS"`` / ``"H:MM:SS"`` / ``"MM:SS"`` -> whole seconds, as StreamingBench computes
    them (``sum(int(x) * 60**i for i, x in enumerate(reversed(ts.split(":"))))``).
    Raises ValueError on other text."""
    parts = text.strip().split(":")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a H:MM:SS time: {text!r}")
    return sum(int(x) * 60**i for i, x in enumerate(reversed(parts)))


def stem(path: str) -> str:
    """File path without its extension and leading ``./`` (``./videos/a.mp4`` -> ``videos/a``)."""
    p = path[2:] if path.startswith("./") else path
    return p.rsplit(".", 1)[0] if "." in Path(p).name else p


def count_tasks(interactions: list[Interaction]) -> dict[str, int]:
    """Interactions per task, sorted by task name."""
    return dict(sorted(Counter(it.task for it in interactions).items()))


def ignored_extras(items: list[SourceItem]) -> list[str]:
    """Field names present in the source items that their model does not declare."""
    names: set[str] = set()
    for it in items:
        names.update((it.model_extra or {}).keys())
    return sorted(names)

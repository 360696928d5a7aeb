"""Importing episode logs: the reference runner's JSON list and this project's episode records
(JSON lines of :class:`~interactscope.egobench.records.EpisodeRecord`)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from interactscope.core.files import FileReadError, parse_json, parse_text, read_bytes
from interactscope.egobench.data import EgoBenchError
from interactscope.egobench.records import AgentLog, EpisodeRecord, ToolCall

_MODE = re.compile(r"_(easy|hard|static)(?:_|\.|$)")


def _call(raw: Any, where: str, accept_arguments: bool) -> tuple[ToolCall, str | None]:
    if not isinstance(raw, dict):
        return ToolCall(name=""), f"{where}: a call is not an object"
    name = raw.get("tool_name") or raw.get("name")
    problem = None if name else f"{where}: call has no tool_name/name"
    if "parameters" in raw:
        args = raw["parameters"]
    elif accept_arguments and "arguments" in raw:
        args = raw["arguments"]
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except (ValueError, RecursionError):
                problem = problem or f"{where}: arguments are not valid JSON"
                args = {}
    else:
        args = {}
        problem = problem or f"{where}: call has no parameters"
    if not isinstance(args, dict):
        problem = problem or f"{where}: parameters are not an object"
        args = {}
    return ToolCall(name=str(name or ""), arguments=args), problem


def from_reference_entry(
    entry: dict[str, Any], task_id: int, accept_arguments: bool = True
) -> AgentLog:
    """One reference-runner task entry (``tool_calls: [{turn, calls: [...], results}]`` or the
    older ``{turn, call, result}``) as an :class:`AgentLog`; malformed parts are listed."""
    calls: list[ToolCall] = []
    malformed: list[str] = []
    turns = entry.get("tool_calls", [])
    if not isinstance(turns, list):
        return AgentLog(task_id=task_id, malformed=["tool_calls is not a list"])
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict):
            malformed.append(f"tool_calls[{i}] is not an object")
            continue
        if "calls" in turn:
            if not isinstance(turn["calls"], list):
                malformed.append(f"tool_calls[{i}].calls is not a list")
                continue
            raws = [(f"tool_calls[{i}].calls[{j}]", c) for j, c in enumerate(turn["calls"])]
        elif "call" in turn:
            raws = [(f"tool_calls[{i}].call", turn["call"])]
        else:
            malformed.append(f"tool_calls[{i}] has neither calls nor call")
            continue
        for where, raw in raws:
            call, problem = _call(raw, where, accept_arguments)
            calls.append(call)
            if problem:
                malformed.append(problem)
    return AgentLog(task_id=task_id, calls=calls, malformed=malformed)


def from_episode(rec: EpisodeRecord) -> AgentLog:
    """An episode record as an :class:`AgentLog` (every executed call, in order)."""
    return AgentLog(
        task_id=rec.task_id,
        calls=[c.call for c in rec.calls],
        malformed=[c.malformed for c in rec.calls if c.malformed],
        mode=rec.mode,
    )


def load_log(path: str | Path, accept_arguments: bool = True) -> tuple[list[AgentLog], str | None]:
    """Read a log file: a JSON list of reference-runner entries (task id from ``scenario_id`` or
    ``task_id``, else 1-based position; ``null`` placeholders skipped) or JSON lines of episode
    records. Returns the logs and the mode named in the file name (``retail1_easy.json``) or
    in the records.

    Raises:
        EgoBenchError: missing file, invalid JSON, or neither format (one line naming the file)."""
    path = Path(path)
    try:
        text = parse_text(read_bytes(path), path)
    except FileReadError as exc:
        raise EgoBenchError(str(exc)) from None
    m = _MODE.search(path.name)
    mode = m[1] if m else None
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            raw = parse_json(text, path)
        except FileReadError as exc:
            raise EgoBenchError(str(exc)) from None
        logs = []
        for i, entry in enumerate(raw):
            if entry is None:
                continue
            if not isinstance(entry, dict):
                raise EgoBenchError(
                    f"{path}: entry {i} is not an object; a reference log is a "
                    "JSON list of per-task objects with tool_calls"
                )
            tid = entry.get("scenario_id", entry.get("task_id", i + 1))
            logs.append(from_reference_entry(entry, int(tid), accept_arguments))
        return logs, mode
    if stripped.startswith("{"):
        logs = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            if n == 1 and '"format"' not in line:
                raise EgoBenchError(
                    f"{path}: not a list: a reference-runner log is a JSON list of "
                    "per-task entries; episode records are JSON lines with "
                    '"format": "interactscope.egobench.episode/1"'
                )
            try:
                rec = EpisodeRecord.model_validate_json(line)
            except ValidationError as exc:
                first = exc.errors()[0]
                field = ".".join(str(x) for x in first["loc"])
                raise EgoBenchError(
                    f"{path}: line {n}: not an episode record ({field}: "
                    f"{first['msg']}); expected a JSON list (reference runner "
                    "log) or JSON lines of episode records"
                ) from None
            logs.append(from_episode(rec))
            mode = mode or rec.mode
        return logs, mode
    raise EgoBenchError(
        f"{path}: not a log: expected a JSON list of per-task entries "
        "(reference runner) or JSON lines of episode records"
    )


def log_format(path: str | Path) -> str:
    """``reference`` (a JSON list, the official runner's) or ``episodes`` (JSON lines of episode
    records), from the file's first non-blank character; ``reference`` when unreadable (the
    loader then names the problem)."""
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(4096).lstrip()
    except OSError:
        return "reference"
    return "episodes" if head.startswith("{") else "reference"

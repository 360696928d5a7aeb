"""Loading EgoBench variants from a data folder, and the data checks of ``ego validate``.

A data folder holds ``tasks/<variant>.json``, ``db/<variant>.json`` (else
``db/<scenario>.json``) and ``tools/<scenario>_tools.json``; the package ships one
(:func:`package_data_dir`)."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from interactscope.core.errors import InteractScopeError
from interactscope.core.files import FileReadError, read_data
from interactscope.egobench.dates import parse_today
from interactscope.egobench.records import SCENARIOS, Task, ToolCall, ToolSpec, Variant

_USER = re.compile(r"user\s*id\s*(?:is|:)?\s*[:(]?\s*([A-Za-z][\w.-]*\d)", re.IGNORECASE)


class EgoBenchError(InteractScopeError, ValueError):
    """Bad EgoBench input; the message is one line naming the file (and task/field) and the fix."""


class DataProblem(BaseModel):
    """One data problem found by :func:`check_variant`."""

    file: str
    task_id: int | None = None
    field: str | None = None
    message: str

    def line(self) -> str:
        where = self.file + (f": task {self.task_id}" if self.task_id is not None else "")
        return f"{where}: {self.field + ': ' if self.field else ''}{self.message}"


def package_data_dir() -> Path:
    """The data folder shipped inside the package (real EgoBench subset + our seeds)."""
    return Path(str(resources.files("interactscope.egobench") / "data"))


def scenario_of(variant: str) -> str:
    """``retail6`` -> ``retail``; EgoBenchError for a name that is no scenario + number."""
    m = re.fullmatch(r"([a-z]+)(\d*)", variant)
    if not m or m[1] not in SCENARIOS:
        raise EgoBenchError(
            f"unknown variant {variant!r}: a variant is a scenario ({', '.join(SCENARIOS)}) "
            "followed by a number, e.g. retail1"
        )
    return m[1]


DATA_FOLDER = "--data must point at a folder with tasks/<variant>.json, db/ and tools/"


def list_variants(data_dir: str | Path) -> list[str]:
    """Variant names with a task file in ``data_dir/tasks``, sorted.

    Raises:
        EgoBenchError: ``data_dir`` does not exist (the message names the bundled folder's
            variants), or holds no ``tasks/`` folder."""
    if not Path(data_dir).exists():
        bundled = sorted(p.stem for p in (package_data_dir() / "tasks").glob("*.json"))
        raise EgoBenchError(
            f"{data_dir}: no such data folder; {DATA_FOLDER} (without --data: the bundled "
            f"data, variants {', '.join(bundled)})"
        )
    d = Path(data_dir) / "tasks"
    if not d.is_dir():
        raise EgoBenchError(f"{d}: no tasks folder; {DATA_FOLDER}")
    return sorted(p.stem for p in d.glob("*.json"))


def read_json(path: Path) -> Any:
    """Parsed JSON (:func:`interactscope.core.files.read_data`); EgoBenchError (one line: the
    file, the line and the fix) when it is missing, unreadable or invalid."""
    try:
        return read_data(path, "json")
    except FileReadError as exc:
        raise EgoBenchError(str(exc)) from None


def parse_tools(raw: Any, path: Path) -> list[ToolSpec]:
    """Schema entries, wrapped (``{"type": "function", "function": {...}}``) or flat, with the
    name under ``tool_name`` or ``name``."""
    if not isinstance(raw, list):
        raise EgoBenchError(f"{path}: a tool schema must be a JSON list of tool entries")
    out = []
    for i, entry in enumerate(raw):
        f = entry.get("function", entry) if isinstance(entry, dict) else None
        name = (f or {}).get("tool_name") or (f or {}).get("name")
        if not name:
            raise EgoBenchError(f"{path}: entry {i} has no tool_name/name")
        params = f.get("parameters") or {"type": "object", "properties": {}}
        out.append(ToolSpec(name=name, description=f.get("description", ""), parameters=params))
    return out


def parse_call(raw: Any) -> ToolCall:
    """``{tool_name|name, parameters|arguments}`` -> ToolCall (missing parts become empty)."""
    if not isinstance(raw, dict):
        return ToolCall(name="", arguments={})
    args = raw.get("parameters", raw.get("arguments", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except (ValueError, RecursionError):  # not JSON, too deep, an over-long integer
            args = {}
    return ToolCall(
        name=str(raw.get("tool_name") or raw.get("name") or ""),
        arguments=args if isinstance(args, dict) else {},
    )


def _task(raw: dict[str, Any], index: int, path: Path) -> Task:
    tid = raw.get("task_id", raw.get("scenario_id", index + 1))
    instruction = raw.get("Instruction") or raw.get("instruction") or ""
    try:
        today, phrase = parse_today(instruction)
    except ValueError:
        today, phrase = None, None
    m = _USER.search(instruction)
    value = raw.get("value") or []
    return Task(
        task_id=int(tid),
        instruction=instruction,
        analysis=raw.get("analysis"),
        ground_truth=[parse_call(c) for c in raw.get("ground_truth") or []],
        image_path=raw.get("image_path"),
        image_description=raw.get("image_description"),
        key=raw.get("key"),
        value=value if isinstance(value, list) else [value],
        today=today,
        today_text=phrase,
        user_id=m[1] if m else None,
    )


def variant_files(data_dir: str | Path, name: str) -> dict[str, Path]:
    """Paths of the task, database and tool files of a variant (database: variant's own file,
    else the scenario's)."""
    d = Path(data_dir)
    scenario = scenario_of(name)
    db = d / "db" / f"{name}.json"
    if not db.exists():
        db = d / "db" / f"{scenario}.json"
    return {
        "tasks": d / "tasks" / f"{name}.json",
        "db": db,
        "tools": d / "tools" / f"{scenario}_tools.json",
    }


def load_variant(data_dir: str | Path, name: str, *, require_db: bool = True) -> Variant:
    """Read one variant into typed records.

    Args:
        data_dir: a data folder (``tasks/``, ``db/``, ``tools/``).
        name: the variant, e.g. ``retail6``.

    Raises:
        EgoBenchError: no such data folder, unknown variant (the folder's variants listed),
            missing file, invalid JSON or wrong top-level shape (one line naming the file).
            ``require_db=False`` loads a variant whose database file is absent with an empty
            seed (for the data checks)."""
    files = variant_files(data_dir, name)
    if not files["tasks"].exists():
        known = ", ".join(list_variants(data_dir)) or "none (no tasks/*.json)"
        raise EgoBenchError(
            f"{files['tasks']}: unknown variant {name!r}; the variants in {data_dir}: {known}"
        )
    raw_tasks = read_json(files["tasks"])
    if not isinstance(raw_tasks, list) or not all(isinstance(t, dict) for t in raw_tasks):
        raise EgoBenchError(f"{files['tasks']}: a task file must be a JSON list of task objects")
    seed = read_json(files["db"]) if require_db or files["db"].exists() else {"_missing": True}
    if not isinstance(seed, dict):
        raise EgoBenchError(f"{files['db']}: a seed database must be a JSON object")
    tools = parse_tools(read_json(files["tools"]), files["tools"])
    tasks = [_task(t, i, files["tasks"]) for i, t in enumerate(raw_tasks)]
    return Variant(
        name=name,
        scenario=scenario_of(name),
        tasks=tasks,
        tools=tools,
        seed=seed,
        seed_is_ours=bool(seed.get("_interactscope_seed") or seed.get("_missing")),
        files={k: str(v) for k, v in files.items()},
    )

"""Data checks of ``interactscope ego validate``: every problem at once, each with file, task id
and field (docs/egobench.md, "Data checks")."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError

from interactscope.egobench.data import (
    DataProblem,
    EgoBenchError,
    load_variant,
    package_data_dir,
    read_json,
    scenario_of,
    variant_files,
)
from interactscope.egobench.env import _validator
from interactscope.egobench.matching import MERGE_NAME_KEYS
from interactscope.egobench.records import Variant
from interactscope.egobench.scenarios import SCENARIO_DEFS

_STRAY = re.compile(r"^(\s*\n|\s*Results:)")


def _rel(path: str | Path, data_dir: Path) -> str:
    try:
        return str(Path(path).relative_to(data_dir))
    except ValueError:
        return str(path)


def _schema_problems(v: Variant, f: str) -> list[DataProblem]:
    out = []
    for spec in v.tools:
        for prop, sch in (spec.parameters.get("properties") or {}).items():
            for e in (sch.get("enum") or []) + ((sch.get("items") or {}).get("enum") or []):
                if isinstance(e, str) and not re.search(r"\w", e):
                    out.append(
                        DataProblem(
                            file=f,
                            field=f"{spec.name}.{prop}",
                            message=f"enum holds the stray value {e!r}",
                        )
                    )
    return out


def _seed_problems(v: Variant, f: str) -> list[DataProblem]:
    out: list[DataProblem] = []
    if v.scenario != "retail" or v.seed_is_ours:
        return out
    names = {str(p.get("name", "")).lower() for p in v.seed.get("products", [])}
    for cart in v.seed.get("user_carts", []):
        uid = cart.get("user_id")
        if "items" not in cart:
            out.append(
                DataProblem(file=f, field=f"user_carts[{uid}]", message="cart has no 'items' key")
            )
        for item in cart.get("items", []):
            n = str(item.get("product_name", "")).lower()
            if n not in names:
                out.append(
                    DataProblem(
                        file=f,
                        field=f"user_carts[{uid}].items",
                        message=f"product {n!r} is not in the catalogue",
                    )
                )
    return out


def _task_problems(v: Variant, raw: list[dict[str, Any]], f: str) -> list[DataProblem]:
    out: list[DataProblem] = []
    specs = {t.name: t for t in v.tools}
    sdef = SCENARIO_DEFS[v.scenario]
    tool_file = _rel(v.files["tools"], Path(v.files["tasks"]).parent.parent)
    ids = Counter(t.task_id for t in v.tasks)
    for tid, n in ids.items():
        if n > 1:
            out.append(
                DataProblem(file=f, task_id=tid, field="task_id", message=f"id used {n} times")
            )
    names = None
    if not v.seed_is_ours and v.scenario in ("retail", "restaurant"):
        table = v.seed.get("products", v.seed.get("dishes", []))
        known = {str(x.get("name", "")).lower() for x in table}
        known |= {str(x.get("name", "")).lower() for x in v.seed.get("set_meals", [])}
        names = lambda q: q.lower() in known  # noqa: E731
    return out + _per_task(v, raw, f, specs, sdef, tool_file, names)


def _per_task(v, raw, f, specs, sdef, tool_file, names) -> list[DataProblem]:
    out: list[DataProblem] = []
    for task, rt in zip(v.tasks, raw, strict=True):
        tid = task.task_id

        def p(field: str, msg: str, tid: int = tid, sink: list[DataProblem] = out) -> None:
            sink.append(DataProblem(file=f, task_id=tid, field=field, message=msg))

        for fld in ("key", "value"):
            if fld not in rt:
                p(fld, f"field '{fld}' is absent")
        for fld in ("Instruction", "analysis"):
            if isinstance(rt.get(fld), str) and _STRAY.match(rt[fld]):
                p(fld, "text starts with a stray prefix (newline or 'Results:')")
        if "today is" in task.instruction.lower() and task.today is None:
            p("Instruction", "names a 'today' this project cannot parse")
        seen: Counter[str] = Counter()
        gt_users = set()
        for i, call in enumerate(task.ground_truth):
            fld = f"ground_truth[{i}]"
            seen[json.dumps([call.name, call.arguments], sort_keys=True)] += 1
            uid = call.arguments.get("user_id")
            if uid is not None:
                gt_users.add(uid)
                if isinstance(uid, str) and not uid.strip():
                    p(f"{fld}.parameters.user_id", f"{call.name}: empty user_id")
            if call.name not in specs:
                p(f"{fld}.tool_name", f"tool {call.name!r} is not in {tool_file}")
                continue
            spec = specs[call.name]
            extra = sorted(set(call.arguments) - spec.declared)
            if extra:
                p(f"{fld}.parameters", f"{call.name}: undeclared parameter(s) {', '.join(extra)}")
            args = {k: a for k, a in call.arguments.items() if k in spec.declared}
            schema = {"type": "object", **spec.parameters}
            errs = sorted(
                _validator(json.dumps(schema, sort_keys=True)).iter_errors(args),
                key=lambda e: list(e.absolute_path),
            )
            for e in errs:
                where = ".".join(str(x) for x in e.absolute_path)
                p(
                    f"{fld}.parameters{'.' + where if where else ''}",
                    f"{call.name}: fails the schema: {e.message}",
                )
            if names is not None:
                for k in sdef.name_keys:
                    val = call.arguments.get(k)
                    if isinstance(val, str) and not names(val):
                        p(f"{fld}.parameters.{k}", f"{val!r} matches no catalogue entry")
                for lst in (a for a in call.arguments.values() if isinstance(a, list)):
                    for item in (x for x in lst if isinstance(x, dict)):
                        for k in sdef.name_keys:
                            val = item.get(k)
                            if isinstance(val, str) and not names(val):
                                p(f"{fld}.parameters", f"{val!r} matches no catalogue entry")
            for pname, lst in call.arguments.items():
                if isinstance(lst, list):
                    listed = Counter(
                        str(x[k]).strip().lower()
                        for x in lst
                        if isinstance(x, dict)
                        for k in [next((k for k in MERGE_NAME_KEYS if x.get(k) is not None), None)]
                        if k is not None
                    )
                    for nm, n in sorted(listed.items()):
                        if n > 1:
                            p(f"{fld}.parameters.{pname}", f"{call.name} lists {nm!r} {n} times")
        for key, n in seen.items():
            if n > 1:
                p("ground_truth", f"the same call {json.loads(key)[0]} appears {n} times")
        if task.user_id and gt_users and task.user_id not in gt_users:
            p(
                "ground_truth.user_id",
                f"GT user id {sorted(gt_users)} differs from the Instruction's {task.user_id!r}",
            )
        out += _net_zero(task, f)
    return out


def _net_zero(task, f: str) -> list[DataProblem]:
    """An add and a later remove of the same action: the net change is nil."""
    adds = []
    for c in task.ground_truth:
        if c.name.startswith("add_to_") and c.name.endswith("action_list"):
            adds.append(json.dumps({k: v for k, v in c.arguments.items()}, sort_keys=True))
        elif c.name.startswith("remove_from_") and c.name.endswith("action_list"):
            key = json.dumps(dict(c.arguments), sort_keys=True)
            if key in adds:
                return [
                    DataProblem(
                        file=f,
                        task_id=task.task_id,
                        field="ground_truth",
                        message="adds an action and later removes the same action (net change nil)",
                    )
                ]
    return []


def check_variant(data_dir: str | Path, name: str) -> tuple[Variant | None, list[DataProblem]]:
    """Load a variant and list its data problems (an unreadable file is one problem and the
    variant is None)."""
    data_dir = Path(data_dir)
    files = variant_files(data_dir, name)
    problems: list[DataProblem] = []
    if not files["db"].exists():
        problems.append(
            DataProblem(
                file=_rel(files["db"], data_dir),
                message=(
                    f"no seed database for {name} (looked for db/{name}.json and "
                    f"{_rel(files['db'], data_dir)}); its tasks are checked without one"
                ),
            )
        )
    try:
        v = load_variant(data_dir, name, require_db=False)
    except EgoBenchError as exc:
        return None, problems + [DataProblem(file=_rel(files["tasks"], data_dir), message=str(exc))]
    f_tasks = _rel(v.files["tasks"], data_dir)
    raw = read_json(Path(v.files["tasks"]))
    problems += _task_problems(v, raw, f_tasks)
    problems += _schema_problems(v, _rel(v.files["tools"], data_dir))
    problems += _seed_problems(v, _rel(v.files["db"], data_dir))
    return v, problems


KNOWN_FILE = "known_defects.yaml"


class KnownDefect(BaseModel):
    """One defect of the published data (the data README's list, ``known_defects.yaml``): a
    problem is this defect when its file fully matches ``file`` (a regular expression), its
    line matches ``match`` (searched) and, with ``tasks``, its task id is listed."""

    file: str
    match: str
    readme: str
    tasks: list[int] | None = None

    def covers(self, p: DataProblem) -> bool:
        return (
            re.fullmatch(self.file, p.file) is not None
            and re.search(self.match, p.line()) is not None
            and (self.tasks is None or p.task_id in self.tasks)
        )


def load_known(data_dir: str | Path) -> list[KnownDefect]:
    """The known-defect list of a data folder (its own ``known_defects.yaml``, else the
    package's, which lists the published files' defects).

    Raises:
        EgoBenchError: the file is not a YAML list of entries (one line naming it)."""

    path = Path(data_dir) / KNOWN_FILE
    if not path.exists():
        path = package_data_dir() / KNOWN_FILE
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or []
        return [KnownDefect.model_validate(e) for e in raw]
    except (OSError, yaml.YAMLError, ValidationError, TypeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise EgoBenchError(f"{path}: not a list of known defects ({first})") from None


class ValidationReport(BaseModel):
    """What ``ego validate`` found: ``new`` problems, ``known`` ones (with the index of the
    known defect each matched), ``unknown`` variants (task files of no scenario this version
    plays, not checked) and tasks / GT calls per scenario of the variants checked."""

    new: list[DataProblem] = Field(default_factory=list)
    known: list[tuple[DataProblem, int]] = Field(default_factory=list)
    unknown: list[DataProblem] = Field(default_factory=list)
    checked: list[str] = Field(default_factory=list)
    tasks: dict[str, int] = Field(default_factory=dict)
    calls: dict[str, int] = Field(default_factory=dict)


def validate_folder(data_dir: str | Path, names: list[str]) -> ValidationReport:
    """Check every variant of ``names`` it can read; a task file of an unknown scenario
    (``order1.json`` before the scenario exists) is reported and skipped, never stops the
    others. Identical problem lines (a shared tool schema checked per variant) appear once."""
    data_dir = Path(data_dir)
    known = load_known(data_dir)
    rep = ValidationReport()
    seen: set[str] = set()
    for name in names:
        try:
            scenario_of(name)
        except EgoBenchError as exc:
            rep.unknown.append(
                DataProblem(file=f"tasks/{name}.json", message=f"{exc}; not checked")
            )
            continue
        v, probs = check_variant(data_dir, name)
        rep.checked.append(name)
        if v is not None:
            rep.tasks[v.scenario] = rep.tasks.get(v.scenario, 0) + len(v.tasks)
            calls = sum(len(t.ground_truth) for t in v.tasks)
            rep.calls[v.scenario] = rep.calls.get(v.scenario, 0) + calls
        for p in probs:
            if p.line() in seen:
                continue
            seen.add(p.line())
            hit = next((i for i, k in enumerate(known) if k.covers(p)), None)
            if hit is None:
                rep.new.append(p)
            else:
                rep.known.append((p, hit))
    return rep

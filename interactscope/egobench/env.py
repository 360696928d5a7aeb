"""The scenario environment: state in SQLite, schema tools with validated arguments."""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import sqlite3
from collections import OrderedDict
from pathlib import Path
from typing import Any, Literal

import jsonschema

from interactscope.egobench.canonical import canonical_json, decode_raw
from interactscope.egobench.records import Task, ToolResult, ToolSpec, Variant
from interactscope.egobench.scenarios import SCENARIO_DEFS, Ctx, ToolError
from interactscope.egobench.settings import ToolRules

Undeclared = Literal["drop", "reject"]


@functools.lru_cache(maxsize=512)
def _validator(schema_json: str) -> jsonschema.protocols.Validator:
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


def _coerce(value: Any, schema: dict[str, Any]) -> Any:
    """Numeric strings where the schema wants a number ("3" -> 3, "14.8" -> 14.8), recursively."""
    t = schema.get("type")
    if t in ("number", "integer") and isinstance(value, str):
        try:
            x = float(value.strip())
        except ValueError:
            return value
        return int(x) if x.is_integer() else x
    if t == "object" and isinstance(value, dict):
        props = schema.get("properties") or {}
        return {k: _coerce(v, props[k]) if k in props else v for k, v in value.items()}
    if t == "array" and isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_coerce(v, schema["items"]) for v in value]
    return value


_TEMPLATES: OrderedDict[tuple[str, str], sqlite3.Connection] = OrderedDict()
_VALIDATORS: dict[int, tuple[dict[str, Any], Any]] = {}
# seed content keys by object: a loaded seed dict is not mutated
_SEED_KEYS: dict[int, tuple[dict[str, Any], str]] = {}


def _template(scenario: str, seed_db: dict[str, Any]) -> sqlite3.Connection:
    """The seed state of a scenario database, built once per seed content and copied per
    episode (an SQLite backup is much cheaper than loading the JSON again)."""
    hit = _SEED_KEYS.get(id(seed_db))
    if hit is None or hit[0] is not seed_db:
        text = json.dumps(seed_db, sort_keys=True, default=str).encode()
        hit = (seed_db, hashlib.sha1(text).hexdigest())
        _SEED_KEYS[id(seed_db)] = hit
        if len(_SEED_KEYS) > 64:
            _SEED_KEYS.pop(next(iter(_SEED_KEYS)))
    key = (scenario, hit[1])
    if key in _TEMPLATES:
        _TEMPLATES.move_to_end(key)
        return _TEMPLATES[key]
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.executescript(SCENARIO_DEFS[scenario].ddl)
    try:
        conn.execute("BEGIN")
        SCENARIO_DEFS[scenario].load(conn, seed_db)
        conn.execute("COMMIT")
    except (KeyError, TypeError, AttributeError, sqlite3.Error) as exc:
        conn.close()
        raise ValueError(f"{scenario} seed database cannot be loaded: {exc!r}") from None
    _TEMPLATES[key] = conn
    while len(_TEMPLATES) > 16:
        _TEMPLATES.popitem(last=False)[1].close()
    return conn


def _schema_validator(spec: ToolSpec) -> Any:
    hit = _VALIDATORS.get(id(spec.parameters))
    if hit is not None and hit[0] is spec.parameters:
        return hit[1]
    schema = {"type": "object", **spec.parameters}
    v = _validator(json.dumps(schema, sort_keys=True))
    if len(_VALIDATORS) > 1024:
        _VALIDATORS.clear()
    _VALIDATORS[id(spec.parameters)] = (spec.parameters, v)
    return v


class Environment:
    """One scenario database (a fresh in-memory SQLite built from the seed JSON) and its tools.

    Args:
        scenario: a registered scenario (``SCENARIO_DEFS``: retail, kitchen, restaurant,
            warehouse, household, order).
        tools: the scenario schema (only these tools can be called).
        seed_db: the seed database JSON object.
        today: the task's date; tools never read the wall clock.
        undeclared: arguments the schema does not declare are dropped (``drop``, listed in
            ``ToolResult.ignored``) or make the call invalid (``reject``).
        coerce_numeric_strings: convert numeric strings where the schema declares a number
            before validation (every scenario; a scenario's own conversion, e.g. kitchen's
            ``kitchen_numeric_strings``, runs first).
        rules: every execution rule at once (a profile's :class:`ToolRules`, or a
            ``ScoreSettings``); when given, ``undeclared`` and ``coerce_numeric_strings`` are
            taken from it.

    Raises:
        ValueError: unknown scenario, or a seed the scenario cannot load (message names it)."""

    def __init__(
        self,
        scenario: str,
        tools: list[ToolSpec],
        seed_db: dict[str, Any],
        today: dt.date | None = None,
        *,
        undeclared: Undeclared = "drop",
        coerce_numeric_strings: bool = False,
        rules: ToolRules | None = None,
    ) -> None:
        if scenario not in SCENARIO_DEFS:
            raise ValueError(
                f"unknown scenario {scenario!r}; expected one of {sorted(SCENARIO_DEFS)}"
            )
        self.scenario = scenario
        self.definition = SCENARIO_DEFS[scenario]
        self.tools = {t.name: t for t in tools}
        self.today = today
        if rules is None:
            rules = ToolRules(
                undeclared_params=undeclared, coerce_numeric_strings=coerce_numeric_strings
            )
        self.rules = rules.tool_rules()
        self.undeclared = self.rules.undeclared_params
        self.coerce_numeric_strings = self.rules.coerce_numeric_strings
        self.conn = sqlite3.connect(":memory:", isolation_level=None)
        _template(scenario, seed_db).backup(self.conn)
        self._ctx = Ctx(self.conn, today, self.rules)

    @classmethod
    def from_variant(
        cls, variant: Variant, task: Task | int | None = None, **kw: Any
    ) -> Environment:
        """A fresh environment for a variant; ``task`` (or its id) supplies "today"."""
        if isinstance(task, int):
            task = variant.task(task)
        return cls(
            variant.scenario, variant.tools, variant.seed, today=task.today if task else None, **kw
        )

    def tool_specs(self) -> list[dict[str, Any]]:
        """The catalogue as OpenAI-style function specs, in schema order."""
        return [t.openai() for t in self.tools.values()]

    def _prepare(self, name: str, arguments: Any) -> tuple[dict[str, Any], list[str]]:
        spec = self.tools[name]
        if not isinstance(arguments, dict):
            raise jsonschema.ValidationError(
                f"arguments must be a JSON object, got {type(arguments).__name__}"
            )
        declared = spec.declared
        ignored = sorted(k for k in arguments if k not in declared)
        args = (
            {k: v for k, v in arguments.items() if k in declared}
            if self.undeclared == "drop"
            else dict(arguments)
        )
        if self.undeclared == "reject" and ignored:
            raise jsonschema.ValidationError(f"undeclared parameter(s) {', '.join(ignored)}")
        if self.definition.convert_arguments is not None:
            args = self.definition.convert_arguments(name, args, self.rules)
        if self.coerce_numeric_strings:
            args = _coerce(args, spec.parameters)
        if self.rules.arguments == "official":
            # the official tools are Python methods: only a missing parameter fails the call
            missing = [k for k in spec.parameters.get("required", []) if k not in args]
            if missing:
                raise jsonschema.ValidationError(f"missing parameter(s) {', '.join(missing)}")
        else:
            _schema_validator(spec).validate(args)
        return args, ignored if self.undeclared == "drop" else []

    def call(self, name: str, arguments: Any = None) -> ToolResult:
        """Execute one tool call. Never raises: an unknown tool, invalid arguments or a failed
        precondition gives ``ok=False`` with a one-line ``error`` and leaves the state as it was."""
        arguments = {} if arguments is None else arguments
        if name not in self.tools or name not in self.definition.tools:
            return ToolResult(
                ok=False,
                name=str(name),
                error_kind="unknown_tool",
                error=f"unknown tool {name!r}; available: {', '.join(self.tools)}",
            )
        try:
            args, ignored = self._prepare(name, arguments)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path)
            return ToolResult(
                ok=False,
                name=name,
                error_kind="invalid_arguments",
                error=f"{name}: invalid arguments{' at ' + where if where else ''}: {exc.message}",
            )
        before = self.conn.total_changes
        self.conn.execute("SAVEPOINT call")
        try:
            out = self.definition.tools[name](self._ctx, **args)
        except (
            ToolError,
            TypeError,
            ValueError,
            KeyError,
            AttributeError,
            ZeroDivisionError,
            OverflowError,
            sqlite3.Error,
        ) as exc:
            self.conn.execute("ROLLBACK TO call")
            self.conn.execute("RELEASE call")
            msg = str(exc) if isinstance(exc, ToolError) else f"{type(exc).__name__}: {exc}"
            return ToolResult(
                ok=False, name=name, error_kind="precondition", error=msg, ignored=ignored
            )
        self.conn.execute("RELEASE call")
        return ToolResult(
            ok=True,
            name=name,
            output=out,
            ignored=ignored,
            changed=self.conn.total_changes != before,
        )

    def state(self) -> dict[str, Any]:
        """The canonical state: every table as JSON (per-user lists in a defined order)."""
        return decode_raw(self.definition.dump(self.conn, self.rules))

    def state_json(self) -> str:
        """:meth:`state` as canonical JSON (sorted keys, integral floats as integers)."""
        return canonical_json(
            self.definition.dump(self.conn, self.rules), self.rules.hash_numbers == "normalise"
        )

    def state_hash(self) -> str:
        """sha256 (hex) of :meth:`state_json`."""
        return hashlib.sha256(self.state_json().encode("utf-8")).hexdigest()

    def save(self, path: str | Path) -> Path:
        """Write the current database to a ``.sqlite`` file (replaced if present)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.unlink()
        dst = sqlite3.connect(path)
        try:
            self.conn.backup(dst)
        finally:
            dst.close()
        return path

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Environment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

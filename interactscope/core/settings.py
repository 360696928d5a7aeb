"""The settings base both benchmarks use: dotted overrides, flattening, option models with
one-line errors, the human-readable difference of two settings dicts, and legacy defaults
(what a setting added after a run folder was written reads as in that folder's ``run.json``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from interactscope.core.text import did_you_mean

_Options = TypeVar("_Options", bound=BaseModel)


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"grid": {"step_s": 1}}`` -> ``{"grid.step_s": 1}``."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def apply_overrides(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge ``overrides`` (nested dicts or dotted keys like ``"grid.step_s"``) into ``base``."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    for key, value in overrides.items():
        parts = key.split(".")
        node = out
        for p in parts[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ValueError(f"setting {key!r}: {p!r} is not a group")
        leaf = parts[-1]
        if isinstance(value, dict) and isinstance(node.get(leaf), dict):
            node[leaf] = apply_overrides(node[leaf], value)
        else:
            node[leaf] = value
    return out


def setting_choices(model: type[BaseModel], loc: Sequence[str | int]) -> list[str] | None:
    """For an unknown setting at ``loc`` (a pydantic ``extra_forbidden`` error's ``loc``, e.g.
    ``("limits", "max_user_turn")``): the dotted keys valid at that level of ``model``.
    None when ``loc`` does not run through nested settings models (no list to offer)."""
    node: Any = model
    try:
        for part in loc[:-1]:
            node = node.model_fields[part].annotation
        fields = list(node.model_fields)
    except (AttributeError, KeyError, TypeError):
        return None
    prefix = "".join(f"{p}." for p in loc[:-1])
    return [prefix + k for k in fields]


def unknown_setting_hint(model: type[BaseModel], loc: Sequence[str | int]) -> str:
    """``; valid here: A, B; did you mean K?`` for an unknown setting at ``loc`` (see
    :func:`setting_choices`; no question without a close match); empty when there is no list
    to offer."""
    valid = setting_choices(model, loc)
    if valid is None:
        return ""
    return f"; valid here: {', '.join(valid)}{did_you_mean('.'.join(map(str, loc)), valid)}"


def options_with(
    cls: type[_Options],
    options: _Options | None,
    overrides: dict[str, Any],
    what: str,
    valid: str,
) -> _Options:
    """An options model: ``options`` (default: ``cls()``'s defaults) with ``overrides`` (``None``
    values ignored).

    Raises:
        ValueError: an unknown option or an invalid value, in one line:
            ``<what> option <field>: <why> (valid: <valid>)``.
    """
    base = options.model_dump() if options is not None else {}
    base.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return cls(**base)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise ValueError(
            f"{what} option {'.'.join(map(str, e['loc']))}: {e['msg']} (valid: {valid})"
        ) from None


def _ignored(key: str, ignore: Iterable[str]) -> bool:
    return any(key == k or key.startswith(k + ".") for k in ignore)


def diff_settings(a: dict[str, Any], b: dict[str, Any], *, ignore: Iterable[str] = ()) -> list[str]:
    """Human-readable list of dotted settings whose values differ between two settings dicts,
    ``"key: old != new"`` sorted by key; keys in (or under) ``ignore`` are left out."""
    ignore = tuple(ignore)
    fa = {k: v for k, v in flatten(a).items() if not _ignored(k, ignore)}
    fb = {k: v for k, v in flatten(b).items() if not _ignored(k, ignore)}
    return [
        f"{k}: {fa.get(k, '<unset>')!r} != {fb.get(k, '<unset>')!r}"
        for k in sorted(set(fa) | set(fb))
        if fa.get(k, "<unset>") != fb.get(k, "<unset>")
    ]


_BARE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_YAML_WORDS = {"null", "true", "false", "yes", "no", "on", "off", "~", ""}


def set_value(value: Any) -> str:
    """``value`` as ``--set KEY=VALUE`` writes it (read back with YAML): ``null`` for unset, a
    plain word bare, anything else (numbers, booleans, lists, words YAML would read otherwise)
    as JSON, which YAML reads back as the same value."""
    if isinstance(value, str) and value.lower() not in _YAML_WORDS and set(value) <= _BARE:
        if not value[0].isdigit() and value[0] not in ".-":
            return value
    return json.dumps(value, ensure_ascii=False)


def restoring_sets(
    a: dict[str, Any], b: dict[str, Any], *, ignore: Iterable[str] = ()
) -> list[str]:
    """The ``--set KEY=VALUE`` arguments that turn settings ``b`` back into ``a`` on every key
    :func:`diff_settings` lists (an unset key of ``a``: ``null``), sorted by key."""
    ignore = tuple(ignore)
    fa = {k: v for k, v in flatten(a).items() if not _ignored(k, ignore)}
    fb = {k: v for k, v in flatten(b).items() if not _ignored(k, ignore)}
    keys = sorted(k for k in set(fa) | set(fb) if fa.get(k, "<unset>") != fb.get(k, "<unset>"))
    return [f"--set {k}={set_value(fa.get(k))}" for k in keys]


# --------------------------------------------------------------------------- legacy defaults


@dataclass(frozen=True)
class LegacyRule:
    """A legacy default that depends on the run: ``rule(old, new)`` gives the value, with
    ``old`` the manifest of the folder being resumed (the benchmark's own manifest type) and
    ``new`` the settings dict of the run resuming it. Applied only when the two are compared
    (:func:`fill_legacy` with ``old``); reading a ``run.json`` alone leaves the key unset."""

    rule: Callable[[Any, dict[str, Any]], Any]


def fill_legacy(
    settings: dict[str, Any],
    table: Mapping[str, Any],
    *,
    old: Any = None,
    new: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``settings`` (an old ``run.json``'s) with each dotted key of ``table`` that it lacks set
    to the table's value: the value that reproduces what a run written before the setting
    existed did. A value is a constant or a :class:`LegacyRule` (used only when ``old`` is
    given: comparing the folder's manifest with a ``new`` run's settings).

    A key is filled only inside a group ``settings`` has (``user.x`` needs ``user``; top-level
    keys always), placed before the group's own keys; keys present are kept as they are.
    Returns a new dict; ``settings`` is not changed.
    """
    out = settings
    for key, value in table.items():
        if isinstance(value, LegacyRule):
            if old is None:
                continue
            value = value.rule(old, new or {})
        out = _fill(out, key.split("."), value)
    return out


def _fill(node: dict[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    head, rest = path[0], path[1:]
    if not rest:
        return node if head in node else {head: value, **node}
    child = node.get(head)
    if not isinstance(child, dict):
        return node  # the group itself is missing: nothing recorded to fill in
    return {**node, head: _fill(child, rest, value)}

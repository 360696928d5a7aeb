"""The one registry of extension points: ``register(kind, name, factory)``.

Every kind of plug-in (``backends`` of the streaming protocol, ``judges``, EgoBench ``agents`` and
``users``, ``controls``, ...) is a table ``name -> factory`` kept here. A factory is an object
(class, function) or a lazy ``"module:attr"`` string imported on first use, so heavy optional
dependencies (torch, vLLM, openai) are needed only by what is used.

Third-party packages add entries without editing this project: an entry point in the group
``interactscope.<kind>`` (``pyproject.toml``: ``[project.entry-points."interactscope.judges"]
mine = "my_pkg.judge:make"``) is read on the first lookup of that kind. Explicit
:func:`register` calls win over entry points of the same name (docs/architecture.md, "Add a
plug-in").
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Any

from interactscope.core.errors import InteractScopeError

__all__ = [
    "PluginError",
    "UnknownPluginError",
    "lookup",
    "names",
    "refresh",
    "register",
    "registered",
    "table",
    "unregister",
]

_TABLES: dict[str, dict[str, Any]] = {}
_ENTRY_POINTS: dict[str, dict[str, Any]] = {}


class PluginError(InteractScopeError, ImportError):
    """A registered ``"module:attr"`` target (or entry point) cannot be imported."""


class UnknownPluginError(InteractScopeError, LookupError):
    """No plug-in of this kind has that name; the message lists the known names."""

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0]) if self.args else ""


def register(kind: str, name: str, factory: Any) -> None:
    """Make ``name`` of ``kind`` resolve to ``factory`` (an object, or ``"module:attr"``
    imported lazily by :func:`lookup`). Registering a name again replaces it."""
    if isinstance(factory, str) and ":" not in factory:
        raise ValueError(f"register({kind!r}, {name!r}): a lazy target is 'module:attr'")
    _TABLES.setdefault(kind, {})[name] = factory


def table(kind: str) -> dict[str, Any]:
    """The live table of explicit registrations of ``kind`` (entry points not included); tests
    patch it with ``monkeypatch.setitem(table(kind), name, target)``."""
    return _TABLES.setdefault(kind, {})


def unregister(kind: str, name: str) -> None:
    """Remove ``name`` of ``kind`` (tests); absent names are ignored."""
    _TABLES.get(kind, {}).pop(name, None)


def _entry_points(kind: str) -> dict[str, Any]:
    if kind not in _ENTRY_POINTS:
        eps = metadata.entry_points(group=f"interactscope.{kind}")
        _ENTRY_POINTS[kind] = {ep.name: ep for ep in eps}
    return _ENTRY_POINTS[kind]


def refresh() -> None:
    """Forget the entry points read so far (after installing a plug-in in a running process)."""
    _ENTRY_POINTS.clear()


def registered(kind: str, name: str) -> bool:
    """Whether ``name`` of ``kind`` is registered (explicitly or by an entry point)."""
    return name in _TABLES.get(kind, {}) or name in _entry_points(kind)


def names(kind: str) -> list[str]:
    """Every name of ``kind``, sorted (registered and entry points)."""
    return sorted(set(_TABLES.get(kind, {})) | set(_entry_points(kind)))


def lookup(kind: str, name: str, *, what: str | None = None) -> Any:
    """The factory registered as ``name`` of ``kind``, imported if it is lazy.

    Args:
        what: how the name is called in messages (``"backend"``, ``"--judge"``); default ``kind``.

    Raises:
        UnknownPluginError: no such name (the message lists the known ones).
        PluginError: the target's module cannot be imported (the message names the target and
            the missing package).
    """
    table = _TABLES.get(kind, {})
    if name in table:
        target = table[name]
    elif name in _entry_points(kind):
        ep = _entry_points(kind)[name]
        try:
            return ep.load()
        except ImportError as exc:
            raise PluginError(f"{what or kind} {name!r}: entry point {ep.value} ({exc})") from exc
    else:
        raise UnknownPluginError(
            f"unknown {what or kind} {name!r}; known: {', '.join(names(kind)) or '(none)'}"
        )
    if not isinstance(target, str):
        return target
    module, _, attr = target.partition(":")
    try:
        obj = importlib.import_module(module)
    except ImportError as exc:
        raise PluginError(
            f"{what or kind} {name!r} needs a package that is not installed ({exc}); "
            "see the README's Models section for the extra to install"
        ) from exc
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj

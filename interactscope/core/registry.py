"""The one registry of extension points: ``register(kind, name, factory)``.

Every kind of plug-in (``backends`` of the streaming protocol, ``judges``, EgoBench ``agents`` and
``users``, ``controls``, ...) is a table ``name -> factory`` kept here. A factory is an object
(class, function) or a lazy ``"module:attr"`` string imported on first use, so heavy optional
dependencies (torch, vLLM, openai) are needed only by what is used.

Third-party packages add entries without editing this project: an entry point in the group
``interactscope.<kind>`` (``pyproject.toml``: ``[project.entry-points."interactscope.judges"]
mine = "my_pkg.judge:make"``) is read on the first lookup of that kind. Explicit
:func:`register` calls win over entry points of the same name (docs/architecture.md, "Add a
plug-in"). A module of one's own, not packaged, is named in ``$INTERACTSCOPE_PLUGINS``
(:data:`ENV_VAR`): imported on the first lookup of any kind, it calls :func:`register`.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import warnings
from collections.abc import Callable, Iterable
from importlib import metadata
from typing import Any

from interactscope.core.errors import InteractScopeError, first_problem

__all__ = [
    "ENV_VAR",
    "PluginError",
    "PluginWarning",
    "UnknownPluginError",
    "load_each",
    "lookup",
    "names",
    "refresh",
    "register",
    "registered",
    "table",
    "unregister",
    "warn",
]

_TABLES: dict[str, dict[str, Any]] = {}
_ENTRY_POINTS: dict[str, dict[str, Any]] = {}

ENV_VAR = "INTERACTSCOPE_PLUGINS"
"""Comma-separated plug-in modules imported on the first lookup of any kind: a module name
importable from ``PYTHONPATH`` or the current folder (``mymod``, ``lab.judges``), or a file
(``path/to/file.py``); each calls :func:`register` when imported."""

_ENV_LOADED: list[str] = []  # the $INTERACTSCOPE_PLUGINS value imported ([] : not yet)
_LOADING: list[str] = []  # the module of $INTERACTSCOPE_PLUGINS being imported
_FROM_PLUGIN: dict[tuple[str, str], str] = {}  # (kind, name) -> the module that registered it


class PluginError(InteractScopeError, ImportError):
    """A registered ``"module:attr"`` target (or entry point) cannot be imported."""


class PluginWarning(UserWarning):
    """A plug-in was skipped (it cannot be loaded, or its name is taken); the message is one line
    naming it and the fix. The CLI prints it as one ``warning:`` line and goes on."""


_WARNED: set[str] = set()


def warn(message: str) -> None:
    """Issue ``message`` as a :class:`PluginWarning`, once per process (a table read many
    times warns once)."""
    if message not in _WARNED:
        _WARNED.add(message)
        warnings.warn(message, PluginWarning, stacklevel=3)


class UnknownPluginError(InteractScopeError, LookupError):
    """No plug-in of this kind has that name; the message lists the known names."""

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0]) if self.args else ""


def register(kind: str, name: str, factory: Any) -> None:
    """Make ``name`` of ``kind`` resolve to ``factory`` (an object, or ``"module:attr"``
    imported lazily by :func:`lookup`). Registering a name again replaces it, except from a
    module of :data:`ENV_VAR` being imported: a plug-in of a name already taken (a built-in) is
    ignored with a one-line :class:`PluginWarning`, and a built-in registered after a plug-in
    of its name replaces it with that warning (the built-in wins either way)."""
    if isinstance(factory, str) and ":" not in factory:
        raise ValueError(f"register({kind!r}, {name!r}): a lazy target is 'module:attr'")
    tab = _TABLES.setdefault(kind, {})
    if _LOADING:
        if name in tab:
            warn(_taken(kind, name, f"{ENV_VAR} module {_LOADING[-1]}"))
            return
        _FROM_PLUGIN[(kind, name)] = _LOADING[-1]
    elif (kind, name) in _FROM_PLUGIN:
        warn(_taken(kind, name, f"{ENV_VAR} module {_FROM_PLUGIN.pop((kind, name))}"))
    tab[name] = factory


def _taken(kind: str, name: str, source: str) -> str:
    return f"{kind} {name!r} of {source} ignored: the name is a built-in one (it wins); rename it"


def table(kind: str) -> dict[str, Any]:
    """The live table of explicit registrations of ``kind`` (entry points not included); tests
    patch it with ``monkeypatch.setitem(table(kind), name, target)``."""
    return _TABLES.setdefault(kind, {})


def unregister(kind: str, name: str) -> None:
    """Remove ``name`` of ``kind`` (tests); absent names are ignored."""
    _TABLES.get(kind, {}).pop(name, None)
    _FROM_PLUGIN.pop((kind, name), None)


def _import_plugin(item: str) -> None:
    """Import one entry of :data:`ENV_VAR`: a ``.py`` file (as module ``interactscope_plugin_<stem>``)
    or a module name, found on ``sys.path`` and then in the current folder."""
    if item.endswith(".py") or "/" in item or os.sep in item:
        path = os.path.abspath(os.path.expanduser(item))
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no such file {path}")
        stem = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(f"interactscope_plugin_{stem}", path)
        assert spec is not None and spec.loader is not None  # a .py path always has a loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # pickling, dataclasses and re-imports find it
        spec.loader.exec_module(module)
        return
    added = os.getcwd() not in sys.path
    if added:  # the console script does not put the current folder on sys.path; -m does
        sys.path.append(os.getcwd())
    try:
        importlib.import_module(item)
    finally:
        if added:
            sys.path.remove(os.getcwd())


def _load_env_plugins() -> None:
    """Import the modules of :data:`ENV_VAR` once per value; one that fails to import is left
    out with a one-line :class:`PluginWarning` (a command that needs its plug-in then says the
    name is unknown)."""
    value = os.environ.get(ENV_VAR, "")
    if _ENV_LOADED == [value]:
        return
    _ENV_LOADED[:] = [value]  # first: a plug-in module that reads a table does not recurse
    for item in (x.strip() for x in value.split(",")):
        if not item:
            continue
        _LOADING.append(item)
        try:
            _import_plugin(item)
        except Exception as exc:  # noqa: BLE001 - a researcher's module can raise anything
            warn(
                f"{ENV_VAR}: {item} cannot be imported ({first_problem(exc)}); skipped: fix "
                f"it or take it out of {ENV_VAR}"
            )
        finally:
            _LOADING.pop()


def _entry_points(kind: str) -> dict[str, Any]:
    _load_env_plugins()
    if kind not in _ENTRY_POINTS:
        eps = metadata.entry_points(group=f"interactscope.{kind}")
        _ENTRY_POINTS[kind] = {ep.name: ep for ep in eps}
    found = _ENTRY_POINTS[kind]
    for name in sorted(found.keys() & _TABLES.get(kind, {}).keys()):  # the table wins
        ep = found[name]
        dist = getattr(getattr(ep, "dist", None), "name", None)
        warn(
            _taken(kind, name, f"entry point {ep.value}" + (f" of package {dist}" if dist else ""))
        )
    return found


def refresh() -> None:
    """Forget the entry points read so far (after installing a plug-in in a running process),
    the warnings already given, and that :data:`ENV_VAR` was read (its modules are imported
    again on the next lookup if not imported yet)."""
    _ENTRY_POINTS.clear()
    _WARNED.clear()
    _ENV_LOADED.clear()


def registered(kind: str, name: str) -> bool:
    """Whether ``name`` of ``kind`` is registered (explicitly or by an entry point)."""
    eps = _entry_points(kind)  # first: it imports $INTERACTSCOPE_PLUGINS, which may register
    return name in _TABLES.get(kind, {}) or name in eps


def names(kind: str) -> list[str]:
    """Every name of ``kind``, sorted (registered and entry points)."""
    eps = _entry_points(kind)  # first: it imports $INTERACTSCOPE_PLUGINS, which may register
    return sorted(set(_TABLES.get(kind, {})) | set(eps))


def lookup(kind: str, name: str, *, what: str | None = None) -> Any:
    """The factory registered as ``name`` of ``kind``, imported if it is lazy.

    Args:
        what: how the name is called in messages (``"backend"``, ``"--judge"``); default ``kind``.

    Raises:
        UnknownPluginError: no such name (the message lists the known ones).
        PluginError: the target's module cannot be imported (the message names the target and
            the missing package).
    """
    eps = _entry_points(kind)  # reads $INTERACTSCOPE_PLUGINS; warns of entry points ignored
    table = _TABLES.get(kind, {})
    if name in table:
        target = table[name]
    elif name in eps:
        return _load_entry_point(eps[name], what or kind)
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
    try:
        for part in attr.split("."):
            obj = getattr(obj, part)
    except AttributeError as exc:
        raise PluginError(f"{what or kind} {name!r}: target {target} ({exc})") from None
    return obj


def _load_entry_point(ep: Any, what: str) -> Any:
    """The object an entry point names; any failure (a missing module, an attribute that is not
    there, an error raised while importing) is one :class:`PluginError` line."""
    try:
        return ep.load()
    except Exception as exc:  # noqa: BLE001 - third-party import code can raise anything
        dist = getattr(getattr(ep, "dist", None), "name", None)
        of, fix = (f" of package {dist}", f"pip uninstall {dist}") if dist else ("", "remove it")
        raise PluginError(
            f"{what} {ep.name!r}: entry point {ep.name} = {ep.value}{of} cannot be loaded "
            f"({first_problem(exc)}); install what it needs or {fix}"
        ) from exc


def load_each(
    kind: str,
    wanted: Iterable[str],
    build: Callable[[str, Any], Any] | None = None,
    *,
    what: str | None = None,
) -> list[Any]:
    """The factories of ``wanted`` names of ``kind`` (each passed through ``build(name,
    factory)`` when given), for a table that is read whole (every metric, every control). One
    that raises :class:`PluginError` (it cannot be loaded, ``build`` refuses it) is left out
    with a one-line :class:`PluginWarning`, so a broken plug-in stops only the command that
    asks for it by name."""
    out = []
    for name in wanted:
        try:
            factory = lookup(kind, name, what=what)
            out.append(factory if build is None else build(name, factory))
        except PluginError as exc:
            warn(f"{exc}; skipped")
    return out

"""Import paths from before the one-spine layout (0.1), resolved to where the code lives now.

One table, no shim modules: ``import interactscope.bench`` returns the module object of
:mod:`interactscope.streaming.bench` itself (same identity, so ``isinstance`` and monkeypatching
work through either name). Package code must use the new paths (tests/test_architecture.py);
these exist for notebooks, scripts and the public API names in DESIGN.md.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

OLD_PATHS: dict[str, str] = {
    "tasks": "streaming.tasks",
    "schema": "streaming.schema",
    "settings": "streaming.settings",
    "bench": "streaming.bench",
    "distributed": "streaming.distributed",
    "demo": "streaming.demo",
    "resources": "core.resources",
    "model_configs": "core.model_configs",
    "secrets": "core.secrets",
    "runlog": "streaming.runlog",
    "protocol.parsing": "replies",
    "protocol": "streaming.protocol",
    "adapters": "streaming.adapters",
    "judges": "streaming.judges",
    "scoring": "streaming.scoring",
    "analysis.stats": "stats",
    "analysis": "streaming.analysis",
    "importers": "streaming.importers",
    "egobench.streaming": "streaming.environments.execution",
    "egobench.streaming_scores": "streaming.environments.scores",
    "controls": "streaming.analysis.controls",
    "beyond": "streaming.analysis.beyond_paper",
    "report": "streaming.analysis.report",
}
"""Old name (after ``interactscope.``) -> new name; the longest matching prefix wins.
(``interactscope.collect`` is no alias: it is the API function ``collect``.)"""

_PREFIX = "interactscope."


def new_name(fullname: str) -> str | None:
    """The current dotted name for an old ``interactscope.*`` module name, else None."""
    if not fullname.startswith(_PREFIX):
        return None
    rest = fullname[len(_PREFIX) :]
    for old in sorted(OLD_PATHS, key=len, reverse=True):
        if rest == old or rest.startswith(old + "."):
            return _PREFIX + OLD_PATHS[old] + rest[len(old) :]
    return None


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):  # noqa: ANN001
        if new_name(fullname) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):  # noqa: ANN001
        return None

    def exec_module(self, module: ModuleType) -> None:
        # importlib returns whatever sys.modules holds under the name after exec_module
        sys.modules[module.__name__] = importlib.import_module(new_name(module.__name__))


def install() -> None:
    """Put the alias finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())

"""Every error class the package defines derives from the one base, InteractScopeError, so a
CLI command or a notebook catches one type (issue 23)."""

from __future__ import annotations

import ast
from pathlib import Path

import interactscope
from interactscope.core.errors import InteractScopeError

PKG = Path(interactscope.__file__).parent
BUILTIN = {"Exception", "RuntimeError", "ValueError", "FileNotFoundError", "OSError", "KeyError"}


def _error_classes() -> dict[str, list[str]]:
    """name -> base names of every class whose name ends in Error, or that derives directly
    from a builtin exception (private classes excluded)."""
    out: dict[str, list[str]] = {}
    for f in PKG.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = [b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases]
                if node.name.endswith("Error") or BUILTIN & set(bases):
                    out[node.name] = bases
    return out


def test_every_error_class_reaches_the_one_base():
    classes = _error_classes()
    assert len(classes) >= 27  # 26 error classes of the issue + the base itself

    def reaches(name: str, seen: frozenset = frozenset()) -> bool:
        if name == "InteractScopeError":
            return True
        return any(b in classes and b not in seen and reaches(b, seen | {name})
                   for b in classes.get(name, []))  # fmt: skip

    assert [n for n in sorted(classes) if not reaches(n)] == []


def test_the_base_catches_errors_of_both_benchmarks_and_keeps_the_builtin_base():
    from interactscope.egobench.data import EgoBenchError
    from interactscope.egobench.run_folder import EgoRunError
    from interactscope.streaming.bench import BenchmarkError
    from interactscope.streaming.judges.base import JudgeError

    for cls, builtin in ((EgoBenchError, ValueError), (EgoRunError, RuntimeError),
                         (BenchmarkError, ValueError), (JudgeError, RuntimeError)):  # fmt: skip
        assert issubclass(cls, InteractScopeError) and issubclass(cls, builtin)

"""Every error class the package defines derives from the one base, InteractScopeError, so a
CLI command or a notebook catches one type (issue 23)."""

from __future__ import annotations

import ast
import builtins
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


def _exception_classes() -> dict[str, tuple[str, list[str]]]:
    """name -> (file, base names) of every class in the package that is an exception (warnings
    aside): the closure over the builtin exception types and the package's own classes (a class
    deriving from another package exception counts, whatever its name)."""
    known = {
        n
        for n, v in vars(builtins).items()
        if isinstance(v, type) and issubclass(v, BaseException) and not issubclass(v, Warning)
    }
    classes: dict[str, tuple[str, list[str]]] = {}
    for f in PKG.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]
                classes[node.name] = (str(f.relative_to(PKG)), bases)
    grew = True
    while grew:
        grew = False
        for name, (_, bases) in classes.items():
            if name not in known and known & set(bases):
                known.add(name)
                grew = True
    return {n: v for n, v in classes.items() if n in known}


# Private exceptions used as control flow inside one module, never raised to a caller.
INTERNAL = {
    "_Uncacheable": "engines/qwen_frames.py",  # a frame the pixel cache cannot key: recomputed
    "_OfficialCompareCrash": "egobench/matching.py",  # the official comparison's crash, replayed
    "Terminated": "cli/common.py",  # SIGTERM as KeyboardInterrupt: exit 143, not an error
}


def test_every_exception_class_of_the_package_derives_from_the_base():
    classes = _exception_classes()
    assert len(classes) >= 34  # 33 error classes + the base (counted by hand, Dec 2)

    def reaches(name: str, seen: frozenset = frozenset()) -> bool:
        if name == "InteractScopeError":
            return True
        bases = classes.get(name, ("", []))[1]
        return any(b not in seen and reaches(b, seen | {name}) for b in bases)

    stray = sorted(n for n in classes if not reaches(n) and n not in INTERNAL)
    assert stray == [], f"derive these from InteractScopeError: {stray}"
    assert {n: classes[n][0] for n in INTERNAL} == INTERNAL


# The only places a command still catches one of the package's errors: each words it differently
# or turns it into a warning; everything else reaches the one handler (cli/app.py).
WORDED_APART = {
    ("streaming.py", "validate", "BenchmarkError"),  # every problem, the warnings, --json
    ("streaming.py", "run_guard", "RunLockedError"),  # re-raised before the read-only warning
    ("streaming.py", "run_guard", "RunLogError"),  # a read-only run folder: a warning
    ("streaming.py", "run_guard", "BenchmarkError"),  # completeness unchecked: a warning
    ("common.py", "disk_errors", "UnsafeWriteError"),  # an OSError: before the errno lines
    ("streaming.py", "_model_frame_budget", "AdapterError"),  # a warning: source-size frames
    ("prompt.py", "build_previews", "BenchmarkError"),  # the first problem only
    ("prompt.py", "engine_view", "AdapterError"),  # a warning: the template's rendering
    ("prompt.py", "check_options", "AdapterError"),  # the bad value named; no class: the warning
    ("prompt.py", "unprompted_note", "AdapterError"),  # no class: left to the preview's warning
    ("importers.py", "score_peer_cmd", "BenchmarkError"),  # "benchmark of RUN: ..."
    ("analysis.py", "get_command", "PluginError"),  # `control NAME` resolved: no handler yet
}


def test_cli_commands_leave_package_errors_to_the_one_handler():
    package_errors = set(_exception_classes())
    found = set()
    for f in sorted((PKG / "cli").glob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.ExceptHandler) and node.type is not None:
                    elts = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
                    for e in elts:
                        name = ast.unparse(e).rsplit(".", 1)[-1]
                        if name in package_errors and name != "InteractScopeError":
                            found.add((f.name, fn.name, name))
    assert found - WORDED_APART == set()


def test_the_one_handler_prints_one_line_and_exits_1(monkeypatch):
    """A command of any group that lets a package error escape: one red line, exit 1, the key
    masked; the function itself stays callable and raises."""
    import pytest
    from typer.testing import CliRunner

    from interactscope.cli import app
    from interactscope.cli.ego import ego_app
    from interactscope.runs.common import RunLogError

    def broken(run: str) -> None:
        raise RunLogError(f"{run}: run.json is damaged; key sk-abcdefghijklmnopqrstuvwx1234")

    assert ego_app.command("broken-for-test")(broken) is broken
    try:
        res = CliRunner().invoke(app, ["ego", "broken-for-test", "runs/x"])
    finally:
        ego_app.registered_commands.pop()
    assert res.exit_code == 1
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("runs/x: run.json is damaged; key ")
    assert "abcdefghijklmnop" not in res.output and "Traceback" not in res.output
    with pytest.raises(RunLogError):
        broken("runs/x")

"""The package's shape: data flows one way (docs/architecture.md, layers), functions stay short,
and only the engine layer talks to model clients."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "interactscope"

# Layer of each top-level module or sub-package (and of each module inside ``streaming/``), in
# flow order (docs/architecture.md). A module may import from its own layer or any layer above it
# (smaller number), never from a lower one.
LAYERS: dict[str, int] = {
    "_aliases": 0,
    "core": 0,
    "media": 1,
    "engines": 2,
    "replies": 3,
    "runs": 3,
    "stats": 3,
    "egobench": 4,
    "streaming.__init__": 5,
    "streaming.tasks": 5,
    "streaming.schema": 5,
    "streaming.settings": 5,
    "streaming.bench": 6,
    "streaming.runlog": 7,
    "streaming.protocol": 8,
    "streaming.adapters": 9,
    "streaming.judges": 10,
    "streaming.scoring": 11,
    "streaming.analysis": 12,
    "streaming.importers": 12,
    "streaming.environments": 13,
    "view": 14,
    "streaming.collect": 15,
    "streaming.distributed": 15,
    "streaming.demo": 15,
    "streaming.panel": 15,
    "cli": 16,
    "ego": 16,
    "__init__": 17,
    "__main__": 17,
}

# The shared spine: these import nothing from either benchmark.
SPINE = ("core", "media", "engines", "replies", "runs", "stats")
BENCHMARKS = ("streaming", "egobench")

# Imports of model clients allowed only inside the engine layer.
MODEL_CLIENTS = ("openai", "vllm", "transformers", "torch", "llama_cpp")

MAX_FUNCTION_LINES = 80


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "data" not in p.relative_to(PKG).parts[:1])


def _unit(parts: list[str] | tuple[str, ...]) -> str:
    """The LAYERS key of a module given as path parts under the package (``streaming`` is split
    one level further)."""
    parts = list(parts)
    if parts and parts[0] == "streaming" and len(parts) > 1:
        return "streaming." + parts[1]
    return parts[0] if parts else "__init__"


def _top(path: Path) -> str:
    rel = path.relative_to(PKG)
    return _unit([*rel.parts[:-1], rel.stem])


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.module and not node.level:  # the package uses absolute imports only
                out.append((node.lineno, node.module))
    return out


def test_every_module_has_a_layer() -> None:
    unknown = sorted({_top(p) for p in _modules()} - set(LAYERS))
    assert not unknown, f"add these to LAYERS (and docs/architecture.md): {unknown}"


def test_no_import_runs_upward() -> None:
    upward = []
    for path in _modules():
        src_layer = LAYERS.get(_top(path))
        for line, name in _imported(ast.parse(path.read_text())):
            parts = name.split(".")
            if parts[0] != "interactscope" or len(parts) < 2:
                continue
            dst_layer = LAYERS.get(_unit(parts[1:]))
            if src_layer is not None and dst_layer is not None and dst_layer > src_layer:
                upward.append(f"{path.relative_to(PKG.parent)}:{line} imports {name}")
    assert not upward, "imports against the flow:\n" + "\n".join(upward)


def test_spine_imports_no_benchmark() -> None:
    found = []
    for path in _modules():
        if _top(path).split(".")[0] not in SPINE:
            continue
        for line, name in _imported(ast.parse(path.read_text())):
            parts = name.split(".")
            if parts[0] == "interactscope" and len(parts) > 1 and parts[1] in BENCHMARKS:
                found.append(f"{path.relative_to(PKG.parent)}:{line} imports {name}")
    assert not found, "the shared spine imports a benchmark:\n" + "\n".join(found)


def test_package_uses_no_old_import_path() -> None:
    from interactscope._aliases import new_name

    old = []
    for path in _modules():
        for line, name in _imported(ast.parse(path.read_text())):
            if name.startswith("interactscope.") and new_name(name):
                old.append(f"{path.relative_to(PKG.parent)}:{line} imports {name}")
    assert not old, (
        "old import paths (interactscope/_aliases.py) inside the package:\n" + "\n".join(old)
    )


def test_only_engines_import_model_clients() -> None:
    found = []
    for path in _modules():
        if _top(path) == "engines":
            continue
        for line, name in _imported(ast.parse(path.read_text())):
            if name.split(".")[0] in MODEL_CLIENTS:
                found.append(f"{path.relative_to(PKG.parent)}:{line} imports {name}")
    assert not found, "model clients outside interactscope/engines:\n" + "\n".join(found)


def test_functions_are_short() -> None:
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n >= MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(PKG.parent)}:{node.lineno} {node.name} ({n})")
    assert not long, f"functions of {MAX_FUNCTION_LINES}+ lines:\n" + "\n".join(long)


def test_imports_inside_functions_say_why() -> None:
    """Issue 23: imports at module top, unless an optional dependency (or an import cycle) needs
    the import inside a function; then a comment on its line or the line above says which."""
    silent = []
    for path in _modules():
        lines = path.read_text().splitlines()
        for fn in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    near = lines[node.lineno - 1] + lines[node.lineno - 2]
                    if "#" not in near:
                        silent.append(f"{path.relative_to(PKG.parent)}:{node.lineno}")
    assert not silent, (
        "imports inside functions without a reason (move them to the top, or say why in a "
        "comment: optional dependency / circular):\n" + "\n".join(sorted(set(silent)))
    )


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_table_names_real_modules(name: str) -> None:
    # A stale entry would hide a renamed module from the checks above.
    rel = name.replace(".", "/")
    assert (PKG / f"{rel}.py").exists() or (PKG / rel).is_dir()

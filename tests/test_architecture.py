"""The package's shape: data flows one way (docs/architecture.md, layers), functions stay short,
and only the engine layer talks to model clients."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "interactscope"

# Layer of each top-level module or sub-package, in flow order (docs/architecture.md). A module may
# import from its own layer or any layer above it (smaller number), never from a lower one.
LAYERS: dict[str, int] = {
    "__init__": 0,
    "__main__": 14,
    "schema": 0,
    "settings": 0,
    "tasks": 0,
    "resources": 0,
    "model_configs": 0,
    "secrets": 0,
    "media": 1,
    "bench": 2,
    "runlog": 3,
    "engines": 4,
    "protocol": 5,
    "adapters": 6,
    "judges": 7,
    "scoring": 8,
    "analysis": 9,
    "stats": 9,
    "compare": 9,
    "controls": 9,
    "beyond": 9,
    "report": 9,
    "importers": 9,
    "egobench": 10,
    "view": 11,
    "collect": 12,
    "distributed": 12,
    "demo": 12,
    "cli": 13,
}

# Imports of model clients allowed only inside the engine layer.
MODEL_CLIENTS = ("openai", "vllm", "transformers", "torch", "llama_cpp")

MAX_FUNCTION_LINES = 80


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "data" not in p.relative_to(PKG).parts[:1])


def _top(path: Path) -> str:
    rel = path.relative_to(PKG)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


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
            dst_layer = LAYERS.get(parts[1])
            if src_layer is not None and dst_layer is not None and dst_layer > src_layer:
                upward.append(f"{path.relative_to(PKG.parent)}:{line} imports {name}")
    assert not upward, "imports against the flow:\n" + "\n".join(upward)


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


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_table_names_real_modules(name: str) -> None:
    # A stale entry would hide a renamed module from the checks above.
    if name == "__main__":
        pytest.skip("no interactscope/__main__.py: the CLI's entry point is interactscope.cli")
    assert (PKG / f"{name}.py").exists() or (PKG / name).is_dir()

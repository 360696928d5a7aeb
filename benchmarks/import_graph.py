"""Count the import graph between the package's top-level folders and modules.

A node is one entry directly under ``interactscope/`` (a sub-package such as ``streaming`` or a
module such as ``replies``); an edge A -> B means some module of A imports something of B
(imports inside functions count too; A != B). Run by hand:

    python benchmarks/import_graph.py            # this checkout
    python benchmarks/import_graph.py --edges    # and list the edges

Issue 23's figure before the one-spine work: 28 nodes, 119 edges.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "interactscope"


def _node(path: Path, root: Path) -> str:
    rel = path.relative_to(root)
    return rel.parts[0].removesuffix(".py")


def _targets(tree: ast.AST, module: str) -> set[str]:
    """Top-level names (``interactscope.X``) each import in ``tree`` reaches."""
    out: set[str] = set()
    pkg_parts = module.split(".")
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            names = [a.name for a in n.names]
        elif isinstance(n, ast.ImportFrom):
            if n.level:  # relative: resolve against the importing module
                base = pkg_parts[: len(pkg_parts) - n.level]
                names = [".".join([*base, *(n.module.split(".") if n.module else [])])]
                if not n.module:
                    names = [".".join([*base, a.name]) for a in n.names]
            else:
                mod = n.module or ""
                names = (
                    [mod]
                    if mod != "interactscope"
                    else [f"interactscope.{a.name}" for a in n.names]
                )
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "interactscope" and len(parts) > 1:
                out.add(parts[1])
    return out


def import_graph(root: Path = PKG) -> tuple[set[str], set[tuple[str, str]]]:
    """(nodes, edges) of the package at ``root``."""
    nodes = {p.name.removesuffix(".py") for p in root.iterdir()
             if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"}  # fmt: skip
    edges: set[tuple[str, str]] = set()
    for f in root.rglob("*.py"):
        src = _node(f, root)
        module = ".".join(["interactscope", *f.relative_to(root).with_suffix("").parts])
        module = module.removesuffix(".__init__")
        if f.name == "__init__.py":
            module += ".__init__"  # relative imports in a package resolve against the package
        for dst in _targets(ast.parse(f.read_text(encoding="utf-8")), module):
            if dst != src and dst in nodes and src != "__init__":
                edges.add((src, dst))
    return nodes, edges


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=PKG, help="the interactscope package folder")
    ap.add_argument("--edges", action="store_true", help="list the edges")
    args = ap.parse_args()
    nodes, edges = import_graph(args.root)
    nodes.discard("__init__")
    print(f"{len(nodes)} nodes, {len(edges)} edges")
    if args.edges:
        for a, b in sorted(edges):
            print(f"  {a} -> {b}")


if __name__ == "__main__":
    main()

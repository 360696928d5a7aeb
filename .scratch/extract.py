"""Move top-level definitions from a test module into a helpers module (imports copied)."""
import ast, sys, subprocess
src, dst, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
text = open(src).read()
tree = ast.parse(text)
lines = text.splitlines(keepends=True)

def defname(n):
    if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)): return [n.name]
    if isinstance(n, ast.Assign): return [t.id for t in n.targets if isinstance(t, ast.Name)]
    if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name): return [n.target.id]
    return []

imports, moved, spans = [], [], []
want = set(names)
# iterate: add undefined deps that are top-level defs in src
defs = {nm: n for n in tree.body for nm in defname(n)}
changed = True
while changed:
    changed = False
    for nm in list(want):
        n = defs[nm]
        for sub in ast.walk(n):
            if isinstance(sub, ast.Name) and sub.id in defs and sub.id not in want and sub.id != nm:
                want.add(sub.id); changed = True
for n in tree.body:
    if isinstance(n, (ast.Import, ast.ImportFrom)):
        imports.append("".join(lines[n.lineno-1:n.end_lineno]))
    elif set(defname(n)) & want:
        start = n.lineno - 1
        if hasattr(n, "decorator_list") and n.decorator_list:
            start = n.decorator_list[0].lineno - 1
        end = n.end_lineno
        # trailing docstring string expression after assignment
        idx = tree.body.index(n)
        if idx + 1 < len(tree.body):
            nx = tree.body[idx+1]
            if isinstance(nx, ast.Expr) and isinstance(nx.value, ast.Constant) and isinstance(nx.value.value, str) and isinstance(n, (ast.Assign, ast.AnnAssign)):
                end = nx.end_lineno
        spans.append((start, end))
        moved.append("".join(lines[start:end]))
import os
header = open(dst).read() if os.path.exists(dst) else f'"""{sys.argv[4] if len(sys.argv) > 4 else "Shared test helpers."}"""\n\nfrom __future__ import annotations\n\n'
body = header + "".join(i for i in imports if "__future__" not in i) + "\n\n" + "\n\n".join(moved) + "\n"
open(dst, "w").write(body)
# remove from src
for s, e in sorted(spans, reverse=True):
    del lines[s:e]
mod = dst.replace("/", ".").removesuffix(".py")
# insert import after last import
newtree = ast.parse("".join(lines))
last = max(n.end_lineno for n in newtree.body if isinstance(n, (ast.Import, ast.ImportFrom)))
lines.insert(last, f"from {mod} import {', '.join(sorted(want))}\n")
open(src, "w").write("".join(lines))
print("moved", sorted(want))

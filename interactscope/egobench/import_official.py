"""``ego import-official``: a user's own clone of an official EgoBench repository converted into
this project's data layout (docs/egobench.md, "Official data").

Two layouts are read (their structure, not their code):

- **Wind-Flipped/EgoBench** (the paper's release): ``scenarios/final/<variant>.json``,
  ``tools/<scenario>/<scenario>_tools.json``, seed databases as Python literals in
  ``tools/<scenario>/*_init.py``, videos in ``scenarios/final/video/``.
- **ego-link/egolink2026** ``code/track2/EgoBench/`` (the EgoLink 2026 challenge): the same,
  plus ``scenarios/test_GT/<variant>.json`` (the test variants with their ground truth; their
  ``final/`` files have none) and videos in ``videos/``.

Written: ``OUT/tasks/<variant>.json`` (bytes unchanged), ``OUT/tools/<scenario>_tools.json``
(unchanged), ``OUT/db/<scenario>[N].json`` from each ``<scenario>[N]_init_data[N]`` literal,
``OUT/import_report.json`` and ``OUT/ATTRIBUTION.md``. Seed files are parsed with :mod:`ast`
and read with :func:`ast.literal_eval`: nothing of the clone is imported or executed; an
assignment that is no literal is reported and skipped. Videos are never copied: the report
says which of each variant's videos ``--video-dir`` holds (``ego run --video-dir``)."""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from interactscope.core.text import plural
from interactscope.egobench.data import EgoBenchError, parse_tools, read_json
from interactscope.egobench.records import SCENARIOS

_VARIANT = re.compile(r"([a-z]+)(\d*)")
_SEED_NAME = re.compile(r"([a-z]+?)(\d*)_init_data(\d*)")
_LFS = b"version https://git-lfs"


class ImportedVariant(BaseModel):
    """One task file converted: counts, where it came from, its videos in the video folder."""

    name: str
    scenario: str
    source: str
    tasks: int
    gt_calls: int
    tasks_without_gt: int
    db: str | None = None
    tools: str | None = None
    videos_found: list[str] = Field(default_factory=list)
    videos_missing: list[str] = Field(default_factory=list)
    playable: bool = True
    notes: list[str] = Field(default_factory=list)


class ImportedDatabase(BaseModel):
    """One seed literal converted: ``OUT/db/<name>.json`` from ``variable`` in ``source``, with
    the number of entries of each top-level list."""

    name: str
    variable: str
    source: str
    entries: dict[str, int] = Field(default_factory=dict)


class ImportReport(BaseModel):
    """``OUT/import_report.json``: what was converted from which clone, and what was not."""

    format: Literal["interactscope.egobench.import/1"] = "interactscope.egobench.import/1"
    source: str
    layout: Literal["wind-flipped", "egolink2026"]
    commit: str | None = None
    video_dir: str | None = None
    variants: list[ImportedVariant] = Field(default_factory=list)
    databases: list[ImportedDatabase] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    licences: list[str] = Field(default_factory=list)


def find_root(path: str | Path) -> tuple[Path, str]:
    """The EgoBench folder of a clone and its layout.

    Raises:
        EgoBenchError: no ``scenarios/final`` and ``tools`` under PATH (or under
            ``PATH/code/track2/EgoBench``)."""
    p = Path(path).expanduser()
    for root in (p, p / "code" / "track2" / "EgoBench"):
        if (root / "scenarios" / "final").is_dir() and (root / "tools").is_dir():
            layout = "egolink2026" if (root / "scenarios" / "test_GT").is_dir() else "wind-flipped"
            if "track2" in root.parts:
                layout = "egolink2026"
            return root, layout
    raise EgoBenchError(
        f"{p}: not a clone of Wind-Flipped/EgoBench or ego-link/egolink2026 (no scenarios/final "
        "and tools/ here or under code/track2/EgoBench); see docs/egobench.md, 'Official data'"
    )


def _commit(path: Path) -> str | None:
    """The clone's HEAD commit, read from ``.git`` (no git process)."""
    for d in (path, *path.parents):
        git = d / ".git"
        if git.is_dir():
            head = (git / "HEAD").read_text(encoding="utf-8").strip()
            if head.startswith("ref: "):
                ref = git / head[5:]
                return ref.read_text(encoding="utf-8").strip() if ref.exists() else None
            return head
    return None


def _json_able(value: Any) -> Any:
    """``value`` with tuples as lists; TypeError for anything JSON cannot hold."""
    return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))


def read_seed_literals(path: Path) -> tuple[dict[str, tuple[str, Any]], list[str]]:
    """``{db name: (variable, value)}`` from the top-level ``<scenario>[N]_init_data[N] = ...``
    assignments of one ``*_init.py`` (parsed, never executed), and the skipped ones with why.
    A bare name on the right refers to an earlier literal of the same file."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError) as exc:
        return {}, [f"{path}: cannot be parsed ({type(exc).__name__}: {exc}); no database read"]
    found: dict[str, tuple[str, Any]] = {}
    values: dict[str, Any] = {}
    skipped: list[str] = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        for t in targets:
            m = _SEED_NAME.fullmatch(t.id) if isinstance(t, ast.Name) else None
            if not m:
                continue
            try:
                if isinstance(node.value, ast.Name) and node.value.id in values:
                    value = values[node.value.id]
                else:
                    value = _json_able(ast.literal_eval(node.value))
            except (ValueError, TypeError, SyntaxError, RecursionError) as exc:
                skipped.append(
                    f"{path}:{node.lineno}: {t.id} is not a plain literal ({exc}); skipped"
                )
                continue
            values[t.id] = value
            found[m[1] + (m[2] or m[3])] = (t.id, value)
    return found, skipped


def _video_state(root: Path, video_dir: Path | None, names: set[str]) -> tuple[list, list]:
    found, missing = [], []
    for n in sorted(names):
        f = video_dir / n if video_dir else None
        ok = f is not None and f.is_file()
        if ok and f.stat().st_size < 1024 and f.read_bytes().startswith(_LFS):
            missing.append(f"{n} (a Git LFS pointer: run `git lfs pull` in the clone)")
        elif ok:
            found.append(n)
        else:
            missing.append(n)
    return found, missing


def _task_source(root: Path, name: str) -> Path:
    test_gt = root / "scenarios" / "test_GT" / f"{name}.json"
    return test_gt if test_gt.is_file() else root / "scenarios" / "final" / f"{name}.json"


def _convert_variant(
    root: Path, name: str, out: Path, video_dir: Path | None, dbs: set[str], tools: set[str]
) -> ImportedVariant:
    src = _task_source(root, name)
    raw = read_json(src)
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        raise EgoBenchError(f"{src}: a task file must be a JSON list of task objects")
    scenario = _VARIANT.fullmatch(name)[1]
    (out / "tasks").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, out / "tasks" / f"{name}.json")
    gts = [len(t.get("ground_truth") or []) for t in raw]
    videos = {Path(str(t["image_path"]).split("?")[0]).name for t in raw if t.get("image_path")}
    found, missing = _video_state(root, video_dir, videos)
    db = name if name in dbs else scenario if scenario in dbs else None
    v = ImportedVariant(
        name=name,
        scenario=scenario,
        source=str(src.relative_to(root)),
        tasks=len(raw),
        gt_calls=sum(gts),
        tasks_without_gt=sum(n == 0 for n in gts),
        db=f"db/{db}.json" if db else None,
        tools=f"tools/{scenario}_tools.json" if scenario in tools else None,
        videos_found=found,
        videos_missing=missing,
    )
    if scenario not in SCENARIOS:
        v.playable = False
        v.notes.append(
            f"scenario {scenario!r} is not one this version plays ({', '.join(SCENARIOS)})"
        )
    if v.db is None:
        v.playable = False
        v.notes.append(f"no seed database ({scenario}[N]_init_data in tools/{scenario}/)")
    if v.tools is None:
        v.playable = False
        v.notes.append(f"no tool schema (tools/{scenario}/{scenario}_tools.json)")
    if name == "restaurant6":
        v.notes.append(
            "the official code plays it with its own Restaurant6DB; here: restaurant tools"
        )
    if v.tasks_without_gt:
        v.notes.append(f"{plural(v.tasks_without_gt, 'task')} without ground_truth: they score 0")
    return v


def _convert_databases(root: Path, out: Path, rep: ImportReport) -> set[str]:
    names: set[str] = set()
    for init in sorted((root / "tools").glob("*/*_init.py")):
        found, skipped = read_seed_literals(init)
        rep.skipped += [s.replace(str(root) + "/", "") for s in skipped]
        for name, (var, value) in sorted(found.items()):
            if not isinstance(value, dict):
                rep.skipped.append(f"{init.relative_to(root)}: {var} is not a dict; skipped")
                continue
            (out / "db").mkdir(parents=True, exist_ok=True)
            text = json.dumps(value, ensure_ascii=False, indent=2) + "\n"
            (out / "db" / f"{name}.json").write_text(text, encoding="utf-8")
            names.add(name)
            rep.databases.append(
                ImportedDatabase(
                    name=name,
                    variable=var,
                    source=str(init.relative_to(root)),
                    entries={k: len(x) for k, x in value.items() if isinstance(x, list)},
                )
            )
    return names


def _convert_tools(root: Path, out: Path, rep: ImportReport) -> set[str]:
    scenarios: set[str] = set()
    for f in sorted((root / "tools").glob("*/*_tools.json")):
        scenario = f.name.removesuffix("_tools.json")
        try:
            parse_tools(read_json(f), f)
        except EgoBenchError as exc:
            rep.skipped.append(f"{f.relative_to(root)}: {str(exc).split(': ', 1)[-1]}; skipped")
            continue
        (out / "tools").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, out / "tools" / f.name)
        scenarios.add(scenario)
        rep.tools.append(f"tools/{f.name}")
    return scenarios


def _default_videos(root: Path) -> Path | None:
    for d in (root / "scenarios" / "final" / "video", root / "videos"):
        if d.is_dir():
            return d
    return None


def import_official(
    path: str | Path, out: str | Path, *, video_dir: str | Path | None = None
) -> ImportReport:
    """Convert a clone of an official repository into ``out`` (see the module docstring).

    Args:
        path: the clone (its root, or ``code/track2/EgoBench`` of egolink2026).
        out: a new or empty folder.
        video_dir: where the videos are (default: the clone's own video folder).

    Raises:
        EgoBenchError: not a clone, ``out`` not empty, ``video_dir`` not a folder, an
            unreadable task file (one line naming the file)."""
    root, layout = find_root(path)
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise EgoBenchError(f"--out {out}: not empty; choose a new folder (nothing was written)")
    vd = Path(video_dir).expanduser() if video_dir else _default_videos(root)
    if video_dir and not vd.is_dir():
        raise EgoBenchError(f"--video-dir {vd}: no such folder")
    rep = ImportReport(
        source=str(root.resolve()),
        layout=layout,
        commit=_commit(root),
        video_dir=str(vd.resolve()) if vd else None,
        licences=sorted(
            p.name for p in (*root.glob("*LICENSE*"), *root.parent.glob("*LICENSE*")) if p.is_file()
        ),
    )
    out.mkdir(parents=True, exist_ok=True)
    tools = _convert_tools(root, out, rep)
    dbs = _convert_databases(root, out, rep)
    names = {p.stem for p in (root / "scenarios" / "final").glob("*.json")}
    names |= {p.stem for p in (root / "scenarios" / "test_GT").glob("*.json")}
    for name in sorted(names):
        if not _VARIANT.fullmatch(name):
            rep.skipped.append(f"scenarios/final/{name}.json: not a variant name; skipped")
            continue
        try:
            rep.variants.append(_convert_variant(root, name, out, vd, dbs, tools))
        except EgoBenchError as exc:
            rep.skipped.append(f"{exc}; skipped")
    (out / "import_report.json").write_text(rep.model_dump_json(indent=2) + "\n", encoding="utf-8")
    (out / "ATTRIBUTION.md").write_text(_attribution(rep), encoding="utf-8")
    return rep


def _attribution(rep: ImportReport) -> str:
    repo = (
        "ego-link/egolink2026 (code/track2/EgoBench)"
        if rep.layout == "egolink2026"
        else ("Wind-Flipped/EgoBench")
    )
    return (
        "# Source of this data folder\n\n"
        f"Converted by `interactscope ego import-official` from a local clone of {repo}\n"
        f"at `{rep.source}` (commit {rep.commit or 'unknown'}). Task and tool files are copied\n"
        "unchanged; `db/*.json` are the seed literals of `tools/*/*_init.py` as JSON.\n"
        "The data's licence is the repository's (EgoBench data: CC BY 4.0; see "
        f"{', '.join(rep.licences) or 'the repository'}). Do not redistribute without it.\n"
    )


def summary_lines(rep: ImportReport) -> list[str]:
    """One line per variant, database count, and every skipped item (for the CLI)."""
    lines = []
    for v in rep.variants:
        vids = f"videos {len(v.videos_found)}/{len(v.videos_found) + len(v.videos_missing)}"
        state = "" if v.playable else " NOT PLAYABLE"
        notes = f" ({'; '.join(v.notes)})" if v.notes else ""
        lines.append(
            f"{v.name}: {plural(v.tasks, 'task')}, {plural(v.gt_calls, 'GT call')} from {v.source}, "
            f"db {v.db or '-'}, {vids}{state}{notes}"
        )
    lines.append(
        f"{plural(len(rep.databases), 'seed database')}, {plural(len(rep.tools), 'tool schema')}"
    )
    lines += [f"skipped: {s}" for s in rep.skipped]
    return lines

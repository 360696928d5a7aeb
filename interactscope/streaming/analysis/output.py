"""Writing analysis tables: ``NAME.csv`` (raw numbers), ``NAME.md``, ``NAME.tex``, ``NAME.json``;
the :class:`Report` that sections of ``interactscope report`` (controls included) write into."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel

from interactscope.core.files import write_atomic

__all__ = ["jsonable", "latex_table", "write_table"]


def write_table(
    df: pd.DataFrame,
    out_dir: str | Path,
    name: str,
    *,
    markdown: str | None = None,
    latex: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Path]:
    """Write ``name.csv`` (raw numbers), ``name.md`` (``markdown`` or the frame), optionally
    ``name.tex`` and ``name.json`` (``meta``: the runs compared, options). Returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out / f"{name}.csv", "md": out / f"{name}.md"}
    write_atomic(paths["csv"], df.to_csv(index=False, float_format="%.4f", lineterminator="\n"))
    md = markdown if markdown is not None else df.to_markdown(index=False)
    write_atomic(paths["md"], md.rstrip() + "\n")
    if latex is not None:
        paths["tex"] = out / f"{name}.tex"
        write_atomic(paths["tex"], latex)
    if meta is not None:
        paths["json"] = out / f"{name}.json"
        write_atomic(paths["json"], json.dumps(jsonable(meta), indent=2, ensure_ascii=False) + "\n")
    return paths


def latex_table(df: pd.DataFrame, caption: str) -> str:
    """``DataFrame.to_latex`` (cells escaped by pandas; the caption, which pandas leaves as is,
    escaped here so "%" does not start a LaTeX comment)."""
    for ch in ("\\", "%", "&", "_", "#", "$"):
        caption = caption.replace(ch, "\\" + ch if ch != "\\" else r"\textbackslash{}")
    return df.to_latex(index=False, escape=True, caption=caption, column_format="l" * df.shape[1])


def jsonable(obj: Any) -> Any:
    """JSON-ready copy: floats to 6 decimals (NaN → null), paths → str, models → dicts."""
    if isinstance(obj, BaseModel):
        return jsonable(obj.model_dump(mode="json"))
    if isinstance(obj, float):
        return None if not np.isfinite(obj) else round(obj, 6)
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        return jsonable(obj.item())
    return obj


@dataclass
class Report:
    """What ``interactscope report`` wrote (:func:`~interactscope.streaming.analysis.report.build_report`;
    a control's report section writes into it as ``ReportSink``): ``files`` (table/figure name → paths), ``meta`` (the
    content of ``report.json``), ``markdown`` (sections of ``report.md``), ``skipped``."""

    out: Path
    files: dict[str, list[Path]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    markdown: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def add_table(
        self,
        name: str,
        title: str,
        display: pd.DataFrame,
        raw: pd.DataFrame | None = None,
        meta: dict[str, Any] | None = None,
        note: str = "",
    ) -> None:
        """Write ``name.csv/.md/.tex`` (and ``.json`` with ``meta``) and add a report section."""
        md = display.to_markdown(index=False)
        tail = f"\n{note}\n" if note else ""
        paths = write_table(
            raw if raw is not None else display,
            self.out,
            name,
            markdown=f"### {title}\n\n{md}\n" + tail,
            latex=latex_table(display, title),
            meta=meta,
        )
        self.add_files(name, sorted(paths.values()), f"## {title}\n\n{md}\n" + tail)

    def add_files(self, name: str, paths: Sequence[Path], markdown: str | None = None) -> None:
        """Record files written by a section (and its ``report.md`` text)."""
        self.files[name] = list(paths)
        if markdown is not None:
            self.markdown.append(markdown)

    def skip(self, message: str) -> None:
        self.skipped.append(message)

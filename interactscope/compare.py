"""Scored runs as bootstrap-ready ratios, and ``interactscope compare RUN_A RUN_B`` (SPEC §3.3, §3.4).

A scored run folder (``interactscope score RUN``) holds ``scores/targets.csv`` (one row per
target) and ``scores/interactions.csv`` (one row per interaction). :func:`metric_ratios` turns
these into one :class:`~interactscope.stats.Ratio` per SPEC §3.3 metric (Σ numerators / Σ
denominators, clustered by the video record's ``cluster``), or a mapping of ratios for the
six-task balanced mean. :func:`run_table` bootstraps every metric of one run with one shared set
of resampled clusters; :func:`compare_runs` pairs two runs over the same clusters
(:func:`~interactscope.stats.paired_metrics`: differences ``b − a``).

Units: ``percent`` metrics are reported in % (fractions × 100) and their paired differences in
percentage points; ``rate`` metrics (output volume) are non-silent responses per probed minute
and their differences are in responses per minute.

Refusals (:class:`CompareError`): a run folder without scores; two runs over different
benchmarks (``run.json`` fingerprint) or different interaction sets. Runs scored with a
different tolerance, merge span or judge are compared with a warning in ``notes``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interactscope.stats import (
    Ratio,
    bootstrap_metrics,
    paired_metrics,
)

__all__ = [
    "CompareError",
    "Comparison",
    "MetricSpec",
    "ScoredRun",
    "check_comparable",
    "compare_runs",
    "format_interval",
    "load_scored",
    "metric_ratios",
    "metric_specs",
    "rescore",
    "run_label",
    "run_table",
    "write_table",
]

log = logging.getLogger(__name__)

SIX_TASKS = ("T1", "T2", "T3", "T4", "T6", "T7")
EXPLICIT_TASKS = ("T1", "T2", "T3", "T4", "T5", "T6", "T7")
T8_TASKS = ("T8-A", "T8-B", "T8-C")
B_DEFAULT = 10_000


class CompareError(ValueError):
    """Two runs cannot be compared, or a run folder is not scored; the message says why."""


# ------------------------------------------------------------------------------------ runs


@dataclass
class ScoredRun:
    """A scored run in memory.

    Attributes:
        path: the run folder.
        manifest: ``run.json`` as a dict (model, settings, benchmark fingerprint, ...).
        targets: ``scores/targets.csv`` (one row per target; columns of
            :data:`interactscope.scoring.metrics.TARGET_COLUMNS`).
        interactions: ``scores/interactions.csv`` (one row per interaction).
        summary: ``scores/summary.json`` (metrics, scoring settings, judge).
        label: display name (model plus the settings that differ from the defaults).
        records: the response records, when loaded (controls that re-time responses need them).
    """

    path: Path
    manifest: dict[str, Any]
    targets: pd.DataFrame
    interactions: pd.DataFrame
    summary: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    records: list[Any] | None = None

    @property
    def settings(self) -> dict[str, Any]:
        return self.manifest.get("settings", {})

    @property
    def model(self) -> str:
        return str(self.manifest.get("model") or (self.path.name if self.path else "run"))

    @property
    def fingerprint(self) -> str | None:
        return self.manifest.get("benchmark", {}).get("fingerprint")

    @property
    def scoring(self) -> dict[str, Any]:
        return self.summary.get("settings", {})

    def describe(self) -> dict[str, Any]:
        """What a control or report records about a run it used."""
        b = self.manifest.get("benchmark", {})
        return {
            "path": str(self.path),
            "label": self.label,
            "model": self.model,
            "backend": self.manifest.get("backend"),
            "protocol": self.manifest.get("protocol"),
            "non_default_settings": non_default_settings(self.settings),
            "benchmark": {k: b.get(k) for k in ("name", "version", "fingerprint")},
            "scoring": {
                "tolerance_s": self.scoring.get("tolerance_s"),
                "merge_s": self.scoring.get("merge_s"),
                "judge": (self.scoring.get("judge") or {}).get("name"),
            },
        }


_DEFAULTS: dict[str, Any] | None = None


def _flat_defaults() -> dict[str, Any]:
    global _DEFAULTS
    if _DEFAULTS is None:
        from interactscope.settings import Settings, flatten

        _DEFAULTS = flatten(Settings().model_dump())
    return _DEFAULTS


def non_default_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted settings whose value differs from :class:`interactscope.settings.Settings`
    defaults (``adapter.*`` included), e.g. ``{"scene": "none", "cooldown_s": 10.0}``."""
    from interactscope.settings import flatten

    d = _flat_defaults()
    flat = flatten(dict(settings))
    return {k: v for k, v in sorted(flat.items()) if k != "protocol" and d.get(k, object()) != v}


def run_label(manifest: Mapping[str, Any]) -> str:
    """``model`` plus its non-default settings, e.g. ``oracle (scene=none)``."""
    model = str(manifest.get("model", "run"))
    extra = non_default_settings(manifest.get("settings", {}))
    if not extra:
        return model
    return model + " (" + ", ".join(f"{k}={_fmt_setting(v)}" for k, v in extra.items()) + ")"


def _fmt_setting(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _read_frames(scores: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    t = pd.read_csv(scores / "targets.csv", keep_default_na=True, dtype={"cluster": str})
    i = pd.read_csv(scores / "interactions.csv", dtype={"cluster": str})
    return t, i


def load_scored(run_dir: str | Path, *, scores_dir: str | Path | None = None) -> ScoredRun:
    """Read a scored run folder (``run.json`` + ``scores/``).

    Raises:
        CompareError: not a run folder, or not scored yet (the message names the command).
    """
    path = Path(run_dir)
    man = path / "run.json"
    if not man.exists():
        raise CompareError(f"{path}: not a run folder (no run.json)")
    scores = Path(scores_dir) if scores_dir else path / "scores"
    if not (scores / "targets.csv").exists() or not (scores / "interactions.csv").exists():
        raise CompareError(
            f"{path}: not scored yet (no {scores / 'targets.csv'}); run "
            f"`interactscope score {path}` first"
        )
    manifest = json.loads(man.read_text(encoding="utf-8"))
    summary_path = scores / "summary.json"
    summary = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.exists() else {}
    targets, interactions = _read_frames(scores)
    return ScoredRun(path, manifest, targets, interactions, summary, run_label(manifest))


def rescore(
    run_dir: str | Path,
    *,
    tolerance_s: float = 2.0,
    merge_s: float | None = None,
    judge: str | None = None,
    records: Sequence[Any] | None = None,
    tasks: Sequence[str] | None = None,
) -> ScoredRun:
    """Score a run folder in memory (nothing written besides the verdict cache) — for tolerance
    sensitivity and re-timed responses.

    Args:
        tolerance_s: δ in seconds (SPEC §3.4 tolerance sensitivity: 1, 2, 4).
        merge_s: grouping span; default the one the run was scored with, else 2 s.
        judge: ``--judge`` string; default the judge the run was scored with (its ``name``),
            else ``lexical``. The run's verdict cache (``scores/verdicts.sqlite``) is reused.
        records: response records to score instead of the run's own (e.g. re-timed ones).
        tasks: score only these tasks (e.g. ``("T1",)``: the tool-set check, no judge calls).

    Raises:
        CompareError: not a run folder.
    """
    from interactscope.judges import VerdictCache, make_judge
    from interactscope.runlog import RunFolder, RunLogError
    from interactscope.scoring.run import score_collection

    path = Path(run_dir)
    try:
        folder = RunFolder(path)
    except RunLogError as exc:
        raise CompareError(str(exc)) from exc
    manifest = json.loads((path / "run.json").read_text(encoding="utf-8"))
    old = {}
    if (path / "scores" / "summary.json").exists():
        old = json.loads((path / "scores" / "summary.json").read_text(encoding="utf-8"))
    old_settings = old.get("settings", {})
    if judge is None:
        judge = (old_settings.get("judge") or {}).get("name") or "lexical"
    if merge_s is None:
        merge_s = float(old_settings.get("merge_s", 2.0))
    judge_obj = make_judge(judge)
    m = folder.manifest
    bench = folder.benchmark(probe_media=False, media_errors="record")
    wanted = set(m.interaction_ids) if m.interaction_ids else None
    inters = [
        i
        for i in bench.interactions
        if (wanted is None or i.id in wanted) and (tasks is None or i.task in tasks)
    ]
    clusters = {vid: (v.cluster or vid) for vid, v in bench.videos.items()}
    recs = list(records) if records is not None else folder.responses()
    cache = None
    if not judge_obj.per_item:
        (path / "scores").mkdir(exist_ok=True)
        cache = VerdictCache(path / "scores" / "verdicts.sqlite")
    try:
        res = score_collection(
            inters,
            recs,
            clusters,
            judge_obj,
            cache=cache,
            tolerance_s=tolerance_s,
            merge_s=merge_s,
            run_info={"model": m.model},
        )
    finally:
        if cache is not None:
            cache.close()
    t = res.targets.copy()
    i = res.interactions.copy()
    t["cluster"] = t["cluster"].astype(str)
    i["cluster"] = i["cluster"].astype(str)
    return ScoredRun(path, manifest, t, i, res.summary, run_label(manifest), recs)


def check_comparable(a: ScoredRun, b: ScoredRun) -> list[str]:
    """Refuse runs that cannot be paired; return warnings for those that can with caveats.

    Raises:
        CompareError: different benchmark fingerprints, or different interaction sets (the
            message lists up to 5 ids present in only one run).
    """
    fa, fb = a.fingerprint, b.fingerprint
    if fa != fb:
        ba, bb = a.manifest.get("benchmark", {}), b.manifest.get("benchmark", {})
        raise CompareError(
            "the runs were collected on different benchmarks: "
            f"{a.path} is {ba.get('name')} v{ba.get('version')} (fingerprint {fa}), "
            f"{b.path} is {bb.get('name')} v{bb.get('version')} (fingerprint {fb}); "
            "paired differences need the same interactions and clusters"
        )
    ia = set(a.interactions["interaction_id"])
    ib = set(b.interactions["interaction_id"])
    if ia != ib:
        only_a, only_b = sorted(ia - ib), sorted(ib - ia)
        raise CompareError(
            f"the runs cover different interactions ({len(ia)} vs {len(ib)}): "
            f"only in {a.path}: {only_a[:5]}{' …' if len(only_a) > 5 else ''}; "
            f"only in {b.path}: {only_b[:5]}{' …' if len(only_b) > 5 else ''} "
            "(a shard cannot be paired with a full run; merge shards first)"
        )
    ca = a.interactions.set_index("interaction_id")["cluster"].astype(str)
    cb = b.interactions.set_index("interaction_id")["cluster"].astype(str)
    if not ca.sort_index().equals(cb.sort_index()):
        raise CompareError("the runs assign interactions to different clusters")
    notes = []
    for key in ("tolerance_s", "merge_s"):
        va, vb = a.scoring.get(key), b.scoring.get(key)
        if va != vb:
            notes.append(f"scored with different {key}: {va} vs {vb}")
    ja = (a.scoring.get("judge") or {}).get("name")
    jb = (b.scoring.get("judge") or {}).get("name")
    if ja != jb:
        notes.append(f"scored with different judges: {ja} vs {jb}")
    return notes


# ------------------------------------------------------------------------------------ metrics


@dataclass(frozen=True)
class MetricSpec:
    """A reported metric: ``name`` (row label), ``kind`` (``percent`` | ``rate``), ``section``."""

    name: str
    kind: str
    section: str


def _col(df: pd.DataFrame, name: str, default: float = 0.0) -> np.ndarray:
    return pd.to_numeric(df[name], errors="coerce").fillna(default).to_numpy(dtype=float)


def _ratio(df: pd.DataFrame, num: str, den: str | None) -> Ratio:
    d = None if den is None else _col(df, den)
    return Ratio(_col(df, num), d, df["cluster"].astype(str).to_numpy())


def metric_ratios(
    targets: pd.DataFrame, interactions: pd.DataFrame, *, beyond: bool = True
) -> dict[str, Any]:
    """One clustered ratio per SPEC §3.3 metric present in the frames.

    Args:
        targets: one row per target (``task, cluster, hit, scored, on_time``).
        interactions: one row per interaction (``task, cluster, hits, responses, probed_s,
            complete``).
        beyond: add output precision (matched outputs / non-silent outputs), beyond the paper.

    Returns:
        ``{name: Ratio | {task: Ratio}}`` in the order of :func:`metric_specs`: ``T1 on-time``,
        ``T1 joint``, ``T1 conditional`` (= joint / on-time), ``T2`` … ``T7`` (hits / scored
        targets; T1's score is its joint accuracy), ``Avg(6)`` (balanced mean of the T1, T2, T3, T4, T6, T7 present),
        ``T8-A``, ``T8-B``, ``T8-C steps`` (timely recall), ``Complete T8-C`` (episodes with every
        step matched / episodes), ``Overall``, ``Output volume`` (responses per probed minute,
        all / explicit / assistance) and, with ``beyond``, ``Output precision`` (Σ hits /
        Σ non-silent responses; each hit matches exactly one response).
    """
    out: dict[str, Any] = {}
    t = targets
    tasks = set(t["task"])
    if "T1" in tasks:
        t1 = t[t["task"] == "T1"]
        out["T1 on-time"] = _ratio(t1, "on_time", None)
        out["T1 joint"] = _ratio(t1, "hit", None)
        out["T1 conditional"] = _ratio(t1, "hit", "on_time")
    per_task = {
        task: _ratio(t[t["task"] == task], "hit", "scored")
        for task in EXPLICIT_TASKS
        if task in tasks
    }
    # T1's task score equals its joint accuracy; it is reported once, as "T1 joint".
    out.update({k: v for k, v in per_task.items() if k != "T1"})
    six = {task: per_task[task] for task in SIX_TASKS if task in per_task}
    if six:
        out["Avg(6)"] = six
    for task in T8_TASKS:
        if task in tasks:
            out[task if task != "T8-C" else "T8-C steps"] = _ratio(
                t[t["task"] == task], "hit", "scored"
            )
    i = interactions
    ep = i[(i["task"] == "T8-C") & i["complete"].notna()]
    if len(ep):
        out["Complete T8-C"] = _ratio(ep, "complete", None)
    if len(t):
        out["Overall"] = _ratio(t, "hit", "scored")
    if len(i):
        vol = i.assign(probed_min=_col(i, "probed_s") / 60.0)
        out["Output volume"] = _ratio(vol, "responses", "probed_min")
        for panel in ("explicit", "assistance"):
            sub = vol[vol["panel"] == panel]
            if len(sub):
                out[f"Output volume {panel}"] = _ratio(sub, "responses", "probed_min")
        if beyond:
            out["Output precision"] = _ratio(i, "hits", "responses")
            for panel in ("explicit", "assistance"):
                sub = i[i["panel"] == panel]
                if len(sub):
                    out[f"Output precision {panel}"] = _ratio(sub, "hits", "responses")
    return out


def metric_specs(names: Sequence[str]) -> list[MetricSpec]:
    """Kind and section of each metric name of :func:`metric_ratios`."""
    specs = []
    for n in names:
        if n.startswith("Output volume"):
            specs.append(MetricSpec(n, "rate", "volume"))
        elif n.startswith("Output precision"):
            specs.append(MetricSpec(n, "percent", "beyond the paper"))
        elif n.startswith("T8") or n == "Complete T8-C":
            specs.append(MetricSpec(n, "percent", "assistance (T8)"))
        elif n == "Overall":
            specs.append(MetricSpec(n, "percent", "overall"))
        else:
            specs.append(MetricSpec(n, "percent", "explicit (T1-T7)"))
    return specs


def _scale(kind: str) -> float:
    return 100.0 if kind == "percent" else 1.0


def _counts(r: Any) -> str:
    if isinstance(r, Mapping):
        return f"{len(r)} tasks"
    num, den = float(r.numerators.sum()), float(r.denominators.sum())
    if float(num).is_integer() and float(den).is_integer():
        return f"{int(num)}/{int(den)}"
    return f"{num:g}/{den:.2f}"


def run_table(
    run: ScoredRun | tuple[pd.DataFrame, pd.DataFrame],
    *,
    n_resamples: int = B_DEFAULT,
    seed: int = 0,
    confidence: float = 0.95,
    beyond: bool = True,
) -> pd.DataFrame:
    """Every metric of one run with its cluster-bootstrap interval (SPEC §3.4).

    Returns:
        One row per metric: ``metric, kind, section, unit, estimate, low, high, counts,
        n_clusters, note``; ``estimate/low/high`` in % for percent metrics, responses/min for
        rates; NaN where a ratio is undefined (e.g. conditional accuracy with no on-time
        response: ``note`` says so).
    """
    import warnings

    from interactscope.stats import StatsWarning

    t, i = (run.targets, run.interactions) if isinstance(run, ScoredRun) else run
    ratios = metric_ratios(t, i, beyond=beyond)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        res = bootstrap_metrics(
            ratios,
            n_resamples=n_resamples,
            seed=seed,
            confidence=confidence,
            undefined="nan",
        )
    rows = []
    for spec in metric_specs(list(ratios)):
        r = res[spec.name]
        s = _scale(spec.kind)
        rows.append(
            {
                "metric": spec.name,
                "kind": spec.kind,
                "section": spec.section,
                "unit": "%" if spec.kind == "percent" else "responses/min",
                "estimate": s * r.estimate,
                "low": s * r.low,
                "high": s * r.high,
                "counts": _counts(ratios[spec.name]),
                "n_clusters": r.n_clusters,
                "note": r.note or "",
            }
        )
    return pd.DataFrame(rows)


@dataclass
class Comparison:
    """Result of :func:`compare_runs`: ``table`` (one row per metric), ``notes`` (caveats),
    ``runs`` (what was compared), ``options`` (B, seed, confidence)."""

    table: pd.DataFrame
    notes: list[str]
    runs: dict[str, Any]
    options: dict[str, Any]

    def markdown(self) -> str:
        cols = {
            "metric": "metric",
            "A": self.runs["a"]["label"],
            "B": self.runs["b"]["label"],
            "B − A": "B − A (pp or /min) [95% CI]",
        }
        df = pd.DataFrame(
            {
                cols["metric"]: self.table["metric"],
                "A: " + cols["A"]: [
                    format_interval(r.a, r.a_low, r.a_high) for r in self.table.itertuples()
                ],
                "B: " + cols["B"]: [
                    format_interval(r.b, r.b_low, r.b_high) for r in self.table.itertuples()
                ],
                cols["B − A"]: [
                    format_interval(r.diff, r.diff_low, r.diff_high, signed=True)
                    for r in self.table.itertuples()
                ],
            }
        )
        return df.to_markdown(index=False)


def format_interval(est: float, low: float, high: float, *, signed: bool = False) -> str:
    """``"12.50 [3.00, 20.00]"``; ``"—"`` for NaN. Two decimals, like the paper."""
    if est is None or not np.isfinite(est):
        return "—"
    f = "{:+.2f}" if signed else "{:.2f}"
    if low is None or not np.isfinite(low):
        return f.format(est)
    return f"{f.format(est)} [{f.format(low)}, {f.format(high)}]"


def paired_table(
    a: tuple[pd.DataFrame, pd.DataFrame],
    b: tuple[pd.DataFrame, pd.DataFrame],
    *,
    n_resamples: int = B_DEFAULT,
    seed: int = 0,
    confidence: float = 0.95,
    beyond: bool = True,
    only: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Per-metric values of two runs and their paired differences ``b − a`` (same clusters).

    ``a``/``b``: (targets, interactions) frames over the same interactions. ``only`` keeps the
    named metrics. Returns columns ``metric, kind, unit, a, a_low, a_high, a_counts, b, b_low,
    b_high, b_counts, diff, diff_low, diff_high, diff_unit, n_clusters, note``.
    """
    import warnings

    from interactscope.stats import StatsWarning

    ra = metric_ratios(*a, beyond=beyond)
    rb = metric_ratios(*b, beyond=beyond)
    names = [n for n in ra if n in rb and (only is None or n in only)]
    ra = {n: ra[n] for n in names}
    rb = {n: rb[n] for n in names}
    opts = dict(n_resamples=n_resamples, seed=seed, confidence=confidence, undefined="nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        ba = bootstrap_metrics(ra, **opts)
        bb = bootstrap_metrics(rb, **opts)
        pd_ = paired_metrics(ra, rb, strict=False, **opts)
    rows = []
    for spec in metric_specs(names):
        n = spec.name
        s = _scale(spec.kind)
        d = pd_[n]
        # paired_metrics reports percentage points (× 100); a rate's difference is per minute.
        ds = 1.0 if spec.kind == "percent" else 0.01
        rows.append(
            {
                "metric": n,
                "kind": spec.kind,
                "unit": "%" if spec.kind == "percent" else "responses/min",
                "a": s * ba[n].estimate,
                "a_low": s * ba[n].low,
                "a_high": s * ba[n].high,
                "a_counts": _counts(ra[n]),
                "b": s * bb[n].estimate,
                "b_low": s * bb[n].low,
                "b_high": s * bb[n].high,
                "b_counts": _counts(rb[n]),
                "diff": ds * d.estimate,
                "diff_low": ds * d.low,
                "diff_high": ds * d.high,
                "diff_unit": "pp" if spec.kind == "percent" else "responses/min",
                "n_clusters": d.n_clusters,
                "note": d.note or "",
            }
        )
    return pd.DataFrame(rows)


def compare_runs(
    run_a: str | Path | ScoredRun,
    run_b: str | Path | ScoredRun,
    *,
    n_resamples: int = B_DEFAULT,
    seed: int = 0,
    confidence: float = 0.95,
    beyond: bool = True,
) -> Comparison:
    """Every metric of two scored runs with paired differences ``b − a`` (SPEC §3.4).

    Clusters are matched by id: each resample draws the same clusters for both runs. Percent
    metrics: values in %, differences in percentage points; output volume: responses/min.

    Raises:
        CompareError: unscored run, different benchmarks or different interaction sets.
    """
    a = run_a if isinstance(run_a, ScoredRun) else load_scored(run_a)
    b = run_b if isinstance(run_b, ScoredRun) else load_scored(run_b)
    notes = check_comparable(a, b)
    table = paired_table(
        (a.targets, a.interactions),
        (b.targets, b.interactions),
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        beyond=beyond,
    )
    n_cl = a.interactions["cluster"].nunique()
    if n_cl < 2:
        notes.append(f"only {n_cl} cluster: intervals are the point estimates")
    return Comparison(
        table=table,
        notes=notes,
        runs={"a": a.describe(), "b": b.describe()},
        options={
            "n_resamples": n_resamples,
            "seed": seed,
            "confidence": confidence,
            "clusters": int(n_cl),
            "difference": "b - a",
        },
    )


# ------------------------------------------------------------------------------------ output


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
    df.to_csv(paths["csv"], index=False, float_format="%.4f", lineterminator="\n")
    md = markdown if markdown is not None else df.to_markdown(index=False)
    paths["md"].write_text(md.rstrip() + "\n", encoding="utf-8")
    if latex is not None:
        paths["tex"] = out / f"{name}.tex"
        paths["tex"].write_text(latex, encoding="utf-8")
    if meta is not None:
        paths["json"] = out / f"{name}.json"
        paths["json"].write_text(
            json.dumps(_jsonable(meta), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    return paths


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, float):
        return None if not np.isfinite(obj) else round(obj, 6)
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        return _jsonable(obj.item())
    return obj

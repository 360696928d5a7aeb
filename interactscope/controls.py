"""Evidence controls (SPEC §3.4; paper Tables 8 and 10, Figure 3): do scores come from seeing the
stream, from the request text, or from the response policy?

Every control returns a :class:`ControlResult` — a tidy table (raw numbers, CSV), a Markdown
rendering and ``meta`` (the runs it compared, their non-default settings, options) — and
:meth:`ControlResult.write` puts ``NAME.csv``, ``NAME.md`` and ``NAME.json`` into a folder.

* :func:`scene_ablation` — a ``scene=none`` run against the full run of the same model, paired,
  re-scored at tolerances δ ∈ {1, 2, 4} s (paper: T1 joint −1.50 / −3.50 / −13.00 pp).
* :func:`request_prior` — T1 tool labels predicted from the request text alone: the tool names
  of each T1 interaction's first non-silent response in a ``scene=none`` run; recovery rate
  against the targets' tool sets, beside the constant most-frequent-tool baseline
  (paper: 193/200 = 96.5 % vs "always image search" 59.5 %).
* :func:`blind_fire` — those labels fired once at q + d, d ∈ {0, 1, 2, 3, 5, 8} s, scored by
  first-response allocation (simulated from the labels, nothing re-collected; paper: 68.0 % at
  d = 3).
* :func:`policy_controls` — history (``history.n`` = 5) and cooldown (``cooldown_s`` = 10) runs
  against the plain run on T8-A: recall, output count, output volume, paired intervals, and the
  targets gained/lost (paper Table 10: 22/122 → 22/122 with 58.09 % fewer outputs; cooldown
  10/122, −9.84 pp [−17.24, −2.46]).
* :func:`schedule_control` — the same model on the per-second grid and a sparser one
  (``grid.step_s``), every metric paired (paper: six-task mean 26.80 → 19.17 %).
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interactscope.compare import (
    B_DEFAULT,
    CompareError,
    ScoredRun,
    check_comparable,
    format_interval,
    load_scored,
    non_default_settings,
    paired_table,
    rescore,
    write_table,
)
from interactscope.judges.toolset import tool_names
from interactscope.schema import Interaction, ResponseRecord, ToolCall
from interactscope.scoring.allocation import allocate_first_response, ms
from interactscope.stats import (
    Ratio,
    StatsWarning,
    UndefinedRatioError,
    bootstrap_metrics,
    cluster_bootstrap,
    paired_metrics,
)

__all__ = [
    "BLIND_FIRE_DELAYS",
    "TOLERANCES",
    "ControlResult",
    "blind_fire",
    "constant_tool",
    "policy_controls",
    "request_labels",
    "request_prior",
    "scene_ablation",
    "schedule_control",
    "simulate_blind_fire",
]

TOLERANCES: tuple[float, ...] = (1.0, 2.0, 4.0)
BLIND_FIRE_DELAYS: tuple[float, ...] = (0.0, 1.0, 2.0, 3.0, 5.0, 8.0)


@dataclass
class ControlResult:
    """A control's output: ``table`` (raw numbers), ``markdown``, ``meta`` (runs, options)."""

    name: str
    table: pd.DataFrame
    markdown: str
    meta: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def write(self, out_dir: str | Path, *, latex: str | None = None) -> dict[str, Path]:
        """Write ``NAME.csv``, ``NAME.md``, ``NAME.json`` (and ``NAME.tex``) into ``out_dir``."""
        return write_table(
            self.table,
            out_dir,
            self.name,
            markdown=self.markdown,
            latex=latex,
            meta={"control": self.name, **self.meta},
        )


def _opts(n_resamples: int, seed: int, confidence: float) -> dict[str, Any]:
    return {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}


def _load(run: str | Path | ScoredRun) -> ScoredRun:
    return run if isinstance(run, ScoredRun) else load_scored(run)


def _setting(run: ScoredRun, dotted: str, default: Any) -> Any:
    cur: Any = run.settings
    for part in dotted.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return default
        cur = cur[part]
    return cur


def _other_differences(a: ScoredRun, b: ScoredRun, allowed: Sequence[str]) -> list[str]:
    """Non-default settings that differ between the runs, besides the ``allowed`` keys."""
    na, nb = non_default_settings(a.settings), non_default_settings(b.settings)
    keys = sorted((set(na) | set(nb)) - set(allowed))
    out = [f"{k}: {na.get(k, '<default>')!r} vs {nb.get(k, '<default>')!r}" for k in keys]
    out = [d for d, k in zip(out, keys, strict=True) if na.get(k) != nb.get(k)]
    if a.model != b.model:
        out.insert(0, f"model: {a.model!r} vs {b.model!r}")
    return out


# ------------------------------------------------------------------------------ scene ablation


def scene_ablation(
    full: str | Path,
    none: str | Path,
    *,
    tolerances: Sequence[float] = TOLERANCES,
    metrics: Sequence[str] = ("T1 joint", "T1 on-time"),
    judge: str | None = None,
    n_resamples: int = B_DEFAULT,
    seed: int = 0,
    confidence: float = 0.95,
) -> ControlResult:
    """Scene ablation at several tolerances: ``none − full`` paired, in percentage points.

    Both runs are re-scored in memory at each δ (seconds) with the judge they were scored with
    (or ``judge``); with only T1 metrics (the paper's Figure 3, the default) only the T1
    interactions are re-scored, by the tool-set check, so no judge is called. Other metric
    names of :func:`interactscope.compare.metric_ratios` (e.g. ``Avg(6)``) re-score every task. Rows: ``tolerance_s, metric, full, full_low, full_high, none, none_low,
    none_high, diff, diff_low, diff_high`` (values in %, differences in pp).

    Raises:
        CompareError: ``none`` was not collected with ``scene=none`` (or ``full`` was), or the
            runs cover different benchmarks/interactions.
    """
    full_p, none_p = Path(full), Path(none)
    rows = []
    notes: list[str] = []
    ra = rb = None
    tasks = ("T1",) if all(m.startswith("T1") for m in metrics) else None
    for tol in tolerances:
        ra = rescore(full_p, tolerance_s=float(tol), judge=judge, tasks=tasks)
        rb = rescore(none_p, tolerance_s=float(tol), judge=judge, tasks=tasks)
        if tol == tolerances[0]:
            if _setting(rb, "scene", "full") != "none":
                raise CompareError(f"{none_p} was not collected with --set scene=none")
            if _setting(ra, "scene", "full") != "full":
                raise CompareError(f"{full_p} is a scene=none run; give the full run first")
            check_comparable(ra, rb)
            notes += [
                f"settings differ besides scene: {d}" for d in _other_differences(ra, rb, ["scene"])
            ]
        t = paired_table(
            (ra.targets, ra.interactions),
            (rb.targets, rb.interactions),
            only=metrics,
            **_opts(n_resamples, seed, confidence),
        )
        t.insert(0, "tolerance_s", float(tol))
        rows.append(t)
    table = pd.concat(rows, ignore_index=True)
    table = table.rename(
        columns={
            "a": "full",
            "a_low": "full_low",
            "a_high": "full_high",
            "a_counts": "full_counts",
            "b": "none",
            "b_low": "none_low",
            "b_high": "none_high",
            "b_counts": "none_counts",
        }
    )
    md = pd.DataFrame(
        {
            "δ (s)": table["tolerance_s"].map(lambda x: f"{x:g}"),
            "metric": table["metric"],
            "with scene": [
                format_interval(r.full, r.full_low, r.full_high) for r in table.itertuples()
            ],
            "request only (scene=none)": [
                format_interval(r.none, r.none_low, r.none_high) for r in table.itertuples()
            ],
            "Δ none − full (pp)": [
                format_interval(r.diff, r.diff_low, r.diff_high, signed=True)
                for r in table.itertuples()
            ],
        }
    ).to_markdown(index=False)
    assert ra is not None and rb is not None
    meta = {
        "runs": {"full": ra.describe(), "none": rb.describe()},
        "tolerances_s": [float(x) for x in tolerances],
        "difference": "none - full, percentage points",
        "options": _opts(n_resamples, seed, confidence),
        "notes": notes,
    }
    return ControlResult("scene_ablation", table, md, meta)


# ------------------------------------------------------------------------------ request prior


def constant_tool(interactions: Sequence[Interaction]) -> str | None:
    """The tool named most often by the T1 targets (ties: alphabetical; SPEC §3.4's constant
    baseline, the same rule as the ``blind-fire`` baseline model). ``None`` without T1."""
    counts: Counter[str] = Counter()
    for it in interactions:
        if it.task == "T1":
            for tg in it.targets:
                counts.update(tg.tools or [])
    if not counts:
        return None
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def request_labels(
    interactions: Sequence[Interaction],
    records: Sequence[ResponseRecord],
    *,
    source: str = "first",
) -> dict[str, frozenset[str]]:
    """Predicted tool labels per T1 interaction from a request-only (``scene=none``) run.

    Args:
        source: ``first`` — the tool names of the first non-silent, error-free response at or
            after q (the paper's one call at q, for a model that may answer later on the grid);
            ``at_q`` — the record at t = q only.

    Returns:
        interaction id → case-folded tool names (empty: the model called no tool / stayed
        silent). T1 interactions without records are absent.
    """
    if source not in ("first", "at_q"):
        raise ValueError("source must be 'first' or 'at_q'")
    by_id: dict[str, list[ResponseRecord]] = {}
    for r in records:
        by_id.setdefault(r.interaction_id, []).append(r)
    out: dict[str, frozenset[str]] = {}
    for it in interactions:
        if it.task != "T1" or it.id not in by_id:
            continue
        recs = sorted(by_id[it.id], key=lambda r: ms(r.t))
        q = ms(it.q)
        if source == "at_q":
            cand = [r for r in recs if ms(r.t) == q and not r.error]
            out[it.id] = (
                tool_names(cand[0].tool_calls) if cand and not cand[0].silent else frozenset()
            )
            continue
        cand = [
            r for r in recs if ms(r.t) >= q and not r.error and not r.silent and not r.suppressed
        ]
        out[it.id] = tool_names(cand[0].tool_calls) if cand else frozenset()
    return out


def _target_tools(tg: Any) -> frozenset[str]:
    return frozenset(n.strip().casefold() for n in (tg.tools or []) if n.strip())


def _run_inputs(
    run: str | Path,
) -> tuple[None, list[Interaction], list[ResponseRecord], dict[str, str], dict[str, Any]]:
    """(unused, interactions, records, interaction id → cluster, manifest dict) of a run
    folder; scores are not needed."""
    from interactscope.runlog import RunFolder, RunLogError

    try:
        folder = RunFolder(run)
    except RunLogError as exc:
        raise CompareError(str(exc)) from exc
    m = folder.manifest
    bench = folder.benchmark(probe_media=False, media_errors="record")
    wanted = set(m.interaction_ids) if m.interaction_ids else None
    inters = [i for i in bench.interactions if wanted is None or i.id in wanted]
    clusters = {
        i.id: str(bench.videos[i.video_id].cluster or i.video_id)
        if i.video_id in bench.videos
        else i.video_id
        for i in inters
    }
    manifest = m.model_dump(mode="json")
    return None, inters, folder.responses(), clusters, manifest


def _prior_frame(
    interactions: Sequence[Interaction],
    labels: Mapping[str, frozenset[str]],
    clusters: Mapping[str, str],
    constant: str | None,
) -> pd.DataFrame:
    rows = []
    const = frozenset([constant.casefold()]) if constant else frozenset()
    for it in interactions:
        if it.task != "T1":
            continue
        pred = labels.get(it.id, frozenset())
        for tg in it.targets:
            want = _target_tools(tg)
            rows.append(
                {
                    "interaction_id": it.id,
                    "target_id": tg.id,
                    "cluster": clusters.get(it.id, it.video_id),
                    "target_tools": " ".join(sorted(want)),
                    "predicted_tools": " ".join(sorted(pred)),
                    "recovered": int(pred == want),
                    "constant_tools": " ".join(sorted(const)),
                    "constant_recovered": int(const == want),
                }
            )
    return pd.DataFrame(rows)


def request_prior(
    run: str | Path,
    *,
    source: str = "first",
    n_resamples: int = B_DEFAULT,
    seed: int = 0,
    confidence: float = 0.95,
    require_scene_none: bool = True,
) -> ControlResult:
    """Request-prior control on the T1 targets (SPEC §3.4; paper Table 8).

    Args:
        run: a run collected with ``--set scene=none`` (request text only); it need not be scored.
        source: where the labels come from (:func:`request_labels`).
        require_scene_none: refuse a run with scene input (``CompareError``).

    Returns:
        Table rows ``predictor`` (the run's label / ``constant: TOOL``), ``recovered``,
        ``targets``, ``rate`` / ``low`` / ``high`` (%, cluster bootstrap), and the paired
        difference model − constant (pp) on the model row. ``extra["targets"]``: per-target
        frame; ``extra["labels"]``: the labels.
    """
    _, inters, recs, clusters, manifest = _run_inputs(run)
    scene = manifest.get("settings", {}).get("scene", "full")
    if require_scene_none and scene != "none":
        raise CompareError(
            f"{run}: the request prior needs a run collected with --set scene=none (this one has scene={scene})"
        )
    labels = request_labels(inters, recs, source=source)
    const = constant_tool(inters)
    frame = _prior_frame(inters, labels, clusters, const)
    if frame.empty:
        raise CompareError(f"{run}: no T1 interaction to build a request prior from")
    from interactscope.compare import run_label

    label = run_label(manifest)
    r_model = Ratio.from_frame(frame, "recovered")
    r_const = Ratio.from_frame(frame, "constant_recovered")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        boot = bootstrap_metrics(
            {"model": r_model, "constant": r_const}, **_opts(n_resamples, seed, confidence)
        )
        diff = paired_metrics(
            {"x": r_const}, {"x": r_model}, **_opts(n_resamples, seed, confidence)
        )["x"]
    n = len(frame)
    table = pd.DataFrame(
        [
            {
                "predictor": f"request labels: {label}",
                "recovered": int(frame["recovered"].sum()),
                "targets": n,
                "rate": 100 * boot["model"].estimate,
                "low": 100 * boot["model"].low,
                "high": 100 * boot["model"].high,
                "diff_vs_constant": diff.estimate,
                "diff_low": diff.low,
                "diff_high": diff.high,
            },
            {
                "predictor": f"constant: {const}",
                "recovered": int(frame["constant_recovered"].sum()),
                "targets": n,
                "rate": 100 * boot["constant"].estimate,
                "low": 100 * boot["constant"].low,
                "high": 100 * boot["constant"].high,
                "diff_vs_constant": np.nan,
                "diff_low": np.nan,
                "diff_high": np.nan,
            },
        ]
    )
    md = pd.DataFrame(
        {
            "predictor (T1, request text only)": table["predictor"],
            "labels recovered": [f"{r.recovered}/{r.targets}" for r in table.itertuples()],
            "rate % [95% CI]": [format_interval(r.rate, r.low, r.high) for r in table.itertuples()],
            "Δ vs constant (pp)": [
                format_interval(r.diff_vs_constant, r.diff_low, r.diff_high, signed=True)
                for r in table.itertuples()
            ],
        }
    ).to_markdown(index=False)
    meta = {
        "runs": {
            "request_only": {
                "path": str(run),
                "label": label,
                "model": manifest.get("model"),
                "non_default_settings": non_default_settings(manifest.get("settings", {})),
                "benchmark": manifest.get("benchmark"),
            }
        },
        "label_source": source,
        "constant_tool": const,
        "options": _opts(n_resamples, seed, confidence),
    }
    return ControlResult(
        "request_prior", table, md, meta, {"targets": frame, "labels": labels, "constant": const}
    )


# ------------------------------------------------------------------------------ blind fire


def simulate_blind_fire(
    interactions: Sequence[Interaction],
    labels: Mapping[str, frozenset[str] | Sequence[str]],
    *,
    delays: Sequence[float] = BLIND_FIRE_DELAYS,
    clip_end: Mapping[str, float] | None = None,
    clusters: Mapping[str, str] | None = None,
    tolerance_s: float = 2.0,
    merge_s: float = 2.0,
) -> pd.DataFrame:
    """Fire each T1 interaction's labels once at q + d and score it (SPEC §3.1, §3.4).

    Args:
        labels: interaction id → tool names to call (empty or absent: nothing is fired).
        delays: d in seconds.
        clip_end: interaction id → last decision time D (s); a shot after D is not fired
            (absent: no limit).
        clusters: interaction id → bootstrap cluster (default: the video id).
        tolerance_s: δ, seconds. merge_s: grouping span.

    Returns:
        One row per (delay, T1 target): ``delay_s, interaction_id, target_id, cluster, fired_s``
        (NaN if not fired), ``outcome``, ``hit``, ``on_time``.
    """
    rows = []
    for d in delays:
        for it in interactions:
            if it.task != "T1":
                continue
            names = sorted(labels.get(it.id, ()) or ())
            t_fire = round(it.q + float(d), 3)
            end = None if clip_end is None else clip_end.get(it.id)
            fire = bool(names) and (end is None or ms(t_fire) <= ms(end))
            recs = (
                [
                    ResponseRecord(
                        interaction_id=it.id,
                        t=t_fire,
                        silent=False,
                        text=" ".join(names),
                        tool_calls=[ToolCall(name=n) for n in names],
                    )
                ]
                if fire
                else []
            )
            pred = frozenset(n.casefold() for n in names)
            allocs = allocate_first_response(
                it.targets,
                recs,
                lambda k, j, _it=it, _p=pred: _p == _target_tools(_it.targets[k]),
                q=it.q,
                tolerance_s=tolerance_s,
                merge_s=merge_s,
            )
            for a in allocs:
                tg = it.targets[a.target_index]
                rows.append(
                    {
                        "delay_s": float(d),
                        "interaction_id": it.id,
                        "target_id": tg.id,
                        "cluster": (clusters or {}).get(it.id, it.video_id),
                        "fired_s": t_fire if fire else np.nan,
                        "outcome": a.outcome,
                        "hit": int(a.hit),
                        "on_time": int(a.on_time),
                    }
                )
    return pd.DataFrame(rows)


def blind_fire(
    run: str | Path,
    *,
    delays: Sequence[float] = BLIND_FIRE_DELAYS,
    source: str = "first",
    tolerance_s: float = 2.0,
    merge_s: float = 2.0,
    n_resamples: int = B_DEFAULT,
    seed: int = 0,
    confidence: float = 0.95,
    require_scene_none: bool = True,
) -> ControlResult:
    """Fixed-delay blind fire (SPEC §3.4; paper Table 8): the request-prior labels of ``run``
    (a ``scene=none`` run) and the constant most-frequent tool, each fired at q + d.

    The clip end D of an interaction is its last recorded decision time. Rows: ``predictor,
    delay_s, joint, joint_low, joint_high`` (%), ``hits, targets, on_time`` (%).
    ``extra["targets"]``: the per-target simulation.
    """
    prior = request_prior(
        run, source=source, n_resamples=10, seed=seed, require_scene_none=require_scene_none
    )
    _, inters, recs, clusters, manifest = _run_inputs(run)
    end: dict[str, float] = {}
    for r in recs:
        end[r.interaction_id] = max(end.get(r.interaction_id, r.t), r.t)
    const = prior.extra["constant"]
    sources = {
        prior.table.loc[0, "predictor"]: prior.extra["labels"],
        f"constant: {const}": {
            it.id: frozenset([const]) for it in inters if it.task == "T1" and const
        },
    }
    rows, frames = [], []
    for name, lab in sources.items():
        sim = simulate_blind_fire(
            inters,
            lab,
            delays=delays,
            clip_end=end,
            clusters=clusters,
            tolerance_s=tolerance_s,
            merge_s=merge_s,
        )
        sim.insert(0, "predictor", name)
        frames.append(sim)
        ratios = {f"{d:g}": Ratio.from_frame(sim[sim["delay_s"] == d], "hit") for d in delays}
        ratios.update(
            {f"on{d:g}": Ratio.from_frame(sim[sim["delay_s"] == d], "on_time") for d in delays}
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StatsWarning)
            boot = bootstrap_metrics(ratios, **_opts(n_resamples, seed, confidence))
        for d in delays:
            sub = sim[sim["delay_s"] == d]
            b = boot[f"{d:g}"]
            rows.append(
                {
                    "predictor": name,
                    "delay_s": float(d),
                    "hits": int(sub["hit"].sum()),
                    "targets": len(sub),
                    "joint": 100 * b.estimate,
                    "joint_low": 100 * b.low,
                    "joint_high": 100 * b.high,
                    "on_time": 100 * boot[f"on{d:g}"].estimate,
                }
            )
    table = pd.DataFrame(rows)
    wide = table.assign(
        cell=[format_interval(r.joint, r.joint_low, r.joint_high) for r in table.itertuples()]
    )
    wide = wide.pivot(index="predictor", columns="delay_s", values="cell").loc[list(sources)]
    wide.columns = [f"q+{c:g} s" for c in wide.columns]
    md = (
        wide.reset_index()
        .rename(columns={"predictor": "fired labels (T1 joint %, 95% CI)"})
        .to_markdown(index=False)
    )
    meta = {
        "runs": prior.meta["runs"],
        "delays_s": [float(d) for d in delays],
        "tolerance_s": tolerance_s,
        "merge_s": merge_s,
        "label_source": source,
        "constant_tool": const,
        "clip_end": "last recorded decision time of the interaction",
        "options": _opts(n_resamples, seed, confidence),
    }
    return ControlResult(
        "blind_fire",
        table,
        md,
        meta,
        {"targets": pd.concat(frames, ignore_index=True), "prior": prior},
    )


# ------------------------------------------------------------------------------ history / cooldown


def _count_ratio(
    a: pd.DataFrame, b: pd.DataFrame, col: str, opts: dict[str, Any]
) -> tuple[float, float, float]:
    """Σ b / Σ a of a per-interaction count over matched interactions, cluster bootstrap."""
    m = a[["interaction_id", "cluster", col]].merge(
        b[["interaction_id", col]], on="interaction_id", suffixes=("_a", "_b")
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StatsWarning)
            r = cluster_bootstrap(
                m[f"{col}_b"].to_numpy(float),
                m[f"{col}_a"].to_numpy(float),
                m["cluster"].astype(str).to_numpy(),
                **opts,
            )
        return r.estimate, r.low, r.high
    except UndefinedRatioError:
        return np.nan, np.nan, np.nan


def _control_name(plain: ScoredRun, ctl: ScoredRun) -> str:
    diff = {
        k: v
        for k, v in non_default_settings(ctl.settings).items()
        if non_default_settings(plain.settings).get(k) != v
    }
    if not diff:
        return ctl.label
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in diff.items())


def policy_controls(
    plain: str | Path | ScoredRun,
    controls: Sequence[str | Path | ScoredRun],
    *,
    task: str = "T8-A",
    n_resamples: int = B_DEFAULT,
    seed: int = 0,
    confidence: float = 0.95,
) -> ControlResult:
    """History and cooldown controls against the plain run on one task (SPEC §3.4; Table 10).

    For each control run (same benchmark and interactions; typically ``history.n=5`` or
    ``cooldown_s=10``): recall (hits / scored targets of ``task``) with the paired difference
    (pp), output count (non-silent responses on the task's interactions) with its relative
    change Σ control / Σ plain − 1 (%, cluster-bootstrap interval), output volume (responses per
    probed minute) with its paired difference, output precision (hits / responses, beyond the
    paper), and the target overlap: ``shared`` (hit in both), ``gained``, ``lost``.
    The plain run is the first row.

    Raises:
        CompareError: runs over different benchmarks/interactions, or no ``task`` targets.
    """
    p = _load(plain)
    ctl = [_load(c) for c in controls]
    opts = _opts(n_resamples, seed, confidence)
    pt = p.targets[p.targets["task"] == task]
    pi = p.interactions[p.interactions["task"] == task]
    if pt.empty:
        raise CompareError(f"{p.path}: no {task} targets")
    rows = []
    notes: list[str] = []

    def base_row(name: str, r: ScoredRun, t: pd.DataFrame, i: pd.DataFrame) -> dict[str, Any]:
        hits, scored = int(t["hit"].sum()), int(t["scored"].sum())
        resp = int(i["responses"].sum())
        minutes = float(i["probed_s"].sum()) / 60.0
        return {
            "condition": name,
            "run": str(r.path),
            "recall_hits": hits,
            "targets": scored,
            "recall": 100 * hits / scored if scored else np.nan,
            "outputs": resp,
            "per_min": resp / minutes if minutes else np.nan,
            "precision": 100 * hits / resp if resp else np.nan,
        }

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        boot = bootstrap_metrics({"recall": Ratio.from_frame(pt, "hit", "scored")}, **opts)[
            "recall"
        ]
    row = base_row("plain", p, pt, pi)
    row.update(recall_low=100 * boot.low, recall_high=100 * boot.high)
    rows.append(row)
    for c in ctl:
        notes += [f"{c.path}: {n}" for n in check_comparable(p, c)]
        ct = c.targets[c.targets["task"] == task]
        ci = c.interactions[c.interactions["task"] == task]
        name = _control_name(p, c)
        row = base_row(name, c, ct, ci)
        pt_ = paired_table(
            (pt, pi), (ct, ci), only=(task, "Output volume", "Output precision"), **opts
        )
        rec = pt_[pt_["metric"] == task].iloc[0]
        vol = pt_[pt_["metric"] == "Output volume"].iloc[0]
        cnt = _count_ratio(pi, ci, "responses", opts)
        both = pt[["interaction_id", "target_id", "hit"]].merge(
            ct[["interaction_id", "target_id", "hit"]],
            on=["interaction_id", "target_id"],
            suffixes=("_p", "_c"),
        )
        row.update(
            recall_low=rec["b_low"],
            recall_high=rec["b_high"],
            d_recall=rec["diff"],
            d_recall_low=rec["diff_low"],
            d_recall_high=rec["diff_high"],
            d_outputs_pct=100 * (cnt[0] - 1),
            d_outputs_low=100 * (cnt[1] - 1),
            d_outputs_high=100 * (cnt[2] - 1),
            d_per_min=vol["diff"],
            d_per_min_low=vol["diff_low"],
            d_per_min_high=vol["diff_high"],
            shared=int(((both["hit_p"] == 1) & (both["hit_c"] == 1)).sum()),
            gained=int(((both["hit_p"] == 0) & (both["hit_c"] == 1)).sum()),
            lost=int(((both["hit_p"] == 1) & (both["hit_c"] == 0)).sum()),
            other_differences="; ".join(_other_differences(p, c, ["history.n", "cooldown_s"])),
        )
        rows.append(row)
    table = pd.DataFrame(rows)
    md = pd.DataFrame(
        {
            "condition": table["condition"],
            f"{task} recall": [
                f"{r.recall_hits}/{r.targets} = {format_interval(r.recall, r.recall_low, r.recall_high)}"
                for r in table.itertuples()
            ],
            "Δ recall (pp)": [
                format_interval(
                    getattr(r, "d_recall", np.nan),
                    getattr(r, "d_recall_low", np.nan),
                    getattr(r, "d_recall_high", np.nan),
                    signed=True,
                )
                for r in table.itertuples()
            ],
            "outputs": table["outputs"],
            "Δ outputs (%)": [
                format_interval(
                    getattr(r, "d_outputs_pct", np.nan),
                    getattr(r, "d_outputs_low", np.nan),
                    getattr(r, "d_outputs_high", np.nan),
                    signed=True,
                )
                for r in table.itertuples()
            ],
            "per min": [format_interval(r.per_min, np.nan, np.nan) for r in table.itertuples()],
            "Δ per min": [
                format_interval(
                    getattr(r, "d_per_min", np.nan),
                    getattr(r, "d_per_min_low", np.nan),
                    getattr(r, "d_per_min_high", np.nan),
                    signed=True,
                )
                for r in table.itertuples()
            ],
            "precision % (beyond)": [
                format_interval(r.precision, np.nan, np.nan) for r in table.itertuples()
            ],
            "shared / gained / lost": [
                "—" if i == 0 else f"{int(r.shared)} / {int(r.gained)} / {int(r.lost)}"
                for i, r in enumerate(table.itertuples())
            ],
        }
    ).to_markdown(index=False)
    meta = {
        "runs": {"plain": p.describe(), "controls": [c.describe() for c in ctl]},
        "task": task,
        "difference": "control - plain",
        "options": opts,
        "notes": notes,
    }
    return ControlResult("policy_controls", table, md, meta)


# ------------------------------------------------------------------------------ decision schedule


def schedule_control(
    dense: str | Path | ScoredRun,
    sparse: str | Path | ScoredRun,
    *,
    n_resamples: int = B_DEFAULT,
    seed: int = 0,
    confidence: float = 0.95,
) -> ControlResult:
    """Decision-schedule control (SPEC §3.4): every metric of the run on the denser grid
    (``grid.step_s``, usually 1 s) against the sparser one, paired (``sparse − dense``)."""
    a, b = _load(dense), _load(sparse)
    sa, sb = float(_setting(a, "grid.step_s", 1.0)), float(_setting(b, "grid.step_s", 1.0))
    if sa == sb:
        raise CompareError(
            f"both runs use grid.step_s={sa:g}; the schedule control needs two grids"
        )
    if sa > sb:
        a, b, sa, sb = b, a, sb, sa
    notes = check_comparable(a, b)
    notes += [
        f"settings differ besides grid.step_s: {d}"
        for d in _other_differences(a, b, ["grid.step_s"])
    ]
    t = paired_table(
        (a.targets, a.interactions),
        (b.targets, b.interactions),
        **_opts(n_resamples, seed, confidence),
    )
    md = pd.DataFrame(
        {
            "metric": t["metric"],
            f"step {sa:g} s": [format_interval(r.a, r.a_low, r.a_high) for r in t.itertuples()],
            f"step {sb:g} s": [format_interval(r.b, r.b_low, r.b_high) for r in t.itertuples()],
            "Δ sparse − dense": [
                format_interval(r.diff, r.diff_low, r.diff_high, signed=True)
                for r in t.itertuples()
            ],
        }
    ).to_markdown(index=False)
    meta = {
        "runs": {"dense": a.describe(), "sparse": b.describe()},
        "steps_s": [sa, sb],
        "difference": "sparse - dense (pp; output volume in responses/min)",
        "options": _opts(n_resamples, seed, confidence),
        "notes": notes,
    }
    return ControlResult("schedule", t, md, meta)

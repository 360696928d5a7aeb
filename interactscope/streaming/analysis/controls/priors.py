"""Request and timing priors on the tool-call task (paper Table 8): how much of T1 a model gets
from the request text alone.

* :func:`request_prior` — the tool names of each T1 interaction's first non-silent response in a
  ``scene=none`` run; recovery rate against the targets' tool sets, beside the constant
  most-frequent-tool baseline (paper: 193/200 = 96.5 % vs "always image search" 59.5 %).
* :func:`blind_fire` — those labels fired once at q + d, d ∈ {0, 1, 2, 3, 5, 8} s, scored by
  first-response allocation (simulated from the labels, nothing re-collected; paper: 68.0 % at
  d = 3).
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from interactscope.stats import (
    BootstrapOptions,
    Ratio,
    StatsWarning,
    bootstrap_metrics,
    paired_metrics,
)
from interactscope.streaming.analysis.controls.base import (
    ControlResult,
    ReportInputs,
    ReportSink,
)
from interactscope.streaming.analysis.errors import AnalysisError
from interactscope.streaming.analysis.runs import (
    RunInputs,
    non_default_settings,
    run_inputs,
    run_label,
)
from interactscope.streaming.judges.toolset import tool_names
from interactscope.streaming.schema import Interaction, ResponseRecord, ToolCall
from interactscope.streaming.scoring.allocation import allocate_first_response, ms
from interactscope.streaming.scoring.results import (
    DEFAULT_MERGE_S,
    DEFAULT_TOLERANCE_S,
    format_interval,
)
from interactscope.streaming.tasks import TOOL_TASKS

__all__ = [
    "BLIND_FIRE_DELAYS",
    "blind_fire",
    "constant_tool",
    "request_labels",
    "request_prior",
    "simulate_blind_fire",
]

BLIND_FIRE_DELAYS: tuple[float, ...] = (0.0, 1.0, 2.0, 3.0, 5.0, 8.0)


def _tool_task(it: Interaction) -> bool:
    return it.task in TOOL_TASKS


def constant_tool(interactions: Sequence[Interaction]) -> str | None:
    """The tool named most often by the T1 targets (ties: alphabetical; the constant baseline,
    the same rule as the ``blind-fire`` baseline model). ``None`` without T1."""
    counts: Counter[str] = Counter()
    for it in interactions:
        if _tool_task(it):
            for tg in it.targets:
                counts.update(tg.tools or [])
    if not counts:
        return None
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def _label_of(recs: list[ResponseRecord], q: int, source: str) -> frozenset[str]:
    if source == "at_q":
        cand = [r for r in recs if ms(r.t) == q and not r.error]
        return tool_names(cand[0].tool_calls) if cand and not cand[0].silent else frozenset()
    cand = [r for r in recs if ms(r.t) >= q and not r.error and not r.silent and not r.suppressed]
    return tool_names(cand[0].tool_calls) if cand else frozenset()


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

    Raises:
        ValueError: another ``source``.
    """
    if source not in ("first", "at_q"):
        raise ValueError("source must be 'first' or 'at_q'")
    by_id: dict[str, list[ResponseRecord]] = {}
    for r in records:
        by_id.setdefault(r.interaction_id, []).append(r)
    return {
        it.id: _label_of(sorted(by_id[it.id], key=lambda r: ms(r.t)), ms(it.q), source)
        for it in interactions
        if _tool_task(it) and it.id in by_id
    }


def _target_tools(tg: Any) -> frozenset[str]:
    return frozenset(n.strip().casefold() for n in (tg.tools or []) if n.strip())


def _prior_frame(
    inputs: RunInputs, labels: Mapping[str, frozenset[str]], constant: str | None
) -> pd.DataFrame:
    rows = []
    const = frozenset([constant.casefold()]) if constant else frozenset()
    for it in filter(_tool_task, inputs.interactions):
        pred = labels.get(it.id, frozenset())
        for tg in it.targets:
            want = _target_tools(tg)
            rows.append(
                {
                    "interaction_id": it.id,
                    "target_id": tg.id,
                    "cluster": inputs.cluster_of(it),
                    "target_tools": " ".join(sorted(want)),
                    "predicted_tools": " ".join(sorted(pred)),
                    "recovered": int(pred == want),
                    "constant_tools": " ".join(sorted(const)),
                    "constant_recovered": int(const == want),
                }
            )
    return pd.DataFrame(rows)


def _prior_inputs(run: str | Path, require_scene_none: bool) -> RunInputs:
    inputs = run_inputs(run)
    scene = inputs.manifest.settings.scene
    if require_scene_none and scene != "none":
        raise AnalysisError(
            f"{run}: the request prior needs a run collected with --set scene=none "
            f"(this one has scene={scene})"
        )
    return inputs


def _prior_table(
    frame: pd.DataFrame, label: str, const: str | None, opts: BootstrapOptions
) -> pd.DataFrame:
    r_model = Ratio.from_frame(frame, "recovered")
    r_const = Ratio.from_frame(frame, "constant_recovered")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        boot = bootstrap_metrics({"model": r_model, "constant": r_const}, **opts.kwargs())
        diff = paired_metrics({"x": r_const}, {"x": r_model}, **opts.kwargs())["x"]
    rows = []
    for key, predictor, col in (
        ("model", f"request labels: {label}", "recovered"),
        ("constant", f"constant: {const}", "constant_recovered"),
    ):
        b = boot[key]
        d = (diff.estimate, diff.low, diff.high) if key == "model" else (np.nan,) * 3
        rows.append(
            {
                "predictor": predictor,
                "recovered": int(frame[col].sum()),
                "targets": len(frame),
                "rate": 100 * b.estimate,
                "low": 100 * b.low,
                "high": 100 * b.high,
                "diff_vs_constant": d[0],
                "diff_low": d[1],
                "diff_high": d[2],
            }
        )
    return pd.DataFrame(rows)


def _prior_markdown(table: pd.DataFrame) -> str:
    rows = list(table.itertuples())
    return pd.DataFrame(
        {
            "predictor (T1, request text only)": table["predictor"],
            "labels recovered": [f"{r.recovered}/{r.targets}" for r in rows],
            "rate % [95% CI]": [format_interval(r.rate, r.low, r.high) for r in rows],
            "Δ vs constant (pp)": [
                format_interval(r.diff_vs_constant, r.diff_low, r.diff_high, signed=True)
                for r in rows
            ],
        }
    ).to_markdown(index=False)


def request_prior(
    run: str | Path,
    *,
    source: str = "first",
    require_scene_none: bool = True,
    options: BootstrapOptions | None = None,
    **bootstrap: Any,
) -> ControlResult:
    """Request-prior control on the T1 targets (paper Table 8).

    Args:
        run: a run collected with ``--set scene=none`` (request text only); it need not be scored.
        source: where the labels come from (:func:`request_labels`).
        require_scene_none: refuse a run with scene input.
        options, bootstrap: :class:`~interactscope.stats.BootstrapOptions` (fields).

    Returns:
        Table rows ``predictor`` (the run's label / ``constant: TOOL``), ``recovered``,
        ``targets``, ``rate`` / ``low`` / ``high`` (%, cluster bootstrap), and the paired
        difference model − constant (pp) on the model row. ``extra["targets"]``: per-target
        frame; ``extra["labels"]``: the labels; ``extra["constant"]``: the constant tool.

    Raises:
        AnalysisError: not a ``scene=none`` run (with ``require_scene_none``), or no T1.
    """
    opts = BootstrapOptions.of(options, **bootstrap)
    inputs = _prior_inputs(run, require_scene_none)
    labels = request_labels(inputs.interactions, inputs.records, source=source)
    const = constant_tool(inputs.interactions)
    frame = _prior_frame(inputs, labels, const)
    if frame.empty:
        raise AnalysisError(f"{run}: no T1 interaction to build a request prior from")
    m = inputs.manifest
    label = run_label(m)
    table = _prior_table(frame, label, const, opts)
    meta = {
        "runs": {
            "request_only": {
                "path": str(run),
                "label": label,
                "model": m.model,
                "non_default_settings": non_default_settings(m.settings.model_dump(mode="json")),
                "benchmark": m.benchmark.model_dump(mode="json"),
            }
        },
        "label_source": source,
        "constant_tool": const,
        "options": opts.kwargs(),
    }
    extra = {"targets": frame, "labels": labels, "constant": const}
    return ControlResult("request_prior", table, _prior_markdown(table), meta, extra)


# ------------------------------------------------------------------------------ blind fire


def _fired(it: Interaction, names: list[str], t_fire: float, fire: bool) -> list[ResponseRecord]:
    if not fire:
        return []
    calls = [ToolCall(name=n) for n in names]
    text = " ".join(names)
    return [
        ResponseRecord(interaction_id=it.id, t=t_fire, silent=False, text=text, tool_calls=calls)
    ]


def simulate_blind_fire(
    interactions: Sequence[Interaction],
    labels: Mapping[str, frozenset[str] | Sequence[str]],
    *,
    delays: Sequence[float] = BLIND_FIRE_DELAYS,
    clip_end: Mapping[str, float] | None = None,
    clusters: Mapping[str, str] | None = None,
    tolerance_s: float = DEFAULT_TOLERANCE_S,
    merge_s: float = DEFAULT_MERGE_S,
) -> pd.DataFrame:
    """Fire each T1 interaction's labels once at q + d and score it by first-response allocation.

    Args:
        labels: interaction id → tool names to call (empty or absent: nothing is fired).
        delays: d in seconds.
        clip_end: interaction id → last decision time D (s); a shot after D is not fired
            (absent: no limit).
        clusters: interaction id → bootstrap cluster (default: the video id).
        tolerance_s: δ, seconds. merge_s: grouping span, seconds.

    Returns:
        One row per (delay, T1 target): ``delay_s, interaction_id, target_id, cluster, fired_s``
        (NaN if not fired), ``outcome``, ``hit``, ``on_time``.
    """
    rows = []
    for d in delays:
        for it in filter(_tool_task, interactions):
            names = sorted(labels.get(it.id, ()) or ())
            t_fire = round(it.q + float(d), 3)
            end = None if clip_end is None else clip_end.get(it.id)
            fire = bool(names) and (end is None or ms(t_fire) <= ms(end))
            pred = frozenset(n.casefold() for n in names)
            allocs = allocate_first_response(
                it.targets,
                _fired(it, names, t_fire, fire),
                lambda k, j, _it=it, _p=pred: _p == _target_tools(_it.targets[k]),
                q=it.q,
                tolerance_s=tolerance_s,
                merge_s=merge_s,
            )
            for a in allocs:
                rows.append(
                    {
                        "delay_s": float(d),
                        "interaction_id": it.id,
                        "target_id": it.targets[a.target_index].id,
                        "cluster": (clusters or {}).get(it.id, it.video_id),
                        "fired_s": t_fire if fire else np.nan,
                        "outcome": a.outcome,
                        "hit": int(a.hit),
                        "on_time": int(a.on_time),
                    }
                )
    return pd.DataFrame(rows)


def _delay_rows(
    name: str, sim: pd.DataFrame, delays: Sequence[float], opts: BootstrapOptions
) -> list[dict[str, Any]]:
    """T1 joint (%, interval) and on-time (%) of one predictor at each delay."""
    ratios = {f"{d:g}": Ratio.from_frame(sim[sim["delay_s"] == d], "hit") for d in delays}
    ratios |= {f"on{d:g}": Ratio.from_frame(sim[sim["delay_s"] == d], "on_time") for d in delays}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)
        boot = bootstrap_metrics(ratios, **opts.kwargs())
    rows = []
    for d in delays:
        sub, b = sim[sim["delay_s"] == d], boot[f"{d:g}"]
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
    return rows


def _fire_markdown(table: pd.DataFrame, order: Sequence[str]) -> str:
    cells = [format_interval(r.joint, r.joint_low, r.joint_high) for r in table.itertuples()]
    wide = table.assign(cell=cells).pivot(index="predictor", columns="delay_s", values="cell")
    wide = wide.loc[list(order)]
    wide.columns = [f"q+{c:g} s" for c in wide.columns]
    return (
        wide.reset_index()
        .rename(columns={"predictor": "fired labels (T1 joint %, 95% CI)"})
        .to_markdown(index=False)
    )


def blind_fire(
    run: str | Path,
    *,
    delays: Sequence[float] = BLIND_FIRE_DELAYS,
    source: str = "first",
    tolerance_s: float = DEFAULT_TOLERANCE_S,
    merge_s: float = DEFAULT_MERGE_S,
    require_scene_none: bool = True,
    options: BootstrapOptions | None = None,
    **bootstrap: Any,
) -> ControlResult:
    """Fixed-delay blind fire (paper Table 8): the request-prior labels of ``run`` (a
    ``scene=none`` run) and the constant most-frequent tool, each fired at q + d (seconds).

    The clip end D of an interaction is its last recorded decision time. Rows: ``predictor,
    delay_s, joint, joint_low, joint_high`` (%), ``hits, targets, on_time`` (%).
    ``extra["targets"]``: the per-target simulation; ``extra["prior"]``: the request prior.

    Raises:
        AnalysisError: as :func:`request_prior`.
    """
    opts = BootstrapOptions.of(options, **bootstrap)
    prior = request_prior(
        run, source=source, require_scene_none=require_scene_none, n_resamples=10, seed=opts.seed
    )
    inputs = run_inputs(run)
    end: dict[str, float] = {}
    for r in inputs.records:
        end[r.interaction_id] = max(end.get(r.interaction_id, r.t), r.t)
    const = prior.extra["constant"]
    clusters = {it.id: inputs.cluster_of(it) for it in inputs.interactions}
    sources = {
        prior.table.loc[0, "predictor"]: prior.extra["labels"],
        f"constant: {const}": {
            it.id: frozenset([const]) for it in filter(_tool_task, inputs.interactions) if const
        },
    }
    rows, frames = [], []
    for name, lab in sources.items():
        sim = simulate_blind_fire(
            inputs.interactions,
            lab,
            delays=delays,
            clip_end=end,
            clusters=clusters,
            tolerance_s=tolerance_s,
            merge_s=merge_s,
        )
        sim.insert(0, "predictor", name)
        frames.append(sim)
        rows += _delay_rows(name, sim, delays, opts)
    table = pd.DataFrame(rows)
    meta = {
        "runs": prior.meta["runs"],
        "delays_s": [float(d) for d in delays],
        "tolerance_s": tolerance_s,
        "merge_s": merge_s,
        "label_source": source,
        "constant_tool": const,
        "clip_end": "last recorded decision time of the interaction",
        "options": opts.kwargs(),
    }
    extra = {"targets": pd.concat(frames, ignore_index=True), "prior": prior}
    return ControlResult("blind_fire", table, _fire_markdown(table, list(sources)), meta, extra)


# ------------------------------------------------------------------------------ report section


def _prior_row(p_row: Any, bf: ControlResult) -> dict[str, str]:
    row = {
        "predictor": p_row.predictor,
        "T1 labels recovered": f"{p_row.recovered}/{p_row.targets} = "
        + format_interval(p_row.rate, p_row.low, p_row.high),
    }
    for x in bf.table[bf.table["predictor"] == p_row.predictor].itertuples():
        row[f"joint @ q+{x.delay_s:g} s"] = format_interval(x.joint, x.joint_low, x.joint_high)
    return row


def report_priors(inputs: ReportInputs, sink: ReportSink) -> None:
    """Table 8: request prior and blind fire of every ``scene=none`` run."""
    none_runs = inputs.with_role("scene-none")
    rows: dict[str, dict[str, str]] = {}
    raw = []
    for r in none_runs:
        try:
            bf = blind_fire(r.path, delays=inputs.delays, options=inputs.options)
            pr = request_prior(r.path, options=inputs.options)
        except AnalysisError as exc:
            sink.skip(f"priors {r.label}: {exc}")
            continue
        raw.append(bf.table.assign(run=r.label))
        for p_row in pr.table.itertuples():
            # the constant baseline of a shared benchmark is listed once
            rows.setdefault(p_row.predictor, _prior_row(p_row, bf))
    if not rows:
        sink.skip("table8_priors: no scene=none run given")
        return
    sink.add_table(
        "table8_priors",
        "Request and timing priors on T1 without scene input, % [95% CI]",
        pd.DataFrame(list(rows.values())),
        pd.concat(raw, ignore_index=True),
        meta={
            "runs": [r.describe().model_dump() for r in none_runs],
            "delays_s": list(inputs.delays),
            **inputs.options.kwargs(),
        },
        note="Labels: tool names of each T1 interaction's first response in the scene=none "
        "run; blind fire: those labels fired once at q + d (simulated), scored by "
        "first-response allocation. Constant: the most frequent target tool.",
    )


def run_request_prior_cli(args: Mapping[str, Any], options: BootstrapOptions) -> ControlResult:
    return request_prior(args["run"], source=args["source"], options=options)


def run_blind_fire_cli(args: Mapping[str, Any], options: BootstrapOptions) -> ControlResult:
    return blind_fire(
        args["run"], delays=args["delay"], tolerance_s=args["tolerance"], options=options
    )

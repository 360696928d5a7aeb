"""Tables over scored EgoBench runs: JointSucc / MicroAcc / ToolSucc / ResultSucc with 95 %
cluster-bootstrap intervals, one row per (agent, variant, mode) (cluster = task), one per
(agent, scenario, mode) over several variants (cluster = variant) and each scenario's mean of
modes; error classes; the paired differences of every other agent against the first run's agent
on the tasks both played (the ``ego ablation`` machinery); Markdown/LaTeX/CSV.

Inputs are run folders of ``ego run`` (scored into ``RUN/scores`` when they have no score yet)
or score folders of ``ego score`` (``tasks.csv`` + ``summary.json``). Runs of different agents
are never pooled into one row unless asked (``pool``, ``ego report --pool``)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
from pydantic import BaseModel

from interactscope.core.files import write_atomic
from interactscope.egobench.data import EgoBenchError
from interactscope.egobench.egointeract.ablation import PolicyScores, ablation_table, in_percent
from interactscope.egobench.egointeract.ablation import markdown as ablation_md
from interactscope.egobench.errors import CLASSES
from interactscope.egobench.metrics import EGO_METRICS, ego_metrics
from interactscope.egobench.run_folder import EgoRunError, read_manifest
from interactscope.egobench.run_score import score_run
from interactscope.egobench.scorer import read_score
from interactscope.stats import StatsWarning, bootstrap_metrics

METRICS = tuple(m.name for m in EGO_METRICS)
"""The paper's columns (:data:`~interactscope.egobench.metrics.EGO_METRICS`); plug-in metrics
(:func:`~interactscope.egobench.metrics.ego_metrics`) follow them."""
UNKNOWN_AGENT = "unknown"
"""The agent of a score folder written by ``ego score --log`` (no run folder above it)."""


class ScoreSource(BaseModel):
    """One score folder and whose it is: ``agent`` (the run's agent name; ``unknown`` for a
    scored log), ``run`` (the run folder, or None) and ``folder`` (tasks.csv + summary.json)."""

    agent: str
    run: str | None
    folder: str


def _agent_label(agent: dict) -> str:
    """The agent's name; an EgoInteract ablation adds its policy (``egointeract:m [no_rules]``)."""
    name = str(agent.get("name") or UNKNOWN_AGENT)
    label = agent.get("label")
    if agent.get("kind") == "egointeract" and label and label != "full":
        return f"{name} [{label}]"
    return name


def resolve_sources(paths: list[str | Path]) -> tuple[list[ScoreSource], list[str]]:
    """Expand run folders into their per-variant score folders (scoring a run that has none)
    and keep score folders as they are. Returns the sources and notes (runs scored here).

    Raises:
        EgoBenchError: a path that is neither (one line naming it and what to run)."""

    sources, notes = [], []
    for p in map(Path, paths):
        if (p / "summary.json").is_file():
            agent = UNKNOWN_AGENT
            if p.parent.name == "scores" and (p.parent.parent / "run.json").is_file():
                try:
                    agent = _agent_label(read_manifest(p.parent.parent).agent)
                except EgoRunError:
                    pass
            sources.append(ScoreSource(agent=agent, run=None, folder=str(p)))
            continue
        if not (p / "run.json").is_file():
            raise EgoBenchError(
                f"{p / 'summary.json'}: not found; give a run folder of `interactscope ego run` "
                "or a folder written by `interactscope ego score`"
            )
        try:
            manifest = read_manifest(p)
        except EgoRunError as exc:
            raise EgoBenchError(str(exc)) from None
        missing = [v for v in manifest.tasks if not (p / "scores" / v / "summary.json").is_file()]
        if missing:
            score_run(p)
            notes.append(f"{p}: scored into {p / 'scores'} (no score of {', '.join(missing)})")
        agent = _agent_label(manifest.agent)
        for v in manifest.tasks:
            sources.append(ScoreSource(agent=agent, run=str(p), folder=str(p / "scores" / v)))
    return sources, notes


def _read(sources: list[ScoreSource], pool: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """All task rows (with agent, variant, scenario, mode) and one row per score file; refuses
    one agent's (variant, mode) given twice."""
    parts, files, seen = [], [], {}
    agents = sorted({s.agent for s in sources})
    for s in sources:
        summary, frame = read_score(s.folder)
        agent = f"pooled ({', '.join(agents)})" if pool and len(agents) > 1 else s.agent
        mode = summary.mode or "unknown"
        key = (s.agent, summary.variant, mode)
        if key in seen:
            raise EgoBenchError(
                f"{s.folder}: {s.agent}'s {summary.variant}/{mode} is already given by "
                f"{seen[key]}; name each score once"
            )
        seen[key] = s.folder
        frame = frame.assign(
            agent=agent, variant=summary.variant, scenario=summary.scenario, mode=mode
        )
        for col in ("tool_succ", "result_succ", "joint_succ"):
            frame[col] = frame[col].astype(str).str.lower().eq("true")
        parts.append(frame)
        ref = summary.reference_view
        files.append({"agent": agent, "scenario": summary.scenario, "variant": summary.variant,
                      "mode": mode, "n_valid": ref.n_tasks, "micro": ref.micro_acc})  # fmt: skip
    return pd.concat(parts, ignore_index=True), pd.DataFrame(files)


def _ratios(frame: pd.DataFrame, cluster: str) -> dict[str, tuple]:
    """Bootstrap inputs of every metric: name -> (numerators, denominators or None, clusters)."""
    c = frame[cluster].astype(str).to_numpy()
    col = lambda name: frame[name].astype(float).to_numpy()  # noqa: E731
    return {
        m.name: (col(m.numerator), None if m.denominator is None else col(m.denominator), c)
        for m in ego_metrics()
    }


def _row(g: pd.DataFrame, f: pd.DataFrame, cluster: str, boot: dict, notes: list[str]) -> dict:
    """One table row over task rows ``g`` (their score files ``f``), resampling ``cluster``."""
    a, scen, mode = g.agent.iloc[0], g.scenario.iloc[0], g["mode"].iloc[0]
    variant = g.variant.iloc[0] if g.variant.nunique() == 1 else "all"
    frame = g.assign(task=g.variant + ":" + g.task_id.astype(str))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", StatsWarning)
        res = bootstrap_metrics(_ratios(frame, cluster), **boot, undefined="nan")
    notes += [f"{a} {scen}/{variant}/{mode}: {w.message}" for w in caught]
    row = {"agent": a, "scenario": scen, "variant": variant, "mode": mode, "cluster": cluster,
           "n_tasks": len(g), "n_variants": g.variant.nunique()}  # fmt: skip
    for m in (x.name for x in ego_metrics()):
        row[m], row[f"{m}_low"], row[f"{m}_high"] = res[m].estimate, res[m].low, res[m].high
    row["MicroAcc_pooled"] = row["MicroAcc"]
    n = f.n_valid.sum()
    row["MicroAcc_reference_per_file_weighted"] = (f.micro * f.n_valid).sum() / n if n else None
    counts = g["error_class"].replace("", pd.NA).dropna().value_counts()
    for c in CLASSES:
        row[f"err_{c}"] = int(counts.get(c, 0))
    return row


def _mode_means(rows: list[dict]) -> list[dict]:
    """Each (agent, scenario)'s mean over its modes (of the scenario-level rows)."""
    top = pd.DataFrame(rows)
    top = top[(top.variant == "all") | (top.n_variants == 1)]
    top = top.drop_duplicates(["agent", "scenario", "mode"], keep="last")
    means = []
    for (a, scen), g in top.groupby(["agent", "scenario"], sort=False):
        if len(g) > 1:
            means.append({"agent": a, "scenario": scen, "variant": "all", "mode": "mean of modes",
                          "n_tasks": int(g.n_tasks.sum()), "n_variants": int(g.n_variants.max()),
                          **{m.name: g[m.name].mean() for m in ego_metrics()}})  # fmt: skip
    return means


def build_table(
    outs: list[str | Path], n_resamples: int = 10_000, seed: int = 0, *, pool: bool = False
) -> tuple[pd.DataFrame, list[str]]:
    """The report table and notes (:func:`tables` without the task rows)."""
    table, _, notes = tables(outs, n_resamples=n_resamples, seed=seed, pool=pool)
    return table, notes


def tables(
    outs: list[str | Path], n_resamples: int = 10_000, seed: int = 0, *, pool: bool = False
) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """The report table (fractions; ``cluster`` says what was resampled), every task row
    (agent, scenario, variant, mode, task_id and its verdicts) and notes.

    Rows, per agent in the order given: one per (variant, mode) (cluster = task); one per
    (scenario, mode) over ≥ 2 variants (``variant`` = all, cluster = variant); one mean of
    modes per scenario with ≥ 2 modes. ``MicroAcc_reference_per_file_weighted`` is the reference
    evaluator's task-weighted mean of per-file MicroAcc.

    Raises:
        EgoBenchError: a folder without a score, or one agent's (variant, mode) given twice."""
    sources, notes = resolve_sources(outs)
    tasks, files = _read(sources, pool)
    boot = {"n_resamples": n_resamples, "seed": seed}
    rows: list[dict] = []
    for _, ga in tasks.groupby("agent", sort=False):
        for (scen, mode), g in ga.groupby(["scenario", "mode"], sort=True):
            fa = files[(files.agent == g.agent.iloc[0]) & (files.scenario == scen)]
            fa = fa[fa["mode"] == mode]
            for v, gv in g.groupby("variant", sort=True):
                rows.append(_row(gv, fa[fa.variant == v], "task", boot, notes))
            if g.variant.nunique() > 1:
                rows.append(_row(g, fa, "variant", boot, notes))
    return pd.DataFrame(rows + _mode_means(rows)), tasks, notes


def differences(
    tasks: pd.DataFrame, n_resamples: int = 10_000, seed: int = 0
) -> tuple[pd.DataFrame, list[str]]:
    """Paired cluster-bootstrap differences (points, agent − reference; cluster = task) of every
    agent against the first one, per mode, on the ``variant:task_id`` both played (the
    ``ego ablation`` table, :func:`~interactscope.egobench.egointeract.ablation.ablation_table`).
    Empty with one agent; a mode the two share no task of is left out with a note."""

    agents = list(dict.fromkeys(tasks.agent))
    parts, notes = [], []
    if len(agents) < 2:
        return pd.DataFrame(), notes
    for mode, gm in tasks.groupby("mode", sort=True):
        policies = []
        for a in agents:
            g = gm[gm.agent == a]
            rows = list(zip(g.variant, g.task_id.astype(int), g.joint_succ, g.tool_succ,
                            g.result_succ, g.matched.astype(int), g.total_gt.astype(int), strict=True))  # fmt: skip
            if rows:
                policies.append(PolicyScores(label=a, run=a, rows=rows))
        if len(policies) < 2 or policies[0].label != agents[0]:
            continue
        try:
            t, n = ablation_table(policies, reference=agents[0], n_resamples=n_resamples, seed=seed)
        except ValueError as exc:
            notes.append(f"{mode}: {exc}")
            continue
        parts.append(t.drop(columns="run").rename(columns={"policy": "agent"}).assign(mode=mode))
        notes += [f"{mode}: {x}" for x in n]
    return (pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()), notes


def _cell(r: pd.Series, m: str) -> str:
    lo = r.get(f"{m}_low")
    ci = "" if pd.isna(lo) else f" [{100 * lo:.1f}, {100 * r[f'{m}_high']:.1f}]"
    return f"{100 * r[m]:.1f}{ci}"


def markdown(table: pd.DataFrame) -> str:
    """Percent table with intervals: one line per agent x variant (or scenario) x mode."""
    names = [m.name for m in ego_metrics()]
    head = ["agent", "scenario", "variant", "mode", "tasks", "cluster", *names,
            "MicroAcc ref. per-file"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in table.iterrows():
        ref = r.get("MicroAcc_reference_per_file_weighted")
        cluster = r.get("cluster")
        lines.append(
            f"| {r.agent} | {r.scenario} | {r.variant} | {r['mode']} | {r.n_tasks} | "
            + ("" if pd.isna(cluster) else str(cluster))
            + " | "
            + " | ".join(_cell(r, m) for m in names)
            + " | "
            + ("" if ref is None or pd.isna(ref) else f"{100 * ref:.1f}")
            + " |"
        )
    return "\n".join(lines) + "\n"


def _diff_markdown(diffs: pd.DataFrame) -> str:

    out = []
    for mode, g in diffs.groupby("mode", sort=True):
        out.append(f"\n{mode}:\n\n" + ablation_md(g.rename(columns={"agent": "policy"})))
    return "".join(out)


def write_report(
    outs: list[str | Path],
    dest: str | Path,
    n_resamples: int = 10_000,
    seed: int = 0,
    *,
    pool: bool = False,
) -> tuple[pd.DataFrame, list[Path], list[str]]:
    """Write ``report.md``, ``report.tex``, ``report.csv`` (and ``differences.csv`` with two or
    more agents) into ``dest``. Raises EgoBenchError as :func:`build_table`."""
    table, tasks, notes = tables(outs, n_resamples=n_resamples, seed=seed, pool=pool)
    diffs, dnotes = differences(tasks, n_resamples=n_resamples, seed=seed)
    notes += dnotes
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    md = (
        "# EgoBench results\n\nPercent; 95 % cluster-bootstrap intervals (cluster: task within "
        "a variant, variant across variants). MicroAcc is pooled (Σ matched / Σ GT); the last "
        "column is the reference evaluator's task-weighted mean of per-file values.\n\n"
        + markdown(table)
    )
    paths = [dest / "report.md", dest / "report.tex", dest / "report.csv"]
    if not diffs.empty:
        md += (
            f"\n## Paired differences against `{tasks.agent.iloc[0]}`\n\nOn the tasks both "
            "agents played; Δ in points, paired cluster bootstrap (cluster = task).\n"
            + _diff_markdown(diffs)
        )
        paths.append(dest / "differences.csv")

        write_atomic(paths[-1], in_percent(diffs).to_csv(index=False))  # one unit: percent
    if notes:
        md += "\nNotes:\n" + "".join(f"- {n}\n" for n in notes)
    write_atomic(paths[0], md)
    write_atomic(paths[1], table.to_latex(index=False, float_format="%.3f", na_rep=""))
    write_atomic(paths[2], table.to_csv(index=False))
    return table, paths, notes

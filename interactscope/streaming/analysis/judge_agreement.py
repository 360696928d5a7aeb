"""How far two content judges agree on one run (``interactscope compare-judges``).

Both judges see the same judged pairs: scoring asks a judge only about the (target, response)
pairs whose verdict can change a score, and which pairs those are does not depend on any
verdict. Per task and overall:

* ``pairs``: judged pairs; ``compared``: pairs both judges answered yes or no (an unparseable
  verdict on either side leaves the pair out of agreement and kappa, and is counted);
* ``agreement`` p_o = pairs with the same verdict / compared;
* Cohen's kappa κ = (p_o − p_e) / (1 − p_e), with chance agreement
  p_e = (a_yes / n)(b_yes / n) + (a_no / n)(b_no / n) over the n compared pairs (Cohen 1960,
  "A coefficient of agreement for nominal scales"); ``None`` when p_e = 1 (both judges gave one
  and the same answer to every pair: κ is undefined) or n = 0.

Every pair whose two verdict labels differ (unparseable included) is listed with its text, both
outcomes of its target and, when ``RUN/view.html`` exists, a link to the interaction's section
(``view.html#i-N``, N = the interaction's position in the run's benchmark order, the viewer's
own section ids).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from interactscope.streaming.judges import Judge, JudgeReport, VerdictCache, make_judge
from interactscope.streaming.scoring.allocation import ms
from interactscope.streaming.scoring.results import ScoringOptions
from interactscope.streaming.scoring.run import (
    RunInputs,
    ScoreResult,
    load_run_inputs,
    score_collection,
)

__all__ = [
    "Disagreement",
    "JudgeAgreement",
    "TaskAgreement",
    "cohen_kappa",
    "compare_judges",
    "format_agreement",
]


class TaskAgreement(BaseModel):
    """Agreement of two judges on the pairs of one task (``task`` = ``overall`` for all)."""

    task: str
    pairs: int = Field(description="judged pairs")
    compared: int = Field(description="pairs both judges answered yes or no")
    agree: int = Field(description="compared pairs with the same verdict")
    a_yes: int = Field(description="compared pairs judge A said yes to")
    b_yes: int = Field(description="compared pairs judge B said yes to")
    unparseable: int = Field(description="pairs with an unparseable verdict on either side")
    agreement: float | None = Field(description="agree / compared; None when compared = 0")
    kappa: float | None = Field(description="Cohen's kappa; None when undefined")


class Disagreement(BaseModel):
    """One judged pair the two judges labelled differently."""

    interaction_id: str
    task: str
    target_id: str
    response_t: float = Field(description="response time, s")
    request: str
    reference: str
    candidate: str
    verdict_a: str = Field(description="yes / no / unparseable")
    verdict_b: str
    outcome_a: str = Field(description="the target's outcome under judge A")
    outcome_b: str
    link: str | None = Field(None, description="RUN/view.html#i-N when the page exists")


class JudgeAgreement(BaseModel):
    """``compare-judges`` result (written with ``--out``)."""

    run: str
    judges: tuple[str, str]
    tolerance_s: float
    merge_s: float
    tasks: list[TaskAgreement]
    overall: TaskAgreement
    disagreements: list[Disagreement]


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    """Cohen's kappa of two equal-length yes/no sequences (see the module docstring).

    Raises:
        ValueError: the sequences differ in length.
    """
    if len(a) != len(b):
        raise ValueError(f"kappa needs paired verdicts: {len(a)} vs {len(b)}")
    n = len(a)
    if n == 0:
        return None
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    p_e = pa * pb + (1 - pa) * (1 - pb)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1 - p_e)


def _task_row(task: str, pairs: list[tuple[bool | None, bool | None]]) -> TaskAgreement:
    both = [(x, y) for x, y in pairs if x is not None and y is not None]
    a = [bool(x) for x, _ in both]
    b = [bool(y) for _, y in both]
    agree = sum(x == y for x, y in both)
    return TaskAgreement(
        task=task,
        pairs=len(pairs),
        compared=len(both),
        agree=agree,
        a_yes=sum(a),
        b_yes=sum(b),
        unparseable=len(pairs) - len(both),
        agreement=agree / len(both) if both else None,
        kappa=cohen_kappa(a, b),
    )


def _score(inputs: RunInputs, judge: Judge, cache_path: Path, opts: ScoringOptions) -> ScoreResult:
    judge.bind_media(inputs.media)
    cache = None if judge.per_item else VerdictCache(cache_path)
    try:
        return score_collection(
            inputs.interactions, inputs.records, inputs.clusters, judge, cache=cache, options=opts
        )
    finally:
        if cache is not None:
            cache.close()


def _outcomes(result: ScoreResult) -> dict[tuple[str, str], str]:
    df = result.targets
    return {
        (str(i), str(t)): str(o)
        for i, t, o in zip(df["interaction_id"], df["target_id"], df["outcome"], strict=True)
    }


def _disagreements(
    inputs: RunInputs,
    reports: tuple[JudgeReport, JudgeReport],
    outcomes: tuple[dict, dict],
    view: Path | None,
) -> list[Disagreement]:
    inters = {i.id: (n, i) for n, i in enumerate(inputs.interactions)}
    texts = {(r.interaction_id, ms(r.t)): r.text for r in inputs.records}
    out: list[Disagreement] = []
    ra, rb = reports
    for key in sorted(ra.verdicts):
        va, vb = ra.verdicts[key], rb.verdicts[key]
        if va.label == vb.label:
            continue
        iid, tid, t_ms = key
        n, inter = inters[iid]
        tgt = next(t for t in inter.targets if t.id == tid)
        out.append(
            Disagreement(
                interaction_id=iid,
                task=inter.task,
                target_id=tid,
                response_t=t_ms / 1000,
                request=inter.query.text,
                reference=tgt.reference,
                candidate=texts.get((iid, t_ms), ""),
                verdict_a=va.label,
                verdict_b=vb.label,
                outcome_a=outcomes[0].get((iid, tid), ""),
                outcome_b=outcomes[1].get((iid, tid), ""),
                link=f"{view}#i-{n}" if view is not None else None,
            )
        )
    return out


def compare_judges(
    run_dir: str | Path,
    judge_a: str | Judge,
    judge_b: str | Judge,
    *,
    cache_path: str | Path | None = None,
    tolerance_s: float = 2.0,
    merge_s: float = 2.0,
) -> JudgeAgreement:
    """Score ``run_dir`` with both judges (nothing written but the verdict cache) and compare
    their verdicts pair by pair.

    Args:
        judge_a, judge_b: ``--judge`` strings or judges.
        cache_path: verdict cache (default ``RUN/scores/verdicts.sqlite``; keys include the
            judge, so both share it); ``file:`` judges are not cached.
        tolerance_s, merge_s: the scoring's δ and merge span (s): they decide which pairs exist.

    Raises:
        interactscope.streaming.runlog.RunLogError: not a run folder. JudgeError: a judge cannot be built
        or reached. ValueError: bad options.
    """
    run_dir = Path(run_dir)
    inputs = load_run_inputs(run_dir)
    opts = ScoringOptions.of(None, tolerance_s=tolerance_s, merge_s=merge_s)
    cache = Path(cache_path) if cache_path else run_dir / "scores" / "verdicts.sqlite"
    judges = [make_judge(j) if isinstance(j, str) else j for j in (judge_a, judge_b)]
    ra, rb = (_score(inputs, j, cache, opts) for j in judges)
    va, vb = ra.judge_report.verdicts, rb.judge_report.verdicts
    task_of = {i.id: i.task for i in inputs.interactions}
    by_task: dict[str, list[tuple[bool | None, bool | None]]] = defaultdict(list)
    for key in sorted(va):
        by_task[task_of[key[0]]].append((va[key].value, vb[key].value))
    view = run_dir / "view.html"
    return JudgeAgreement(
        run=str(run_dir),
        judges=(judges[0].name, judges[1].name),
        tolerance_s=float(opts.tolerance_s),
        merge_s=float(opts.merge_s),
        tasks=[_task_row(t, by_task[t]) for t in sorted(by_task)],
        overall=_task_row("overall", [p for t in sorted(by_task) for p in by_task[t]]),
        disagreements=_disagreements(
            inputs,
            (ra.judge_report, rb.judge_report),
            (_outcomes(ra), _outcomes(rb)),
            view if view.is_file() else None,
        ),
    )


def _num(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def format_agreement(rep: JudgeAgreement, max_listed: int = 50) -> str:
    """The agreement table and the first ``max_listed`` disagreements as plain text."""
    a, b = rep.judges
    lines = [
        f"Judge agreement on {rep.run}: A = {a}, B = {b} (δ = {rep.tolerance_s:g} s)",
        f"{'task':<8} {'pairs':>6} {'both':>6} {'agree':>6} {'A yes':>6} {'B yes':>6} "
        f"{'unparsed':>8} {'p_o':>6} {'kappa':>6}",
    ]
    for row in [*rep.tasks, rep.overall]:
        lines.append(
            f"{row.task:<8} {row.pairs:>6} {row.compared:>6} {row.agree:>6} {row.a_yes:>6} "
            f"{row.b_yes:>6} {row.unparseable:>8} {_num(row.agreement):>6} {_num(row.kappa):>6}"
        )
    lines.append(f"\n{len(rep.disagreements)} pair(s) judged differently")
    for d in rep.disagreements[:max_listed]:
        where = f"  {d.link}" if d.link else ""
        lines += [
            f"- {d.interaction_id}/{d.target_id} ({d.task}) at {d.response_t:g} s: "
            f"A {d.verdict_a} ({d.outcome_a}), B {d.verdict_b} ({d.outcome_b}){where}",
            f"    request:   {d.request}",
            f"    reference: {d.reference}",
            f"    candidate: {d.candidate}",
        ]
    if len(rep.disagreements) > max_listed:
        lines.append(f"... and {len(rep.disagreements) - max_listed} more (--out writes all)")
    return "\n".join(lines)

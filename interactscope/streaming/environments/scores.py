"""Scores of environment interactions, beside the paper's numbers (docs/protocol.md#environments).

For every T1 interaction that names an environment:

- **joint time–call** (per target with expected ``calls``): the paper's joint time–tool hit
  (first-response allocation, tool-name set) *and* the calls of the consumed group's in-window
  members match the target's expected calls with parameters (EgoBench equality rules,
  :mod:`interactscope.egobench.matching`; both sides cleaned first by
  :func:`~interactscope.egobench.matching.clean_calls`, the rule the environment applies at run
  time; every expected call matched to a distinct call);
- **state correct** (per interaction): the final state hash recorded on the interaction's last
  decision point equals the hash after executing every target's expected calls, in target order,
  on a fresh environment;
- **action precision**: state-changing calls (``tool_results[i].changed``) matched to a target's
  expected call as above / all state-changing calls.

Infrastructure errors follow the paper columns' rule (setting ``infra_error_rule``,
:func:`interactscope.streaming.scoring.core.infra_outcome`): a target no answer could have
served is ``infra_error`` and leaves the time-tool and time-call denominators; it is counted in
``health``. The state is judged only from a healthy final decision point of an interaction none
of whose targets is ``infra_error``; otherwise ``state_correct`` is ``null`` and
``state_reason`` says why (also when no final hash was recorded).

The paper's columns are computed elsewhere and never read these."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from interactscope.core.files import write_atomic
from interactscope.egobench.matching import ParamComparer, clean_calls, match_calls
from interactscope.egobench.settings import ScoreSettings
from interactscope.streaming.bench import Benchmark
from interactscope.streaming.environments.execution import fresh_environment
from interactscope.streaming.runlog import RunFolder
from interactscope.streaming.schema import Interaction, ResponseRecord
from interactscope.streaming.scoring.allocation import allocate_first_response
from interactscope.streaming.scoring.core import infra_outcome

__all__ = [
    "EnvScore",
    "EnvironmentScores",
    "environment_warning",
    "expected_state_hash",
    "read_environment_scores",
    "score_environments",
    "write_environment_scores",
]

SCORES_FILE = "environment_scores.json"


@dataclass
class EnvScore:
    """One environment interaction's new scores.

    ``time_tool_hits`` / ``call_targets`` / ``time_call_hits`` count the targets in the score
    (not ``infra_error``); ``infra_error_targets`` the others, ``infrastructure_errors`` the
    interaction's error records; ``state_reason`` says why ``state_correct`` is ``None``."""

    interaction_id: str
    environment: str
    time_tool_hits: int = 0
    time_call_hits: int = 0
    call_targets: int = 0
    state_correct: bool | None = None
    matched_writes: int = 0
    writes: int = 0
    targets: list[dict[str, Any]] = field(default_factory=list)
    infra_error_targets: int = 0
    infrastructure_errors: int = 0
    state_reason: str | None = None


def expected_state_hash(bench: Benchmark, it: Interaction) -> str:
    """State hash after executing the targets' expected calls on a fresh environment."""
    env = fresh_environment(bench, it.query.environment or "")
    try:
        for tg in it.targets:
            for call in tg.calls or []:
                env.call(call.name, call.arguments)
        return env.state_hash()
    finally:
        env.close()


def _toolset(rec: ResponseRecord, names: Sequence[str]) -> bool:
    return {c.name.casefold() for c in rec.tool_calls} == {n.casefold() for n in names}


def _score_one(
    bench: Benchmark,
    it: Interaction,
    recs: list[ResponseRecord],
    tol: float,
    merge: float,
    infra_rule: str = "window",
) -> EnvScore:
    out = EnvScore(it.id, it.query.environment or "")
    out.infrastructure_errors = sum(1 for r in recs if r.error)
    allocs = allocate_first_response(
        it.targets,
        recs,
        lambda k, j: _toolset(recs[j], it.targets[k].tools or []),
        q=it.q,
        tolerance_s=tol,
        merge_s=merge,
    )
    seed = fresh_environment(bench, out.environment)
    cmp = ParamComparer(seed.definition, seed.conn, ScoreSettings())
    tools = list(seed.tools.values())
    matched: set[tuple[int, int]] = set()  # (record index, call index) matched to a target
    for tg, a in zip(it.targets, allocs, strict=True):
        outcome = infra_outcome(
            a.outcome, recs, window_s=a.window_s, region_s=a.region_s, rule=infra_rule
        )
        if outcome == "infra_error":
            out.infra_error_targets += 1
            out.targets.append(
                {"target_id": tg.id, "time_tool": None, "time_call": None, "outcome": outcome}
            )
            continue
        lo, hi = (round(x * 1000) for x in a.window_s)
        members = [
            j for j in (a.group.members if a.group else ()) if lo <= round(recs[j].t * 1000) <= hi
        ]
        agent = [(j, i, c) for j in members for i, c in enumerate(recs[j].tool_calls)]
        expected = clean_calls(tg.calls or [], tools, ScoreSettings())
        made = clean_calls([c for _, _, c in agent], tools, ScoreSettings())
        idx = match_calls(expected, made, cmp, "greedy")
        matched |= {agent[m][:2] for m in idx if m is not None}
        call_hit = bool(tg.calls) and a.hit and all(m is not None for m in idx)
        out.time_tool_hits += a.hit
        out.call_targets += tg.calls is not None
        out.time_call_hits += call_hit
        out.targets.append(
            {
                "target_id": tg.id,
                "time_tool": a.hit,
                "time_call": call_hit if tg.calls is not None else None,
                "outcome": outcome,
            }
        )
    seed.close()
    for j, rec in enumerate(recs):
        results = (rec.model_extra or {}).get("tool_results") or []
        for i, res in enumerate(results):
            if isinstance(res, dict) and res.get("changed"):
                out.writes += 1
                out.matched_writes += (j, i) in matched
    _judge_state(bench, it, recs, out)
    return out


def _judge_state(bench: Any, it: Interaction, recs: list[ResponseRecord], out: EnvScore) -> None:
    """``state_correct`` from a healthy final decision point, else ``None`` with the reason."""
    final = recs[-1] if recs else None
    if final is None or final.error:
        out.state_reason = "the final decision point failed (infrastructure error)"
        return
    if out.infra_error_targets:
        out.state_reason = (
            f"{out.infra_error_targets} target(s) could not be answered (infrastructure errors)"
        )
        return
    got = (final.model_extra or {}).get("env_state_hash")
    if got is None:
        out.state_reason = "no final state hash recorded"
        return
    out.state_correct = got == expected_state_hash(bench, it)


def score_environments(
    bench: Benchmark,
    records: Sequence[ResponseRecord],
    *,
    tolerance_s: float = 2.0,
    merge_s: float = 2.0,
    infra_rule: str = "window",
) -> list[EnvScore]:
    """The new scores of each environment interaction of ``bench`` that has records
    (``infra_rule``: the ``infra_error_rule`` setting of the paper columns)."""
    by_id: dict[str, list[ResponseRecord]] = {}
    for r in records:
        by_id.setdefault(r.interaction_id, []).append(r)
    return [
        _score_one(
            bench, it, sorted(by_id[it.id], key=lambda r: r.t), tolerance_s, merge_s, infra_rule
        )
        for it in bench.interactions
        if it.query.environment is not None and it.id in by_id
    ]


def totals(scores: Sequence[EnvScore]) -> dict[str, Any]:
    """Σ numerators / Σ denominators of the three new columns; ``health`` (error records,
    ``infra_error`` targets, interactions without a state verdict) only when records failed."""
    judged = [s for s in scores if s.state_correct is not None]
    health = {
        "infrastructure_errors": sum(s.infrastructure_errors for s in scores),
        "infra_error_targets": sum(s.infra_error_targets for s in scores),
        "state_unjudged": len(scores) - len(judged),
    }
    out = {
        "joint_time_call": {
            "hits": sum(s.time_call_hits for s in scores),
            "targets": sum(s.call_targets for s in scores),
        },
        "state_correct": {
            "correct": sum(bool(s.state_correct) for s in judged),
            "interactions": len(judged),
        },
        "action_precision": {
            "matched": sum(s.matched_writes for s in scores),
            "state_changing": sum(s.writes for s in scores),
        },
    }
    if health["infrastructure_errors"]:  # only when present: a healthy run keeps its bytes
        out["health"] = health
    return out


def environment_warning(tot: dict[str, Any]) -> str | None:
    """The warning ``score`` prints when environment interactions carry infrastructure errors
    (``tot``: :func:`totals`), else ``None``."""
    h = tot.get("health") or {}
    if not h.get("infrastructure_errors"):
        return None
    return (
        f"environment columns: {h['infrastructure_errors']} record(s) carry an infrastructure "
        f"error; {h.get('infra_error_targets', 0)} target(s) left out of time-tool/time-call "
        f"(infra_error), {h.get('state_unjudged', 0)} interaction(s) without a state verdict"
    )


def write_environment_scores(
    run: str | Path,
    out_dir: str | Path,
    tolerance_s: float = 2.0,
    merge_s: float = 2.0,
    infra_rule: str = "window",
) -> tuple[Path, list[str]] | None:
    """Score a run folder's environment interactions into ``OUT/environment_scores.json``;
    returns (path, printable lines), or ``None`` when the benchmark declares no environment."""

    folder = RunFolder(run)
    bench = folder.benchmark(probe_media=False, media_errors="record")
    if not bench.environments:
        return None
    scores = score_environments(
        bench, folder.responses(), tolerance_s=tolerance_s, merge_s=merge_s, infra_rule=infra_rule
    )
    tot = totals(scores)
    doc = {"totals": tot, "interactions": [asdict(s) for s in scores]}
    path = Path(out_dir) / SCORES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return path, _lines(scores, tot)


class _Counts(BaseModel):
    model_config = ConfigDict(extra="forbid")


class JointTimeCall(_Counts):
    """Σ joint time–call hits / Σ targets with expected ``calls``."""

    hits: int
    targets: int


class StateCorrect(_Counts):
    """Interactions whose final state hash is the expected one / interactions with a hash."""

    correct: int
    interactions: int


class ActionPrecision(_Counts):
    """State-changing calls matched to an expected call / all state-changing calls."""

    matched: int
    state_changing: int


class EnvHealth(_Counts):
    """Infrastructure errors of the environment interactions: error records, targets left out
    (``infra_error``), interactions without a state verdict (``state_correct`` null)."""

    infrastructure_errors: int = 0
    infra_error_targets: int = 0
    state_unjudged: int = 0


class EnvTotals(_Counts):
    """The ``totals`` block of ``environment_scores.json`` (:func:`totals`)."""

    joint_time_call: JointTimeCall
    state_correct: StateCorrect
    action_precision: ActionPrecision
    health: EnvHealth = Field(default_factory=EnvHealth)

    def cells(self) -> dict[str, str]:
        """The three columns as printable cells ``"100.0 (2/2)"`` (percent, then the counts;
        ``"— (0/0)"`` for an empty denominator), keyed by column title."""
        jc, sc, ap = self.joint_time_call, self.state_correct, self.action_precision
        pairs = {
            "T1 time-call": (jc.hits, jc.targets),
            "state correct": (sc.correct, sc.interactions),
            "action precision": (ap.matched, ap.state_changing),
        }
        return {
            k: (f"{100 * a / b:.1f}" if b else "—") + f" ({a}/{b})" for k, (a, b) in pairs.items()
        }


class EnvironmentScores(BaseModel):
    """``RUN/scores/environment_scores.json``: the totals and one entry per environment
    interaction (the fields of :class:`EnvScore`)."""

    model_config = ConfigDict(extra="forbid")

    totals: EnvTotals
    interactions: list[dict[str, Any]]


def read_environment_scores(path: str | Path) -> EnvironmentScores:
    """Read an ``environment_scores.json`` written by :func:`write_environment_scores`.

    Raises:
        OSError: the file cannot be read.
        pydantic.ValidationError: it is not such a file.
    """
    return EnvironmentScores.model_validate_json(Path(path).read_text(encoding="utf-8"))


def _frac(a: int, b: int) -> str:
    return f"{a}/{b} = {a / b:.3f}" if b else f"{a}/0 = n/a"


def _state_cell(s: EnvScore) -> str:
    if s.state_correct is None:
        return f"n/a ({s.state_reason})" if s.state_reason else "n/a"
    return "correct" if s.state_correct else "incorrect"


def _lines(scores: Sequence[EnvScore], tot: dict[str, Any]) -> list[str]:
    head = "environment interactions (beyond the paper): interaction | time-tool | time-call | state | action precision"
    rows = [
        f"  {s.interaction_id} | {s.time_tool_hits}/{len(s.targets) - s.infra_error_targets} | "
        f"{s.time_call_hits}/{s.call_targets} | {_state_cell(s)} | "
        f"{s.matched_writes}/{s.writes}"
        + (f" | {s.infra_error_targets} target(s) infra_error" if s.infra_error_targets else "")
        for s in scores
    ]
    jc, sc, ap = tot["joint_time_call"], tot["state_correct"], tot["action_precision"]
    rows.append(
        f"  T1 joint time-call {_frac(jc['hits'], jc['targets'])}; state correct "
        f"{_frac(sc['correct'], sc['interactions'])}; action precision "
        f"{_frac(ap['matched'], ap['state_changing'])}"
    )
    return [head, *rows]

"""The environment columns of a streaming run (docs/protocol.md#environments) for the viewer:
the summary's four cells and one row per environment interaction.

Read from ``scores/environment_scores.json`` (what ``interactscope score`` and the demo write and
``score RUN --json`` prints under ``environment``); a run scored through the Python API has no
such file, so its columns are computed in memory with the same function
(:func:`interactscope.streaming.environments.scores.score_environments`, the run's δ and merge
span, ``infra_error_rule`` ``window``) and the run folder is never written.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

from pydantic import ValidationError

from interactscope.streaming.bench import Benchmark
from interactscope.streaming.environments.scores import (
    SCORES_FILE,
    EnvironmentScores,
    read_environment_scores,
    score_environments,
    totals,
)
from interactscope.streaming.schema import ResponseRecord
from interactscope.view.model import EnvInteraction, EnvTarget, ScoreCell

__all__ = ["ENV_METRICS", "env_cells", "env_rows", "load_environment"]

ENV_METRICS = ("T1 time-tool", "T1 time-call", "state correct", "action precision")
"""The summary rows, in the order ``score`` prints them (time-tool is the paper's T1 joint hit
restricted to the environment interactions)."""


def load_environment(
    bench: Benchmark,
    records: Iterable[ResponseRecord],
    scores: Path,
    *,
    tolerance_s: float,
    merge_s: float,
) -> tuple[EnvironmentScores | None, str]:
    """The run's environment scores and where they came from.

    Args:
        bench: the run's benchmark (no environments: ``(None, "")``).
        records: every record of the run. scores: the run's ``scores/`` folder.
        tolerance_s, merge_s: the run's scoring settings (s), for the in-memory fallback.

    Returns:
        ``(scores, source)``: source ``scores/environment_scores.json`` or ``computed by the
        viewer``.

    Raises:
        ValueError: ``environment_scores.json`` exists but is not such a file (the message
            names it and the fix).
    """
    if not bench.environments:
        return None, ""
    path = scores / SCORES_FILE
    if path.is_file():
        try:
            return read_environment_scores(path), f"scores/{SCORES_FILE}"
        except (OSError, ValidationError) as exc:
            raise ValueError(
                f"{path}: not an environment scores file ({type(exc).__name__}); "
                "re-run `interactscope score`"
            ) from None
    done = score_environments(bench, list(records), tolerance_s=tolerance_s, merge_s=merge_s)
    doc = {"totals": totals(done), "interactions": [asdict(s) for s in done]}
    return EnvironmentScores.model_validate(doc), "computed by the viewer"


def _cell(name: str, num: int, den: int, note: str) -> ScoreCell:
    return ScoreCell(
        metric=name,
        estimate=100.0 * num / den if den else None,
        counts=f"{num}/{den}",
        note=note,
    )


def _time_tool(env: EnvironmentScores) -> tuple[int, int]:
    """Σ time-tool hits / Σ targets in the score (``infra_error`` targets left out)."""
    rows = env.interactions
    hits = sum(int(r.get("time_tool_hits", 0)) for r in rows)
    scored = sum(len(r.get("targets", [])) - int(r.get("infra_error_targets", 0)) for r in rows)
    return hits, scored


def env_cells(env: EnvironmentScores, source: str) -> list[ScoreCell]:
    """The four summary cells in percent with their counts (no interval: ``score`` prints
    none either), in :data:`ENV_METRICS` order."""
    t = env.totals
    pairs = [
        _time_tool(env),
        (t.joint_time_call.hits, t.joint_time_call.targets),
        (t.state_correct.correct, t.state_correct.interactions),
        (t.action_precision.matched, t.action_precision.state_changing),
    ]
    note = f"environment interactions, beyond the paper ({source})"
    return [_cell(n, a, b, note) for n, (a, b) in zip(ENV_METRICS, pairs, strict=True)]


def env_rows(env: EnvironmentScores | None) -> dict[str, EnvInteraction]:
    """Interaction id -> its row, for every environment interaction the run scored (empty
    without environment scores)."""
    return {str(r["interaction_id"]): _row(r) for r in (env.interactions if env else [])}


def _row(row: dict) -> EnvInteraction:
    targets = [EnvTarget(**{k: t[k] for k in EnvTarget.model_fields if k in t}) for t in row["targets"]]  # fmt: skip
    infra = int(row.get("infra_error_targets", 0))
    return EnvInteraction(
        environment=str(row.get("environment", "")),
        time_tool=(int(row.get("time_tool_hits", 0)), len(targets) - infra),
        time_call=(int(row.get("time_call_hits", 0)), int(row.get("call_targets", 0))),
        state_correct=row.get("state_correct"),
        state_reason=row.get("state_reason"),
        action_precision=(int(row.get("matched_writes", 0)), int(row.get("writes", 0))),
        infra_error_targets=infra,
        targets=targets,
    )

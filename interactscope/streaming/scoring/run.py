"""``interactscope score RUN``: judge, allocate/match, and write ``RUN/scores/``.

Outputs (byte-identical when a run folder is scored twice with the same settings: sorted keys,
fixed float formatting, no timestamps, no cache statistics):

* ``scores/targets.csv`` — one row per target (see :mod:`interactscope.streaming.scoring.frames`);
* ``scores/interactions.csv`` — one row per interaction;
* ``scores/clusters.csv`` — per (cluster, task) numerators and denominators for the bootstrap;
* ``scores/responses.csv`` — one row per record: its group, the target that consumed or matched
  it, its class and verdicts (see :mod:`interactscope.streaming.scoring.responses`);
* ``scores/summary.json`` — :class:`~interactscope.streaming.scoring.results.ScoreSummary`: every metric,
  the scoring settings, the judge (with its approximation label), judge and record health;
* ``scores/rejudge.json`` — only with ``--rejudge N``: the flip rate (not reproducible by nature).

The verdict cache defaults to ``RUN/scores/verdicts.sqlite`` (setting ``judge.cache``): a run
folder carries its own verdicts and re-scores offline; pass ``cache_path`` (``--cache``) to share
one cache across runs.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from interactscope.core.files import write_atomic
from interactscope.runs.common import RunLogError
from interactscope.streaming.bench import BenchmarkError
from interactscope.streaming.judges import (
    DEFAULT_JUDGE,
    Judge,
    JudgeItem,
    JudgeReport,
    VerdictCache,
    make_judge,
    run_judge,
)
from interactscope.streaming.judges.base import judge_note
from interactscope.streaming.runlog import RunFolder
from interactscope.streaming.schema import Interaction, ResponseRecord, RunManifest
from interactscope.streaming.scoring.allocation import ms
from interactscope.streaming.scoring.completeness import Completeness, run_completeness
from interactscope.streaming.scoring.core import pairs_that_matter, score_interaction
from interactscope.streaming.scoring.frames import cluster_table, interactions_frame, targets_frame
from interactscope.streaming.scoring.metrics import compute_metrics, format_tables
from interactscope.streaming.scoring.responses import ResponseRow, responses_frame
from interactscope.streaming.scoring.results import (
    JudgeHealth,
    RunInfo,
    ScoreHealth,
    ScoreSummary,
    ScoringOptions,
    ScoringSettings,
    _clean,
)

__all__ = [
    "SCORING_VERSION",
    "RunInputs",
    "ScoreResult",
    "load_run_inputs",
    "score_collection",
    "score_run",
    "write_scores",
]

log = logging.getLogger(__name__)

SCORING_VERSION = 1
RECORD_POLICY = {
    "error": "excluded from responses; counted in health.infrastructure_errors",
    "suppressed": "silent",
    "before_q": "ignored",
}
# Recorded in summary.json as they always were (older run folders compare equal).
RULES = {
    "time_resolution": "ms",
    "windows": "closed",
    "allocation": "first-response (T1-T7, SPEC 3.1)",
    "matching": "order-preserving maximum (T8, SPEC 3.2)",
    "straddling_group": "premature",
    "unparseable_verdict": "target excluded from numerator and denominator (unjudged)",
    "records": RECORD_POLICY,
    "content_check": {"targets_with_tools": "toolset (exact, case-insensitive)"},
}


# ------------------------------------------------------------------------------ run inputs


@dataclass
class RunInputs:
    """What scoring (and every analysis) needs from a run folder.

    Attributes:
        folder: the opened run folder. manifest: its ``run.json``.
        interactions: the run's interactions (``run.json`` ``interaction_ids``; a shard's own).
        records: the response records (deduplicated, sorted by interaction and time).
        clusters: video id → bootstrap cluster (the video record's ``cluster``, else its id).
    """

    folder: RunFolder
    manifest: RunManifest
    interactions: list[Interaction]
    records: list[ResponseRecord]
    clusters: dict[str, str]
    media: dict[str, Path] = field(default_factory=dict)  # video id -> file (looking judges)

    def cluster_of(self, interaction: Interaction) -> str:
        """Bootstrap cluster of one interaction (its video's cluster, else the video id)."""
        return str(self.clusters.get(interaction.video_id, interaction.video_id))


def load_run_inputs(run_dir: str | Path, *, tasks: Sequence[str] | None = None) -> RunInputs:
    """Open a run folder, keep its interactions (only ``tasks`` when given), map clusters.

    Raises:
        interactscope.streaming.runlog.RunLogError: not a run folder (no run.json).
        interactscope.streaming.bench.BenchmarkError: the benchmark the run names cannot be loaded.
    """
    folder = RunFolder(run_dir)
    manifest = folder.manifest
    bench = folder.benchmark(probe_media=False, media_errors="record")
    wanted = set(manifest.interaction_ids) if manifest.interaction_ids else None
    interactions = [
        i
        for i in bench.interactions
        if (wanted is None or i.id in wanted) and (tasks is None or i.task in tasks)
    ]
    clusters = {vid: str(v.cluster or vid) for vid, v in bench.videos.items()}
    media = {vid: bench.media_path(v) for vid, v in bench.videos.items()}
    return RunInputs(folder, manifest, interactions, folder.responses(), clusters, media)


def run_info(manifest: RunManifest, n_interactions: int) -> RunInfo:
    """What ``summary.json`` records about a run."""
    b = manifest.benchmark
    return RunInfo(
        model=manifest.model,
        backend=manifest.backend,
        protocol=manifest.protocol,
        shard=manifest.shard,
        benchmark={"name": b.name, "version": b.version, "fingerprint": b.fingerprint},
        interactions=n_interactions,
    )


# ------------------------------------------------------------------------------ scoring


@dataclass
class ScoreResult:
    """Everything one scoring produced (frames, the metric block, ``summary.json``, the text)."""

    targets: pd.DataFrame
    interactions: pd.DataFrame
    clusters: pd.DataFrame
    metrics: dict[str, Any]
    summary: ScoreSummary
    judge_report: JudgeReport
    table: str
    completeness: Completeness | None = None
    responses: pd.DataFrame | None = None


def _records_by_interaction(
    interactions: Sequence[Interaction], records: Iterable[ResponseRecord]
) -> tuple[dict[str, list[ResponseRecord]], int]:
    """Records grouped per known interaction, time-sorted; and the count of unknown ones."""
    by_id: dict[str, list[ResponseRecord]] = defaultdict(list)
    known = {i.id for i in interactions}
    unknown = 0
    for r in records:
        if r.interaction_id in known:
            by_id[r.interaction_id].append(r)
        else:
            unknown += 1
    for recs in by_id.values():
        recs.sort(key=lambda r: ms(r.t))
    return by_id, unknown


def _judge_items(
    interactions: Sequence[Interaction],
    by_id: Mapping[str, list[ResponseRecord]],
    options: ScoringOptions,
) -> list[JudgeItem]:
    """The (target, response) pairs whose verdict can change a score, for the text judge."""
    items: list[JudgeItem] = []
    for inter in interactions:
        recs = by_id.get(inter.id, [])
        pairs = pairs_that_matter(
            inter, recs, tolerance_s=options.tolerance_s, merge_s=options.merge_s
        )
        for k, j in pairs:
            tgt = inter.targets[k]
            if tgt.tools is None:
                items.append(
                    JudgeItem(
                        inter.id,
                        tgt.id,
                        recs[j].t,
                        inter.query.text,
                        tgt.reference,
                        recs[j].text,
                        inter.video_id,
                        tgt.window(options.tolerance_s),
                        tgt.evidence,
                    )  # fmt: skip
                )
    return items


def _score_rows(
    interactions: Sequence[Interaction],
    by_id: Mapping[str, list[ResponseRecord]],
    clusters: Mapping[str, str],
    report: JudgeReport,
    options: ScoringOptions,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[ResponseRow]]:
    """(target rows, interaction rows, response rows) of every interaction, verdicts from
    ``report``."""
    target_rows: list[dict[str, Any]] = []
    inter_rows: list[dict[str, Any]] = []
    response_rows: list[ResponseRow] = []
    for inter in interactions:

        def lookup(target_id: str, t_ms: int, _iid: str = inter.id) -> tuple[bool | None, str]:
            v = report.verdicts[(_iid, target_id, t_ms)]
            return v.value, v.label

        s = score_interaction(
            inter,
            by_id.get(inter.id, []),
            lookup,
            cluster=clusters.get(inter.video_id, inter.video_id),
            tolerance_s=options.tolerance_s,
            merge_s=options.merge_s,
            infra_rule=options.infra_error_rule,
        )
        target_rows.extend(s.targets)
        inter_rows.append(s.interaction)
        response_rows.extend(s.responses)
    return target_rows, inter_rows, response_rows


def _problem_counts(
    tdf: pd.DataFrame, idf: pd.DataFrame, completeness: Completeness | None
) -> dict[str, Any]:
    """The health keys that only appear when they report a problem (infra errors, partial or
    unfinished collection), so a clean run's summary.json is unchanged."""
    out: dict[str, Any] = {
        "infra_error_interactions": int((idf["infrastructure_errors"] > 0).sum()),
        "infra_error_targets": int((tdf["outcome"] == "infra_error").sum()),
    }
    if completeness is not None:
        out["partial_interactions"] = len(completeness.partial)
    out = {k: v for k, v in out.items() if v}
    if completeness is not None and not completeness.finished:
        out["run_finished"] = False
    return out


def _health(
    tdf: pd.DataFrame,
    idf: pd.DataFrame,
    report: JudgeReport,
    unknown: int,
    completeness: Completeness | None = None,
) -> ScoreHealth:
    return ScoreHealth(
        **_problem_counts(tdf, idf, completeness),
        judge=JudgeHealth(
            pairs_judged=report.pairs,
            unique_triples=report.unique,
            unparseable_pairs=sum(1 for v in report.verdicts.values() if v.value is None),
            unjudged_targets=int((tdf["outcome"] == "unjudged").sum()),
        ),
        infrastructure_errors=int(idf["infrastructure_errors"].sum()),
        suppressed_records=int(idf["suppressed"].sum()),
        parse_errors=int(idf["parse_errors"].sum()),
        interactions_without_records=int((idf["records"] == 0).sum()),
        unknown_records=unknown,
    )


def score_collection(
    interactions: Sequence[Interaction],
    records: Iterable[ResponseRecord],
    clusters: Mapping[str, str],
    judge: Judge,
    *,
    cache: VerdictCache | None = None,
    options: ScoringOptions | None = None,
    rejudge: int = 0,
    run_info: RunInfo | Mapping[str, Any] | None = None,
    completeness: Completeness | None = None,
    **overrides: float,
) -> ScoreResult:
    """Score records against interactions (no file I/O besides the cache).

    Args:
        interactions: the interactions to score (every one is scored; one without records has
            all targets ``missed`` and is counted in ``health.interactions_without_records``).
        records: response records of the run (any order; records of other interactions are
            counted in ``health.unknown_records`` and ignored).
        clusters: video id -> bootstrap cluster (a missing video is its own cluster).
        judge: the text judge for targets without ``tools``.
        cache: verdict cache, or ``None`` for none.
        options: tolerance δ and merge span (s); ``overrides`` (``tolerance_s=``, ``merge_s=``)
            replace single fields.
        rejudge: re-ask this many cached verdicts and report the flip rate.
        run_info: what ``summary.json`` records about the run (model, protocol, benchmark).
        completeness: how much of the run was collected (``health.partial_interactions``,
            ``health.run_finished``); ``None``: not known, not reported.

    Raises:
        ValueError: a negative tolerance or merge span, or an unknown option.
    """
    opts = ScoringOptions.of(options, **overrides)
    by_id, unknown = _records_by_interaction(interactions, records)
    report = run_judge(judge, _judge_items(interactions, by_id, opts), cache, rejudge=rejudge)
    target_rows, inter_rows, resp_rows = _score_rows(interactions, by_id, clusters, report, opts)
    tdf = targets_frame(target_rows)
    idf = interactions_frame(inter_rows)
    cdf = cluster_table(tdf, idf)
    metrics = compute_metrics(cdf)
    info = run_info if isinstance(run_info, RunInfo) else RunInfo(**dict(run_info or {}))
    # recorded where it can matter, so a clean run's summary.json keeps its bytes
    infra = {"infra_error_rule": opts.infra_error_rule}
    if opts.infra_error_rule == "window" and not int(idf["infrastructure_errors"].sum()):
        infra = {}
    summary = ScoreSummary(
        scoring_version=SCORING_VERSION,
        run=info,
        settings=ScoringSettings(
            tolerance_s=float(opts.tolerance_s),
            merge_s=float(opts.merge_s),
            **RULES,
            **infra,
            judge=judge.describe(),
        ),
        approximation=judge.approximation,
        metrics=metrics,
        health=_health(tdf, idf, report, unknown, completeness),
    )
    table = format_tables(metrics, model=str(info.model or "run"), judge=judge.name)
    note = judge_note(judge.name, judge.approximation)
    if note:
        table += f"\nNOTE: {note}"
    return ScoreResult(
        tdf, idf, cdf, metrics, summary, report, table, responses=responses_frame(resp_rows)
    )


def _write_csv(df: pd.DataFrame, path: Path) -> None:
    write_atomic(path, df.to_csv(index=False, float_format="%.3f", lineterminator="\n"))


def _json_text(obj: Any) -> str:
    return json.dumps(_clean(obj), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_scores(result: ScoreResult, out_dir: str | Path) -> dict[str, Path]:
    """Write the score files into ``out_dir`` (created). Returns name -> path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "targets": out / "targets.csv",
        "interactions": out / "interactions.csv",
        "clusters": out / "clusters.csv",
        "summary": out / "summary.json",
    }
    _write_csv(result.targets, paths["targets"])
    _write_csv(result.interactions, paths["interactions"])
    _write_csv(result.clusters, paths["clusters"])
    if result.responses is not None:
        paths["responses"] = out / "responses.csv"
        _write_csv(result.responses, paths["responses"])
    write_atomic(paths["summary"], result.summary.to_json())
    rep = result.judge_report
    if rep.rejudged:
        paths["rejudge"] = out / "rejudge.json"
        flips = {
            "rejudged": rep.rejudged,
            "flips": rep.flips,
            "flip_rate": rep.flip_rate,
            "flipped": rep.flipped,
        }
        write_atomic(paths["rejudge"], _json_text(flips))
    return paths


def score_run(
    run_dir: str | Path,
    *,
    judge: str | Judge = DEFAULT_JUDGE,
    options: ScoringOptions | None = None,
    rejudge: int = 0,
    cache_path: str | Path | None = None,
    out_dir: str | Path | None = None,
    completeness: Completeness | None = None,
    out: str | Path | None = None,
    **overrides: float,
) -> ScoreResult:
    """Score a run folder and write ``RUN/scores/`` (or ``out_dir``).

    Args:
        run_dir: a run folder (``run.json`` + responses) made by ``interactscope collect``.
        judge: a ``--judge`` string or a :class:`~interactscope.streaming.judges.Judge`.
        options: tolerance δ and merge span (s); ``tolerance_s=`` / ``merge_s=`` override fields.
        cache_path: verdict cache; default ``RUN/scores/verdicts.sqlite`` (also when ``out_dir``
            puts the score files elsewhere, e.g. one folder per tolerance).
        out_dir: where the score files go; default ``RUN/scores``.
        out: the same as ``out_dir``, by the name of the CLI's ``--out`` and of ``collect(out=)``.
        completeness: the run's completeness when the caller computed it already (else it is
            computed here; a benchmark that cannot be re-read leaves it unreported).

    Raises:
        interactscope.streaming.runlog.RunLogError: not a run folder. ValueError: bad options.
        TypeError: an unknown keyword, or both ``out`` and ``out_dir``.
    """
    unknown = sorted(set(overrides) - set(ScoringOptions.model_fields))
    if unknown:  # a mistyped keyword would otherwise read as a bad scoring option
        raise TypeError(
            f"score_run() got an unexpected keyword argument {unknown[0]!r}; keywords: judge, "
            "options, rejudge, cache_path, out_dir (or out), completeness, and the "
            f"ScoringOptions fields {', '.join(ScoringOptions.model_fields)}"
        )
    if out is not None and out_dir is not None:
        raise TypeError("score_run() takes out or out_dir (the same folder), not both")
    out_dir = out if out is not None else out_dir
    run_dir = Path(run_dir)
    inputs = load_run_inputs(run_dir)
    if completeness is None:
        completeness = _completeness_or_none(run_dir)
    judge_obj = make_judge(judge) if isinstance(judge, str) else judge
    judge_obj.bind_media(inputs.media)
    default_cache = run_dir / "scores" / "verdicts.sqlite"
    cache = None if judge_obj.per_item else VerdictCache(cache_path or default_cache)
    try:
        result = score_collection(
            inputs.interactions,
            inputs.records,
            inputs.clusters,
            judge_obj,
            cache=cache,
            options=ScoringOptions.of(options, **overrides),
            rejudge=rejudge,
            run_info=run_info(inputs.manifest, len(inputs.interactions)),
            completeness=completeness,
        )
    finally:
        if cache is not None:
            cache.close()
    write_scores(result, Path(out_dir) if out_dir else run_dir / "scores")
    result.completeness = completeness
    return result


def _completeness_or_none(run_dir: Path) -> Completeness | None:
    try:
        return run_completeness(run_dir)
    except (RunLogError, BenchmarkError) as exc:
        log.warning("%s: completeness not checked (%s)", run_dir, str(exc).splitlines()[0])
        return None

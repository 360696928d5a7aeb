"""Judge a batch of items through the cache: each identical triple once, cached verdicts reused,
and an optional re-ask of N cached verdicts to measure the flip rate (docs/protocol.md#judges-and-caching)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from interactscope.core.errors import first_problem
from interactscope.core.text import plural
from interactscope.streaming.judges.base import Judge, JudgeError, JudgeItem, Verdict
from interactscope.streaming.judges.cache import VerdictCache

__all__ = ["JudgeReport", "run_judge"]

log = logging.getLogger(__name__)

CACHE_CHUNK = 32
"""Triples sent to a judge per call when a cache is used; each call's verdicts are stored before
the next is asked, so a kill loses at most one chunk of paid-for verdicts. A judge with a
``concurrency`` attribute gets chunks of 4 x concurrency (its thread pool stays busy)."""


@dataclass
class JudgeReport:
    """Verdicts per pair and what it took to get them.

    Attributes:
        verdicts: (interaction id, target id, response ms) -> :class:`Verdict`.
        pairs: items asked for; unique: distinct triples (or items for per-item judges).
        cache_hits / calls: unique triples answered from the cache / by the judge this time.
        rejudged / flips: cached verdicts re-asked with ``rejudge`` and how many changed
            (including to or from unparseable); ``flip_rate`` = flips / rejudged.
    """

    verdicts: dict[tuple[str, str, int], Verdict] = field(default_factory=dict)
    pairs: int = 0
    unique: int = 0
    cache_hits: int = 0
    calls: int = 0
    rejudged: int = 0
    flips: int = 0
    flipped: list[dict[str, str]] = field(default_factory=list)

    @property
    def flip_rate(self) -> float | None:
        return self.flips / self.rejudged if self.rejudged else None

    @property
    def unparseable(self) -> int:
        return sum(1 for v in self.verdicts.values() if v.value is None)


def _key(judge: Judge, triple: tuple[str, str, str]) -> str:
    return judge.unit_key(triple)


def run_judge(
    judge: Judge,
    items: list[JudgeItem],
    cache: VerdictCache | None = None,
    *,
    rejudge: int = 0,
) -> JudgeReport:
    """Verdicts for ``items``.

        Per-triple judges: items are deduplicated by (request, reference, candidate); cached verdicts
        are reused without calling the judge; the rest are judged in chunks, each stored in the cache
    as it arrives (a killed scoring keeps the verdicts already paid for). Per-item
        judges (``file:``) are asked for every item and never cached.

        Args:
            rejudge: re-ask this many cached verdicts (the first N of this batch's triples in cache-key
                order, a fixed pseudo-random sample) bypassing the cache, and count flips. The cache
                and the returned verdicts keep the original answers, so scores stay reproducible.

        Raises:
            JudgeError: the judge returned transport errors; verdicts obtained before are cached, so a
                re-run resumes.
    """
    report = JudgeReport(pairs=len(items))
    if judge.per_item:
        verdicts = _ask(judge, judge.judge_items, items) if items else []
        report.unique = report.calls = len(items)
        report.verdicts = {it.pair_key: v for it, v in zip(items, verdicts, strict=True)}
        _raise_errors(verdicts, judge)
        return report

    units = [judge.unit(it) for it in items]  # the triple (+ the media a looking judge sees)
    keys = [_key(judge, u) for u in units]
    unique: dict[str, tuple[str, str, str]] = {}
    for k, u in zip(keys, units, strict=True):
        unique.setdefault(k, u)
    report.unique = len(unique)
    cached = cache.get_many(unique) if cache is not None else {}
    report.cache_hits = len(cached)
    todo = [k for k in unique if k not in cached]
    fresh = _judge_fresh(judge, todo, unique, cache)
    report.calls = len(fresh)
    _raise_errors(list(fresh.values()), judge)
    by_key = {**cached, **fresh}
    report.verdicts = {it.pair_key: by_key[k] for it, k in zip(items, keys, strict=True)}

    if rejudge > 0:
        sample = sorted(k for k in unique if k in by_key)[:rejudge]
        again = _ask(judge, judge.judge, [unique[k] for k in sample]) if sample else []
        for k, v in zip(sample, again, strict=True):
            if v.error:
                continue
            report.rejudged += 1
            if v.value != by_key[k].value:
                report.flips += 1
                req, ref, cand = unique[k]
                report.flipped.append(
                    {
                        "key": k,
                        "reference": ref,
                        "candidate": cand,
                        "before": by_key[k].label,
                        "after": v.label,
                    }
                )
    return report


def _judge_fresh(
    judge: Judge,
    todo: list[str],
    unique: dict[str, tuple[str, str, str]],
    cache: VerdictCache | None,
) -> dict[str, Verdict]:
    """Ask the judge for ``todo`` keys in chunks, storing each chunk's verdicts as it arrives."""
    fresh: dict[str, Verdict] = {}
    size = len(todo) or 1
    if cache is not None:
        conc = int(getattr(judge, "concurrency", 0) or 0)
        size = 4 * conc if conc > 0 else CACHE_CHUNK
    for i in range(0, len(todo), size):
        keys = todo[i : i + size]
        answers = _ask(judge, judge.judge, [unique[k] for k in keys])
        if len(answers) != len(keys):
            raise JudgeError(f"judge {judge.name} returned {len(answers)} verdicts for {len(keys)}")
        got = dict(zip(keys, answers, strict=True))
        if cache is not None:
            cache.put_many(
                (k, judge.backend, judge.model, judge.prompt_version, unique[k], v)
                for k, v in got.items()
            )
        fresh.update(got)
        if any(v.error for v in answers):
            break  # the server is failing: stop paying; what was answered is cached
    return fresh


def _ask(
    judge: Judge, method: Callable[[list[Any]], list[Verdict]], batch: list[Any]
) -> list[Verdict]:
    """``method(batch)``; an exception the judge raises (a plug-in's bug, a failure it does not
    turn into verdict errors) becomes a one-line JudgeError naming the judge; the traceback
    is logged at DEBUG (``-v``)."""
    try:
        return method(batch)
    except JudgeError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure inside judge code
        log.debug("judge %r raised", judge.name, exc_info=True)  # shown with -v
        raise JudgeError(
            f"judge {judge.name!r} raised {type(exc).__name__}: {first_problem(exc)} "
            "(-v shows the traceback)"
        ) from exc


def _raise_errors(verdicts: list[Verdict], judge: Judge) -> None:
    errors = [v.error for v in verdicts if v.error]
    if errors:
        raise JudgeError(
            f"judge {judge.name}: {len(errors)} of {plural(len(verdicts), 'request')} failed "
            f"(first: {errors[0]}); the verdicts obtained are cached, re-run to resume"
        )

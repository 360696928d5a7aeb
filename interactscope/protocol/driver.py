"""Collection driver: walks every interaction's decision grid and writes one record per decision
point (SPEC §2), for both protocols.

- **Offline Probing**: one independent request per decision point. Without the history/cooldown
  controls the pending points of an interaction go to the adapter in batches
  (``Adapter.respond_batch``); with them, points are asked one by one in time order because each
  answer depends on the previous ones.
- **Online Rolling**: one ``Session`` per interaction, stepped through the whole grid in order.
  A partially collected interaction is redone from q on resume.

A failure (unreadable media, adapter exception) is written as an ``error`` on that interaction's
records and the run goes on.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tqdm.auto import tqdm

from interactscope.adapters.base import Adapter, AdapterOutput, DecisionRequest
from interactscope.protocol.grid import decision_grid
from interactscope.runlog import RunWriter
from interactscope.schema import Interaction, ResponseRecord, ToolCall
from interactscope.settings import Settings

log = logging.getLogger(__name__)


@dataclass
class CollectSummary:
    """Counts of one ``collect`` call (also written into ``run.json`` as ``summary``)."""

    interactions: int = 0
    decision_points: int = 0
    already_present: int = 0
    written: int = 0
    non_silent: int = 0
    suppressed: int = 0
    errors: int = 0
    failed_interactions: dict[str, str] = field(default_factory=dict)
    wall_s: float = 0.0
    model_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def line(self) -> str:
        return (
            f"{self.interactions} interactions, {self.decision_points} decision points: "
            f"{self.written} written, {self.already_present} already present, "
            f"{self.non_silent} non-silent, {self.suppressed} suppressed, {self.errors} errors "
            f"({len(self.failed_interactions)} interactions with errors), {self.wall_s:.1f} s"
        )


def interaction_grid(bench: Any, interaction: Interaction, settings: Settings) -> list[float]:
    """Decision times of one interaction; just [q] when its video could not be measured."""
    video = bench.video_of(interaction)
    if video.id in bench.media_errors or video.duration_s is None:
        return [round(interaction.q, 3)]
    return decision_grid(interaction.q, video.duration_s, settings.grid.step_s)


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def to_record(
    interaction_id: str, t: float, out: AdapterOutput | BaseException, settings: Settings
) -> ResponseRecord:
    """Turn an adapter answer (or its exception) into a ResponseRecord.

    Silence and tool calls follow SPEC §2: an answer with ``silent=None`` is classified from its
    text by ``parse_response``; native ``tool_calls`` win over calls parsed from text."""
    if isinstance(out, BaseException):
        return ResponseRecord(
            interaction_id=interaction_id, t=t, silent=False, error=_error_text(out)
        )
    from interactscope.protocol.parsing import parse_response

    parsed = parse_response(out.text or "", settings.silence_token)
    tool_calls: list[ToolCall] = (
        list(out.tool_calls) if out.tool_calls is not None else list(parsed.tool_calls)
    )
    silent = out.silent if out.silent is not None else parsed.silent
    if tool_calls:
        silent = False
    extra = {k: v for k, v in out.extra.items() if k not in ResponseRecord.model_fields}
    return ResponseRecord(
        interaction_id=interaction_id,
        t=t,
        text=out.text or "",
        silent=bool(silent),
        tool_calls=tool_calls,
        parse_error=parsed.parse_error,
        latency_s=out.latency_s,
        prompt_tokens=out.prompt_tokens,
        completion_tokens=out.completion_tokens,
        **extra,
    )


class _Observations:
    """Lazily builds one Observer per video (decode once, SPEC §2 / issue 3)."""

    def __init__(self, bench: Any, settings: Settings):
        self.bench = bench
        self.settings = settings
        self._cache: dict[str, Any] = {}

    def get(self, interaction: Interaction) -> Any:
        video = self.bench.video_of(interaction)
        if video.id not in self._cache:
            from interactscope.protocol.observation import Observer

            self._cache.clear()  # interactions are grouped by video: keep one decoded file
            self._cache[video.id] = Observer(
                self.bench.media_path(video), self.settings, bench_root=self.bench.root
            )
        return self._cache[video.id]


def collect(
    bench: Any,
    adapter: Adapter,
    writer: RunWriter,
    settings: Settings,
    interactions: list[Interaction],
    *,
    batch_size: int = 16,
    progress: bool = True,
) -> CollectSummary:
    """Collect responses for ``interactions`` into ``writer``, skipping records already present.

    Args:
        bench: the loaded Benchmark.
        adapter: a prepared adapter (``adapter.prepare(bench)`` is called here).
        writer: an open run (``interactscope.runlog.open_run``).
        settings: the run's settings (protocol, grid, controls).
        interactions: the interactions of this run (shard), in collection order.
        batch_size: decision points per ``respond_batch`` call in plain Offline Probing.
        progress: show a tqdm bar (decision points, ETA; interactions in the postfix).

    Returns:
        A CollectSummary; failures are counted there and written on their records.
    """
    t0 = time.perf_counter()
    summary = CollectSummary(interactions=len(interactions))
    grids = {it.id: interaction_grid(bench, it, settings) for it in interactions}
    summary.decision_points = sum(len(g) for g in grids.values())
    summary.already_present = sum(
        1 for it in interactions for t in grids[it.id] if (it.id, t) in writer.done
    )
    adapter.prepare(bench)
    observations = _Observations(bench, settings) if adapter.needs_media else None
    # group by video so each file is decoded once
    order = sorted(interactions, key=lambda it: (it.video_id, it.q, it.id))
    bar = tqdm(
        total=summary.decision_points,
        initial=summary.already_present,
        unit="pt",
        desc="collect",
        disable=not progress,
        dynamic_ncols=True,
    )
    try:
        for i, it in enumerate(order, start=1):
            bar.set_postfix_str(f"interaction {i}/{len(order)} {it.id}")
            pending = [t for t in grids[it.id] if (it.id, t) not in writer.done]
            if not pending:
                continue
            for rec in _collect_interaction(
                bench, adapter, writer, settings, it, pending, observations, batch_size
            ):
                writer.append(rec)
                bar.update(1)
                summary.written += 1
                if rec.error:
                    summary.errors += 1
                    summary.failed_interactions.setdefault(it.id, rec.error)
                elif rec.suppressed:
                    summary.suppressed += 1
                elif not rec.silent:
                    summary.non_silent += 1
                summary.model_s += rec.latency_s or 0.0
                summary.prompt_tokens += rec.prompt_tokens or 0
                summary.completion_tokens += rec.completion_tokens or 0
    finally:
        bar.close()
        summary.wall_s = round(time.perf_counter() - t0, 3)
        summary.model_s = round(summary.model_s, 3)
    return summary


def _collect_interaction(
    bench: Any,
    adapter: Adapter,
    writer: RunWriter,
    settings: Settings,
    it: Interaction,
    pending: list[float],
    observations: _Observations | None,
    batch_size: int,
) -> Iterator[ResponseRecord]:
    video = bench.video_of(it)
    if video.id in bench.media_errors:
        for t in pending:
            yield ResponseRecord(
                interaction_id=it.id, t=t, silent=False, error=bench.media_errors[video.id]
            )
        return
    try:
        observer = observations.get(it) if observations is not None else None
    except Exception as exc:  # noqa: BLE001 - unreadable media fails this interaction only
        log.warning("interaction %s: %s", it.id, _error_text(exc))
        for t in pending:
            yield ResponseRecord(interaction_id=it.id, t=t, silent=False, error=_error_text(exc))
        return
    tools = bench.offered_tools(it)

    def request(t: float) -> DecisionRequest:
        obs = observer.observe(t, it) if observer is not None else None
        spoken = writer.spoken(it.id)
        hist = spoken[-settings.history.n :] if settings.history.n else []
        return DecisionRequest(
            interaction=it,
            video=video,
            bench_root=bench.root,
            t=t,
            settings=settings,
            tools=tools,
            observation=obs,
            history=hist,
        )

    def timed(fn, *args) -> AdapterOutput | BaseException:
        start = time.perf_counter()
        try:
            out = fn(*args)
        except Exception as exc:  # noqa: BLE001 - recorded on the record
            log.debug("interaction %s: %s", it.id, traceback.format_exc())
            return exc
        if out.latency_s is None:
            out.latency_s = round(time.perf_counter() - start, 4)
        return out

    sequential = settings.history.n > 0 or settings.cooldown_s > 0
    if settings.protocol == "online":
        yield from _online(adapter, settings, it, video, pending, request, timed, writer)
    elif not sequential:
        for s in range(0, len(pending), batch_size):
            chunk = pending[s : s + batch_size]
            reqs: list[DecisionRequest] = []
            failed: dict[float, BaseException] = {}
            for t in chunk:
                try:
                    reqs.append(request(t))
                except Exception as exc:  # noqa: BLE001 - a bad observation fails that point
                    failed[t] = exc
            start = time.perf_counter()
            try:
                outs = adapter.respond_batch(reqs) if reqs else []
            except Exception as exc:  # noqa: BLE001 - a failed batch fails its points
                outs = [exc] * len(reqs)
            if len(outs) != len(reqs):
                bad = RuntimeError(f"adapter returned {len(outs)} answers for {len(reqs)} requests")
                outs = [bad] * len(reqs)
            per = (time.perf_counter() - start) / max(1, len(reqs))
            by_t = {r.t: o for r, o in zip(reqs, outs, strict=True)}
            for t in chunk:
                out = failed.get(t) or by_t[t]
                if isinstance(out, AdapterOutput) and out.latency_s is None:
                    out.latency_s = round(per, 4)
                yield to_record(it.id, t, out, settings)
    else:
        for t in pending:
            if _in_cooldown(writer, it.id, t, settings):
                yield ResponseRecord(interaction_id=it.id, t=t, silent=True, suppressed=True)
                continue
            try:
                req = request(t)
            except Exception as exc:  # noqa: BLE001
                yield to_record(it.id, t, exc, settings)
                continue
            yield to_record(it.id, t, timed(adapter.respond, req), settings)


def _in_cooldown(writer: RunWriter, interaction_id: str, t: float, settings: Settings) -> bool:
    """SPEC §2 cooldown: after a non-silent response at t0, points in (t0, t0 + cooldown_s] are
    not generated."""
    if settings.cooldown_s <= 0:
        return False
    spoken = writer.spoken(interaction_id)
    if not spoken:
        return False
    t0 = spoken[-1].t
    return t0 < t <= round(t0 + settings.cooldown_s, 3)


def _online(
    adapter, settings, it, video, pending, request, timed, writer
) -> Iterator[ResponseRecord]:
    try:
        session = adapter.open_session(it, video)
    except Exception as exc:  # noqa: BLE001
        for t in pending:
            yield to_record(it.id, t, exc, settings)
        return
    broken: BaseException | None = None
    try:
        for t in pending:
            if broken is not None:
                yield to_record(it.id, t, broken, settings)
                continue
            if _in_cooldown(writer, it.id, t, settings):
                yield ResponseRecord(interaction_id=it.id, t=t, silent=True, suppressed=True)
                continue
            try:
                req = request(t)
            except Exception as exc:  # noqa: BLE001
                broken = exc
                yield to_record(it.id, t, exc, settings)
                continue
            out = timed(session.step, req)
            if isinstance(out, BaseException):
                broken = out  # a session cannot continue past a failed step
            yield to_record(it.id, t, out, settings)
    finally:
        try:
            session.close()
        except Exception:  # noqa: BLE001
            log.debug("session close failed", exc_info=True)

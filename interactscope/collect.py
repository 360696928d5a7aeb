"""``interactscope collect``: model config + settings + benchmark -> run folder (SPEC §2).

Glue between the benchmark loader, the adapter registry, the run folder and the driver."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from interactscope.adapters.base import AdapterError
from interactscope.adapters.registry import build_adapter, load_model_config
from interactscope.bench import BenchmarkError, load_benchmark
from interactscope.protocol.driver import CollectSummary, collect, interaction_grid
from interactscope.runlog import (
    RunLogError,
    git_revision,
    host_facts,
    in_shard,
    now_iso,
    open_run,
    package_versions,
    parse_shard,
)
from interactscope.schema import BenchmarkInfo, RunManifest
from interactscope.settings import Settings, apply_overrides

log = logging.getLogger(__name__)


class CollectError(RuntimeError):
    """Collection cannot start (bad benchmark, unknown model, settings mismatch on resume)."""


def resolve_settings(config: dict[str, Any], overrides: dict[str, Any]) -> Settings:
    """Defaults <- the model config's ``settings`` <- command-line overrides (dotted keys).

    Raises:
        CollectError: an unknown setting or a value of the wrong type, naming the setting.
    """
    merged = apply_overrides(Settings().model_dump(), config.get("settings") or {})
    merged = apply_overrides(merged, overrides)
    try:
        return Settings.model_validate(merged)
    except ValidationError as exc:
        msgs = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
        raise CollectError("invalid settings:\n  " + "\n  ".join(msgs)) from exc


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
) -> CollectSummary:
    """Create or resume the run folder ``out`` and collect every pending decision point.

    Raises:
        CollectError: with a message naming what is wrong (benchmark problems, unknown model,
            invalid settings, a run folder holding different settings).
    """
    overrides = dict(overrides or {})
    if protocol is not None:
        overrides["protocol"] = protocol
    try:
        b = load_benchmark(bench, media_errors="record")
    except BenchmarkError as exc:
        raise CollectError(str(exc)) from exc
    try:
        name, config = load_model_config(model)
    except AdapterError as exc:
        raise CollectError(str(exc)) from exc
    settings = resolve_settings(config, overrides)
    try:
        shard_t = parse_shard(shard)
    except ValueError as exc:
        raise CollectError(str(exc)) from exc
    interactions = [it for it in b.interactions if in_shard(it.id, shard_t)]
    if limit is not None:
        interactions = interactions[:limit]
    try:
        adapter = build_adapter(name, config, settings)
    except AdapterError as exc:
        raise CollectError(str(exc)) from exc
    if settings.protocol == "online" and not adapter.supports_online:
        raise CollectError(f"model {name!r} (backend {config['backend']}) has no Online Rolling")
    facts = host_facts()
    manifest = RunManifest(
        model=name,
        backend=config["backend"],
        protocol=settings.protocol,
        settings=settings.model_dump(mode="json"),
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
        model_config={k: v for k, v in config.items() if not k.startswith("_")},
        started_at=now_iso(),
    )
    redo = None
    if settings.protocol == "online":
        redo = {it.id: interaction_grid(b, it, settings) for it in interactions}
    try:
        writer = open_run(out, manifest, retry_errors=retry_errors, redo_partial=redo)
    except RunLogError as exc:
        raise CollectError(str(exc)) from exc
    try:
        summary = collect(
            b,
            adapter,
            writer,
            settings,
            interactions,
            batch_size=batch_size or int(config.get("batch_size", 16)),
            progress=progress,
        )
        writer.manifest.adapter = adapter.describe()
        writer.finish(summary.as_dict())
    finally:
        writer.close()
        adapter.close()
    return summary

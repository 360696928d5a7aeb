"""Write a converted peer benchmark as a benchmark folder, validate it, write import-report.json.

Layout: ``OUT/benchmark.json``, ``OUT/interactions.jsonl``, ``OUT/import-report.json``; video
paths are ``<videos folder relative to OUT>/<file as the peer names it>``. Missing videos are
reported, not fatal.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from interactscope.core.files import exists, name_problem, write_atomic
from interactscope.core.text import plural
from interactscope.streaming.bench import (
    BENCHMARK_FILE,
    INTERACTIONS_FILE,
    BenchmarkError,
    BenchmarkFile,
    _inside,
    load_benchmark,
)
from interactscope.streaming.importers.common import (
    Conversion,
    ImporterError,
    ImportReport,
    ValidationSummary,
    count_tasks,
    read_json_array,
)
from interactscope.streaming.importers.registry import get_format, make_settings
from interactscope.streaming.schema import VideoRecord

REPORT_FILE = "import-report.json"
VIDEOS_LINK = "videos"


def videos_prefix(out: Path, videos: Path | None) -> tuple[str, str | None]:
    """(path prefix for video files relative to ``out``, note). ``videos`` inside ``out`` is used
    as is; a folder elsewhere is linked as ``out/videos`` (benchmark paths may not escape the
    folder); None means ``out/videos``. Raises ImporterError when ``out/videos`` exists and is
    something else."""
    if videos is None:
        return VIDEOS_LINK, None
    vdir = videos.resolve()
    try:
        return vdir.relative_to(out.resolve()).as_posix() or ".", None
    except ValueError:
        pass
    link = out / VIDEOS_LINK
    if link.is_symlink() and Path(os.readlink(link)) == vdir:
        return VIDEOS_LINK, f"{link} links to {vdir}"
    if link.exists() or link.is_symlink():
        raise ImporterError(f"{link} exists; remove it or give --videos a folder inside {out}")
    link.symlink_to(vdir, target_is_directory=True)
    return VIDEOS_LINK, f"{link} links to {vdir}"


def _absent(out: Path, rel: str) -> bool:
    """``rel`` is a well-formed path inside ``out`` whose file does not exist."""
    return _inside(out, rel) is not None and name_problem(rel) is None and not exists(out / rel)


def validate_import(out: Path, conv: Conversion, probe_media: bool) -> ValidationSummary:
    """Load the written benchmark; missing video files are listed, not counted as problems."""
    bfile = BenchmarkFile.model_validate_json((out / BENCHMARK_FILE).read_text(encoding="utf-8"))
    # a path that escapes OUT or that the OS refuses stays a problem, not "missing"
    absent = {i for i, v in enumerate(bfile.videos) if _absent(out, v.path)}
    missing = [bfile.videos[i].path for i in sorted(absent)]
    try:
        b = load_benchmark(out, probe_media=probe_media)
    except BenchmarkError as exc:
        absent_fields = {f"videos[{i}].path" for i in absent}
        other = [str(p) for p in exc.problems if p.field not in absent_fields]
        n_t = sum(len(it.targets) for it in conv.interactions)
        tasks = " ".join(f"{k}={v}" for k, v in count_tasks(conv.interactions).items())
        summary = (
            f"{plural(len(conv.interactions), 'interaction')} ({tasks}), {plural(n_t, 'target')}, "
            f"{plural(len(conv.videos), 'video')} ({len(missing)} missing; durations not measured)"
        )
        return ValidationSummary(
            ok=not other, summary=summary, videos_missing=missing, problems=other
        )
    return ValidationSummary(ok=True, summary=b.summary(), videos_missing=missing)


def import_benchmark(
    format_name: str,
    src: str | Path,
    out: str | Path,
    *,
    videos: str | Path | None = None,
    settings: dict | None = None,
    probe_media: bool = True,
    force: bool = False,
) -> ImportReport:
    """Convert the peer file ``src`` of ``format_name`` into the benchmark folder ``out``.

    Args:
        videos: folder holding the peer's video files under the names the peer uses (default:
            ``out/videos``); a folder outside ``out`` is linked as ``out/videos``.
        settings: the format's settings (``--set KEY=VALUE``).
        probe_media: measure the videos that exist (durations, audio) while validating.
        force: overwrite a benchmark already in ``out``.

    Returns:
        The ``ImportReport`` also written to ``out/import-report.json``.

    Raises:
        ImporterError: unknown format or setting, unreadable source, an existing benchmark in
            ``out`` without ``force``, nothing converted.
    """
    fmt = get_format(format_name)
    conf = make_settings(fmt, settings or {})
    raw = read_json_array(src)
    conv = fmt.convert(raw, conf)
    if not conv.interactions:
        reasons = Counter(d.reason for d in conv.dropped).most_common(1)
        why = f" (most common reason: {reasons[0][0]})" if reasons else ""
        raise ImporterError(f"{src}: no item could be converted as {format_name}{why}")
    outp = Path(out)
    if (outp / BENCHMARK_FILE).exists() and not force:
        raise ImporterError(f"{outp / BENCHMARK_FILE} exists; use --force to overwrite it")
    outp.mkdir(parents=True, exist_ok=True)
    prefix, link_note = videos_prefix(outp, Path(videos) if videos is not None else None)
    records = [
        VideoRecord(id=v.id, path=f"{prefix}/{v.path}", cluster=v.cluster) for v in conv.videos
    ]
    bfile = BenchmarkFile(
        name=f"{format_name}-import",
        version="1",
        description=f"imported from {Path(src).name} ({fmt.description})",
        videos=records,
    )
    write_atomic(
        outp / BENCHMARK_FILE,
        json.dumps(bfile.model_dump(mode="json", exclude_none=True), indent=2) + "\n",
    )
    lines = (it.model_dump_json(exclude_none=True) + "\n" for it in conv.interactions)
    write_atomic(outp / INTERACTIONS_FILE, "".join(lines))
    validation = validate_import(outp, conv, probe_media)
    notes = list(conv.notes) + ([link_note] if link_note else [])
    report = ImportReport(
        format=format_name,
        source=str(src),
        videos_dir=prefix,
        settings=conf.model_dump(mode="json"),
        items_read=len(raw),
        interactions=len(conv.interactions),
        targets=sum(len(it.targets) for it in conv.interactions),
        per_task=count_tasks(conv.interactions),
        dropped=conv.dropped,
        dropped_by_reason=dict(Counter(d.reason for d in conv.dropped).most_common()),
        fields_ignored=conv.fields_ignored,
        source_ids=conv.source_ids,
        notes=notes,
        validation=validation,
    )
    write_atomic(outp / REPORT_FILE, report.model_dump_json(indent=2) + "\n")
    return report

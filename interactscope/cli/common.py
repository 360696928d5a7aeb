"""Helpers shared by the command modules: logging setup, one-line failures, --set parsing."""

from __future__ import annotations

import contextlib
import errno
import logging
import re
import signal
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
import yaml

from interactscope.core.files import UnsafeWriteError
from interactscope.core.resources import demo_benchmark_dir, demo_env_benchmark_dir
from interactscope.core.secrets import install_log_redaction, redact

CHATTY_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "urllib3", "faster_whisper")
"""Libraries whose INFO lines (one per HTTP request, one per transcription) would bury the
summary: shown only with ``-v``. The openai client logs through whichever HTTP client it was
built on (``httpx``, or ``httpx2`` in openai 3.x); :class:`_QuietClients` also catches any other
``httpx<N>`` / ``httpcore<N>`` release, so the silencer does not depend on the version."""

_HTTP_CLIENT = re.compile(r"^(httpx|httpcore)\d*$")


class _QuietClients(logging.Filter):
    """Drop records below WARNING from the chatty libraries (by top-level logger name)."""

    def filter(self, record: logging.LogRecord) -> bool:
        top = record.name.split(".", 1)[0]
        chatty = top in CHATTY_LOGGERS or _HTTP_CLIENT.match(top) is not None
        return record.levelno >= logging.WARNING or not chatty


def setup_logging(verbose: bool) -> None:
    """Log to stderr; DEBUG with ``-v``, INFO otherwise. Without ``-v`` the per-request lines of
    the HTTP clients and faster-whisper's progress lines are hidden (warnings still show)."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.WARNING)
    for handler in logging.getLogger().handlers:
        for f in [f for f in handler.filters if isinstance(f, _QuietClients)]:
            handler.removeFilter(f)
        if not verbose:
            handler.addFilter(_QuietClients())
    install_log_redaction()  # API keys never reach a log line, with -v included


BUNDLED_BENCHMARKS = {"demo": demo_benchmark_dir, "demo-env": demo_env_benchmark_dir}
"""Benchmark names ``--bench`` (and ``validate``) accept beside folders: the package's own copy,
found as ``interactscope demo`` finds it, from a checkout or a ``pip install``."""


def bench_dir(path: Path) -> Path:
    """``path``, or the bundled benchmark it names (:data:`BUNDLED_BENCHMARKS`, e.g. ``demo``)
    when no such file or folder exists here: a local ``./demo`` shadows the bundled one, as
    ``./configs/models`` shadows the bundled model configs."""
    if str(path) in BUNDLED_BENCHMARKS and not path.exists():
        return BUNDLED_BENCHMARKS[str(path)]()
    return path


def fail(msg: str, code: int = 1) -> None:
    """Print one red line on stderr and exit with ``code`` (no traceback)."""
    typer.secho(redact(msg), fg=typer.colors.RED, err=True)
    raise typer.Exit(code)


def echo_judge_note(note: str | None) -> None:
    """After a leaderboard (``demo``, ``collect --panel``): the NOTE line naming an approximate
    judge (:func:`~interactscope.streaming.judges.base.judge_note`); nothing for an exact one."""
    if note:
        typer.echo(f"\nNOTE: {note}")


EXIT_RECORD_ERRORS = 3
"""Exit code of ``collect`` when it finished but some records carry an infrastructure error, and
of ``score --strict`` when the scored records carry one."""
EXIT_INTERRUPTED = 130
"""Exit code of ``collect`` stopped by Ctrl-C (what was written is kept; re-run to resume)."""
EXIT_TERMINATED = 143
"""Exit code of ``collect`` / ``ego run`` stopped by SIGTERM (128 + 15; kept, resumable)."""
EXIT_INCOMPLETE = 4
"""Exit code of ``score --strict`` on a run that never finished or lacks decision points."""


def parse_sets(items: list[str]) -> dict[str, Any]:
    """``["grid.step_s=2", ...]`` -> ``{"grid.step_s": 2, ...}`` (values parsed as plain YAML).

    A malformed item or a value YAML cannot read (e.g. a ``!tag``) ends the command with one
    line naming the item (exit 1)."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            fail(f"--set expects KEY=VALUE (e.g. grid.step_s=2), got {item!r}")
        k, v = item.split("=", 1)
        try:
            out[k.strip()] = yaml.safe_load(v)
        except yaml.YAMLError as exc:
            what = str(getattr(exc, "problem", None) or exc).splitlines()[0]
            fail(f"--set {item!r}: not a plain YAML value ({what}); quote it or drop the '!' tag")
    return out


def split_list(value: str | None, option: str) -> list[str] | None:
    """``"a, b,c"`` -> ``["a", "b", "c"]`` (``None`` for no value). An empty list ends the
    command with one line naming ``option`` (exit 1)."""
    if value is None:
        return None
    items = [x.strip() for x in value.split(",") if x.strip()]
    if not items:
        fail(f"{option} expects a comma-separated list, got {value!r}")
    return items


@contextlib.contextmanager
def disk_errors(path: str | Path) -> Iterator[None]:
    """Turn a full disk or a failed write under ``path`` into one line and exit 1.

    Records already written stay valid: the run resumes once there is space."""
    full = (
        f"{path}: no space left on device while writing; free space and run the same "
        "command again (what was written is kept)"
    )
    try:
        yield
    except UnsafeWriteError as exc:
        fail(str(exc))
    except sqlite3.OperationalError as exc:  # the verdict cache; SQLITE_FULL reads like this
        if "database or disk is full" in str(exc):
            fail(full)
        raise
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            fail(full)
        if exc.errno in (errno.EACCES, errno.EROFS, errno.EDQUOT):
            fail(f"{exc.filename or path}: cannot write ({exc.strerror}); check the permissions")
        if exc.errno == errno.EFBIG:
            fail(
                f"{exc.filename or path}: file too large for the file system or `ulimit -f`; "
                "raise the limit and run the same command again (what was written is kept)"
            )
        if exc.errno == errno.ENAMETOOLONG:
            fail(f"{exc.filename or path}: file name too long; shorten it")
        raise


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread where Ctrl-C raises KeyboardInterrupt."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated


@contextlib.contextmanager
def interrupts(out: str | Path) -> Iterator[None]:
    """Ctrl-C and SIGTERM in a resumable command: one line saying that what was written to
    ``out`` is kept and how to resume (or that nothing was written, when ``out`` does not exist
    yet); exit 130 (Ctrl-C) or 143 (SIGTERM)."""
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread: SIGTERM keeps its handler
        previous = None
    try:
        yield
    except KeyboardInterrupt as exc:
        term = isinstance(exc, Terminated)
        what = (
            f"the records written to {out} are kept; re-run the same command to resume"
            if Path(out).exists()
            else f"nothing was written ({out} was not created yet)"
        )
        typer.secho(
            f"\n{'terminated' if term else 'interrupted'}: {what}", fg=typer.colors.YELLOW, err=True
        )
        raise typer.Exit(EXIT_TERMINATED if term else EXIT_INTERRUPTED) from None
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)

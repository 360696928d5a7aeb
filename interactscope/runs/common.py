"""What every run folder shares, whichever benchmark writes it: the exclusive OS lock on
``RUN/.lock`` (dies with the process), shard assignment by a hash of the unit id, and the
provenance written into ``run.json`` (time, package versions, git revision, host)."""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import hashlib
import logging
import os
import platform
import socket
import subprocess
import sys
from collections.abc import Iterable, Iterator
from importlib import metadata
from pathlib import Path
from typing import TextIO

from pydantic import BaseModel

from interactscope.core.errors import InteractScopeError
from interactscope.core.files import open_append, write_atomic

log = logging.getLogger(__name__)

MANIFEST = "run.json"
LOCK = ".lock"
TRACKED_PACKAGES = (
    "interactscope",
    "av",
    "numpy",
    "pydantic",
    "torch",
    "transformers",
    "vllm",
    "openai",
    "faster-whisper",
    "ctranslate2",
)
"""Distributions whose versions are written into ``run.json``."""


class RunLogError(InteractScopeError, RuntimeError):
    """A run folder cannot be opened, resumed or merged; the message says why."""


class RunLockedError(RunLogError):
    """Another process holds the run folder's lock; ``pid`` is that process (None if unknown)."""

    def __init__(self, message: str, pid: int | None):
        super().__init__(message)
        self.pid = pid


# --------------------------------------------------------------------------- locking


@contextlib.contextmanager
def run_lock(path: str | Path, purpose: str = "collect", *, create: bool = True) -> Iterator[Path]:
    """Hold an exclusive lock on the run folder ``path`` for the duration of the block.

    The lock is ``fcntl.flock`` on ``RUN/.lock`` (released by the OS when the process dies, so a
    killed run never leaves a live lock: the file a ``kill -9`` leaves behind is taken over by the
    next run); the file holds the holder's PID and purpose so a second process can name it. It
    is removed when the block ends (normally, on an error, on Ctrl-C), so a finished run folder
    holds no ``.lock``. Creates the folder when ``create`` (callers create it only once nothing
    can fail before the first write, so no empty run folder is left behind).

    Yields:
        The folder path.

    Raises:
        RunLockedError: another process holds the lock (the message names its PID and purpose).
        RunLogError: the folder does not exist (``create=False``) or the lock file cannot be made.
    """
    p = Path(path)
    if create:
        p.mkdir(parents=True, exist_ok=True)
    elif not p.is_dir():
        raise RunLogError(f"{p}: not a run folder (no such folder)")
    fh = _acquire(p)
    try:
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()} {purpose}\n")
        fh.flush()
        yield p
    finally:
        # Unlink while still holding the flock: a process that opened the old file meanwhile
        # sees it is no longer RUN/.lock once it gets the flock, and retries (_acquire).
        if _is_current(fh, p / LOCK):
            (p / LOCK).unlink(missing_ok=True)
        fh.close()  # closing the descriptor releases the flock


def _is_current(fh: TextIO, lock: Path) -> bool:
    """Whether the open lock file ``fh`` is still the file at ``lock`` (not unlinked/replaced)."""
    try:
        st = os.stat(lock, follow_symlinks=False)
    except OSError:  # gone (its holder removed it, or the whole new folder)
        return False
    mine = os.fstat(fh.fileno())
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def _acquire(p: Path) -> TextIO:
    """``RUN/.lock`` opened and exclusively flocked (see :func:`run_lock` for the errors)."""
    while True:
        try:
            fh = open_append(p / LOCK, read=True)
        except OSError as exc:
            raise RunLogError(f"{p}: cannot create the lock file {LOCK} ({exc.strerror})") from exc
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            try:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise RunLogError(f"{p}: cannot lock {LOCK} ({exc.strerror})") from exc
                fh.seek(0)
                holder = fh.read().split()
            finally:
                fh.close()
            pid = int(holder[0]) if holder and holder[0].isdigit() else None
            what = " ".join(holder[1:2]) or "another command"
            raise RunLockedError(
                f"{p} is in use by process {pid if pid is not None else '(unknown)'} ({what}); "
                "wait for it to finish or stop it, then run this command again",
                pid,
            ) from None
        if _is_current(fh, p / LOCK):
            return fh
        fh.close()  # its holder removed it as we opened it: lock the new one


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def package_versions(names: Iterable[str] = TRACKED_PACKAGES) -> dict[str, str]:
    out: dict[str, str] = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            continue
    return out


def git_revision(path: Path | None = None) -> str | None:
    """The project's git revision (``+dirty`` if the tree has changes), or None outside git."""
    here = path or Path(__file__).resolve().parent
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        )
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def host_facts() -> dict[str, str]:
    return {
        "host": socket.gethostname(),
        "python": sys.version.split()[0] + " " + platform.platform(),
    }


# --------------------------------------------------------------------------- sharding


def parse_shard(spec: str | None) -> tuple[int, int] | None:
    """``"2/4"`` -> (2, 4). Shards are 1-based: K in 1..N.

    Raises:
        ValueError: malformed spec or K outside 1..N.
    """
    if spec is None:
        return None
    try:
        k_s, n_s = spec.split("/")
        k, n = int(k_s), int(n_s)
    except ValueError as exc:
        raise ValueError(f"--shard must look like K/N (e.g. 2/4), got {spec!r}") from exc
    if n < 1 or not 1 <= k <= n:
        raise ValueError(f"--shard {spec}: need 1 <= K <= N")
    return k, n


def in_shard(interaction_id: str, shard: tuple[int, int] | None) -> bool:
    """Deterministic shard assignment by a hash of the interaction id (stable across machines
    and benchmark orderings)."""
    if shard is None:
        return True
    k, n = shard
    h = int.from_bytes(hashlib.sha256(interaction_id.encode()).digest()[:8], "big")
    return h % n == k - 1


def write_manifest(path: Path, manifest: BaseModel) -> None:
    """Write ``manifest`` as ``path/run.json`` (temp file + rename: a reader never sees half)."""
    write_atomic(path / MANIFEST, manifest.model_dump_json(indent=2) + "\n")

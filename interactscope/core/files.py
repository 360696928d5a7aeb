"""The one reading function and the one writing function of the package.

Reading: :func:`read_data` (JSON, JSONL, YAML from a path) and its per-document parsers
:func:`parse_json` / :func:`parse_yaml` for callers that hold the bytes already. Every failure
(missing file, a name over 255 bytes, invalid UTF-8, invalid syntax, nesting deeper than
:data:`MAX_DEPTH`, an integer over Python's 4300-digit limit, a YAML ``!tag``) is one
:class:`FileReadError` whose message is one line: ``FILE:LINE: what; fix``.

Writing: :func:`write_atomic` (a temp file in the destination's folder, fsync, ``os.replace``:
a reader never sees a half-written file, and a symbolic link planted at the destination is
replaced, never followed) and :func:`open_append` (``O_NOFOLLOW``) for append-only logs.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal, TextIO

import yaml

from interactscope.core.errors import InteractScopeError

MAX_DEPTH = 64
"""Deepest nesting of arrays/objects accepted in any file read (walked without recursion)."""
NAME_MAX = 255
"""Longest path component, bytes (Linux/macOS ``NAME_MAX``)."""
_LONG_INT = re.compile(rb"\d{4301,}")

Format = Literal["json", "jsonl", "yaml"]


class FileReadError(InteractScopeError, ValueError):
    """A file cannot be read or parsed. ``path``, ``line`` (1-based, 0: the whole file),
    ``what`` and ``fix`` make the one-line message ``path:line: what; fix``."""

    def __init__(self, path: str | Path, what: str, fix: str, line: int = 0):
        self.path, self.what, self.fix, self.line = str(path), what, fix, line
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {what}; {fix}")

    def __reduce__(self) -> tuple[Any, ...]:  # picklable (Ray workers, process pools)
        return (type(self), (self.path, self.what, self.fix, self.line))


class UnsafeWriteError(InteractScopeError, OSError):
    """A file opened in place (an append-only log, a SQLite database) is a symbolic link: it is
    never written through. ``errno`` is ELOOP; the message is one line naming the file."""

    def __str__(self) -> str:
        return f"{self.filename} is a symbolic link; remove it (files are never written through a link)"


def name_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot name a file on this system (a component over :data:`NAME_MAX`
    bytes), or None. Checked before touching the file system, where ``Path.exists`` would raise
    ``ENAMETOOLONG``."""
    for part in Path(path).parts:
        if len(os.fsencode(part)) > NAME_MAX:
            return f"a path component is {len(os.fsencode(part))} bytes, over {NAME_MAX}"
    return None


def exists(path: str | Path) -> bool:
    """``Path.exists`` that answers False (instead of raising) for names the OS refuses."""
    try:
        return Path(path).exists()
    except (OSError, ValueError):
        return False


def too_deep(obj: Any, limit: int = MAX_DEPTH) -> bool:
    """Nesting deeper than ``limit`` (walked iteratively: no recursion limit)."""
    stack: list[tuple[Any, int]] = [(obj, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return False


def _line_of(raw: bytes, offset: int) -> int:
    return raw.count(b"\n", 0, offset) + 1


def parse_text(raw: bytes | str, path: str | Path, line: int = 0) -> str:
    """``raw`` decoded as UTF-8. Raises FileReadError naming the line of the first bad byte."""
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = line or _line_of(raw, exc.start)
        raise FileReadError(
            path, f"invalid UTF-8 at byte {exc.start}", "save the file as UTF-8", at
        ) from None


def _deep(path: str | Path, line: int) -> FileReadError:
    return FileReadError(
        path, f"nested deeper than {MAX_DEPTH} levels", "flatten the structure", line
    )


def _long_int(path: str | Path, raw: bytes | str, line: int) -> FileReadError:
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    m = _LONG_INT.search(data)
    at = line or (_line_of(data, m.start()) if m else 0)
    return FileReadError(
        path, "an integer with more than 4300 digits", "write a shorter number (or a string)", at
    )


def parse_json(raw: bytes | str, path: str | Path, line: int = 0) -> Any:
    """One JSON document (``raw``: the file's bytes or one JSONL line; ``line``: its 1-based
    line number, 0 for a whole file). NaN/Infinity are left to the typed models.

    Raises:
        FileReadError: invalid UTF-8, invalid JSON, too deep, an over-long integer."""
    text = parse_text(raw, path, line)
    try:
        obj = json.loads(text)
    except RecursionError:
        raise _deep(path, line) from None
    except json.JSONDecodeError as exc:
        what = f"invalid JSON ({exc.msg} at column {exc.colno})"
        raise FileReadError(path, what, "fix the JSON syntax", line or exc.lineno) from None
    except (ValueError, OverflowError):  # "Exceeds the limit (4300 digits)"
        raise _long_int(path, raw, line) from None
    if too_deep(obj):
        raise _deep(path, line)
    return obj


def parse_yaml(raw: bytes | str, path: str | Path) -> Any:
    """One YAML document, plain values only (``yaml.safe_load``).

    Raises:
        FileReadError: invalid UTF-8 or YAML, a ``!tag``, too deep, an over-long integer."""
    text = parse_text(raw, path, 0)
    try:
        obj = yaml.safe_load(text)
    except RecursionError:
        raise _deep(path, 0) from None
    except yaml.constructor.ConstructorError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = str(exc.problem or "unsupported value").splitlines()[0]
        raise FileReadError(
            path, f"unsupported YAML ({what})", "drop the '!' tag or quote the value",
            mark.line + 1 if mark else 0,
        ) from None  # fmt: skip
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        what = str(getattr(exc, "problem", None) or exc).splitlines()[0]
        line = mark.line + 1 if mark else 0
        raise FileReadError(path, f"invalid YAML ({what})", "fix the YAML syntax", line) from None
    except (ValueError, OverflowError):
        raise _long_int(path, text, 0) from None
    if too_deep(obj):
        raise _deep(path, 0)
    return obj


def read_bytes(path: str | Path) -> bytes:
    """The bytes of ``path``. Raises FileReadError (missing, a folder, a name the OS refuses,
    unreadable)."""
    p = Path(path)
    bad = name_problem(p)
    if bad:
        raise FileReadError(p, f"file name too long ({bad})", "shorten the name")
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise FileReadError(p, "file not found", "check the path") from None
    except IsADirectoryError:
        raise FileReadError(p, "is a folder", "give the file inside it") from None
    except OSError as exc:
        raise FileReadError(
            p, f"cannot be read ({exc.strerror})", "check the permissions"
        ) from None


def read_data(path: str | Path, fmt: Format | None = None) -> Any:
    """The data in the file ``path``: ``json`` (one document), ``jsonl`` (a list, one value per
    non-blank line; a ``null`` line is refused with its number) or ``yaml``; ``fmt`` None picks
    by suffix (``.jsonl``, ``.yaml``/``.yml``, else JSON).

    Raises:
        FileReadError: every way the file can fail to read or parse (one line: file, line, fix).
    """
    p = Path(path)
    fmt = fmt or {".jsonl": "jsonl", ".yaml": "yaml", ".yml": "yaml"}.get(p.suffix, "json")
    raw = read_bytes(p)
    if fmt == "yaml":
        return parse_yaml(raw, p)
    if fmt == "json":
        return parse_json(raw, p)
    out = []
    for n, chunk in enumerate(raw.split(b"\n"), start=1):
        if chunk.strip():
            obj = parse_json(chunk, p, n)
            if obj is None:
                raise FileReadError(p, "the line is null", "put one JSON object per line", n)
            out.append(obj)
    return out


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot sync a folder; the rename is still atomic
    finally:
        os.close(fd)


def write_atomic(path: str | Path, data: str | bytes | Iterable[str], *, sync: bool = True) -> Path:
    """Write ``data`` (text is UTF-8; an iterable of strings is streamed, e.g. JSONL lines) to
    ``path`` all at once: a temp file beside it, fsync,
    ``os.replace``. A reader sees the old file or the new one, never a half-written one (a full
    disk leaves the old file); a symbolic link at ``path`` is replaced by the file, its target
    is left unchanged. The folder must exist. ``sync=False`` skips both fsyncs (a file rewritten
    often that only has to survive the process being killed, not a power loss).

    Raises:
        OSError: the folder cannot be written (ENOSPC, EACCES, ...); the temp file is removed.
    """
    p = Path(path)
    tmp = p.with_name(f".{p.name[:200]}.{secrets.token_hex(4)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            if isinstance(data, (str, bytes)):
                fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            else:
                for chunk in data:
                    fh.write(chunk.encode("utf-8"))
            fh.flush()
            if sync:
                os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    if sync:
        _fsync_dir(p.parent)
    return p


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def refuse_link(path: str | Path) -> None:
    """Raise UnsafeWriteError when ``path`` is a symbolic link (for files opened in place, such
    as SQLite databases and append-only logs)."""
    p = Path(path)
    if p.is_symlink():
        raise UnsafeWriteError(errno.ELOOP, "a symbolic link; remove it", str(p))


def open_append(path: str | Path, *, read: bool = False) -> TextIO:
    """``path`` opened for appending text (UTF-8; created 0666 & ~umask; ``read``: also for
    reading, ``"a+"``), never through a symbolic link.

    Raises:
        UnsafeWriteError: ``path`` is a symbolic link (one line: remove it).
        OSError: any other failure to open."""
    p = Path(path)
    flags = (os.O_RDWR if read else os.O_WRONLY) | os.O_APPEND | os.O_CREAT
    try:
        fd = os.open(p, flags | getattr(os, "O_NOFOLLOW", 0), 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP or p.is_symlink():
            refuse_link(p)
        raise
    return os.fdopen(fd, "a+" if read else "a", encoding="utf-8")

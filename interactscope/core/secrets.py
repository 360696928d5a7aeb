"""Masking of API keys in any text that may reach a log line, an error message or a record.

One helper, :func:`redact`, used by every place that turns an exception or a server answer into
text (engine errors, adapter errors stored on records, the collection driver's debug traceback,
the LLM judge's errors, the CLI's one-line failures) and by the :class:`RedactingFilter` the CLI
installs on its log handlers.

What is masked (each occurrence replaced by ``***``):

- the value of every key variable: the common ones (:data:`KEY_ENVS`), every variable whose name
  ends in ``_API_KEY``, ``_TOKEN`` or ``_SECRET``, and every name passed to
  :func:`register_key_env` (the ``api_key_env`` of each model config in use); values shorter
  than :data:`MIN_SECRET_CHARS` characters (placeholders such as ``EMPTY``) are left alone;
- token-looking strings whatever their source: ``Bearer <token>``, ``sk-...`` and Google
  ``AIza...`` keys.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterable

__all__ = [
    "KEY_ENVS",
    "MIN_SECRET_CHARS",
    "MASK",
    "RedactingFilter",
    "install_log_redaction",
    "redact",
    "register_key_env",
    "secret_values",
]

MASK = "***"
MIN_SECRET_CHARS = 8
"""A variable's value is masked only from this many characters on (placeholders stay)."""

KEY_ENVS: tuple[str, ...] = (
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "ANTHROPIC_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "DASHSCOPE_API_KEY",
    "VLLM_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
)
_KEY_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_APIKEY")

_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=\-]{6,}"),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"),
)

_registered: set[str] = set()
_lock = threading.Lock()


def register_key_env(name: str | None) -> None:
    """Mask the value of environment variable ``name`` from now on (no-op for ``None``/``""``)."""
    if name:
        with _lock:
            _registered.add(str(name))


def _key_names() -> set[str]:
    with _lock:
        names = set(_registered)
    names.update(KEY_ENVS)
    names.update(n for n in os.environ if n.upper().endswith(_KEY_SUFFIXES))
    return names


def secret_values(extra_envs: Iterable[str] = ()) -> list[str]:
    """The values to mask, longest first (so a key containing another is masked whole)."""
    names = _key_names() | {n for n in extra_envs if n}
    values = {os.environ.get(n) or "" for n in names}
    return sorted((v for v in values if len(v) >= MIN_SECRET_CHARS), key=len, reverse=True)


def redact(text: object, extra_envs: Iterable[str] = ()) -> str:
    """``text`` (any object, as ``str``) with every key value and token-looking string masked.

    Args:
        text: an exception, a message, a traceback, a server's answer.
        extra_envs: more variable names whose values are secret for this call.
    """
    out = text if isinstance(text, str) else str(text)
    for value in secret_values(extra_envs):
        if value in out:
            out = out.replace(value, MASK)
    for pattern in _PATTERNS:
        out = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + MASK, out)
    return out


class RedactingFilter(logging.Filter):
    """A handler filter that masks secrets in the formatted message, the exception text and the
    stack of every record (the record is rewritten in place; nothing is dropped)."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string: keep the raw message
            message = str(record.msg)
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Add one :class:`RedactingFilter` to every handler of ``logger`` (default: the root
    logger); calling it again adds none twice."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())

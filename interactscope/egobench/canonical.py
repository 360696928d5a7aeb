"""Canonical JSON of a state and its sha256 (docs/egobench.md, "State hash")."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any


def normalise(value: Any) -> Any:
    """Integral floats become ints (``12.0`` -> ``12``), tuples become lists, recursively.

    Bools stay bools. Raises ValueError on NaN or infinity (not representable in JSON)."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"state holds a non-finite number {value!r}")
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {str(k): normalise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalise(v) for v in value]
    raise TypeError(f"state holds a {type(value).__name__}, which has no JSON form")


class RawJSON(str):
    """Text that is already canonical JSON (a catalogue table dumped by SQLite in key order);
    :func:`canonical_json` splices it in as it is instead of re-encoding it."""


def canonical_json(value: Any, normalise_numbers: bool = True) -> str:
    """Sorted keys, UTF-8 (no ASCII escapes), no spaces, integral floats as integers
    (``normalise_numbers=False``: numbers as stored, ``1.0`` stays ``1.0`` — the EgoLink 2026
    evaluator's hash, which does not normalise)."""
    if isinstance(value, RawJSON):
        return str(value)
    if isinstance(value, dict):
        parts = (
            json.dumps(str(k), ensure_ascii=False)
            + ":"
            + canonical_json(value[k], normalise_numbers)
            for k in sorted(value, key=str)
        )
        return "{" + ",".join(parts) + "}"
    if not normalise_numbers:
        normalise(value)  # same errors for NaN and non-JSON values
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(normalise(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def decode_raw(value: Any) -> Any:
    """``value`` with every :class:`RawJSON` inside dicts parsed back into Python values."""
    if isinstance(value, RawJSON):
        return json.loads(value)
    if isinstance(value, dict):
        return {k: decode_raw(v) for k, v in value.items()}
    return value


def sha256_of(value: Any) -> str:
    """Hex sha256 of :func:`canonical_json`."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()

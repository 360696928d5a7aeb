"""On-disk verdict cache (docs/protocol.md#judges-and-caching): SQLite through the standard library.

Key: SHA-256 of the JSON list [backend, model, prompt version, request, reference, candidate],
with the media content hash appended for a judge that looks at frames or audio.
Unparseable verdicts are cached too (re-scoring must give identical numbers); transport errors
are not. The texts are stored beside the verdict so a cache can be audited by hand.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from interactscope.core.files import refuse_link
from interactscope.streaming.judges.base import Verdict

__all__ = ["VerdictCache", "cache_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    request TEXT NOT NULL,
    reference TEXT NOT NULL,
    candidate TEXT NOT NULL,
    value INTEGER,
    raw TEXT NOT NULL
)
"""


def cache_key(
    backend: str,
    model: str,
    prompt_version: str,
    request: str,
    reference: str,
    candidate: str,
    *,
    media: str | None = None,
) -> str:
    """Hex SHA-256 of the JSON list of the six fields (docs/protocol.md, judges and caching).

    ``media``: hex SHA-256 of what a looking judge attaches (frames' pixel bytes, audio samples);
    when given it is a seventh list element. Without it the key is the six-field one, so caches
    written before looking judges existed still hit for text judges.
    """
    fields = [backend, model, prompt_version, request, reference, candidate]
    if media is not None:
        fields.append(media)
    blob = json.dumps(fields, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class VerdictCache:
    """A verdict cache in one SQLite file (created with its folder on first use).

    Use as a context manager or call :meth:`close`. Not shared across threads: the scoring code
    reads and writes it from the main thread only.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        refuse_link(self.path)
        self._db = sqlite3.connect(str(self.path))
        self._db.execute(_SCHEMA)
        self._db.commit()

    def __enter__(self) -> VerdictCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    def get_many(self, keys: Iterable[str]) -> dict[str, Verdict]:
        """Cached verdicts for the keys that are present."""
        keys = list(dict.fromkeys(keys))
        out: dict[str, Verdict] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, value, raw FROM verdicts WHERE key IN ({marks})", chunk
            )
            for key, value, raw in rows:
                out[key] = Verdict(value=None if value is None else bool(value), raw=raw)
        return out

    def put_many(
        self,
        rows: Iterable[tuple[str, str, str, str, tuple[str, str, str], Verdict]],
    ) -> int:
        """Store (key, backend, model, prompt_version, triple, verdict) rows; errors are skipped.
        Returns the number stored."""
        data = [
            (
                key,
                backend,
                model,
                pv,
                *triple,
                None if v.value is None else int(v.value),
                v.raw,
            )
            for key, backend, model, pv, triple, v in rows
            if not v.error
        ]
        self._db.executemany(
            "INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", data
        )
        self._db.commit()
        return len(data)

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

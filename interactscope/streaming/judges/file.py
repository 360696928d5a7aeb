"""``file:PATH`` judge: verdicts read from a JSONL file, for human judging and for reproducing
published verdicts exactly.

Each line: ``{"interaction_id": ..., "target_id": ..., "t": <response time s>, "verdict": ...}``
with ``verdict`` one of yes/no/true/false (strings are parsed with the strict verdict parser, so
``"yes, because ..."`` works and ``"maybe"`` is unparseable). Lines are keyed by (interaction id,
target id, response time rounded to ms); a later line for the same key wins. A pair missing from
the file is unparseable (excluded and counted, never scored 0).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from interactscope.core.files import FileReadError, parse_json, parse_text
from interactscope.streaming.judges.base import Judge, JudgeError, JudgeItem, Verdict, parse_verdict

__all__ = ["FileJudge"]


class FileJudge(Judge):
    backend = "file"
    per_item = True
    prompt_version = "file-v1"

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_file():
            raise JudgeError(f"verdict file not found: {self.path}")
        data = self.path.read_bytes()
        self.name = f"file:{self.path}"
        self.model = hashlib.sha256(data).hexdigest()[:16]
        self._table: dict[tuple[str, str, int], Verdict] = {}
        try:
            text = parse_text(data, self.path)
        except FileReadError as exc:
            raise JudgeError(str(exc)) from None
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = parse_json(line, self.path, n)
                key = (str(row["interaction_id"]), str(row["target_id"]), round(row["t"] * 1000))
                raw = row["verdict"]
            except (ValueError, KeyError, TypeError) as exc:
                raise JudgeError(f"{self.path}:{n}: bad verdict line ({exc})") from exc
            if isinstance(raw, bool):
                self._table[key] = Verdict(raw, "yes" if raw else "no")
            else:
                text = str(raw)
                if text.strip().casefold() in ("true", "false"):
                    text = "yes" if text.strip().casefold() == "true" else "no"
                self._table[key] = Verdict(parse_verdict(text), str(raw))

    @property
    def settings(self) -> dict[str, str]:
        return {"sha256_16": self.model}

    def __len__(self) -> int:
        return len(self._table)

    def judge_items(self, items: list[JudgeItem]) -> list[Verdict]:
        missing = Verdict(None, "missing from verdict file")
        return [self._table.get(it.pair_key, missing) for it in items]

    def judge(self, triples: list[tuple[str, str, str]]) -> list[Verdict]:
        raise JudgeError("the file: judge looks verdicts up per (interaction, target, time)")

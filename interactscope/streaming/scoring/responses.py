"""One row per response record: what first-response allocation or order-preserving matching made
of it (``scores/responses.csv``; docs/protocol.md, run-folder contract).

Columns (:data:`RESPONSE_COLUMNS`, times in seconds on the media clock, ms-rounded):

* ``interaction_id``, ``task``, ``t`` — the record's key and its interaction's task;
* ``group_open_s`` — T1–T7: the opening time g of the response group it belongs to (empty for
  records that are not responses, and for T8, which has no groups);
* ``consumed_by`` — the target whose consumed group it is in (T1–T7), or the target it is matched
  to (T8); empty otherwise;
* ``class`` — :data:`RESPONSE_CLASSES`: the consuming target's outcome (``hit``, ``premature``,
  ``wrong``, ``late``, ``unjudged``) for a member of a consumed group; ``hit`` for a matched T8
  response; ``unmatched`` for a response that counted for nothing (a later group of a region, an
  unmatched T8 response); ``silent``, ``suppressed`` (cooldown), ``error`` (infrastructure
  failure), ``before_q`` (a non-silent record before the query, ignored);
* ``matched`` — 1 for the response that made its target a hit (the first eligible member of a
  hit group; the matched T8 response), else 0;
* ``verdict`` — the content verdicts obtained for this response, ``TARGET=LABEL`` joined by
  ``"; "`` in target order (only pairs that were judged or tool-checked: those that could change
  a score), empty when none.

Derived from the same allocation and matching results as ``targets.csv``; nothing is re-judged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from interactscope.streaming.schema import Interaction, ResponseRecord
from interactscope.streaming.scoring.allocation import candidate_responses, group_responses, ms
from interactscope.streaming.tasks import task_spec

__all__ = [
    "RESPONSE_CLASSES",
    "RESPONSE_COLUMNS",
    "ResponseRow",
    "response_rows",
    "responses_frame",
]

ResponseClass = Literal[
    "hit",
    "premature",
    "wrong",
    "late",
    "unjudged",
    "unmatched",
    "silent",
    "suppressed",
    "error",
    "before_q",
]
RESPONSE_CLASSES: tuple[str, ...] = ResponseClass.__args__  # type: ignore[attr-defined]
RESPONSE_COLUMNS = [
    "interaction_id",
    "task",
    "t",
    "group_open_s",
    "consumed_by",
    "class",
    "matched",
    "verdict",
]

Owner = tuple[int, str, bool]
"""(target index, class, matched) of a response that a target consumed or matched."""


class ResponseRow(BaseModel):
    """One row of ``scores/responses.csv`` (see the module docstring for the columns)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    interaction_id: str
    task: str
    t: float
    group_open_s: float | None = None
    consumed_by: str = ""
    response_class: ResponseClass = Field(alias="class")
    matched: int = Field(0, ge=0, le=1)
    verdict: str = ""


def _class_of(r: ResponseRecord, q: float, owner: Owner | None) -> str:
    if r.error:
        return "error"
    if r.suppressed:
        return "suppressed"
    if r.silent:
        return "silent"
    if ms(r.t) < ms(q):
        return "before_q"
    return owner[1] if owner is not None else "unmatched"


def response_rows(
    interaction: Interaction,
    records: Sequence[ResponseRecord],
    owners: Mapping[int, Owner],
    judged: Mapping[tuple[int, int], tuple[bool | None, str]],
    *,
    merge_s: float,
) -> list[ResponseRow]:
    """The rows of one interaction's records.

    Args:
        records: every record of the interaction, as scored (indices match ``owners``).
        owners: record index -> (target index, class, matched) for members of consumed groups
            (T1–T7) or matched responses (T8).
        judged: (target index, record index) -> (verdict, label) of every content check made.
        merge_s: the grouping span (s) the groups were formed with (T1–T7).
    """
    opened: dict[int, float] = {}
    if task_spec(interaction.task).scoring_rule == "allocation":
        order = candidate_responses(records, interaction.q)
        for g in group_responses(records, order, merge_s):
            opened.update(dict.fromkeys(g.members, g.opened_s))
    labels: dict[int, list[str]] = {}
    for (k, j), (_value, label) in sorted(judged.items()):
        labels.setdefault(j, []).append(f"{interaction.targets[k].id}={label or 'unparseable'}")
    rows = []
    for j, r in enumerate(records):
        owner = owners.get(j)
        rows.append(
            ResponseRow(
                interaction_id=interaction.id,
                task=interaction.task,
                t=round(float(r.t), 3),
                group_open_s=opened.get(j),
                consumed_by="" if owner is None else interaction.targets[owner[0]].id,
                response_class=_class_of(r, interaction.q, owner),
                matched=int(owner is not None and owner[2]),
                verdict="; ".join(labels.get(j, [])),
            )
        )
    return rows


def responses_frame(rows: Iterable[ResponseRow]) -> pd.DataFrame:
    """Rows -> DataFrame with :data:`RESPONSE_COLUMNS`, sorted by (interaction_id, t)."""
    data = [r.model_dump(by_alias=True) for r in rows]
    df = pd.DataFrame(data, columns=RESPONSE_COLUMNS)
    df["t"] = df["t"].astype("float64")
    df["group_open_s"] = df["group_open_s"].astype("float64")
    df["matched"] = df["matched"].astype("int64")
    return df.sort_values(["interaction_id", "t"], kind="stable").reset_index(drop=True)

"""The cascading error classifier of failed tasks (docs/egobench.md, "Error classes").

First class that applies: ``syntax`` (no call, or a malformed call), ``multimodal`` (some
referent of the task's ``value`` never appears under ``key`` in a read call), ``hallucination``
(a call's user_id is not one of the ground truth's), ``logic`` (>= 2 GT calls unmatched),
``memory`` (exactly 1 unmatched), ``over_operation`` (all matched but the state differs),
else ``unknown``. The paper's five classes fold ``memory`` into ``logic``."""

from __future__ import annotations

from typing import Literal

from interactscope.egobench.records import AgentLog, Task
from interactscope.egobench.scenarios import ScenarioDef

ErrorClass = Literal[
    "syntax", "multimodal", "hallucination", "logic", "memory", "over_operation", "unknown"
]
CLASSES: tuple[str, ...] = (
    "syntax",
    "multimodal",
    "hallucination",
    "logic",
    "memory",
    "over_operation",
    "unknown",
)


def _referent_hit(actual: str, expected: str) -> bool:
    a, e = actual.lower().strip(), expected.lower().strip()
    # the reference counts containment either way or one shared word as a hit
    return a == e or e in a or a in e or bool(set(a.split()) & set(e.split()))


def missed_referents(task: Task, log: AgentLog, sdef: ScenarioDef) -> list[str]:
    """Values of ``task.value`` that no read call carried under ``task.key`` (or an alias)."""
    if not task.key or not task.value:
        return []
    keys = sdef.key_aliases.get(task.key, (task.key,))
    hit: set[str] = set()
    for call in log.calls:
        if call.name not in sdef.query_tools:
            continue
        k = next((k for k in keys if k in call.arguments), None)
        if k is None:
            continue
        v = call.arguments[k]
        for actual in v if isinstance(v, list) else [v]:
            for expected in task.value:
                if (
                    isinstance(actual, str)
                    and isinstance(expected, str)
                    and _referent_hit(actual, expected)
                ):
                    hit.add(expected)
    return [v for v in task.value if v not in hit]


def wrong_user_ids(task: Task, log: AgentLog) -> list[str]:
    """User ids used by the agent that none of the GT calls uses (empty when GT has none)."""
    gt = {
        c.arguments.get("user_id")
        for c in task.ground_truth
        if c.arguments.get("user_id") is not None
    }
    if not gt:
        return []
    return sorted(
        {
            str(c.arguments["user_id"])
            for c in log.calls
            if "user_id" in c.arguments and c.arguments["user_id"] not in gt
        }
    )


def classify(
    task: Task,
    log: AgentLog,
    sdef: ScenarioDef,
    matched: int,
    total: int,
    result_succ: bool,
    classes: str = "six",
) -> tuple[ErrorClass, str]:
    """(class, one-line reason) of a failed task."""
    if not log.calls:
        return "syntax", "no tool call"
    if log.malformed:
        return "syntax", log.malformed[0]
    missed = missed_referents(task, log, sdef)
    if missed:
        return "multimodal", f"no read call named {task.key}={missed}"
    wrong = wrong_user_ids(task, log)
    if wrong:
        return "hallucination", f"user_id {wrong} is not the task's"
    missing = total - matched
    if missing >= 2 or (missing == 1 and classes == "paper"):
        return "logic", f"{missing} of {total} GT calls unmatched"
    if missing == 1:
        return "memory", f"1 of {total} GT calls unmatched"
    if matched == total and not result_succ:
        return "over_operation", "every GT call matched but the final state differs"
    return "unknown", f"matched {matched}/{total}, ResultSucc {result_succ}"

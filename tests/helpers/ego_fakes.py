"""Fake engines and small builders for EgoBench episode tests."""

from __future__ import annotations

import json
from typing import Any

from interactscope.egobench import load_variant, package_data_dir
from interactscope.egobench.agents import (
    Visual,
)
from interactscope.engines import ChatResult, Message

DATA = package_data_dir()


YES = json.dumps(
    dict.fromkeys(
        ["role_consistency", "instruction_fidelity", "resistance", "context_consistency"], "yes"
    )
)


NO = YES.replace('"context_consistency": "yes"', '"context_consistency": "no"')


class FakeEngine:
    """Answers with ``reply(messages, tools)`` (a ChatResult or a str) and records each call."""

    def __init__(self, reply):
        self.reply = reply
        self.calls: list[tuple[list[Message], Any]] = []

    def chat(self, messages, tools=None, **gen):
        self.calls.append((list(messages), tools))
        out = self.reply(list(messages), tools)
        return (
            out
            if isinstance(out, ChatResult)
            else ChatResult(text=out, prompt_tokens=10, completion_tokens=2)
        )


def _retail1():
    v = load_variant(DATA, "retail1")
    return v, v.task(1)


def _blind(task) -> Visual:
    return Visual(sees_pixels=False, description=task.image_description)


def _user_engine(actor_text: str, verdicts: list[str] | None = None) -> FakeEngine:
    """Actor says ``actor_text``; the Evaluator answers ``verdicts`` in order, then YES."""
    queue = list(verdicts or [])

    def reply(messages, tools):
        system = messages[0].text()
        if "review one message" in system:
            return queue.pop(0) if queue else YES
        if "Summarise the progress" in system:
            return "The price was asked. Nothing else is done. The cart is open."
        return actor_text

    return FakeEngine(reply)

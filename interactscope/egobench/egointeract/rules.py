"""Scene rules of EgoInteract: one YAML data file per scenario (``rules/<scenario>.yaml``, this
project's own wording) with the class of every tool (read / compute / write) and three pieces of
guidance for the service agent (grounding a visual referent, branch rules, which compute tool).

Tool classes come from the file's table; a tool the table does not list is classed by the verb
its name starts with (:data:`WRITE_VERBS`, :data:`COMPUTE_VERBS`, :data:`READ_VERBS`), and a
name with an unknown verb counts as ``write`` so that it is audited (the safe side)."""

from __future__ import annotations

import functools
from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from interactscope.core.errors import InteractScopeError

ToolClass = Literal["read", "compute", "write"]

WRITE_VERBS = ("add", "remove", "delete", "update", "set", "clear", "create", "insert", "put")
"""Name prefixes of state-changing tools (``add_to_cart``, ``clear_user_order``)."""
COMPUTE_VERBS = ("compute", "tally", "calculate", "sum")
"""Name prefixes of tools that derive numbers and change nothing."""
READ_VERBS = ("get", "find", "list", "filter", "search", "check", "lookup", "show")
"""Name prefixes of look-up tools."""


class RulesError(InteractScopeError, ValueError):
    """A scene-rules file that is missing or malformed; one line naming the file and the fix."""


class SceneRules(BaseModel):
    """One ``rules/<scenario>.yaml``: ``tools`` maps a tool name to its class; ``grounding``,
    ``branches`` and ``compute`` are guidance text for the service agent."""

    model_config = ConfigDict(extra="forbid")

    version: int
    scenario: str
    tools: dict[str, ToolClass]
    grounding: str
    branches: str
    compute: str

    def classify(self, name: str) -> ToolClass:
        """The class of tool ``name``: the table's, else :func:`classify_by_name`."""
        return self.tools.get(name) or classify_by_name(name)

    def guidance(self) -> str:
        """The three guidance sections as one text block for a prompt."""
        return (
            f"Grounding: {self.grounding.strip()}\nBranches: {self.branches.strip()}\n"
            f"Compute tools: {self.compute.strip()}"
        )


def classify_by_name(name: str) -> ToolClass:
    """``read``/``compute``/``write`` from the verb ``name`` starts with; unknown → ``write``."""
    verb = name.split("_", 1)[0].lower()
    if verb in COMPUTE_VERBS:
        return "compute"
    if verb in READ_VERBS:
        return "read"
    return "write"


@functools.lru_cache(maxsize=16)
def load_rules(scenario: str) -> SceneRules:
    """The scene rules of ``scenario`` (``retail``, ``kitchen``, ...).

    Raises:
        RulesError: no file for the scenario (the ones present are listed) or a bad field."""
    base = resources.files(__package__) / "rules"
    path = base / f"{scenario}.yaml"
    if not path.is_file():
        have = sorted(p.name for p in base.iterdir() if p.name.endswith(".yaml"))
        raise RulesError(
            f"egointeract/rules/{scenario}.yaml not found; add one (present: {', '.join(have)})"
        )
    try:
        rules = SceneRules.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (yaml.YAMLError, ValidationError) as exc:
        first = str(exc).splitlines()
        raise RulesError(
            f"egointeract/rules/{scenario}.yaml: {first[1] if len(first) > 1 else first[0]}"
        ) from None
    if rules.scenario != scenario:
        raise RulesError(f"egointeract/rules/{scenario}.yaml: scenario must be {scenario!r}")
    return rules

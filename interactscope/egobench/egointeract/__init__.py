"""EgoInteract: a self-correcting agent policy for EgoBench (docs/egointeract.md). A service
agent proposes steps from the dialogue, tool results, frames and its visual hypotheses; an
auditor that sees no images checks every state-changing batch and every final reply against an
evidence ledger before it takes effect. ``--agent egointeract:MODEL[,AUDITOR][,key=value]``."""

from interactscope.egobench.egointeract.config import EgoInteractSettings, parse_spec
from interactscope.egobench.egointeract.ledger import Ledger
from interactscope.egobench.egointeract.policy import EgoInteractAgent
from interactscope.egobench.egointeract.rules import SceneRules, classify_by_name, load_rules

__all__ = [
    "EgoInteractAgent",
    "EgoInteractSettings",
    "Ledger",
    "SceneRules",
    "classify_by_name",
    "load_rules",
    "parse_spec",
]

"""The viewer's one vocabulary of outcome styles: every badge, legend entry and timeline mark of
both pages (streaming and EgoBench) takes its colour, glyph and word from :data:`STATES`.

Colours are the eight of Okabe & Ito's colour-blind-safe palette ("Color Universal Design",
2008; the set ColorBrewer points to for categorical data seen by colour-blind readers), one
per state that a reader must tell apart. Colour is never alone: each state also has its own
glyph and word, so a page printed in grey or read with any colour-vision deficiency keeps every
distinction. ``unscored`` ("not scored") has no colour at all: a dashed outline on the page
background, so a run without scores never reads as a failure.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["OKABE_ITO", "OUTCOME_STATES", "STATES", "State", "states_payload"]

OKABE_ITO: dict[str, str] = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky blue": "#56B4E9",
    "bluish green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish purple": "#CC79A7",
}
"""Okabe & Ito (2008), the hex values of their Fig. 16."""


class State(BaseModel):
    """One outcome style.

    Attributes:
        label: the word shown with the glyph (badges, legend, hover titles).
        glyph: one character, distinct from every other state's.
        fill: background (badges) and fill (marks); ``None`` = none (outline only).
        ink: text colour on ``fill`` (the page background without one): WCAG 2 contrast
            ratio >= 4.5 for every state, the level for small text (badges are 11 px).
        outline: CSS border of the badge (``unscored``: dashed, the neutral style).
        meaning: the legend's sentence.
        kind: ``outcome`` (a badge: target outcome, run state, EgoBench success) or ``mark``
            (a record class of timeline marks only).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str
    glyph: str
    fill: str | None
    ink: str
    outline: str = "1px solid transparent"
    meaning: str
    kind: Literal["outcome", "mark"] = "outcome"


_OI = OKABE_ITO
STATES: dict[str, State] = {
    "hit": State(label="hit", glyph="✓", fill=_OI["bluish green"], ink="#000000",
                 meaning="inside the window, right content / tool set"),
    "premature": State(label="premature", glyph="◂", fill=_OI["orange"], ink="#000000",
                       meaning="before the window"),
    "wrong": State(label="wrong", glyph="✗", fill=_OI["vermillion"], ink="#000000",
                   meaning="in the window, wrong content or tools"),
    "late": State(label="late", glyph="▸", fill=_OI["reddish purple"], ink="#000000",
                  meaning="after the window"),
    "missed": State(label="missed", glyph="○", fill=_OI["black"], ink="#FFFFFF",
                    meaning="no response in its region"),
    "silent": State(label="silent", glyph="∅", fill=_OI["blue"], ink="#FFFFFF",
                    meaning="the run gave no response after q in this interaction"),
    "unjudged": State(label="unjudged", glyph="?", fill=_OI["sky blue"], ink="#000000",
                      meaning="the judge's verdict was unparseable (left out of the score)"),
    "infra_error": State(label="infra_error", glyph="⚠", fill=_OI["yellow"], ink="#000000",
                         outline="1px solid #8a7d00",
                         meaning="every decision point that could answer it failed "
                         "(left out of the score)"),
    "unscored": State(label="not scored", glyph="◌", fill=None, ink="#555555",
                      outline="1px dashed #777777",
                      meaning="no score files: run `interactscope score RUN`"),
    # record classes a timeline mark can have besides the outcomes above
    "unmatched": State(label="unmatched", glyph="−", fill="#AAAAAA", ink="#000000",
                       meaning="a response that counted for no target", kind="mark"),
    "ignored": State(label="before q", glyph="«", fill="#E4E4E4", ink="#000000",
                     meaning="a response before the request (ignored)", kind="mark"),
    "suppressed": State(label="suppressed", glyph="⊘", fill="#FFFFFF", ink="#000000",
                        outline="1px solid #000000",
                        meaning="a record the adapter suppressed (counts as silent)",
                        kind="mark"),
    "error": State(label="error record", glyph="!", fill="#FFFFFF", ink="#000000",
                   outline="2px solid " + _OI["vermillion"],
                   meaning="an infrastructure error (no response)", kind="mark"),
}  # fmt: skip
"""State -> style, in legend order. Target outcomes (``scores/targets.csv``), the ``silent``
run and EgoBench success (``hit`` / ``wrong``) use the first eight, ``unscored`` is the neutral
'not scored'; the last four are record classes of timeline marks only."""

OUTCOME_STATES: tuple[str, ...] = tuple(k for k, s in STATES.items() if s.kind == "outcome")
"""The states a badge can show (the legend's first row)."""


def states_payload() -> dict[str, dict[str, str | None]]:
    """:data:`STATES` as the JSON the page scripts read (``STATES`` in ``common.js``)."""
    return {k: s.model_dump(mode="json") for k, s in STATES.items()}

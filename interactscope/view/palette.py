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

from typing import Any, Literal

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
_DARK, _LIGHT = "#000000", "#FFFFFF"  # ink on light / dark fills


def _state(
    key: str, glyph: str, fill: str | None, ink: str, meaning: str, **rest: Any
) -> tuple[str, State]:
    """``(key, State)``; the label is the key unless ``rest`` names another."""
    return key, State(label=rest.pop("label", key), glyph=glyph, fill=fill, ink=ink,
                      meaning=meaning, **rest)  # fmt: skip


STATES: dict[str, State] = dict((
    _state("hit", "✓", _OI["bluish green"], _DARK, "inside the window, right content / tool set"),
    _state("premature", "◂", _OI["orange"], _DARK, "before the window"),
    _state("wrong", "✗", _OI["vermillion"], _DARK, "in the window, wrong content or tools"),
    _state("late", "▸", _OI["reddish purple"], _DARK, "after the window"),
    _state("missed", "○", _OI["black"], _LIGHT, "no response in its region"),
    _state("silent", "∅", _OI["blue"], _LIGHT,
           "the run gave no response after q in this interaction"),
    _state("unjudged", "?", _OI["sky blue"], _DARK,
           "the judge's verdict was unparseable (left out of the score)"),
    _state("infra_error", "⚠", _OI["yellow"], _DARK,
           "every decision point that could answer it failed (left out of the score)",
           outline="1px solid #8a7d00"),
    _state("unscored", "◌", None, "#555555", "no score files: run `interactscope score RUN`",
           label="not scored", outline="1px dashed #777777"),
    # record classes a timeline mark can have besides the outcomes above
    _state("unmatched", "−", "#AAAAAA", _DARK, "a response that counted for no target",
           kind="mark"),
    _state("ignored", "«", "#E4E4E4", _DARK, "a response before the request (ignored)",
           label="before q", kind="mark"),
    _state("suppressed", "⊘", _LIGHT, _DARK, "a record the adapter suppressed (counts as silent)",
           outline="1px solid #000000", kind="mark"),
    _state("error", "!", _LIGHT, _DARK, "an infrastructure error (no response)",
           label="error record", outline="2px solid " + _OI["vermillion"], kind="mark"),
))  # fmt: skip
"""State -> style, in legend order. Target outcomes (``scores/targets.csv``), the ``silent``
run and EgoBench success (``hit`` / ``wrong``) use the first eight, ``unscored`` is the neutral
'not scored'; the last four are record classes of timeline marks only."""

OUTCOME_STATES: tuple[str, ...] = tuple(k for k, s in STATES.items() if s.kind == "outcome")
"""The states a badge can show (the legend's first row)."""


def states_payload() -> dict[str, dict[str, str | None]]:
    """:data:`STATES` as the JSON the page scripts read (``STATES`` in ``common.js``)."""
    return {k: s.model_dump(mode="json") for k, s in STATES.items()}

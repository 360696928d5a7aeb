"""Sample files of each importer format (tests/data), for the importer hardening tests."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
LOOK = DATA / "peers_lookalike"
SOURCES = {
    "streamingbench-po": DATA / "peers_streamingbench" / "questions_proactive.sample.json",
    "ovo-forward": LOOK / "ovo_forward.json",
    "ovo-backward": LOOK / "ovo_backward.json",
    "omnimmi-pa": DATA / "peers_omnimmi" / "proactive_alerting.sample.json",
    "omnimmi-si": DATA / "peers_omnimmi" / "speaker_identification.sample.json",
    "proassist": LOOK / "proassist_dialogs.json",
}
"""Importer format -> a sample input file of that format."""

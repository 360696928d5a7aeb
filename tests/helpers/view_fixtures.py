"""Hand-made run folders for the viewer tests (imported by tests/test_view*.py; no tests here).

Both runs start from the oracle on the demo benchmark, whose one response per target is the
reference (or the target's tool call) at the decision point nearest the target time:

* run A: t2-bunny's response (t = 2) is removed -> t2-bunny/k1 missed, the 13 others hit (the
  demo's 14 targets, t1-home-chores' two included);
* run B: t1-taxi's response is moved from t = 2 to t = 0, before its window [0.5, 4.5] ->
  premature; t8a-obstacles gets an error record at t = 5 and a suppressed one at t = 6.

So B against A gains t2-bunny/k1 and loses t1-taxi/k1.
"""

from __future__ import annotations

import json
from pathlib import Path

from interactscope.streaming.collect import run_collect
from interactscope.streaming.scoring.run import score_run
from tests.helpers.foundation_fixtures import DEMO

MARK_TEXT = '"name": "search_web"'  # the oracle's t1-taxi answer


def _edit(run: Path, edit) -> None:
    path = run / "responses.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    path.write_text("".join(json.dumps(edit(r)) + "\n" for r in recs))


def _silent(r: dict) -> dict:
    return {**r, "text": "<SILENT>", "silent": True, "tool_calls": []}


def _edit_a(r: dict) -> dict:
    return _silent(r) if r["interaction_id"] == "t2-bunny" and not r["silent"] else r


def _edit_b(taxi: dict):
    def edit(r: dict) -> dict:
        iid, t = r["interaction_id"], r["t"]
        if iid == "t1-taxi" and t == 2.0:
            return _silent(r)
        if iid == "t1-taxi" and t == 0.0:
            return {**taxi, "t": 0.0}
        if iid == "t8a-obstacles" and t == 5.0:
            return {**_silent(r), "silent": False, "error": "HTTP 500 from the server"}
        if iid == "t8a-obstacles" and t == 6.0:
            return {**r, "suppressed": True}
        return r

    return edit


def collect_oracle(out: Path, **overrides) -> Path:
    run_collect(model="oracle", bench=DEMO, out=out, overrides=overrides, progress=False)
    return out


def make_pair(root: Path) -> tuple[Path, Path]:
    """Run folders A and B (scored with the offline lexical judge) under ``root``."""
    a = collect_oracle(root / "run-a")
    b = collect_oracle(root / "run-b")
    _edit(a, _edit_a)
    lines = (b / "responses.jsonl").read_text().splitlines()
    taxi = next(
        json.loads(x) for x in lines if '"t1-taxi"' in x and '"t":2.0' in x.replace(" ", "")
    )
    _edit(b, _edit_b(taxi))
    for run in (a, b):
        score_run(run, judge="lexical")
    return a, b

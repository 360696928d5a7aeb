"""``scores/responses.csv``: one row per record, what allocation / matching made of it, worked
by hand on the examples of docs/protocol.md."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from interactscope.streaming.schema import Interaction, ResponseRecord
from interactscope.streaming.scoring.core import score_interaction
from interactscope.streaming.scoring.responses import RESPONSE_COLUMNS, responses_frame
from interactscope.streaming.scoring.run import score_run
from tests.helpers.foundation_fixtures import DEMO


def _rec(t: float, **kw) -> ResponseRecord:
    spoken = "text" in kw or "error" in kw
    return ResponseRecord(interaction_id="i", t=t, silent=not spoken, **kw)


def _row(r) -> tuple:
    d = r.model_dump(by_alias=True)
    return (d["t"], d["group_open_s"], d["consumed_by"], d["class"], d["matched"], d["verdict"])


def test_allocation_worked_example_per_response():
    """docs/protocol.md, first-response allocation, worked example: q = 2, τ = 5, 9, 20;
    responses 4 (wrong), 5 (correct for a), 8 (correct for b), 9, 12, 23. Added: a response
    before q (1), an error record (13), a suppressed one (14) and silent grid points."""
    inter = Interaction(
        id="i",
        video_id="v",
        task="T2",
        query={"time_s": 2.0, "text": "r"},
        targets=[
            {"id": "a", "time_s": 5.0, "reference": "x"},
            {"id": "b", "time_s": 9.0, "reference": "y"},
            {"id": "c", "time_s": 20.0, "reference": "z"},
        ],
    )
    spoken = {4: "w", 5: "x", 8: "y", 9: "w", 12: "w", 23: "w"}
    recs = [_rec(1.0, text="early")]
    for t in range(2, 24):
        if t == 13:
            recs.append(_rec(13.0, error="HTTP 500"))
        elif t == 14:
            recs.append(ResponseRecord(interaction_id="i", t=14.0, silent=True, suppressed=True))
        elif t in spoken:
            recs.append(_rec(float(t), text=spoken[t]))
        else:
            recs.append(_rec(float(t)))
    good = {("a", 5000), ("b", 8000)}

    def verdict(target_id: str, t_ms: int):
        ok = (target_id, t_ms) in good
        return ok, "yes" if ok else "no"

    s = score_interaction(inter, recs, verdict, cluster="c")
    assert [r["outcome"] for r in s.targets] == ["hit", "hit", "late"]
    rows = {r.t: _row(r) for r in s.responses}
    assert len(s.responses) == len(recs)
    # groups {4, 5}, {8, 9}, {12}, {23}; every in-window member of a consumed group is judged
    assert rows[4.0] == (4.0, 4.0, "a", "hit", 0, "a=no")
    assert rows[5.0] == (5.0, 4.0, "a", "hit", 1, "a=yes")
    assert rows[8.0] == (8.0, 8.0, "b", "hit", 1, "b=yes")
    assert rows[9.0] == (9.0, 8.0, "b", "hit", 0, "b=no")
    assert rows[12.0] == (12.0, 12.0, "", "unmatched", 0, "")  # second group of b's region
    assert rows[23.0] == (23.0, 23.0, "c", "late", 0, "")  # after [18, 22]: not judged
    assert rows[1.0][3] == "before_q" and rows[13.0][3] == "error"
    assert rows[14.0][3] == "suppressed" and rows[2.0] == (2.0, None, "", "silent", 0, "")


@pytest.mark.parametrize(("rule", "outcome"), [("window", "infra_error"), ("region", "late")])
def test_a_late_group_of_an_infra_error_target_reads_infra_error(rule, outcome):
    """q = 0, τ = 3 (δ = 2: window [1, 5]); points 1-5 all failed, the model answers at 6. The
    target consumes the group {6} after its window: `late`, which infra_error_rule=window turns
    into `infra_error` (every window point an error); responses.csv shows the same outcome for
    the response at 6 (before: `late` next to an `infra_error` target)."""
    inter = Interaction(id="i", video_id="v", task="T2", query={"time_s": 0.0, "text": "r"},
                        targets=[{"id": "a", "time_s": 3.0, "reference": "x"}])  # fmt: skip
    recs = [_rec(0.0)] + [_rec(float(t), error="HTTP 500") for t in range(1, 6)]
    recs += [_rec(6.0, text="now"), _rec(7.0)]
    s = score_interaction(inter, recs, lambda k, t: (True, "yes"), cluster="c", infra_rule=rule)
    assert [r["outcome"] for r in s.targets] == [outcome]
    rows = {r.t: _row(r) for r in s.responses}
    assert rows[6.0] == (6.0, 6.0, "a", outcome, 0, "")
    assert rows[3.0][3] == "error" and rows[7.0][3] == "silent"


def test_matching_crossing_pairs_per_response():
    """docs/protocol.md, order-preserving matching example: W1 = [2, 6], W2 = [5, 9]; the
    response at 5 conveys target 2 only, the one at 6 target 1 only: one match, (1, at 6)."""
    inter = Interaction(
        id="i",
        video_id="v",
        task="T8-A",
        query={"time_s": 0.0, "text": ""},
        targets=[
            {"id": "k1", "interval_s": [2.0, 6.0], "reference": "one"},
            {"id": "k2", "interval_s": [5.0, 9.0], "reference": "two"},
        ],
    )
    recs = [_rec(float(t), **({"text": "r"} if t in (5, 6) else {})) for t in range(10)]
    good = {("k2", 5000), ("k1", 6000)}

    def verdict(target_id: str, t_ms: int):
        ok = (target_id, t_ms) in good
        return ok, "yes" if ok else "no"

    s = score_interaction(inter, recs, verdict, cluster="c")
    assert [r["outcome"] for r in s.targets] == ["hit", "missed"]
    rows = {r.t: _row(r) for r in s.responses}
    assert rows[5.0] == (5.0, None, "", "unmatched", 0, "k1=no; k2=yes")
    assert rows[6.0] == (6.0, None, "k1", "hit", 1, "k1=yes; k2=no")


def test_frame_columns_and_order():
    df = responses_frame([])
    assert list(df.columns) == RESPONSE_COLUMNS


@pytest.fixture(scope="module")
def demo_oracle(tmp_path_factory):
    if not (DEMO / "benchmark.json").exists():
        pytest.skip("demo benchmark not present")
    from interactscope.streaming.collect import run_collect

    run = tmp_path_factory.mktemp("resp") / "oracle"
    run_collect(model="oracle", bench=DEMO, out=run, progress=False)
    return run


def test_score_writes_responses_csv_byte_identically(demo_oracle, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(demo_oracle, run)
    score_run(run, judge="lexical")
    first = (run / "scores" / "responses.csv").read_bytes()
    score_run(run, judge="lexical")
    assert (run / "scores" / "responses.csv").read_bytes() == first
    df = pd.read_csv(run / "scores" / "responses.csv", keep_default_na=False)
    assert list(df.columns) == RESPONSE_COLUMNS and len(df) == 89  # every decision point
    # the oracle: 14 responses (one per demo target), each the matched response of one target
    spoken = df[df["class"] != "silent"]
    assert len(spoken) == 14 and set(spoken["class"]) == {"hit"} and spoken["matched"].sum() == 14

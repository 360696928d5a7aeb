"""The task table, the metric table and the typed scoring results, hand-worked."""

from __future__ import annotations

import pandas as pd
import pytest

from interactscope.streaming.scoring.frames import CLUSTER_COLUMNS
from interactscope.streaming.scoring.metrics import (
    METRICS,
    compute_metrics,
    format_tables,
    metric,
    metric_ratios,
    table_columns,
)
from interactscope.streaming.scoring.results import (
    Interval,
    ScoreSummary,
    ScoringOptions,
    format_interval,
)
from interactscope.streaming.tasks import (
    ASSISTANCE_TASKS,
    OUTCOMES,
    SIX_TASK_MEAN_TASKS,
    TASKS,
    TOOL_TASKS,
    panel_of,
    task_spec,
)

# ------------------------------------------------------------------------------ tasks


def test_task_table_matches_the_paper():
    assert TASKS == ("T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8-A", "T8-B", "T8-C")
    # T5 (time condition) is reported apart from the six-task mean
    assert SIX_TASK_MEAN_TASKS == ("T1", "T2", "T3", "T4", "T6", "T7")
    assert TOOL_TASKS == ("T1",) and ASSISTANCE_TASKS == ("T8-A", "T8-B", "T8-C")
    t1, t8c = task_spec("T1"), task_spec("T8-C")
    assert (t1.panel, t1.scoring_rule, t1.content_check) == ("explicit", "allocation", "toolset")
    assert (t8c.panel, t8c.scoring_rule, t8c.content_check) == ("assistance", "matching", "judge")
    assert t8c.has_sequences and not task_spec("T8-A").has_sequences
    assert panel_of("T8-B") == "assistance" and panel_of("T4") == "explicit"
    assert OUTCOMES == ("hit", "premature", "wrong", "late", "missed", "unjudged", "infra_error")


def test_unknown_task_names_the_valid_ones():
    with pytest.raises(ValueError, match="unknown task 'T9'; valid: T1, T2"):
        task_spec("T9")


# ------------------------------------------------------------------------------ metric table


def test_each_metric_is_defined_once_with_its_formula():
    names = [m.name for m in METRICS]
    assert len(names) == len(set(names))
    joint = metric("T1 joint")
    assert (joint.numerator, joint.denominator, joint.tasks) == ("hits", "targets", ("T1",))
    cond = metric("T1 conditional")
    assert (cond.numerator, cond.denominator) == ("hits", "on_time")
    assert metric("Avg(6)").components == ("T1", "T2", "T3", "T4", "T6", "T7")
    assert not metric("Output precision").paper
    with pytest.raises(ValueError, match="unknown metric 'T1 Joint'; known: T1 on-time"):
        metric("T1 Joint")


def test_paper_table_columns_come_from_the_table():
    assert [m.display for m in table_columns("explicit")] == [
        "T1 On-time",
        "T1 Joint",
        "T1 Cond.",
        "T2",
        "T3",
        "T4",
        "T5",
        "T6",
        "T7",
        "Avg(6)",
    ]
    assert [m.name for m in table_columns("assistance")] == ["T8-A", "T8-B", "T8-C steps"]


def _clusters(rows):
    df = pd.DataFrame(rows)
    for col in CLUSTER_COLUMNS:
        if col not in df:
            df[col] = 0
    df["probed_s"] = df["probed_s"].astype(float)
    return df[CLUSTER_COLUMNS]


def test_compute_metrics_by_hand():
    # T1: c1 2 targets, 1 hit, 2 on time; c2 2 targets, 0 hits, 1 on time.
    # T2: c1 3 scored, 3 hits; T5: c2 1 scored, 0 hits (not in the six-task mean).
    c = _clusters(
        [
            dict(cluster="c1", task="T1", targets=2, scored=2, hits=1, on_time=2,
                 interactions=1, responses=2, probed_s=60.0, wrong=1),
            dict(cluster="c2", task="T1", targets=2, scored=2, hits=0, on_time=1,
                 interactions=1, responses=1, probed_s=60.0, missed=1, premature=1),
            dict(cluster="c1", task="T2", targets=3, scored=3, hits=3, interactions=1,
                 responses=3, probed_s=120.0),
            dict(cluster="c2", task="T5", targets=1, scored=1, hits=0, interactions=1,
                 responses=0, probed_s=60.0, late=1),
        ]
    )  # fmt: skip
    m = compute_metrics(c)
    assert m["T1"] == {
        "targets": 4,
        "on_time_count": 3,
        "joint_count": 1,
        "on_time": 0.75,
        "joint": 0.25,
        "conditional": 1 / 3,
    }
    # (T1 score 1/4 + T2 score 3/3) / 2; T5 is apart
    assert m["six_task_mean"] == pytest.approx(0.625)
    assert m["six_task_mean_tasks"] == ["T1", "T2"]
    assert m["tasks"]["T1"]["failures"] == {
        "hit": 1, "premature": 1, "wrong": 1, "late": 0, "missed": 1, "unjudged": 0
    }  # fmt: skip
    assert m["overall"] == {"hits": 4, "scored": 8, "score": 0.5, "targets": 8, "unjudged": 0}
    # 6 responses over 300 s = 5 min; explicit panel only
    assert m["output_volume"]["per_min"] == pytest.approx(1.2)
    assert m["output_volume"]["assistance"] == {"responses": 0, "probed_min": 0.0, "per_min": None}
    assert m["T8"] == {}
    r = metric_ratios(c)
    num, den, cl = r["T1 joint"]
    assert (num.tolist(), den.tolist(), cl.tolist()) == ([1.0, 0.0], [2.0, 2.0], ["c1", "c2"])
    assert set(r["Avg(6)"]) == {"T1", "T2"} and "T1" not in r
    assert metric_ratios(c, beyond=False).keys() == {
        k for k in r if not k.startswith("Output precision")
    }
    text = format_tables(m, model="hand")
    assert "T1 Joint" in text and "25.00" in text and "62.50" in text


# ------------------------------------------------------------------------------ typed results


def test_scoring_options_reject_negative_spans():
    assert ScoringOptions.of(tolerance_s=1.0).merge_s == 2.0
    with pytest.raises(ValueError, match="scoring option tolerance_s"):
        ScoringOptions.of(tolerance_s=-1.0)
    with pytest.raises(ValueError, match="scoring option tolerence_s"):
        ScoringOptions.of(tolerence_s=1.0)


def test_interval_formatter():
    assert Interval(estimate=12.5, low=3.0, high=20.0).format() == "12.50 [3.00, 20.00]"
    assert Interval(estimate=-9.84, low=-17.24, high=-2.46).format(signed=True) == (
        "-9.84 [-17.24, -2.46]"
    )
    assert format_interval(5.0, 1.0, 9.0, signed=True) == "+5.00 [+1.00, +9.00]"
    assert format_interval(float("nan"), 0, 1) == "—" and format_interval(None) == "—"
    assert format_interval(3.0, float("nan"), float("nan")) == "3.00"


def test_summary_keeps_unknown_keys_and_leaves_unset_ones_out(tmp_path):
    path = tmp_path / "summary.json"
    path.write_text('{"scoring_version": 1, "future_key": {"a": 1}, "metrics": {}}\n')
    s = ScoreSummary.read(path)
    assert s.model_extra == {"future_key": {"a": 1}} and s.intervals is None
    assert s.to_json() == (
        '{\n  "future_key": {\n    "a": 1\n  },\n  "metrics": {},\n  "scoring_version": 1\n}\n'
    )
    path.write_text('{"health": {"parse_errors": "many"}}')
    with pytest.raises(ValueError, match="summary.json: field health.parse_errors"):
        ScoreSummary.read(path)

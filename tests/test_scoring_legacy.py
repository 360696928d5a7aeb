"""Same numbers: run folders collected and scored BEFORE the metric table / analysis package
existed are re-scored with the current code and must give the same summary.json.

How tests/data/legacy_runs/ was made (commit 4346f23, before any change to scoring):
    interactscope collect --model oracle --bench annotations/demo --out tests/data/legacy_runs/oracle
    interactscope collect --model blind-fire --bench annotations/demo \
        --out tests/data/legacy_runs/blind-fire
    interactscope score tests/data/legacy_runs/oracle          (judge: lexical, δ = 2 s, merge 2 s)
    interactscope score tests/data/legacy_runs/blind-fire
then each scores/summary.json was kept as summary.legacy.json (the scores/ folders were dropped).
The literals below are read off those files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from interactscope.streaming.scoring.results import ScoreSummary
from interactscope.streaming.scoring.run import score_run
from tests.helpers.foundation_fixtures import DEMO

LEGACY = Path(__file__).parent / "data" / "legacy_runs"

# (model) -> values of the legacy summary.json "metrics" block
EXPECTED = {
    "oracle": {
        "T1": {
            "targets": 3,
            "on_time_count": 3,
            "joint_count": 3,
            "on_time": 1.0,
            "joint": 1.0,
            "conditional": 1.0,
        },
        "six_task_mean": 1.0,
        "overall": {"hits": 12, "scored": 12, "score": 1.0},
        "T8-A": (2, 2, 1.0),
        "T8-B": (1, 1, 1.0),
        "volume": (12, 1.151933, 10.41727),
        "task_hits": {"T1": (3, 3), "T2": (2, 2), "T3": (2, 2), "T7": (2, 2)},
    },
    "blind-fire": {
        "T1": {
            "targets": 3,
            "on_time_count": 3,
            "joint_count": 1,
            "on_time": 1.0,
            "joint": 0.333333,
            "conditional": 0.333333,
        },
        "six_task_mean": 0.083333,  # (1/3 + 0 + 0 + 0) / 4 tasks present
        "overall": {"hits": 1, "scored": 12, "score": 0.083333},
        "T8-A": (0, 2, 0.0),
        "T8-B": (0, 1, 0.0),
        "volume": (9, 1.151933, 7.812952),
        "task_hits": {"T1": (1, 3), "T2": (0, 2), "T3": (0, 2), "T7": (0, 2)},
    },
}


def _rescored(model: str, tmp_path: Path) -> dict:
    run = tmp_path / model
    shutil.copytree(LEGACY / model, run)
    # run.json names the benchmark by the absolute path it had; point it at this checkout's demo
    man = json.loads((run / "run.json").read_text())
    man["benchmark"]["path"] = str(DEMO)
    (run / "run.json").write_text(json.dumps(man))
    score_run(run, judge="lexical")
    return json.loads((run / "scores" / "summary.json").read_text())


@pytest.mark.parametrize("model", ["oracle", "blind-fire"])
def test_legacy_run_scores_the_same(model, tmp_path):
    if not (DEMO / "benchmark.json").exists():
        pytest.skip("demo benchmark not present")
    new = _rescored(model, tmp_path)
    exp = EXPECTED[model]
    m = new["metrics"]
    assert m["T1"] == exp["T1"]
    assert m["six_task_mean"] == exp["six_task_mean"]
    assert m["six_task_mean_tasks"] == ["T1", "T2", "T3", "T7"]
    assert {k: m["overall"][k] for k in ("hits", "scored", "score")} == exp["overall"]
    for task in ("T8-A", "T8-B"):
        t8 = m["T8"][task]
        assert (t8["hits"], t8["scored"], t8["recall"]) == exp[task]
    vol = m["output_volume"]
    assert (vol["responses"], vol["probed_min"], vol["per_min"]) == exp["volume"]
    assert {t: (m["tasks"][t]["hits"], m["tasks"][t]["scored"]) for t in exp["task_hits"]} == exp[
        "task_hits"
    ]
    # every value of the old file, settings and health included
    legacy = json.loads((LEGACY / model / "summary.legacy.json").read_text())
    assert new == legacy


@pytest.mark.parametrize("model", ["oracle", "blind-fire"])
def test_legacy_summary_loads_and_writes_back_unchanged(model):
    path = LEGACY / model / "summary.legacy.json"
    summary = ScoreSummary.read(path)
    assert summary.settings.judge_name == "lexical" and summary.settings.tolerance_s == 2.0
    assert summary.health.judge.unjudged_targets == 0
    assert summary.to_json() == path.read_text()

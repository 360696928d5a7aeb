"""summary.json through typed models (issue 23): the streaming ``metrics`` block is a
``SummaryMetrics`` (written and read back through it, old files byte-identical), and a plug-in
metric of the registry kind ``metrics`` lands under ``metrics.plugins`` without moving a byte of
the paper's numbers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from interactscope.core import registry
from interactscope.streaming.scoring.metrics import METRICS, Metric, metrics_table
from interactscope.streaming.scoring.results import (
    ScoreSummary,
    SummaryError,
    SummaryMetrics,
    T1Metrics,
)
from tests.helpers.foundation_fixtures import DEMO

LEGACY = Path(__file__).parent / "data" / "legacy_runs"


def _extras(model) -> list[str]:
    """Dotted paths of every key a model kept untyped (``extra``), T8's typed extras aside."""
    out = []
    for name, value in (model.model_extra or {}).items():
        if type(model).__name__ != "T8Metrics":
            out.append(name)
        out += [f"{name}.{x}" for x in _extras(value)] if hasattr(value, "model_extra") else []
    for name in type(model).model_fields:
        value = getattr(model, name)
        values = value.values() if isinstance(value, dict) else [value]
        for v in values:
            if hasattr(v, "model_extra"):
                out += [f"{name}.{x}" for x in _extras(v)]
    return out


@pytest.mark.parametrize("model", ["oracle", "blind-fire"])
def test_a_legacy_summary_reads_into_typed_metrics_and_writes_the_same_bytes(model):
    path = LEGACY / model / "summary.legacy.json"
    s = ScoreSummary.read(path)
    assert isinstance(s.metrics, SummaryMetrics) and isinstance(s.metrics.T1, T1Metrics)
    assert _extras(s.metrics) == []  # every key the scorer writes is a typed field
    assert s.to_json() == path.read_text(encoding="utf-8")
    # values read off the legacy files (tests/test_scoring_legacy.py's table)
    joint, hits = {"oracle": (1.0, 12), "blind-fire": (0.333333, 1)}[model]
    assert s.metrics.T1.joint == joint and s.metrics.overall.hits == hits
    assert s.metrics.T8.model_extra["T8-A"].scored == 2
    assert s.metrics.tasks["T2"].failures.hit == (2 if model == "oracle" else 0)


def test_a_wrong_type_in_the_metrics_block_is_one_line_naming_the_field(tmp_path):
    doc = json.loads((LEGACY / "oracle" / "summary.legacy.json").read_text())
    doc["metrics"]["overall"]["score"] = "high"
    bad = tmp_path / "summary.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(
        SummaryError, match=r"summary.json: field metrics.overall.score: .*re-score"
    ):
        ScoreSummary.read(bad)


def _rescore(model: str, tmp_path: Path) -> Path:
    from interactscope.streaming.scoring.run import score_run

    run = tmp_path / model
    shutil.copytree(LEGACY / model, run)
    man = json.loads((run / "run.json").read_text())
    man["benchmark"]["path"] = str(DEMO)
    (run / "run.json").write_text(json.dumps(man))
    score_run(run, judge="lexical")
    return run / "scores" / "summary.json"


def test_a_registered_plugin_metric_is_written_under_plugins_only(tmp_path, monkeypatch):
    if not (DEMO / "benchmark.json").exists():
        pytest.skip("demo benchmark not present")
    before = json.loads(_rescore("blind-fire", tmp_path / "a").read_text())
    # hits per non-silent response over every task: 1 hit / 9 responses in the legacy file
    fields = {"display": "hits/response", "numerator": "hits", "denominator": "responses",
              "tasks": ("T1", "T2", "T3", "T7", "T8-A", "T8-B"), "section": "plug-in",
              "paper": False}  # fmt: skip
    monkeypatch.setitem(registry.table("metrics"), "hits per response", fields)
    assert metrics_table()[: len(METRICS)] == METRICS
    assert metrics_table()[-1].name == "hits per response"
    after_path = _rescore("blind-fire", tmp_path / "b")
    after = json.loads(after_path.read_text())
    plug = after["metrics"].pop("plugins")
    assert plug == {"hits per response": {"value": 0.111111, "numerator": 1, "denominator": 9}}
    assert '"numerator": 1,' in after_path.read_text()  # a count stays an int
    assert after == before  # the paper's numbers and every other key unchanged
    assert ScoreSummary.read(after_path).metrics.plugins["hits per response"].denominator == 9


def test_a_plugin_metric_cannot_write_over_a_paper_number(monkeypatch):
    bad = Metric(name="x", display="x", tasks=("T1",), section="s", summary=("overall.score",))
    monkeypatch.setitem(registry.table("metrics"), "x", bad)
    registry.refresh()  # a broken plug-in metric is skipped with one warning line
    with pytest.warns(registry.PluginWarning, match=r"metric 'x': .* under 'plugins\.'.*skipped"):
        assert metrics_table() == METRICS
    monkeypatch.setitem(registry.table("metrics"), "x", {"tasks": ["T1"]})  # no display
    with pytest.warns(registry.PluginWarning, match=r"metric 'x': not a Metric \(field 'display'"):
        assert metrics_table() == METRICS


def test_egobench_summary_reference_view_is_typed_and_keeps_its_key_order(retail6, tmp_path):
    from interactscope.egobench import EgoBenchError, score_log, write_score
    from interactscope.egobench.scorer import ReferenceView, gt_log, read_score

    logs = [e for e in gt_log(retail6) if e.task_id != 10]  # 48 of 49 tasks logged
    gt10 = len(retail6.task(10).ground_truth)
    out = write_score(score_log(logs, retail6), tmp_path / "retail6")
    doc = json.loads((out / "summary.json").read_text())
    # the reference evaluator's view: the 48 logged tasks, every one replayed exactly
    assert list(doc["reference_view"].items()) == [
        ("n_tasks", 48), ("tool_succ", 1.0), ("result_succ", 1.0), ("joint_succ", 1.0),
        ("micro_acc", 1.0), ("matched", 165 - gt10), ("total_gt", 165 - gt10),
        ("label", "reference evaluator: tasks without a log left out"),
    ]  # fmt: skip
    summary, _ = read_score(out)
    assert isinstance(summary.reference_view, ReferenceView)
    assert summary.reference_view.total_gt == 165 - gt10 and summary.n_tasks == 49
    doc["reference_view"]["n_tasks"] = "many"
    (out / "summary.json").write_text(json.dumps(doc))
    with pytest.raises(EgoBenchError, match=r"summary.json: not a score summary"):
        read_score(out)

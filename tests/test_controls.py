"""Evidence controls and beyond-the-paper variants, hand-worked."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.streaming.analysis.beyond_paper import allocate_lenient, latency_shifted
from interactscope.streaming.analysis.controls import (
    blind_fire,
    constant_tool,
    policy_controls,
    request_labels,
    request_prior,
    scene_ablation,
    schedule_control,
    simulate_blind_fire,
)
from interactscope.streaming.analysis.errors import CompareError
from interactscope.streaming.analysis.runs import ScoredRun
from interactscope.streaming.schema import Interaction, ResponseRecord, ToolCall
from tests.helpers.report_fixtures import make_demo_runs, manifest

B = 500


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return make_demo_runs(tmp_path_factory.mktemp("ctl"))


def t1(iid="a", q=0.0, tau=4.0, tools=("take_photo",), video="v1"):
    return Interaction.model_validate(
        {
            "id": iid,
            "video_id": video,
            "task": "T1",
            "query": {"time_s": q, "text": "take a photo when ..."},
            "targets": [{"id": "k1", "reference": "x", "tools": list(tools), "time_s": tau}],
        }
    )


# ---------------------------------------------------------------- blind fire (hand-built)


def test_blind_fire_lands_in_window_at_d3_not_at_d8():
    # q = 0, τ = q + 4, δ = 2: window [2, 6]. Fired at q+3 -> inside; at q+8 -> late; q+0 premature.
    it = t1()
    sim = simulate_blind_fire([it], {"a": frozenset({"take_photo"})}, delays=(0, 3, 8))
    got = sim.set_index("delay_s")
    assert got.loc[3.0, "outcome"] == "hit" and got.loc[3.0, "hit"] == 1
    assert got.loc[8.0, "outcome"] == "late" and got.loc[8.0, "hit"] == 0
    assert got.loc[0.0, "outcome"] == "premature"
    # wrong label at q+3: on time, not a joint hit
    wrong = simulate_blind_fire([it], {"a": frozenset({"search_web"})}, delays=(3,))
    assert wrong.loc[0, "outcome"] == "wrong" and wrong.loc[0, "on_time"] == 1
    # a shot after the clip end is not fired: missed
    cut = simulate_blind_fire([it], {"a": {"take_photo"}}, delays=(8,), clip_end={"a": 7.0})
    assert cut.loc[0, "outcome"] == "missed" and np.isnan(cut.loc[0, "fired_s"])


def test_request_labels_and_constant_tool():
    a, b = t1("a", tools=("search_web",)), t1("b", q=2.0, tools=("take_photo",))
    recs = [
        ResponseRecord(interaction_id="a", t=0.0, silent=True),
        ResponseRecord(
            interaction_id="a", t=1.0, silent=False, tool_calls=[ToolCall(name="Search_Web")]
        ),
        ResponseRecord(
            interaction_id="a", t=2.0, silent=False, tool_calls=[ToolCall(name="take_photo")]
        ),
        ResponseRecord(interaction_id="b", t=2.0, silent=True),
    ]
    assert request_labels([a, b], recs) == {"a": frozenset({"search_web"}), "b": frozenset()}
    assert request_labels([a, b], recs, source="at_q") == {"a": frozenset(), "b": frozenset()}
    # tie (one each) -> alphabetical
    assert constant_tool([a, b]) == "search_web"
    assert constant_tool([a, b, t1("c", tools=("take_photo",))]) == "take_photo"


# ---------------------------------------------------------------- demo controls


@pytest.mark.slow
def test_request_prior_on_demo(runs):
    r = request_prior(runs["oracle-none"], n_resamples=B)
    t = r.table.set_index("predictor")
    # 5 demo T1 targets: taxi, cyclist, speech and t1-home-chores' two. The constant is the
    # most frequent target tool, add_to_household_action_list (both t1-home-chores targets;
    # the other three tools once each): it recovers those 2 of 5.
    assert t.loc["request labels: oracle (scene=none)", "recovered"] == 5
    constant = "constant: add_to_household_action_list"
    assert t.loc[constant, "recovered"] == 2
    assert t.loc[constant, "rate"] == pytest.approx(100 * 2 / 5)
    assert t.loc["request labels: oracle (scene=none)", "diff_vs_constant"] == pytest.approx(60.0)
    with pytest.raises(CompareError, match="scene=none"):
        request_prior(runs["oracle"])


@pytest.mark.slow
def test_blind_fire_on_demo(runs):
    r = blind_fire(runs["oracle-none"], n_resamples=B)
    m = r.table[r.table["predictor"].str.startswith("request")].set_index("delay_s")
    # taxi q=0 τ=2.5, cyclist q=2 τ=3.1, speech q=0 τ=2.2, home-chores q=0 τ=2.0 and 5.0 (its
    # clip ends at 5.312; δ = 2): one firing at q + d hits at most one target of an interaction.
    # d=0: cyclist (2 ∈ [1.1, 5.1]) + home k1 (0 ∈ [0, 4]) = 2/5; d=1..3: taxi, cyclist, speech,
    # home k1 = 4/5; d=5: home k2 only (5 ∈ [3, 7]) = 1/5; d=8: none (home: after its clip end)
    assert [round(m.loc[d, "joint"], 2) for d in (0, 1, 2, 3, 5, 8)] == [
        40.0,
        80.0,
        80.0,
        80.0,
        20.0,
        0.0,
    ]
    assert r.meta["runs"]["request_only"]["non_default_settings"] == {"scene": "none"}


@pytest.mark.slow
def test_policy_controls_on_demo(runs):
    r = policy_controls(
        runs["oracle"], [runs["oracle-history"], runs["oracle-cooldown"]], n_resamples=B
    )
    t = r.table.set_index("condition")
    assert t.loc["plain", "recall_hits"] == 2 and t.loc["plain", "outputs"] == 2
    # the 10 s cooldown suppresses the oracle's second T8-A warning (at 8 s, 5 s after 3 s)
    assert t.loc["cooldown_s=10", "recall_hits"] == 1
    assert t.loc["cooldown_s=10", "d_recall"] == -50.0
    assert t.loc["cooldown_s=10", "d_outputs_pct"] == -50.0
    assert (t.loc["cooldown_s=10", ["shared", "gained", "lost"]] == [1, 0, 1]).all()
    assert t.loc["history.n=5", "d_recall"] == 0.0
    paths = r.write(runs["oracle"].parent / "ctl_out")
    assert sorted(p.suffix for p in paths.values()) == [".csv", ".json", ".md"]


def _t8a_run(path, hits, clusters, responses):
    n = len(hits)
    ids = [f"e{k:03d}" for k in range(n)]
    t = pd.DataFrame(
        {
            "interaction_id": ids,
            "target_id": "k1",
            "task": "T8-A",
            "cluster": clusters,
            "hit": hits,
            "scored": 1,
            "on_time": np.nan,
        }
    )
    i = pd.DataFrame(
        {
            "interaction_id": ids,
            "task": "T8-A",
            "panel": "assistance",
            "cluster": clusters,
            "hits": hits,
            "responses": responses,
            "probed_s": 60.0,
            "complete": np.nan,
        }
    )
    return ScoredRun(path, manifest("m"), t, i, label=str(path))


def test_cooldown_paper_case_minus_9_84_pp(tmp_path):
    # 122 episodes: plain recalls 22, cooldown 10 (a subset) -> -9.84 pp (paper Table 10)
    clusters = [f"c{k % 61}" for k in range(122)]
    plain = _t8a_run(tmp_path / "plain", [1] * 22 + [0] * 100, clusters, [4] * 122)
    cool = _t8a_run(tmp_path / "cool", [1] * 10 + [0] * 112, clusters, [2] * 122)
    r = policy_controls(plain, [cool], n_resamples=2000)
    row = r.table.iloc[1]
    assert round(row["d_recall"], 2) == -9.84
    assert row["d_recall_low"] < -9.84 < row["d_recall_high"] <= 0.0
    assert row["d_outputs_pct"] == pytest.approx(-50.0)
    assert (row["shared"], row["gained"], row["lost"]) == (10, 0, 12)


@pytest.mark.slow
def test_scene_ablation_on_demo(runs):
    r = scene_ablation(runs["oracle"], runs["oracle-none"], n_resamples=B)
    assert sorted(set(r.table["tolerance_s"])) == [1.0, 2.0, 4.0]
    assert (r.table["diff"] == 0).all()  # the oracle ignores the scene
    with pytest.raises(CompareError, match="scene=none"):
        scene_ablation(runs["oracle"], runs["silent"], n_resamples=B)


@pytest.mark.slow
def test_schedule_on_demo(runs):
    r = schedule_control(runs["oracle-step2"], runs["oracle"], n_resamples=B)  # any order
    t = r.table.set_index("metric")
    assert r.meta["steps_s"] == [1.0, 2.0]
    # the 2 s grid (0, 2, 4, ...) has no point inside T8-A's first interval [2.4, 3.0]
    assert t.loc["T8-A", "diff"] == -50.0
    with pytest.raises(CompareError, match="two grids"):
        schedule_control(runs["oracle"], runs["oracle"])


@pytest.mark.slow
def test_control_cli(runs, tmp_path):
    res = CliRunner().invoke(
        app,
        [
            "control",
            "blind-fire",
            str(runs["oracle-none"]),
            "--out",
            str(tmp_path),
            "--resamples",
            "100",
        ],
    )
    assert res.exit_code == 0, res.output
    assert (tmp_path / "blind_fire.csv").exists() and (tmp_path / "blind_fire.json").exists()
    res = CliRunner().invoke(
        app, ["control", "request-prior", str(runs["oracle"]), "--out", str(tmp_path)]
    )
    assert res.exit_code == 1


# ---------------------------------------------------------------- beyond the paper


class _Tg:
    def __init__(self, tau):
        self.anchor_s = tau
        self.tau = tau

    def window(self, d):
        return (self.tau - d, self.tau + d)


def test_lenient_allows_one_separate_correction():
    # τ = 10, δ = 2 (window [8, 12]), merge 2 s. Wrong at 8 (= τ−2), correct at 10.5: 10.5 > 8 + 2,
    # so the correction opens its own group. Paper rule: the first group is consumed -> wrong.
    times = [8.0, 10.5]
    correct = {1}
    ok = lambda k, j: j in correct  # noqa: E731
    (a,) = allocate_lenient([_Tg(10.0)], times, ok, q=0.0)
    assert a.strict.outcome == "wrong" and not a.strict.hit
    assert a.outcome == "hit" and a.corrected and a.matched == 1
    # within merge_s the correction is in the same group, which the paper's rule already counts
    (b,) = allocate_lenient([_Tg(10.0)], [9.0, 11.0], ok, q=0.0)
    assert b.strict.outcome == "hit" and not b.corrected
    # a premature first response may be corrected too
    (c,) = allocate_lenient([_Tg(10.0)], [5.0, 10.0], ok, q=0.0)
    assert c.strict.outcome == "premature" and c.outcome == "hit"
    # only one correction: wrong, wrong, correct (δ = 4) fails with 1, hits with 2
    times3 = [6.0, 8.5, 11.0]
    ok3 = lambda k, j: j == 2  # noqa: E731
    (d,) = allocate_lenient([_Tg(10.0)], times3, ok3, q=0.0, tolerance_s=4.0)
    assert d.outcome == "wrong"
    (e,) = allocate_lenient([_Tg(10.0)], times3, ok3, q=0.0, tolerance_s=4.0, corrections=2)
    assert e.outcome == "hit"
    # a correction must open in the target's own region: τ = 10 and 13 -> boundary 11.5; the
    # response at 12 is inside target 1's window but belongs to target 2's region
    (f, g) = allocate_lenient([_Tg(10.0), _Tg(13.0)], [8.0, 12.0], ok, q=0.0)
    assert f.strict.outcome == "wrong" and f.outcome == "wrong"
    assert g.strict.outcome == "hit"


def test_latency_shift_moves_responses():
    recs = [
        ResponseRecord(interaction_id="a", t=3.0, silent=False, latency_s=1.5),
        ResponseRecord(interaction_id="a", t=4.0, silent=True, latency_s=None),
    ]
    out = latency_shifted(recs)
    assert [r.t for r in out] == [4.5, 4.0]
    assert recs[0].t == 3.0  # copies, the input is untouched
    late = latency_shifted([ResponseRecord(interaction_id="a", t=3.0, silent=False, latency_s=2.5)])
    assert late[0].t == 5.5


def test_latency_aware_rescoring_end_to_end(tmp_path):
    from interactscope.streaming.analysis.runs import rescore
    from interactscope.streaming.collect import run_collect
    from interactscope.streaming.runlog import RunFolder
    from tests.helpers.foundation_fixtures import interaction, write_bench

    tgt = [{"id": "k1", "reference": "take_photo", "tools": ["take_photo"], "time_s": 4.0}]
    bench = write_bench(tmp_path / "b", [interaction("p", task="T1", targets=tgt)])
    run = tmp_path / "run"
    run_collect(model="oracle", bench=bench, out=run, progress=False)
    recs = RunFolder(run).responses()
    assert [r.t for r in recs if not r.silent] == [4.0]  # window [2, 6]

    def joint(latency):
        moved = latency_shifted([r.model_copy(update={"latency_s": latency}) for r in recs])
        return rescore(run, judge="toolset", records=moved).targets["hit"].tolist()

    assert joint(1.5) == [1]  # delivered at 5.5: inside
    assert joint(2.5) == [0]  # delivered at 6.5: late


def test_lenient_frame_end_to_end(tmp_path):
    """A run folder with a wrong tool call at τ−2 and the right one at τ+1 (a separate group):
    the paper's rule scores 0, the lenient allocation 1."""
    from interactscope.streaming.analysis.beyond_paper import lenient_frame
    from interactscope.streaming.collect import run_collect
    from interactscope.streaming.scoring.run import score_run
    from tests.helpers.foundation_fixtures import interaction, write_bench

    tgt = [{"id": "k1", "reference": "take_photo", "tools": ["take_photo"], "time_s": 4.0}]
    bench = write_bench(tmp_path / "b", [interaction("p", task="T1", targets=tgt)])
    run = tmp_path / "run"
    run_collect(model="silent", bench=bench, out=run, progress=False)
    lines = []
    for line in (run / "responses.jsonl").read_text().splitlines():
        r = ResponseRecord.model_validate_json(line)
        if r.t in (2.0, 5.0):
            name = "search_web" if r.t == 2.0 else "take_photo"
            r = r.model_copy(
                update={"silent": False, "text": name, "tool_calls": [ToolCall(name=name)]}
            )
        lines.append(r.model_dump_json())
    (run / "responses.jsonl").write_text("\n".join(lines) + "\n")
    strict = score_run(run, judge="toolset")
    assert strict.targets["outcome"].tolist() == ["wrong"]
    lf = lenient_frame(run, judge="toolset")
    assert lf[["outcome_strict", "outcome_lenient", "corrected"]].values.tolist() == [
        ["wrong", "hit", 1]
    ]
    # output precision (hits / non-silent outputs): 0/2 under the paper's rule
    assert strict.metrics["tasks"]["T1"]["responses"] == 2


# ------------------------------------------------------------------------------ registry


def test_cli_and_report_loop_over_the_registry():
    from interactscope.cli.analysis import control_app
    from interactscope.streaming.analysis.controls import CONTROLS, registered

    names = [s.name for s in registered()]
    assert names == ["request-prior", "blind-fire", "scene", "policy", "schedule"]
    assert [c.name for c in control_app.registered_commands] == names
    # each command keeps its options; the report has a section for four of the five
    scene = CliRunner().invoke(app, ["control", "scene", "--help"])
    assert "--tolerance" in scene.output and "--judge" in scene.output
    assert "--resamples" in scene.output
    assert [s.name for s in registered() if s.report] == [
        "blind-fire",
        "scene",
        "policy",
        "schedule",
    ]
    assert CONTROLS["policy"].runner().__name__ == "run_cli"


def test_a_registered_control_becomes_a_command():
    import inspect

    import interactscope.cli.analysis as cli_analysis
    from interactscope.streaming.analysis.controls.registry import (
        CONTROLS,
        ControlParam,
        ControlSpec,
        register,
    )

    spec = ControlSpec(
        name="echo-test",
        summary="Echo.",
        params=(ControlParam("word", "argument", str, help="A word."),),
        module="tests.control_echo",
        run="run_cli",
    )
    register(spec)
    try:
        cmd = cli_analysis._control_command(spec)
        assert list(inspect.signature(cmd).parameters) == ["word", "out", "resamples"]
        with pytest.raises(ValueError, match="already registered"):
            register(ControlSpec("echo-test", "Other.", (), "x", "y"))
    finally:
        del CONTROLS["echo-test"]


def test_one_error_type():
    from interactscope.streaming.analysis import AnalysisError

    assert AnalysisError is CompareError

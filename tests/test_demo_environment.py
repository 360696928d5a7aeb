"""The main demo's environment interaction (issue 13, item 4): ``score`` prints the environment
columns (console and ``--json``) and the paper's per-target outcomes of the ten other demo
interactions are those they had before it was added."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.streaming.collect import run_collect
from tests.helpers.foundation_fixtures import DEMO

# The paper's outcome of each target of the ten interactions the demo had before
# t1-home-chores, read off the timelines in annotations/demo/README.md (δ = 2 s, merge 2 s,
# lexical judge) and equal to the scores of those runs before the change (/tmp comparison in the
# report of issue 13 item 4):
# - oracle answers every target with its reference / tool call inside the window: all hit;
# - silent never answers: all missed;
# - blind-fire answers once at q + 3 s: t1-taxi search_web at 3 in [0.5, 4.5] hit; cyclist (5,
#   take_photo wanted) and speech (3, start_voice_memo wanted) wrong tool; the fixed sentence is
#   judged no for t2/t3 (inside each window: wrong) and for t8a k1 (unmatched: missed);
#   t7-walkers' one sentence at 4 is after k1's window [0, 3.2] (late) and k2 gets none; t8b
#   (q = 5) would fire at 8, after the 7.6 s clip.
OLD = [
    "t1-taxi/k1", "t1-cyclist/k1", "t1-speech/k1", "t2-cut/k1", "t2-bunny/k1",
    "t3-pedestrian/k1", "t3-startled/k1", "t7-walkers/k1", "t7-walkers/k2",
    "t8a-obstacles/k1", "t8a-obstacles/k2", "t8b-said/k1",
]  # fmt: skip
BLIND_FIRE = dict.fromkeys(OLD, "missed") | {
    "t1-taxi/k1": "hit",
    **dict.fromkeys(["t1-cyclist/k1", "t1-speech/k1", "t2-cut/k1", "t2-bunny/k1"], "wrong"),
    **dict.fromkeys(["t3-pedestrian/k1", "t3-startled/k1"], "wrong"),
    "t7-walkers/k1": "late",
}
# t1-home-chores (q = 0, bunny 5.312 s): k1 τ 2.0 [0, 4], k2 τ 5.0 [3, 7]
NEW = {
    "oracle": {"t1-home-chores/k1": "hit", "t1-home-chores/k2": "hit"},
    "silent": {"t1-home-chores/k1": "missed", "t1-home-chores/k2": "missed"},
    # one bare add_to_household_action_list at 3: k1's (it consumes the group), k2 none
    "blind-fire": {"t1-home-chores/k1": "hit", "t1-home-chores/k2": "missed"},
}
EXPECTED = {
    "oracle": dict.fromkeys(OLD, "hit"),
    "silent": dict.fromkeys(OLD, "missed"),
    "blind-fire": BLIND_FIRE,
}
# the environment rows `score` prints, worked out as in interactscope/data/demo/README.md
ENV_ROW = {
    "oracle": "t1-home-chores | 2/2 | 2/2 | correct | 2/2",
    "silent": "t1-home-chores | 0/2 | 0/2 | incorrect | 0/0",
    "blind-fire": "t1-home-chores | 1/2 | 0/2 | incorrect | 0/0",
}


def _scored(tmp_path, model: str, *args: str):
    run = tmp_path / model
    run_collect(model=model, bench=DEMO, out=run, progress=False)
    res = CliRunner().invoke(app, ["score", str(run), "--judge", "lexical", *args])
    assert res.exit_code == 0, res.output
    return run, res.output


def _outcomes(run) -> dict[str, str]:
    df = pd.read_csv(run / "scores" / "targets.csv")
    return dict(zip(df["interaction_id"] + "/" + df["target_id"], df["outcome"], strict=True))


@pytest.mark.parametrize("model", ["oracle", "silent", "blind-fire"])
def test_other_interactions_keep_their_outcomes(tmp_path, model):
    run, out = _scored(tmp_path, model)
    assert _outcomes(run) == EXPECTED[model] | NEW[model]
    assert ENV_ROW[model] in out


def test_blind_fire_environment_columns(tmp_path):
    # holds today and with the baselines change: the environment interaction gets the tool
    _run, out = _scored(tmp_path, "blind-fire")
    assert ENV_ROW["blind-fire"] in out
    assert "T1 joint time-call 0/2 = 0.000; state correct 0/1 = 0.000" in out


def test_score_prints_the_environment_columns_and_json_carries_them(tmp_path):
    run, out = _scored(tmp_path, "oracle")
    # console: the paper's tables first, then the environment block
    assert out.index("Explicit-request tasks") < out.index("environment interactions")
    assert ENV_ROW["oracle"] in out
    assert "T1 joint time-call 2/2 = 1.000; state correct 1/1 = 1.000; action precision" in out
    res = CliRunner().invoke(app, ["score", str(run), "--judge", "lexical", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    env = doc["environment"]
    assert env["totals"] == {
        "joint_time_call": {"hits": 2, "targets": 2},
        "state_correct": {"correct": 1, "interactions": 1},
        "action_precision": {"matched": 2, "state_changing": 2},
    }
    (row,) = env["interactions"]
    assert (row["interaction_id"], row["environment"]) == ("t1-home-chores", "home")
    assert [t["time_call"] for t in row["targets"]] == [True, True]
    # the same content as the file, and the paper's summary is untouched by it
    on_disk = json.loads((run / "scores" / "environment_scores.json").read_text())
    assert env == on_disk
    assert "environment" not in json.dumps(doc["summary"])


def test_demo_env_is_the_demo_interaction_alone():
    """``data/demo-env`` (the minimal environment benchmark of tests/test_env_streaming.py) holds
    the demo's t1-home-chores and the same environment files, byte for byte."""
    env_bench = DEMO.resolve().parent / "demo-env"
    (alone,) = (env_bench / "interactions.jsonl").read_text().splitlines()
    lines = (DEMO / "interactions.jsonl").read_text().splitlines()
    assert alone in lines and json.loads(alone)["id"] == "t1-home-chores"
    for name in ("household_tools.json", "household_seed.json"):
        assert (DEMO / "env" / name).read_bytes() == (env_bench / "env" / name).read_bytes()
    envs = {e["id"]: e for e in json.loads((DEMO / "benchmark.json").read_text())["environments"]}
    assert envs == {
        e["id"]: e for e in json.loads((env_bench / "benchmark.json").read_text())["environments"]
    }

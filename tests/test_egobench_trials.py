"""EgoBench trials and pass^k (τ-bench: mean over tasks of C(c,k)/C(n,k)), resumable per
(task, trial), and episodes in parallel written in run order by one writer."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest

from interactscope.egobench import package_data_dir
from interactscope.egobench.agents import OracleAgent, register_agent
from interactscope.egobench.run_folder import EPISODES, load_run, read_episodes
from interactscope.egobench.run_score import score_run
from interactscope.egobench.runner import RunRequest, execute, prepare
from interactscope.egobench.trials import pass_hat_k, pass_k

DATA = package_data_dir()


class EvenSeedOracle(OracleAgent):
    """The oracle on trials whose seed is even, else no call: with user.seed 0, trials 1 and
    3 succeed, trial 2 fails."""

    name = "even-seed-oracle"

    def begin(self, ctx) -> None:
        super().begin(ctx)
        if ctx.settings.user.seed % 2:
            self._calls = []


class SlowOracle(OracleAgent):
    """The oracle with a per-step delay drawn from the task id (later tasks faster), so
    episodes end out of run order; counts episodes in flight."""

    name = "slow-oracle"
    live = 0
    peak = 0
    lock = threading.Lock()

    def begin(self, ctx) -> None:
        super().begin(ctx)
        self.delay = 0.002 * (12 - ctx.task.task_id % 12) + random.random() * 0.002
        with SlowOracle.lock:
            SlowOracle.live += 1
            SlowOracle.peak = max(SlowOracle.peak, SlowOracle.live)

    def step(self):
        time.sleep(self.delay)
        out = super().step()
        if not out.calls:
            with SlowOracle.lock:
                SlowOracle.live -= 1
        return out


register_agent("even-seed-oracle", lambda spec: EvenSeedOracle())
register_agent("slow-oracle", lambda spec: SlowOracle())


def _req(out: Path, **kw) -> RunRequest:
    base = {"agent": "oracle", "user": "scripted", "data": DATA, "variants": ["retail1"]}
    return RunRequest(**{**base, "out": out, **kw})


def test_pass_hat_k_by_hand() -> None:
    assert pass_hat_k(2, 4, 1) == 0.5
    assert pass_hat_k(2, 4, 2) == pytest.approx(1 / 6)  # C(2,2)/C(4,2)
    assert pass_hat_k(3, 4, 2) == pytest.approx(3 / 6)  # C(3,2)/C(4,2)
    assert pass_hat_k(1, 4, 2) == 0.0
    assert pass_hat_k(4, 4, 4) == 1.0
    with pytest.raises(ValueError, match="k=5"):
        pass_hat_k(1, 4, 5)


def test_pass_k_means_over_tasks_and_counts_unplayed_trials_as_failures() -> None:
    outcomes = {
        ("retail1", 1): [True, True, False, False],  # c=2: 1/2, 1/6, 0, 0
        ("retail1", 2): [True, True, True, True],  # c=4: 1, 1, 1, 1
        ("kitchen1", 1): [True, False],  # 2 of 4 played, c=1: 1/4, 0, 0, 0
    }
    got = pass_k(outcomes, 4, n_resamples=200)
    assert got[1]["estimate"] == pytest.approx((0.5 + 1 + 0.25) / 3)
    assert got[2]["estimate"] == pytest.approx((1 / 6 + 1 + 0) / 3)
    assert got[3]["estimate"] == pytest.approx(1 / 3)
    assert got[4]["estimate"] == pytest.approx(1 / 3)
    assert got[1]["tasks"] == 3 and got[1]["clusters"] == 2
    assert got[1]["low"] <= got[1]["estimate"] <= got[1]["high"]
    one = pass_k({("retail1", 1): [True], ("retail1", 2): [False]}, 1, n_resamples=50)
    assert one[1]["low"] == one[1]["high"] == 0.5 and "fewer than 2 clusters" in one[1]["note"]


def test_trials_record_seeds_score_pass_k_and_resume_per_task_and_trial(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = execute(prepare(_req(out, agent="even-seed-oracle", tasks="1-3", trials=2)))
    assert (first.written, first.skipped) == (6, 0)
    recs = read_episodes(out / EPISODES)
    assert [(r.task_id, r.trial, r.seed) for r in recs] == [
        (1, 1, 0),
        (2, 1, 0),
        (3, 1, 0),
        (1, 2, 1),
        (2, 2, 1),
        (3, 2, 1),
    ]
    more = execute(prepare(_req(out, agent="even-seed-oracle", tasks="1-3", trials=3)))
    assert (more.written, more.skipped) == (3, 6)
    m, recs = load_run(out)
    assert m.trials == 3 and len(recs) == 9 and m.summary["expected"] == 9
    score = score_run(out)
    # every task: trials 1 and 3 succeed, 2 fails -> c=2, n=3
    assert score.pass_k[1]["estimate"] == pytest.approx(2 / 3)
    assert score.pass_k[2]["estimate"] == pytest.approx(1 / 3)  # C(2,2)/C(3,2)
    assert score.pass_k[3]["estimate"] == 0.0
    assert score.results["retail1"].summary.joint_succ == 1.0  # trial 1 as before
    assert (out / "scores" / "retail1" / "trial-2" / "tasks.csv").exists()
    assert (out / "scores" / "pass_k.json").exists()


def test_concurrent_episodes_are_written_in_run_order_with_their_own_environment(
    tmp_path: Path,
) -> None:
    seq = tmp_path / "seq"
    execute(prepare(_req(seq, tasks="1-12")))
    SlowOracle.peak = 0
    par = tmp_path / "par"
    res = execute(prepare(_req(par, agent="slow-oracle", tasks="1-12", max_concurrency=4)))
    assert res.written == 12 and SlowOracle.peak == 4
    a, b = read_episodes(seq / EPISODES), read_episodes(par / EPISODES)
    assert [r.task_id for r in b] == list(range(1, 13))
    assert [r.final_state_hash for r in a] == [r.final_state_hash for r in b]
    # killed with the last three episodes lost: the resume plays them again, same order
    lines = (par / EPISODES).read_text().splitlines(keepends=True)
    (par / EPISODES).write_text("".join(lines[:9]))
    again = execute(prepare(_req(par, agent="slow-oracle", tasks="1-12", max_concurrency=4)))
    assert (again.written, again.skipped) == (3, 9)
    assert [r.task_id for r in read_episodes(par / EPISODES)] == list(range(1, 13))
    assert score_run(par).results["retail1"].summary.joint_succ == 1.0


def test_cli_trials_concurrency_and_pass_k_lines(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from interactscope.cli import app

    out = tmp_path / "run"
    base = ["ego", "run", "--agent", "even-seed-oracle", "--variant", "retail1", "--tasks", "1-2"]
    bad = CliRunner().invoke(app, [*base, "--trials", "0", "--out", str(out)])
    assert bad.exit_code == 1 and "--trials" in bad.output and not out.exists()
    ok = CliRunner().invoke(
        app, [*base, "--trials", "2", "--max-concurrency", "2", "--out", str(out)]
    )
    assert ok.exit_code == 0, ok.output
    res = CliRunner().invoke(app, ["ego", "score", str(out)])
    assert res.exit_code == 0, res.output
    # trial 1 succeeds, trial 2 fails: pass^1 = 1/2, pass^2 = 0; one variant: zero-width
    assert "pass^1 0.500 [0.500, 0.500] (2 tasks, 2 trials)" in res.output
    assert "pass^2 0.000 [0.000, 0.000] (2 tasks, 2 trials)" in res.output

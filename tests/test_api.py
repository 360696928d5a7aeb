"""The Python API of interactscope/__init__.py: lazy (``import interactscope`` imports no
pandas, pydantic, numpy or torch) and usable end to end as a notebook would, without the CLI."""

from __future__ import annotations

import subprocess
import sys

import interactscope
from tests.helpers.foundation_fixtures import interaction, write_bench


def test_import_interactscope_is_light():
    code = (
        "import sys, interactscope\n"
        "heavy = [m for m in ('pandas', 'numpy', 'pydantic', 'torch', 'av') if m in sys.modules]\n"
        "print(heavy)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stderr


def test_streaming_collect_score_load_run(tmp_path):
    tg = [{"id": "k1", "reference": "the taxi stops", "time_s": 3.0}]
    bench = write_bench(tmp_path / "b", [interaction("a", targets=tg)])
    assert isinstance(interactscope.load_benchmark(bench), interactscope.Benchmark)
    s = interactscope.collect(model="oracle", bench=bench, out=tmp_path / "run", progress=False)
    assert s.written == s.decision_points > 0
    run = interactscope.load_run(tmp_path / "run")
    assert run.manifest.model == "oracle"
    assert sum(not r.silent for r in run.responses()) == 1  # the oracle answers the one target
    res = interactscope.score(tmp_path / "run")
    assert res.metrics["tasks"]["T2"]["score"] == 1.0  # 1 hit / 1 scored target


def test_ego_run_score_load_run(tmp_path):
    out = tmp_path / "ego"
    done = interactscope.ego.run("oracle", ["retail1"], out, tasks="1-2")
    assert (done.written, done.skipped) == (2, 0)
    again = interactscope.ego.run("oracle", ["retail1"], out, tasks="1-2")
    assert (again.written, again.skipped) == (0, 2)  # resumed: nothing played twice
    manifest, records = interactscope.ego.load_run(out)
    assert manifest.tasks == {"retail1": [1, 2]} and len(records) == 2
    assert interactscope.ego.score(out).results["retail1"].summary.joint_succ == 1.0


def test_score_with_a_mistyped_keyword_names_the_real_ones(tmp_path):
    import pytest

    import interactscope

    with pytest.raises(
        TypeError, match=r"unexpected keyword argument 'outdir'; .*out_dir \(or out\)"
    ):
        interactscope.score(tmp_path, outdir=tmp_path / "s")


def test_score_out_is_the_clis_name_for_out_dir(tmp_path):
    import pytest

    tg = [{"id": "k1", "reference": "the taxi stops", "time_s": 3.0}]
    bench = write_bench(tmp_path / "b", [interaction("a", targets=tg)])
    interactscope.collect(model="oracle", bench=bench, out=tmp_path / "run", progress=False)
    res = interactscope.score(tmp_path / "run", judge="lexical", out=tmp_path / "s")
    assert res.metrics["tasks"]["T2"]["score"] == 1.0
    assert (tmp_path / "s" / "summary.json").is_file()
    assert not (tmp_path / "run" / "scores" / "summary.json").exists()
    with pytest.raises(
        TypeError, match=r"^score_run\(\) takes out or out_dir \(the same folder\), not both$"
    ):
        interactscope.score(tmp_path / "run", out=tmp_path / "s", out_dir=tmp_path / "t")

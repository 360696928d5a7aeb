"""``ego validate``: every readable variant is checked, a task file of an unknown scenario is
reported and never stops the others, the published data's known defects (the data README's
list, known_defects.yaml) are told apart from new problems, an unknown --variant lists the
variants there."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.egobench import package_data_dir
from interactscope.egobench.checks import validate_folder

DATA = package_data_dir()


def _retail1_only(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    for sub, name in (("tasks", "retail1"), ("db", "retail1"), ("tools", "retail_tools")):
        (d / sub).mkdir(parents=True, exist_ok=True)
        shutil.copy(DATA / sub / f"{name}.json", d / sub / f"{name}.json")
    return d


def test_only_known_defects_exit_0_and_a_new_one_exits_1(tmp_path: Path) -> None:
    d = _retail1_only(tmp_path)
    ok = CliRunner().invoke(app, ["ego", "validate", "--data", str(d)])
    assert ok.exit_code == 0, ok.output
    # retail1: bill_donk cart, kim orawford, tasks 5, 6, 29, 31 (x2), the taste enum (x2)
    assert "no new problem; 9 known defect lines" in ok.output
    tasks = json.loads((d / "tasks" / "retail1.json").read_text())
    tasks[0]["ground_truth"][0]["parameters"]["user_id"] = ""  # task 1: not in the list
    (d / "tasks" / "retail1.json").write_text(json.dumps(tasks))
    bad = CliRunner().invoke(app, ["ego", "validate", "--data", str(d), "--known"])
    assert bad.exit_code == 1
    lines = bad.output.splitlines()
    new = [ln for ln in lines if not ln.startswith(("known", "unknown"))]
    assert new[0].startswith("tasks/retail1.json: task 1: ground_truth[0].parameters.user_id:")
    assert any(
        ln.startswith("known: tasks/retail1.json: task 5:") and "empty user_id" in ln
        for ln in lines
    )
    assert any("known defect (1 line): db/retail1.json:" in ln for ln in lines)


def test_a_task_file_of_an_unknown_scenario_does_not_stop_the_others(tmp_path: Path) -> None:
    d = tmp_path / "data"
    shutil.copytree(DATA, d)
    (d / "tasks" / "pharmacy1.json").write_text("[]")
    rep = validate_folder(d, sorted(p.stem for p in (d / "tasks").glob("*.json")))
    assert [p.file for p in rep.unknown] == ["tasks/pharmacy1.json"]
    assert "unknown variant 'pharmacy1'" in rep.unknown[0].message
    assert len(rep.checked) == 7 and sum(rep.tasks.values()) == 247
    res = CliRunner().invoke(app, ["ego", "validate", "--data", str(d)])
    assert res.exit_code == 1
    assert "unknown variant: tasks/pharmacy1.json" in res.output
    assert "tasks/retail6.json: task 6:" in res.output  # the others were checked


def test_unknown_variant_option_lists_the_variants_there() -> None:
    res = CliRunner().invoke(app, ["ego", "validate", "--variant", "order9"])
    assert res.exit_code == 1
    assert "unknown variant 'order9'" in res.output
    assert "household1, kitchen1, restaurant1, restaurant5, retail1, retail6, warehouse1" in (
        res.output
    )

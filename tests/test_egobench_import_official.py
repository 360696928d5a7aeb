"""``ego import-official``: a fake clone of each official layout, built here by hand, converted
into the data layout; seed literals read with ast.literal_eval (the clone's code never runs);
the converted folder plays and scores like the shipped data."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.egobench import load_variant, package_data_dir
from interactscope.egobench.import_official import import_official, read_seed_literals
from interactscope.egobench.records import SCENARIOS
from interactscope.egobench.run_score import score_run
from interactscope.egobench.runner import RunRequest, execute, prepare

DATA = package_data_dir()


def _write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return path


def _wind_flipped(root: Path) -> Path:
    """scenarios/final + tools/<scenario>/ (schema, *_init.py) + scenarios/final/video/."""
    tasks = json.loads((DATA / "tasks" / "retail1.json").read_text())[:2]
    _write(root / "scenarios/final/retail1.json", json.dumps(tasks, indent=2))
    _write(root / "scenarios/final/retail_old.json", "[]")  # not a variant name
    _write(root / "tools/retail/retail_tools.json", (DATA / "tools/retail_tools.json").read_text())
    seed = json.loads((DATA / "db" / "retail1.json").read_text())
    _write(
        root / "tools/retail/retail_init.py",
        "import os\n"
        "# a Python literal, as the official files hold them\n"
        f"retail_init_data1 = {seed!r}\n"
        "retail_init_data2 = retail_init_data1\n"
        "retail_init_data3 = dict(products=[])\n"
        "os.makedirs('PWNED_BY_THE_CLONE')\n",
    )
    _write(
        root / "tools/kitchen/kitchen_init.py",
        "kitchen_init_data = {'ingredients': [{'name': 'Broccoli', 'expiry_date': None,"
        " 'tags': ('green', 'fresh')}]}\n",
    )
    _write(root / "scenarios/final/video/retail1.mp4", b"\x00\x00\x00\x18ftypmp42" + b"\0" * 2000)
    _write(root / "LICENSE", "CC BY 4.0")
    return root


def test_seed_literals_are_read_never_executed(tmp_path: Path, monkeypatch) -> None:
    root = _wind_flipped(tmp_path / "EgoBench")
    monkeypatch.chdir(tmp_path)
    found, skipped = read_seed_literals(root / "tools/retail/retail_init.py")
    assert sorted(found) == ["retail1", "retail2"]
    assert found["retail2"] == ("retail_init_data2", found["retail1"][1])
    assert found["retail1"][1] == json.loads((DATA / "db" / "retail1.json").read_text())
    assert len(skipped) == 1 and "retail_init_data3 is not a plain literal" in skipped[0]
    kitchen, _ = read_seed_literals(root / "tools/kitchen/kitchen_init.py")
    assert kitchen["kitchen"][1] == {
        "ingredients": [{"name": "Broccoli", "expiry_date": None, "tags": ["green", "fresh"]}]
    }
    assert not (tmp_path / "PWNED_BY_THE_CLONE").exists()


def test_wind_flipped_clone_converts_and_plays(tmp_path: Path, monkeypatch) -> None:
    root = _wind_flipped(tmp_path / "EgoBench")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "data"
    rep = import_official(root, out)
    assert rep.layout == "wind-flipped" and rep.licences == ["LICENSE"]
    assert [v.name for v in rep.variants] == ["retail1"]
    v = rep.variants[0]
    assert (v.tasks, v.db, v.tools, v.playable) == (
        2,
        "db/retail1.json",
        "tools/retail_tools.json",
        True,
    )
    assert v.videos_found == ["retail1.mp4"] and v.videos_missing == []
    assert sorted(d.name for d in rep.databases) == ["kitchen", "retail1", "retail2"]
    assert any("retail_old.json: not a variant name" in s for s in rep.skipped)
    assert (out / "tasks/retail1.json").read_bytes() == (
        root / "scenarios/final/retail1.json"
    ).read_bytes()
    assert json.loads((out / "import_report.json").read_text())["variants"][0]["name"] == "retail1"
    assert load_variant(out, "retail1").seed == load_variant(DATA, "retail1").seed
    req = RunRequest(agent="oracle", data=out, variants=["retail1"], out=tmp_path / "run")
    execute(prepare(req))
    assert score_run(tmp_path / "run").results["retail1"].summary.joint_succ == 1.0
    assert not (tmp_path / "PWNED_BY_THE_CLONE").exists()
    again = CliRunner().invoke(app, ["ego", "import-official", str(root), "--out", str(out)])
    assert again.exit_code == 1 and "not empty" in again.output


def test_egolink_clone_prefers_test_gt_and_reports_what_cannot_be_played(tmp_path: Path) -> None:
    root = tmp_path / "egolink2026" / "code" / "track2" / "EgoBench"
    task = {"Instruction": "Your user ID is cook_001, and today is May 6, 2026.", "task_id": 1}
    gt = {
        "tool_name": "add_recipe_to_menu",
        "parameters": {"user_id": "cook_001", "recipe_name": "Tofu Soup"},
    }
    _write(
        root / "scenarios/final/kitchen4.json",
        json.dumps([{**task, "image_path": "dumplings.mp4"}]),
    )
    _write(
        root / "scenarios/test_GT/kitchen4.json",
        json.dumps([{**task, "image_path": "dumplings.mp4", "ground_truth": [gt]}]),
    )
    _write(root / "scenarios/final/order1.json", json.dumps([{**task, "image_path": "x.mp4"}]))
    _write(
        root / "tools/kitchen/kitchen_tools.json", (DATA / "tools/kitchen_tools.json").read_text()
    )
    _write(
        root / "tools/kitchen/kitchen_init.py",
        "kitchen_init_data = {'ingredients': [], 'recipes': []}\n",
    )
    _write(
        root / "videos/dumplings.mp4",
        b"version https://git-lfs.github.com/spec/v1\noid sha256:ab\n",
    )
    res = CliRunner().invoke(
        app, ["ego", "import-official", str(tmp_path / "egolink2026"), "--out", str(tmp_path / "d")]
    )
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "d" / "import_report.json").read_text())
    assert rep["layout"] == "egolink2026"
    k4, o1 = rep["variants"]
    assert (k4["name"], k4["source"], k4["gt_calls"], k4["db"]) == (
        "kitchen4",
        "scenarios/test_GT/kitchen4.json",
        1,
        "db/kitchen.json",
    )
    assert "Git LFS pointer" in k4["videos_missing"][0]
    assert o1["name"] == "order1" and not o1["playable"]  # no order tools or seed here
    assert o1["tasks_without_gt"] == 1
    assert ("order" in SCENARIOS) or any("not one this version plays" in n for n in o1["notes"])
    assert "kitchen4: 1 task, 1 GT call from scenarios/test_GT/kitchen4.json" in res.output
    bad = CliRunner().invoke(
        app, ["ego", "import-official", str(tmp_path), "--out", str(tmp_path / "e")]
    )
    assert bad.exit_code == 1 and "not a clone" in bad.output

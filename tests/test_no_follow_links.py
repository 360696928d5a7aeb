"""No command writes through a symbolic link planted in its output folder (issue 27, item 4).

Each test plants ``OUT/<file>`` -> a file outside OUT, runs the writing command, and checks the
file outside is byte-for-byte unchanged: the command either replaced the link by its own file
(write_atomic renames over the link) or refused with one line (append-only logs, SQLite)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from tests.helpers.foundation_fixtures import DEMO
from tests.helpers.importer_sources import SOURCES

PRECIOUS = b"precious: must never change\n"


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def plant(tmp_path: Path, link: Path) -> Path:
    """A file outside, and ``link`` pointing at it; returns the file."""
    target = tmp_path / f"outside-{link.name}"
    target.write_bytes(PRECIOUS)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return target


def replaced(res, link: Path, target: Path) -> None:
    assert res.exit_code == 0, res.output
    assert target.read_bytes() == PRECIOUS
    assert link.is_file() and not link.is_symlink()


def untouched(res, target: Path) -> None:
    """Whatever the command decided (e.g. refusing a run.json it cannot read), the file outside
    is unchanged and there is no traceback."""
    assert not (res.exception and not isinstance(res.exception, SystemExit)), repr(res.exception)
    assert target.read_bytes() == PRECIOUS and "Traceback" not in res.output


def refused(res, link: Path, target: Path) -> None:
    assert res.exit_code == 1 and "Traceback" not in res.output, res.output
    assert f"{link} is a symbolic link; remove it" in res.output.strip().splitlines()[-1]
    assert target.read_bytes() == PRECIOUS


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("scored") / "run"
    assert invoke("collect", "-m", "oracle", "-b", DEMO, "-o", run, "--no-progress").exit_code == 0
    assert invoke("score", run, "--judge", "lexical").exit_code == 0
    return run


@pytest.fixture(scope="module")
def ego_run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("ego") / "run"
    res = invoke("ego", "run", "-a", "oracle", "-v", "retail1", "--tasks", "1-2", "-o", run)
    assert res.exit_code == 0, res.output
    return run


@pytest.mark.parametrize("fmt", sorted(SOURCES))
@pytest.mark.parametrize("name", ["benchmark.json", "interactions.jsonl", "import-report.json"])
def test_import(tmp_path, fmt, name):
    out = tmp_path / "out"
    target = plant(tmp_path, out / name)
    res = invoke("import", fmt, SOURCES[fmt], "-o", out, "--no-probe", "--force")
    replaced(res, out / name, target)
    names = {"benchmark.json", "import-report.json", "interactions.jsonl"}
    assert {p.name for p in out.iterdir()} - {"videos"} == names  # no temp file left


def test_collect(tmp_path):
    # the fixed temp name run.json used to be written through (then renamed)
    out = tmp_path / "run"
    target = plant(tmp_path, out / "run.json.tmp")
    res = invoke("collect", "-m", "silent", "-b", DEMO, "-o", out, "--no-progress")
    assert res.exit_code == 0, res.output
    untouched(res, target)
    assert json.loads((out / "run.json").read_text())["benchmark"]["name"]


def test_collect_resume_never_truncates_through_a_link(tmp_path):
    out = tmp_path / "run"
    assert invoke("collect", "-m", "silent", "-b", DEMO, "-o", out, "--limit", "1").exit_code == 0
    (out / "responses.jsonl").unlink()
    target = plant(tmp_path, out / "responses.jsonl")  # its last line does not parse
    res = invoke("collect", "-m", "silent", "-b", DEMO, "-o", out, "--no-progress")
    refused(res, out / "responses.jsonl", target)


@pytest.mark.parametrize("name", ["summary.json", "targets.csv", "clusters.csv"])
def test_score(tmp_path, scored, name):
    link = tmp_path / "scores" / name
    target = plant(tmp_path, link)
    res = invoke("score", scored, "--judge", "lexical", "--out", tmp_path / "scores")
    replaced(res, link, target)


def test_score_verdict_cache_link_is_refused(tmp_path, scored):
    link = tmp_path / "scores" / "verdicts.sqlite"
    target = plant(tmp_path, link)
    res = invoke("score", scored, "--judge", "lexical", "--out", tmp_path / "scores",
                 "--cache", link)  # fmt: skip
    if "No such option" in res.output:
        pytest.skip("score has no --cache option")
    refused(res, link, target)


def test_merge(tmp_path):
    shards = [tmp_path / f"s{k}" for k in (1, 2)]
    for k, s in enumerate(shards, 1):
        res = invoke("collect", "-m", "silent", "-b", DEMO, "-o", s, "--shard", f"{k}/2")
        assert res.exit_code == 0, res.output
    out = tmp_path / "merged"
    target = plant(tmp_path, out / "run.json.tmp")
    res = invoke("merge", *shards, "-o", out)
    assert res.exit_code == 0, res.output
    untouched(res, target)


@pytest.mark.slow
def test_view(tmp_path, scored):
    link = tmp_path / "page.html"
    target = plant(tmp_path, link)
    replaced(invoke("view", scored, "-o", link, "--resamples", 100), link, target)


def test_schema(tmp_path):
    link = tmp_path / "schemas" / "benchmark.schema.json"
    target = plant(tmp_path, link)
    replaced(invoke("schema", "--out", tmp_path / "schemas"), link, target)


def test_audit_exposure(tmp_path):
    link = tmp_path / "rows.csv"
    target = plant(tmp_path, link)
    res = invoke("audit-exposure", "omnimmi-si", SOURCES["omnimmi-si"], "-o", link)
    replaced(res, link, target)


def test_score_peer(tmp_path, scored):
    link = scored / "peer-scores" / "window-any.json"
    target = plant(tmp_path, link)
    replaced(invoke("score-peer", scored, "--variant", "window-any"), link, target)
    link.unlink()


def test_compare(tmp_path, scored):
    link = tmp_path / "cmp" / "compare.json"
    target = plant(tmp_path, link)
    res = invoke("compare", scored, scored, "-o", tmp_path / "cmp", "--resamples", 50)
    replaced(res, link, target)


@pytest.mark.slow
def test_report(tmp_path, scored):
    link = tmp_path / "rep" / "report.md"
    target = plant(tmp_path, link)
    res = invoke("report", scored, "-o", tmp_path / "rep", "--resamples", 50, "--no-beyond")
    replaced(res, link, target)


def test_ego_run(tmp_path):
    out = tmp_path / "run"
    target = plant(tmp_path, out / "run.json.tmp")
    res = invoke("ego", "run", "-a", "oracle", "-v", "retail1", "--tasks", "1", "-o", out)
    assert res.exit_code == 0, res.output
    untouched(res, target)


def test_ego_run_resume_refuses_a_linked_log(tmp_path):
    out = tmp_path / "run"
    args = ["ego", "run", "-a", "oracle", "-v", "retail1", "-o", out, "--tasks"]
    assert invoke(*args, "1").exit_code == 0
    (out / "episodes.jsonl").unlink()
    target = plant(tmp_path, out / "episodes.jsonl")
    refused(invoke(*args, "1"), out / "episodes.jsonl", target)


@pytest.mark.parametrize("name", ["summary.json", "tasks.csv"])
def test_ego_score(tmp_path, ego_run, name):
    link = tmp_path / "scores" / "retail1" / name
    target = plant(tmp_path, link)
    res = invoke("ego", "score", ego_run, "-o", tmp_path / "scores")
    assert res.exit_code == 0, res.output
    assert target.read_bytes() == PRECIOUS
    written = [p for p in (tmp_path / "scores").rglob(name) if not p.is_symlink()]
    assert written, sorted(str(p) for p in (tmp_path / "scores").rglob("*"))


def test_ego_merge(tmp_path):
    shards = [tmp_path / f"s{k}" for k in (1, 2)]
    for k, s in enumerate(shards, 1):
        res = invoke("ego", "run", "-a", "oracle", "-v", "retail1", "--tasks", "1-4",
                     "--shard", f"{k}/2", "-o", s)  # fmt: skip
        assert res.exit_code == 0, res.output
    out = tmp_path / "merged"
    target = plant(tmp_path, out / "run.json.tmp")
    res = invoke("ego", "merge", *shards, "-o", out)
    assert res.exit_code == 0, res.output
    untouched(res, target)


def test_ego_report(tmp_path, ego_run):
    assert invoke("ego", "score", ego_run, "-o", tmp_path / "s").exit_code == 0
    link = tmp_path / "rep" / "report.md"
    target = plant(tmp_path, link)
    outs = sorted(p.parent for p in (tmp_path / "s").rglob("summary.json"))
    res = invoke("ego", "report", *outs, "-o", tmp_path / "rep", "--resamples", 50)
    replaced(res, link, target)


def test_ego_view(tmp_path, ego_run):
    link = tmp_path / "ego.html"
    target = plant(tmp_path, link)
    replaced(invoke("view", ego_run, "-o", link), link, target)

"""Second hardening pass (issue 27): every hostile input through the CLI ends in one line naming
the file (and line, field) and the fix, never a traceback; interrupted commands say how to
resume; score files are never left half-written."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from tests.helpers.foundation_fixtures import DEMO, interaction, write_bench
from tests.helpers.importer_sources import DATA, LOOK, SOURCES  # noqa: F401

VIDEO_FIELD = {"ovo-forward": "video", "ovo-backward": "video", "omnimmi-pa": "video",
               "omnimmi-si": "video", "proassist": "video_uid"}  # fmt: skip
BIG = "1" * 5000  # over Python's 4300-digit limit for int(text)
CLI = [sys.executable, "-m", "interactscope.cli"]


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def one_line(res, code: int = 1) -> str:
    """The result failed with ``code`` and printed one line, no traceback."""
    assert not (res.exception and not isinstance(res.exception, SystemExit)), repr(res.exception)
    assert res.exit_code == code, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.output, res.output
    return lines[0]


def _source(tmp_path: Path, fmt: str, edit) -> Path:
    items = json.loads(SOURCES[fmt].read_text())
    edit(items[0])
    p = tmp_path / f"{fmt}.json"
    p.write_text(json.dumps(items))
    return p


# ----------------------------------------------------------------------------- 1. import
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("[" * 100_000 + "]" * 100_000, "src.json: nested deeper than 64 levels; flatten"),
        ('[{"video": "a.mp4",\n "x": ' + BIG + "}]", "src.json:2: an integer with more than 4300"),
    ],
)
def test_import_deep_or_long_integer_source_is_one_line(tmp_path, body, expected):
    (tmp_path / "src.json").write_text(body)
    line = one_line(invoke("import", "omnimmi-si", tmp_path / "src.json", "-o", tmp_path / "o"))
    assert expected in line


def test_import_source_with_a_10kb_name_is_one_line(tmp_path):
    line = one_line(invoke("import", "omnimmi-si", tmp_path / ("n" * 10_000), "-o", tmp_path / "o"))
    assert "file name too long" in line and "shorten the name" in line


def test_proassist_400_digit_final_score_compares_as_infinite(tmp_path):
    def edit(item):
        item["conversations"][1]["auto_quality_eval"]["final_score"] = int("9" * 400)  # was 4.0

    src = _source(tmp_path, "proassist", edit)
    res = invoke("import", "proassist", src, "-o", tmp_path / "o", "--no-probe",
                 "--set", "min_score=5")  # fmt: skip
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "o" / "import-report.json").read_text())
    # the dialog scored 4.0 (dropped under min_score=5) now scores 10**400 - 1: kept, with the
    # one scored 7.5
    assert rep["dropped_by_reason"] == {} and rep["interactions"] == 2


# ----------------------------------------------------------------------------- 2 + 8. validate
def _bench(tmp_path: Path) -> Path:
    return write_bench(tmp_path / "b", [interaction("a"), interaction("b")])


def test_validate_long_integer_in_interactions_names_the_line(tmp_path):
    b = _bench(tmp_path)
    with open(b / "interactions.jsonl", "a") as fh:
        fh.write('{"id": "c", "n": ' + BIG + "}\n")
    line = one_line(invoke("validate", b))
    assert "interactions.jsonl:3: an integer with more than 4300 digits" in line


def test_validate_long_integer_in_benchmark_json_names_the_line(tmp_path):
    b = _bench(tmp_path)
    text = (b / "benchmark.json").read_text().replace('"version": "1"', '"version": ' + BIG)
    (b / "benchmark.json").write_text(text)
    line = one_line(invoke("validate", b))
    assert "benchmark.json:3: an integer with more than 4300 digits" in line


def test_null_line_is_refused_with_its_number(tmp_path):
    b = _bench(tmp_path)
    with open(b / "interactions.jsonl", "a") as fh:
        fh.write("null\n")
    line = one_line(invoke("validate", b))
    assert "interactions.jsonl:3: the line is null" in line


# ----------------------------------------------------------------------------- 3. long names
def test_validate_and_collect_a_path_component_over_255_bytes(tmp_path):
    long = "media/" + "v" * 300 + ".mp4"
    b = write_bench(tmp_path / "b", [interaction("a")], [{"id": "city", "path": long}])
    line = one_line(invoke("validate", b))
    assert "videos[0].path" in line and "file name too long" in line
    line = one_line(invoke("collect", "-m", "silent", "-b", b, "-o", tmp_path / "r"))
    assert "file name too long" in line


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_import_a_video_name_over_255_bytes_is_a_problem_not_a_traceback(tmp_path, fmt):
    name = "v" * 300 + ".mp4"

    def edit(item):
        if fmt == "streamingbench-po":
            item["video_path"] = "./videos/" + name
        else:
            item[VIDEO_FIELD[fmt]] = name

    res = invoke("import", fmt, _source(tmp_path, fmt, edit), "-o", tmp_path / "o", "--no-probe")
    assert res.exit_code == 1 and not isinstance(res.exception, OSError), res.output
    assert "file name too long" in res.output and "Traceback" not in res.output


# ----------------------------------------------------------------------------- 5. escapes
@pytest.mark.parametrize("fmt", sorted(VIDEO_FIELD))
def test_import_refuses_video_paths_that_escape_out(tmp_path, fmt):
    def edit(item):
        item[VIDEO_FIELD[fmt]] = "../../../../etc/passwd"

    res = invoke("import", fmt, _source(tmp_path, fmt, edit), "-o", tmp_path / "o", "--no-probe")
    assert res.exit_code == 1, res.output
    assert "escapes the folder" in res.output
    rep = json.loads((tmp_path / "o" / "import-report.json").read_text())
    assert not rep["validation"]["ok"]
    assert not any("passwd" in v for v in rep["validation"]["videos_missing"])


# ----------------------------------------------------------------------------- 6. EgoBench
@pytest.mark.parametrize(
    ("name", "body"),
    [("deep.yaml", "[" * 1_000 + "]" * 1_000), ("deep.json", "[" * 100_000 + "]" * 100_000),
     ("int.yaml", '"1": [' + BIG + "]")],
)  # fmt: skip
@pytest.mark.slow
def test_ego_run_scripted_user_file_deep_or_long_int(tmp_path, name, body):
    (tmp_path / name).write_text(body)
    res = invoke("ego", "run", "-a", "oracle", "-u", f"scripted:{tmp_path / name}",
                 "-v", "retail1", "--tasks", "1", "-o", tmp_path / "r")  # fmt: skip
    line = one_line(res)
    assert line.startswith(f"--user scripted:{tmp_path / name}")
    assert "nested deeper than 64" in line or "more than 4300 digits" in line


@pytest.fixture
def ego_data(tmp_path):
    from interactscope.egobench import package_data_dir

    d = tmp_path / "data"
    shutil.copytree(package_data_dir(), d)
    return d


@pytest.mark.parametrize(
    ("body", "expected"),
    [(b'[\n{"name": ' + BIG.encode() + b"}]", ":2: an integer with more than 4300 digits"),
     (b"[" * 100_000, ": nested deeper than 64 levels"),
     (b'[\n{"name": "caf\xe9"}]', ":2: invalid UTF-8 at byte 15; save the file as UTF-8")],
)  # fmt: skip
def test_ego_validate_and_run_name_the_bad_tools_file(ego_data, tmp_path, body, expected):
    tools = ego_data / "tools" / "retail_tools.json"
    tools.write_bytes(body)
    res = invoke("ego", "validate", "-d", ego_data, "-v", "retail1")
    assert res.exit_code == 1 and "Traceback" not in res.output
    lines = res.output.splitlines()
    assert len(lines) == 2 and lines[1].startswith("1 new problem in 1 variant")
    assert lines[0].startswith(f"tasks/retail1.json: {tools}{expected}")
    res = invoke("ego", "run", "-a", "oracle", "-d", ego_data, "-v", "retail1", "--tasks", "1",
                 "-o", tmp_path / "r")  # fmt: skip
    assert f"{tools}{expected}" in one_line(res)


# ----------------------------------------------------------------------------- 7. full disk
@pytest.fixture
def silent_run(tmp_path):
    run = tmp_path / "run"
    assert invoke("collect", "-m", "silent", "-b", DEMO, "-o", run, "--no-progress").exit_code == 0
    return run


def test_score_sqlite_full_disk_is_one_line(silent_run, monkeypatch):
    from interactscope.streaming.judges import cache as cache_mod

    class Full:
        def execute(self, *a, **k):
            raise sqlite3.OperationalError("database or disk is full")

        def close(self):
            pass

    monkeypatch.setattr(cache_mod.sqlite3, "connect", lambda *a, **k: Full())
    line = one_line(invoke("score", silent_run, "--judge", "lexical"))
    assert "no space left on device while writing; free space and run the same command" in line


@pytest.mark.slow
def test_score_files_are_never_half_written(silent_run):
    assert invoke("score", silent_run, "--judge", "lexical").exit_code == 0
    summary = silent_run / "scores" / "summary.json"
    before = summary.read_bytes()
    assert len(before) > 4000 and all(
        p.stat().st_size < 4000 for p in (silent_run / "scores").glob("*.csv")
    )  # the limit below stops at summary.json
    limited = (
        "import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4000, 4000)); "
        "from interactscope.cli import app; sys.argv[0] = 'interactscope'; app()"
    )
    res = subprocess.run([sys.executable, "-c", limited, "score", str(silent_run), "--judge",
                          "lexical"], capture_output=True, text=True)  # fmt: skip
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert "file too large" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert summary.read_bytes() == before  # the old file, whole
    assert not [p for p in summary.parent.iterdir() if p.name.endswith(".tmp")]


# ----------------------------------------------------------------------------- 10. signals
@pytest.mark.parametrize(("sig", "code", "word"), [("int", 130, "interrupted"),
                                                   ("term", 143, "terminated")])  # fmt: skip
def test_ego_run_ctrl_c_and_sigterm_print_the_resume_line(monkeypatch, tmp_path, sig, code, word):
    import interactscope.cli.ego_run as runner_mod  # the command's own name for execute

    def stopped(*a, **k):
        out.mkdir()  # the run folder exists once a run started
        if sig == "int":
            raise KeyboardInterrupt
        os.kill(os.getpid(), signal.SIGTERM)  # the handler raises in this thread

    out = tmp_path / "r"
    monkeypatch.setattr(runner_mod, "execute", stopped)
    res = invoke("ego", "run", "-a", "oracle", "-v", "retail1", "--tasks", "1", "-o", out)
    line = one_line(res, code)
    assert (
        line == f"{word}: the records written to {out} are kept; re-run the same command to resume"
    )


def test_collect_sigterm_prints_the_resume_line(monkeypatch, tmp_path):
    import interactscope.cli.ray_options as collect_mod  # where the command finds run_collect

    monkeypatch.setattr(
        collect_mod, "run_collect", lambda **k: os.kill(os.getpid(), signal.SIGTERM)
    )
    res = invoke("collect", "-m", "silent", "-b", DEMO, "-o", tmp_path / "r")
    # stopped before the run folder was made: nothing to resume, and the line says so
    assert (
        one_line(res, 143)
        == f"terminated: nothing was written ({tmp_path / 'r'} was not created yet)"
    )
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored afterwards


@pytest.mark.slow
def test_ego_run_sigterm_in_a_real_process(tmp_path):
    out = tmp_path / "r"
    proc = subprocess.Popen([*CLI, "ego", "run", "-a", "oracle", "-v", "retail1", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.time() + 60
    while time.time() < deadline and not (out / "episodes.jsonl").exists():
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the run finished before the signal arrived")
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "re-run the same command to resume" in err
    assert not (out / ".lock").exists()  # the lock goes with the run, on SIGTERM too


# ----------------------------------------------------------------------------- 11. LLM judge
def test_a_200_with_a_non_json_body_names_the_cause():
    from interactscope.engines.base import EngineError
    from interactscope.engines.openai_compat import to_chat_result

    with pytest.raises(EngineError) as ei:
        to_chat_result("<html><body>Welcome to nginx!</body></html>", 0.1)
    msg = str(ei.value)
    assert "not JSON" in msg and "<html><body>Welcome to nginx!" in msg and "/v1" in msg
    assert "no choices" not in msg


# ----------------------------------------------------------------------------- 12. runlog
def test_corrupt_response_record_is_one_line_with_field_and_fix(silent_run):
    path = silent_run / "responses.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    rec = json.loads(lines[4])
    rec["t"] = "soon"
    lines[4] = json.dumps(rec) + "\n"
    path.write_text("".join(lines))
    res = invoke("score", silent_run, "--judge", "lexical")
    assert res.exit_code == 1 and "Traceback" not in res.output
    msg = res.output.strip().splitlines()[-1]  # after the completeness warning naming it too
    assert msg.startswith(f"{path}:5: corrupt record, field 't': ")
    assert msg.endswith("fix or delete that line (collected again on resume)")


# ----------------------------------------------------------------------------- last resort
def test_an_error_no_command_maps_is_one_line_without_verbose():
    code = (
        "import sys, interactscope.streaming.bench as b\n"
        "def boom(): raise RuntimeError('boom\\nsecond line')\n"
        "b.benchmark_json_schema = boom\n"
        "from interactscope.cli import main\n"
        "sys.argv = ['interactscope', 'schema']\n"
        "main()\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 1
    assert res.stderr.strip().splitlines() == ["error: boom (RuntimeError; -v shows the traceback)"]


# ----------------------------------------------------------------------------- other readers
def test_ego_score_log_and_verdict_file_with_invalid_utf8(tmp_path, silent_run):
    log = tmp_path / "retail1_easy.json"
    log.write_bytes(b'[\n{"task_id": 1, "x": "caf\xe9"}]')
    line = one_line(invoke("ego", "score", "--log", log, "-v", "retail1", "-o", tmp_path / "s"))
    assert f"{log}:2: invalid UTF-8 at byte 26; save the file as UTF-8" in line
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_bytes(b'{"interaction_id": "caf\xe9"}\n')
    res = invoke("score", silent_run, "--judge", f"file:{verdicts}")
    assert res.exit_code == 1 and "Traceback" not in res.output, res.output
    assert f"{verdicts}:1: invalid UTF-8 at byte 23" in res.output

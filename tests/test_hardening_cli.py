"""Every bad input through the CLI: clear lines naming the file/field/setting, exit 1, no
traceback, no half-made run folder."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from interactscope.media import CausalMedia
from tests.helpers.foundation_fixtures import interaction, write_bench
from tests.helpers.media_fixtures import write_av_clip, write_ts_clip

CLI = [sys.executable, "-m", "interactscope.cli"]


def run_cli(*args, env=None):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, env=env)


def _bad_utf8_benchmark(root: Path) -> None:
    (root / "benchmark.json").write_bytes(b'{"name": "tiny\xff", "version": "1", "videos": []}')
    # interactions.jsonl is still checked: its problem is reported too
    rows = [interaction("a", targets=[{"id": "k1", "reference": "x", "time_s": 4.0}]),
            interaction("b", targets=[{"id": "k1", "time_s": 4.0}])]  # fmt: skip
    (root / "interactions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _bad_utf8_line(root: Path) -> None:
    with open(root / "interactions.jsonl", "ab") as fh:
        fh.write(b'{"id": "caf\xe9"}\n')


def _nan_time(root: Path) -> None:
    row = interaction("nan")
    row["targets"][0]["time_s"] = float("nan")
    with open(root / "interactions.jsonl", "a") as fh:
        fh.write(json.dumps(row) + "\n")  # json writes the bare literal NaN


def _deep(root: Path) -> None:
    with open(root / "interactions.jsonl", "a") as fh:
        fh.write("[" * 100_000 + "]" * 100_000 + "\n")


def _empty(root: Path) -> None:
    (root / "interactions.jsonl").write_text("\n")


def _empty_reference(root: Path) -> None:
    row = interaction("noref", targets=[{"id": "k1", "reference": "", "time_s": 4.0}])
    with open(root / "interactions.jsonl", "a") as fh:
        fh.write(json.dumps(row) + "\n")


BAD_BENCHMARKS = {
    # case: (how to break the benchmark, lines that must appear in stderr)
    "invalid-utf8-benchmark-json": (
        _bad_utf8_benchmark,
        [
            "benchmark.json:1: invalid UTF-8 at byte 14",
            "interactions.jsonl:2: interaction b field 'targets[0].reference': empty",
        ],
    ),  # fmt: skip
    "invalid-utf8-line": (_bad_utf8_line, ["interactions.jsonl:2: invalid UTF-8"]),
    "nan-time": (
        _nan_time,
        [
            "interactions.jsonl:2: interaction nan field 'targets[0].time_s': Input should be a finite"
        ],
    ),
    "deep-nesting": (_deep, ["interactions.jsonl:2: nested deeper than 64"]),
    "empty-interactions": (_empty, ["interactions.jsonl: no interactions"]),
    "empty-reference": (_empty_reference, ["interaction noref field 'targets[0].reference'"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(BAD_BENCHMARKS))
def test_bad_benchmark_one_line_per_problem_exit_1_nothing_left(tmp_path, case):
    make, expected = BAD_BENCHMARKS[case]
    root = write_bench(tmp_path / "b", [interaction("a")])
    make(root)
    res = run_cli("validate", root)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    for words in expected:
        assert words in res.stderr, res.stderr
    said = [x for x in res.stderr.splitlines() if not x.startswith("warning:")]
    # one line per problem; two problems come under a one-line head
    assert len(said) == (1 if len(expected) == 1 else 1 + len(expected)), said
    out = tmp_path / "run"
    res = run_cli("collect", "-m", "silent", "-b", root, "-o", out, "--no-progress")
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert expected[0] in res.stderr
    assert not out.exists()


def test_duplicate_video_id_reported_on_its_own_line(tmp_path):
    videos = [{"id": "city", "path": "media/city.mp4"}, {"id": "city", "path": "media/city.mp4"}]
    root = write_bench(tmp_path / "b", [interaction("a")], videos=videos)
    # benchmark.json is written with indent=2: the second video's "id" is on line 20
    assert '"id": "city"' in (root / "benchmark.json").read_text().splitlines()[19]
    res = run_cli("validate", root)
    assert res.returncode == 1
    assert "benchmark.json:20: field 'videos[1].id': duplicate video id 'city'" in res.stderr


@pytest.mark.slow
def test_yaml_tag_in_set_and_missing_key_leave_no_folder(tmp_path):
    root = write_bench(tmp_path / "b", [interaction("a")])
    out = tmp_path / "run"
    res = run_cli(
        "collect", "-m", "silent", "-b", root, "-o", out, "--set", "cooldown_s=!!python/none x"
    )
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert res.stderr.strip().startswith("--set 'cooldown_s=!!python/none x': not a plain YAML")
    assert len(res.stderr.strip().splitlines()) == 1 and not out.exists()
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    res = run_cli("collect", "-m", "gpt-4o", "-b", root, "-o", out, "--no-progress", env=env)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "OPENAI_API_KEY" in res.stderr and not out.exists()


def test_disk_full_during_collect_and_score_is_one_line(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import interactscope.runs.folder as runlog
    import interactscope.streaming.scoring.run as scoring_run
    from interactscope.cli import app

    root = write_bench(tmp_path / "b", [interaction("a")])
    out = tmp_path / "run"

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(runlog.os, "fsync", full)
        res = CliRunner().invoke(app, ["collect", "-m", "silent", "-b", str(root), "-o", str(out),
                                       "--no-progress"])  # fmt: skip
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.exception
    assert "no space left on device while writing" in res.output
    res = CliRunner().invoke(app, ["collect", "-m", "oracle", "-b", str(root), "-o", str(out),
                                   "--no-progress"])  # fmt: skip
    assert res.exit_code == 0, res.output
    monkeypatch.setattr(scoring_run, "write_scores", full)
    res = CliRunner().invoke(app, ["score", str(out)])
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.exception
    assert "no space left on device" in res.output


def test_close_targets_warn_naming_both_and_the_gap(tmp_path):
    tg = [{"id": "k1", "reference": "a", "time_s": 3.0},
          {"id": "k2", "reference": "b", "time_s": 4.5}]  # fmt: skip
    root = write_bench(tmp_path / "b", [interaction("a", targets=tg)])
    res = run_cli("validate", root)
    assert res.returncode == 0, res.stderr
    assert "interaction a: targets 'k1' and 'k2' are 1.5 s apart, within merge_s = 2 s" in (
        res.stderr
    )


@pytest.fixture(scope="module")
def truncated(tmp_path_factory):
    """A faststart mp4 (index at the front) cut to 60 % and to 97 %."""
    d = tmp_path_factory.mktemp("trunc")
    full = write_av_clip(d / "full.mp4", seconds=10, faststart=True)
    data = full.read_bytes()
    out = {}
    for frac in (0.6, 0.97):
        p = d / f"cut{int(frac * 100)}.mp4"
        p.write_bytes(data[: int(len(data) * frac)])
        out[frac] = (p, CausalMedia(p).duration_s)
    return out


def _bench_with(tmp_path, clip, targets_at):
    root = tmp_path / "b"
    write_bench(root, [interaction("city-a")])
    (root / "media" / "cut.mp4").write_bytes(clip.read_bytes())
    bj = json.loads((root / "benchmark.json").read_text())
    bj["videos"].append({"id": "cut", "path": "media/cut.mp4"})
    (root / "benchmark.json").write_text(json.dumps(bj, indent=2))
    rows = [interaction("city-a")] + [
        {**interaction(f"cut-{t}", targets=[{"id": "k1", "reference": "x", "time_s": t}]),
         "video_id": "cut"} for t in targets_at
    ]  # fmt: skip
    (root / "interactions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


@pytest.mark.slow
def test_truncated_mp4_fails_its_own_interactions_not_the_benchmark(tmp_path, truncated):
    clip, measured = truncated[0.6]
    assert 5.0 < measured < 7.0  # measured from the packets really present
    root = _bench_with(tmp_path, clip, [3.0, 9.0])
    res = run_cli("validate", root)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert (
        f"media/cut.mp4: measured duration {measured} s differs from the container-declared "
        in (res.stderr)
    )
    assert (
        "interaction cut-9.0 field 'targets[0].time_s': target time 9.0 is after the clip end"
        in (res.stderr)
    )
    assert "(measured from media/cut.mp4)" in res.stderr and "truncated or damaged" in res.stderr
    run = tmp_path / "run"
    res = run_cli("collect", "-m", "oracle", "-b", root, "-o", run, "--no-progress")
    assert res.returncode == 3, res.stderr  # the run went on; the cut video's records are errors
    recs = [json.loads(x) for x in (run / "responses.jsonl").read_text().splitlines()]
    errs = {r["interaction_id"] for r in recs if r["error"]}
    assert errs == {"cut-3.0", "cut-9.0"}
    assert all("media/cut.mp4: measured duration" in r["error"] for r in recs if r["error"])
    assert sum(r["interaction_id"] == "city-a" and not r["error"] for r in recs) == 9


def test_nearly_complete_mp4_warns_naming_file_and_durations(tmp_path, truncated):
    clip, measured = truncated[0.97]
    assert 9.0 < measured < 10.0
    root = _bench_with(tmp_path, clip, [3.0])
    res = run_cli("validate", root)
    assert res.returncode == 0, res.stderr
    assert (
        f"video cut: media/cut.mp4: measured duration {measured} s differs from the "
        "container-declared 10.0 s"
    ) in res.stderr


def test_mpeg_ts_keeps_the_frame_at_the_last_grid_second(tmp_path):
    # first frame at 5 ticks of 90 kHz (55.6 us): the container start time, in whole
    # microseconds (56), would put the file clock 0.44 us early and drop second 4
    clip = write_ts_clip(tmp_path / "clip.ts", frames=101, fps=25, first_tick=5)
    cm = CausalMedia(clip)
    assert cm.duration_s == 4.0
    frames = cm.frames_until(4)
    assert [f.second for f in frames] == [0, 1, 2, 3, 4]
    assert [f.pts_s for f in frames] == [0.0, 1.0, 2.0, 3.0, 4.0]

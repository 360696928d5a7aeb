"""Small things a new user met in the first week (issue 26, minor items): one duration warning in
``validate``, missing videos summarised in one line, ``python -m interactscope``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[1] / "annotations" / "demo"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "interactscope", *args], cwd=cwd,
                          capture_output=True, text=True, env=dict(os.environ), timeout=300)  # fmt: skip


@pytest.fixture
def bench(tmp_path) -> Path:
    """The demo with video ``city`` annotated 99 s long (it is 7.6 s)."""
    b = tmp_path / "b"
    shutil.copytree(DEMO, b, symlinks=False, ignore=shutil.ignore_patterns("_packaged"))
    doc = json.loads((b / "benchmark.json").read_text())
    doc["videos"][0]["duration_s"] = 99.0
    (b / "benchmark.json").write_text(json.dumps(doc))
    return b


def test_python_m_interactscope(tmp_path):
    res = _cli("--version", cwd=tmp_path)
    assert res.returncode == 0 and res.stdout.strip(), res.stderr


def test_validate_prints_the_duration_warning_once(bench, tmp_path):
    res = _cli("validate", str(bench), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("differs from the annotated 99.0 s") == 1, res.stderr


def test_missing_videos_are_one_summary_line(bench, tmp_path):
    doc = json.loads((bench / "benchmark.json").read_text())
    doc["videos"] += [{"id": f"x{i}", "path": f"media/extra/x{i}.mp4"} for i in range(12)]
    (bench / "benchmark.json").write_text(json.dumps(doc))
    res = _cli("collect", "--model", "silent", "--bench", str(bench), "--out", "r",
               "--no-progress", cwd=tmp_path)  # fmt: skip
    assert res.returncode == 1
    lines = [x for x in res.stderr.splitlines() if "missing" in x]
    assert len(lines) == 1, res.stderr
    line = lines[0]
    assert "12 video files missing" in line and "(+7 more)" in line
    assert "media/extra/x4.mp4" in line and "media/extra/x5.mp4" not in line
    assert f"put them under {bench / 'media' / 'extra'}" in line
    assert not (tmp_path / "r").exists()


def test_missing_asr_extra_is_one_line_before_collecting(tmp_path, monkeypatch):
    """audio.mode=asr without the [asr] extra: refused in preflight naming the extra (it was
    found only while collecting: one error record per interaction, exit 3)."""
    from interactscope.media import asr
    from interactscope.streaming.collect import CollectError, run_collect

    monkeypatch.setattr(asr, "default_model_available", lambda: False)
    with pytest.raises(CollectError, match=r"needs the \[asr\] extra.*interactscope\[asr\]"):
        run_collect(model="silent", bench=DEMO, out=tmp_path / "r", progress=False,
                    overrides={"audio.mode": "asr"})  # fmt: skip
    assert not (tmp_path / "r").exists()
    # native audio needs no ASR: the same check passes
    run_collect(model="silent", bench=DEMO, out=tmp_path / "ok", progress=False, limit=1)

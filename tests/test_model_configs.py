"""Model config lookup: bundled configs found from any directory, local shadowing said and
recorded, the file's hash in run.json."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import pytest

from interactscope.core.model_configs import (
    ModelConfigError,
    list_models,
    resolve_model_config,
)
from interactscope.core.resources import bundled_models_dir, demo_benchmark_dir

ORACLE_LOCAL = "backend: oracle\ntolerance_s: 2.0\nnotes: local copy\n"


def test_bundled_configs_resolve_from_any_directory(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    r = resolve_model_config("qwen3-omni")
    assert r.source == "bundled"
    assert Path(r.path) == bundled_models_dir() / "qwen3-omni.yaml"
    assert r.sha256 == hashlib.sha256(Path(r.path).read_bytes()).hexdigest()
    assert r.shadows is None


def test_local_config_shadows_bundled(tmp_path, monkeypatch) -> None:
    (tmp_path / "configs" / "models").mkdir(parents=True)
    (tmp_path / "configs" / "models" / "oracle.yaml").write_text(ORACLE_LOCAL)
    monkeypatch.chdir(tmp_path)
    r = resolve_model_config("oracle")
    assert r.source == "local"
    assert r.shadows == str(bundled_models_dir() / "oracle.yaml")
    assert r.sha256 == hashlib.sha256(ORACLE_LOCAL.encode()).hexdigest()
    row = next(m for m in list_models() if m.name == "oracle")
    assert row.source == "local (shadows bundled)"
    assert (row.sees, row.hears) == ("nothing (baseline)", "nothing (baseline)")


def test_unknown_model_lists_available(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelConfigError, match="unknown model 'nope'.*oracle"):
        resolve_model_config("nope")


def test_collect_records_config_path_and_hash(tmp_path, monkeypatch, caplog) -> None:
    from interactscope.streaming.collect import run_collect

    (tmp_path / "configs" / "models").mkdir(parents=True)
    (tmp_path / "configs" / "models" / "oracle.yaml").write_text(ORACLE_LOCAL)
    monkeypatch.chdir(tmp_path)
    with caplog.at_level(logging.WARNING):
        run_collect(model="oracle", bench=demo_benchmark_dir(), out=tmp_path / "run", limit=1)
    assert any("shadows the bundled" in r.getMessage() for r in caplog.records)
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["model_config_path"] == str(tmp_path / "configs" / "models" / "oracle.yaml")
    assert manifest["model_config_sha256"] == hashlib.sha256(ORACLE_LOCAL.encode()).hexdigest()


def test_unknown_setting_lists_the_valid_keys_of_its_group() -> None:
    from interactscope.streaming.collect import CollectError, resolve_settings

    with pytest.raises(
        CollectError, match=r"grid\.stepp: unknown setting; valid here: grid\.step_s"
    ):
        resolve_settings({"backend": "oracle"}, {"grid.stepp": 5})
    with pytest.raises(CollectError, match=r"dleay_s: unknown setting; valid here: protocol, grid"):
        resolve_settings({"backend": "oracle"}, {"dleay_s": 5})


@pytest.mark.parametrize("name", ["qwen2.5-omni-7b", "qwen3-omni", "qwen3-vl-8b"])
def test_shipped_vllm_qwen_configs_keep_earlier_frames_past_the_cap(name) -> None:
    """Their default ``frames.cap_policy`` is ``stride`` (docs/protocol.md, prefix reuse): at
    t = 40 s (41 frames, cap 32) the picks are 0, 2, ..., 38 and the newest, 40; at t = 41 s
    0, 2, ..., 40 and 41, so every pick of t = 40 is again at its place at t = 41 (``uniform``
    moves them: 0, 1, 3, 4, ... then 0, 1, 3, 4, 5, ...)."""
    import yaml

    from interactscope.media.causal import select_indices
    from interactscope.streaming.collect import resolve_settings

    config = yaml.safe_load((bundled_models_dir() / f"{name}.yaml").read_text())
    s = resolve_settings(config, {})
    assert s.frames.cap_policy == "stride"
    at40 = select_indices(41, s.frames.max, s.frames.cap_policy)
    at41 = select_indices(42, s.frames.max, s.frames.cap_policy)
    assert at40 == [*range(0, 39, 2), 40] and at41 == [*range(0, 41, 2), 41]
    assert at41[: len(at40)] == at40
    uniform40, uniform41 = (select_indices(n, 32, "uniform") for n in (41, 42))
    assert uniform41[: len(uniform40)] != uniform40


def test_configs_models_linked_to_the_bundled_folder_is_bundled(tmp_path, monkeypatch) -> None:
    """A clone's ./configs/models links to interactscope/data/models: a file there is a bundled
    config (it shadows nothing), and `models` says how to shadow one instead."""
    from typer.testing import CliRunner

    from interactscope.cli import app
    from interactscope.core.model_configs import local_is_bundled

    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "models").symlink_to(bundled_models_dir())
    monkeypatch.chdir(tmp_path)
    assert local_is_bundled()
    r = resolve_model_config("oracle")
    assert (r.source, r.shadows) == ("bundled", None)
    res = CliRunner().invoke(app, ["models"])
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[-2:] == [
        "",
        "note: ./configs/models is the bundled folder (linked in a clone): a file added there "
        "is a bundled config; to shadow one, copy it into a folder named by "
        "$INTERACTSCOPE_CONFIGS or pass --model path/to/file.yaml",
    ]
    rows = json.loads(CliRunner().invoke(app, ["models", "--json"]).output)  # JSON only
    assert next(m for m in rows if m["name"] == "oracle")["source"] == "bundled"
    # what the note says works: a copy in $INTERACTSCOPE_CONFIGS shadows the bundled file
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "oracle.yaml").write_text(ORACLE_LOCAL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("INTERACTSCOPE_CONFIGS", str(tmp_path / "mine"))
    r = resolve_model_config("oracle")
    assert (r.source, r.path) == ("env", str(tmp_path / "mine" / "oracle.yaml"))
    assert r.shadows == str(bundled_models_dir() / "oracle.yaml")


def test_missing_interactscope_configs_folder_is_one_warning(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("INTERACTSCOPE_CONFIGS", str(tmp_path / "nope"))
    with caplog.at_level(logging.WARNING, logger="interactscope.core.model_configs"):
        assert resolve_model_config("oracle").source == "bundled"
        resolve_model_config("silent")
    assert [r.getMessage() for r in caplog.records] == [
        f"$INTERACTSCOPE_CONFIGS={tmp_path / 'nope'} is not a folder: no model configs are read "
        "from it (point it at a folder of NAME.yaml files, or unset it)"
    ]


def test_a_typo_in_a_configs_settings_block_names_the_file_and_key(tmp_path) -> None:
    """The YAML is at fault, not --set: the message names the file and settings.KEY; a --set
    typo keeps its (see --set)."""
    from typer.testing import CliRunner

    from interactscope.cli import app

    cfg = tmp_path / "typo.yaml"
    cfg.write_text("backend: oracle\nsettings:\n  frames:\n    maxx: 4\n")
    valid = "valid here: frames.max, frames.cap_policy, frames.max_side; did you mean frames.max"
    res = CliRunner().invoke(
        app, ["collect", "--model", str(cfg), "--bench", "demo", "--out", str(tmp_path / "r")]
    )
    assert res.exit_code == 1
    assert (
        res.stderr == f"{cfg}: settings.frames.maxx: unknown setting; {valid} or frames.max_side?\n"
    )
    res = CliRunner().invoke(
        app, ["prompt", "--model", str(cfg), "--bench", "demo", "--id", "t1-taxi", "--at", "2"]
    )
    assert (
        res.stderr == f"{cfg}: settings.frames.maxx: unknown setting; {valid} or frames.max_side?\n"
    )
    clip = demo_benchmark_dir() / "media" / "city_speech.mp4"
    res = CliRunner().invoke(app, ["observe", str(clip), "--at", "1", "--model", str(cfg)])
    assert (
        res.stderr == f"{cfg}: settings.frames.maxx: unknown setting; {valid} or frames.max_side?\n"
    )
    args = ["collect", "--model", "oracle", "--bench", "demo", "--out", str(tmp_path / "r")]
    res = CliRunner().invoke(app, [*args, "--set", "frames.maxx=3"])
    assert res.stderr == (
        f"invalid setting frames.maxx: unknown setting; {valid} or frames.max_side? (see --set)\n"
    )
    assert not (tmp_path / "r").exists()

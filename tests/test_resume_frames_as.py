"""Resuming compares how the stream frames were sent (``frames_as``), whether the model config
said it or ``--set adapter.frames_as`` did (issue 29: ``video_pairs`` next to ``image`` /
``video``): a run made with one layout is not continued with another, and the refusal names the
``--set`` that gives the run's own layout back."""

from __future__ import annotations

from interactscope.streaming.runlog import frames_layout, manifest_differences
from interactscope.streaming.schema import RunManifest


def _manifest(config: dict | None, adapter: dict | None = None) -> RunManifest:
    d = {
        "model": "qwen2.5-omni-3b",
        "backend": "transformers",
        "protocol": "offline",
        "settings": {"adapter": adapter or {}},
        "benchmark": {"name": "b", "version": "1", "path": ".", "fingerprint": "f",
                      "n_interactions": 1},
    }  # fmt: skip
    if config is not None:
        d["model_config"] = {"backend": "transformers", **config}
    return RunManifest.model_validate(d)


def test_a_run_with_one_layout_is_not_resumed_with_another():
    old, new = _manifest({"frames_as": "video"}), _manifest({"frames_as": "video_pairs"})
    assert manifest_differences(old, new) == [
        "frames_as: 'video' != 'video_pairs' (the model config's frames layout; pass "
        "--set adapter.frames_as=video to resume with the one the run used)"
    ]


def test_the_named_set_resumes_it():
    old = _manifest({"frames_as": "video"})
    new = _manifest({"frames_as": "video_pairs"}, {"frames_as": "video"})
    assert manifest_differences(old, new) == []  # the --set is the layout, not a new setting
    assert frames_layout(new) == "video"


def test_the_backend_default_and_the_limits_block_count_as_set():
    assert frames_layout(_manifest({})) == "video"  # transformers' default
    assert frames_layout(_manifest({"limits": {"frames_as": "image"}})) == "image"
    assert manifest_differences(_manifest({}), _manifest({"frames_as": "video"})) == []


def test_a_run_json_without_its_model_config_compares_the_settings_as_before():
    old, new = _manifest(None), _manifest(None, {"frames_as": "video"})
    assert frames_layout(old) is None
    diffs = manifest_differences(old, new)
    assert "settings.adapter.frames_as: '<unset>' != 'video'" in diffs
    assert not any(d.startswith("frames_as") for d in diffs)

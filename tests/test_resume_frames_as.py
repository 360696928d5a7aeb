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


def test_the_refusal_ends_with_the_sets_that_give_the_run_back():
    """An old qwen2.5-omni-3b run (one video, v2, uniform, no segments) resumed with the config
    of issue 29 (pairs, v3, stride, 8 s): every difference, then one line of --set arguments
    that restores them all (the unset segment as null), the frames layout last."""
    old = _manifest({"frames_as": "video"})
    new = _manifest({"frames_as": "video_pairs"})
    old.settings = old.settings.model_validate({"prompt_version": "v2"})
    new.settings = new.settings.model_validate(
        {"prompt_version": "v3", "audio": {"segment_s": 8}, "frames": {"cap_policy": "stride"}}
    )
    diffs = manifest_differences(old, new)
    assert diffs[1:4] == [
        "settings.audio.segment_s: '<unset>' != 8.0",
        "settings.frames.cap_policy: 'uniform' != 'stride'",
        "settings.prompt_version: 'v2' != 'v3'",
    ]
    assert diffs[4] == (
        "to resume with the run's own settings: --set audio.segment_s=null "
        "--set frames.cap_policy=uniform --set prompt_version=v2 --set adapter.frames_as=video"
    )


def test_set_values_read_back_as_the_same_value():
    import yaml

    from interactscope.core.settings import set_value

    for v in ["v2", "uniform", None, 8.0, 2, True, "1", "null", "a b", [1, 2], "-x", {"k": 1}]:
        assert yaml.safe_load(set_value(v)) == v, v
    assert [set_value(v) for v in ("v2", None, 8.0, "1", True)] == [
        "v2",
        "null",
        "8.0",
        '"1"',
        "true",
    ]

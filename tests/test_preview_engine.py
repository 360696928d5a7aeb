"""`interactscope prompt` / `collect --dry-run` show exactly what the engine receives (issue 24,
items 3-5): part for part (kinds, labels, frame times and sizes, audio samples) equal to what a
spy in place of the Qwen engine gets from the real collection driver, for ``frames_as: image``
and ``video``, Offline Probing and Online Rolling, with frames at the adapter's consumer side.

The bench: one T2 interaction on city_speech.mp4 (720x404, audio at 16 kHz, 7.6 s), q = 0:
decision points 0, 1, ..., 7, 7.6 s; at t the causal prefix holds the 1 fps frames 0..floor(t)
and round(t * 16000) audio samples."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from interactscope.cli import app
from interactscope.cli.prompt import build_previews
from interactscope.engines.base import ChatResult
from interactscope.engines.qwen_mm import Rendered, _add_video
from interactscope.streaming.adapters.registry import build_adapter, load_model_config
from interactscope.streaming.bench import load_benchmark
from interactscope.streaming.collect import resolve_settings
from interactscope.streaming.protocol.driver import collect
from interactscope.streaming.protocol.preview import preview_parts
from tests.helpers.fake_vllm import FakeLLM
from tests.helpers.foundation_fixtures import interaction, write_bench
from tests.helpers.vllm_adapter import fake_vllm  # noqa: F401 - the fake vllm fixture

MAX_PIXELS = 12544  # a pixel budget well under 720x404: the adapter holds frames smaller


class Sink:
    def __init__(self) -> None:
        self.done: set = set()
        self.records: list = []

    def append(self, rec) -> None:
        self.done.add((rec.interaction_id, rec.t))
        self.records.append(rec)

    def spoken(self, iid: str) -> list:
        return [r for r in self.records if r.interaction_id == iid and not r.silent]


@pytest.fixture
def setup(tmp_path):
    root = write_bench(tmp_path / "b", [interaction("i", task="T2")])

    def make(frames_as: str, protocol: str):
        cfg = tmp_path / f"qwen-{frames_as}.yaml"
        cfg.write_text(
            json.dumps(
                {
                    "backend": "transformers",
                    "checkpoint": str(tmp_path / "no-weights"),
                    "family": "omni",
                    "frames_as": frames_as,
                    "processor_kwargs": {"max_pixels": MAX_PIXELS},
                    "session_cache": False,
                }
            )
        )
        # the v1 labels are checked word for word below (the default is v2)
        overrides = {"protocol": protocol, "prompt_version": "v1"}
        return root, str(cfg), overrides

    return make


def _spied(root, cfg: str, overrides: dict) -> list[list[dict]]:
    """The conversations the engine gets from the driver, in call order (no weights loaded:
    the engine's chat calls are replaced by a recorder answering the silence token)."""
    name, config = load_model_config(cfg)
    settings = resolve_settings(config, overrides)
    adapter = build_adapter(name, config, settings)
    got: list[list[dict]] = []

    def chat(messages, **kw):
        got.append(list(messages))  # the session appends to its list after the call
        return ChatResult(text="<SILENT>")

    def chat_batch(convs, **kw):
        return [chat(c) for c in convs]

    adapter.engine.chat, adapter.engine.chat_batch = chat, chat_batch
    adapter.engine.generator = object()
    adapter.prepare = lambda bench: None
    bench = load_benchmark(root)
    collect(bench, adapter, Sink(), settings, list(bench.interactions), progress=False)
    return got


def _dump(messages) -> list[dict]:
    return [m.model_dump() for m in messages]


@pytest.mark.parametrize("frames_as", ["image", "video"])
def test_offline_preview_equals_what_the_engine_gets(setup, frames_as):
    root, cfg, over = setup(frames_as, "offline")
    got = _spied(root, cfg, over)
    grid = [0, 1, 2, 3, 4, 5, 6, 7, 7.6]
    assert len(got) == len(grid)
    for k in (3, 4):  # an even and an odd frame count
        (pv,) = build_previews(cfg, root, over, [("i", float(k))])
        assert _dump(pv.messages) == _dump(preview_parts(got[grid.index(k)]))
    (pv,) = build_previews(cfg, root, over, [("i", 4.0)])
    user = pv.messages[1].parts
    media = [p for p in user if p.kind != "text"]
    # worked by hand: frames 0..4 s; audio round(4 * 16000) samples
    assert media[-1].kind == "audio" and media[-1].n_samples == 64000
    shape = media[0].shape
    assert shape[1] < 720 and shape[0] < 404  # the consumer side, not the file's 720x404
    if frames_as == "video":
        (video,) = [p for p in media if p.kind == "video"]
        assert video.pts_s == [0.0, 1.0, 2.0, 3.0, 4.0]
        assert video.sent_pts_s == [0.0, 1.0, 2.0, 3.0, 4.0, 4.0]
        labels = " ".join(p.text for p in user if p.kind == "text")
        assert "[video: 5 frames, at 0.0 s, 1.0 s, 2.0 s, 3.0 s, 4.0 s]" in labels
        assert "[frame at" not in labels
    else:
        assert [p.pts_s for p in media[:-1]] == [[0.0], [1.0], [2.0], [3.0], [4.0]]
        assert all(p.sent_pts_s is None for p in media)


@pytest.mark.parametrize("frames_as", ["image", "video"])
def test_online_preview_equals_the_session_turns(setup, frames_as):
    root, cfg, over = setup(frames_as, "online")
    got = _spied(root, cfg, over)
    assert len(got) == 9
    first, later = build_previews(cfg, root, over, [("i", 4.0)])
    assert (first.turn, first.t, later.turn, later.t, later.since_s) == (1, 0.0, 5, 4.0, 3.0)
    # turn 1: system + the replay 0..0 s; turn 5: the user turn the 5th step appends
    assert _dump(first.messages) == _dump(preview_parts(got[0]))
    assert _dump(later.messages) == _dump(preview_parts(got[4][-1:]))
    replay = " ".join(p.text or "" for p in first.messages[1].parts)
    assert "The stream so far (0 s to 0.0 s), replayed:" in replay
    parts = later.messages[0].parts
    assert parts[0].text.startswith("New in the stream since 3.0 s (up to 4.0 s):")
    media = [p for p in parts if p.kind != "text"]
    # by hand: the one new frame at 4 s and the 16000 samples of (3, 4] s
    assert media[-1].kind == "audio" and media[-1].n_samples == 16000
    assert media[0].pts_s == [4.0]
    if frames_as == "video":
        assert media[0].kind == "video" and media[0].sent_pts_s == [4.0, 4.0]


def test_sent_times_are_the_engines_padding():
    """The preview's ``sent_pts_s`` is what the Qwen engine's renderer sends."""
    r = Rendered(text="")
    frames = [np.zeros((2, 2, 3), np.uint8)] * 3
    _add_video(r, frames, [0.0, 1.0, 2.0], [])
    part = {"type": "video", "video": frames, "pts_s": [0.0, 1.0, 2.0]}
    (msg,) = preview_parts([{"role": "user", "content": [part]}])
    assert msg.parts[0].sent_pts_s == r.video_pts[0] == [0.0, 1.0, 2.0, 2.0]


def test_dry_run_online_shows_turn_one_and_two(setup, tmp_path):
    root, cfg, _ = setup("video", "online")
    r = CliRunner().invoke(
        app,
        ["collect", "--model", cfg, "--bench", str(root), "--out", str(tmp_path / "run"),
         "--dry-run", "--set", "protocol=online"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "Online Rolling turn 1" in r.output and "Online Rolling turn 2" in r.output
    assert "New in the stream since 0.0 s (up to 1.0 s):" in r.output
    assert "[video part: 1 frame(s) at t = 1 s" in r.output and not (tmp_path / "run").exists()


@pytest.mark.usefixtures("fake_vllm")
@pytest.mark.parametrize(
    ("version", "label"),
    [
        # v2 (prefix layout): the prompt builder's video part, its label after it
        ("v2", "[the video above: 5 frames, at 0.0 s, 1.0 s, 2.0 s, 3.0 s, 4.0 s]"),
        # v1: image parts the adapter joins into one video part after its own label
        ("v1", "(video of 5 frames at 0 s, 1 s, 2 s, 3 s, 4 s)"),
    ],
)
def test_vllm_preview_shows_its_video_relabelling(tmp_path, version, label):
    """``frames_as: video`` on vLLM: the preview shows the label and the video part the engine
    gets, and the (fake) vLLM engine gets that text, the 5 frames padded to 6, at the preview's
    frame size, and 64000 audio samples."""
    root = write_bench(tmp_path / "b", [interaction("i", task="T2")])
    cfg = tmp_path / "qwen-vllm.yaml"
    cfg.write_text(
        json.dumps(
            {
                "backend": "vllm",
                "checkpoint": "Qwen/Qwen2.5-Omni-7B",
                "template": "tokenizer",
                "max_model_len": 32768,
                "frames_as": "video",
                "settings": {"prompt_version": version},
            }
        )
    )
    (pv,) = build_previews(str(cfg), root, {}, [("i", 4.0)])
    user = pv.messages[1].parts
    labels = [p.text for p in user if p.kind == "text"]
    (at,) = [i for i, x in enumerate(labels) if label in x]
    kinds = [p.kind for p in user]
    video_at = kinds.index("video")
    text_before = sum(1 for k in kinds[:video_at] if k == "text")
    assert (at < text_before) == (version == "v1")  # v1: label before the video; v2: after
    (video,) = [p for p in user if p.kind == "video"]
    assert video.sent_pts_s == [0.0, 1.0, 2.0, 3.0, 4.0, 4.0]
    name, config = load_model_config(str(cfg))
    settings = resolve_settings(config, {})
    adapter = build_adapter(name, config, settings)
    bench = load_benchmark(root)
    collect(bench, adapter, Sink(), settings, list(bench.interactions), progress=False)
    inputs = [i for call in FakeLLM.instances[-1].calls for i in call]
    (at4,) = [i for i in inputs if "t = 4.0 s." in i["prompt"]]
    assert all(x in at4["prompt"] for x in labels)
    (frames,) = at4["multi_modal_data"]["video"]
    assert frames.shape[:3] == (6, *video.shape)
    ((wave, _sr),) = at4["multi_modal_data"]["audio"]
    assert wave.shape[0] == [p for p in user if p.kind == "audio"][0].n_samples == 64000

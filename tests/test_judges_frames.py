"""The looking judge (``openai:MODEL+frames``) against a loopback OpenAI-compatible server that
records every request: frames at the stated times, audio or none for auditory targets, the media
hash in the cache key, old text-judge caches still hit, re-scoring makes no calls."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
import wave
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from interactscope.streaming.judges import (
    JudgeError,
    JudgeItem,
    Verdict,
    VerdictCache,
    make_judge,
    run_judge,
)
from interactscope.streaming.judges.frames import window_times
from tests.helpers.media_fixtures import read_code, write_av_clip, write_coded_video
from tests.helpers.stub_http import send_json

pytest.importorskip("openai")
PIL = pytest.importorskip("PIL.Image")


class _Recorder(BaseHTTPRequestHandler):
    seen: list = []

    def do_POST(self):  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        payload = {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "yes"},
                }
            ],
        }
        send_json(self, payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def server(monkeypatch):
    _Recorder.seen = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{srv.server_address[1]}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    yield _Recorder
    srv.shutdown()


def coded_clip(path: Path, first_tick: int = 0) -> Path:
    """10 s clip, a frame every 0.5 s (150 ticks of 1/300 s) showing its own pts in ticks: the
    frame the causal decoder shows at second k (last pts <= k) reads 300·k (first_tick = 0)."""
    return write_coded_video(path, list(range(first_tick, 3000, 150)), 3000)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A benchmark of a visual target (τ = 5 s, coded clip) and an auditory one (τ = 4 s, a clip
    with a 440 Hz tone), collected with the oracle (one response per target, at τ)."""
    from interactscope.streaming.collect import run_collect

    root = tmp_path_factory.mktemp("frames")
    bench = root / "bench"
    (bench / "media").mkdir(parents=True)
    coded_clip(bench / "media" / "coded.mp4")
    write_av_clip(bench / "media" / "tone.mp4")
    videos = [{"id": "coded", "path": "media/coded.mp4"}, {"id": "tone", "path": "media/tone.mp4"}]
    (bench / "benchmark.json").write_text(
        json.dumps({"name": "f", "version": "1", "videos": videos})
    )
    inters = [
        {"id": "vis", "video_id": "coded", "task": "T2", "query": {"time_s": 0, "text": "bars?"},
         "targets": [{"id": "k1", "reference": "the bars change", "time_s": 5.0}]},
        {"id": "aud", "video_id": "tone", "task": "T2", "query": {"time_s": 0, "text": "sound?"},
         "targets": [{"id": "k1", "reference": "a beep sounds", "time_s": 4.0,
                      "evidence": "auditory"}]},
    ]  # fmt: skip
    (bench / "interactions.jsonl").write_text("".join(json.dumps(i) + "\n" for i in inters))
    run_collect(model="oracle", bench=bench, out=root / "run", progress=False)
    return root / "run"


def user_parts(body: dict) -> list[dict]:
    """The user turn's parts (a text-only turn goes on the wire as one string)."""
    content = body["messages"][1]["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def request_for(seen: list, reference: str) -> dict:
    """The one recorded request about ``reference``."""
    hits = [b for b in seen if any(reference in p.get("text", "") for p in user_parts(b))]
    assert len(hits) == 1, f"{len(hits)} requests mention {reference!r}"
    return hits[0]


def decoded_images(body: dict) -> list[np.ndarray]:
    out = []
    for p in user_parts(body):
        if p["type"] == "image_url":
            url = p["image_url"]["url"]
            assert url.startswith("data:image/jpeg;base64,")
            raw = base64.b64decode(url.split(",", 1)[1])
            out.append(np.asarray(PIL.open(io.BytesIO(raw)).convert("RGB")))
    return out


def test_window_times_are_lo_middle_hi():
    assert window_times((3.0, 7.0), 3) == [3.0, 5.0, 7.0]  # τ = 5, δ = 2
    assert window_times((-1.0, 3.0), 3) == [0.0, 1.0, 3.0]  # τ = 1: τ − δ read at 0, τ kept
    assert window_times((10.0, 20.0), 1) == [15.0]  # an interval's middle


def test_visual_target_request_carries_three_frames_at_the_window_times(server, run_dir, tmp_path):
    from interactscope.streaming.scoring.run import score_run

    score_run(
        run_dir,
        judge="openai:judge-model+frames",
        out_dir=tmp_path,
        cache_path=tmp_path / "v.sqlite",
    )
    body = request_for(server.seen, "the bars change")
    imgs = decoded_images(body)
    # τ = 5, δ = 2: frames at 3, 5, 7 s; the frame shown at second k has pts 300·k ticks
    assert [read_code(im) for im in imgs] == [900, 1500, 2100]
    labels = [p["text"] for p in user_parts(body) if p["type"] == "text"]
    assert [t for t in labels if t.startswith("Frame at")] == [
        "Frame at 3 s:\n",
        "Frame at 5 s:\n",
        "Frame at 7 s:\n",
    ]
    assert "frames or the audio" in body["messages"][0]["content"]  # the frames prompt


def test_auditory_target_without_audio_gets_no_media_and_it_is_recorded(server, run_dir, tmp_path):
    from interactscope.streaming.scoring.run import score_run

    res = score_run(
        run_dir,
        judge="openai:judge-model+frames",
        out_dir=tmp_path,
        cache_path=tmp_path / "v.sqlite",
    )
    body = request_for(server.seen, "a beep sounds")
    kinds = [p["type"] for p in user_parts(body)]
    assert kinds == ["text"] * len(kinds)
    assert any("audio not sent" in p["text"] for p in user_parts(body))
    audio = res.summary.settings.judge["settings"]["audio"]
    assert audio.startswith("none: the engine takes no audio")


def test_auditory_target_with_audio_gets_the_window_waveform(server, run_dir, tmp_path):
    from interactscope.streaming.scoring.run import score_run

    score_run(
        run_dir,
        judge="openai:judge-model+frames+audio",
        out_dir=tmp_path,
        cache_path=tmp_path / "v.sqlite",
    )
    body = request_for(server.seen, "a beep sounds")
    audio = [p for p in user_parts(body) if p["type"] == "input_audio"]
    assert len(audio) == 1 and not decoded_images(body)
    with wave.open(io.BytesIO(base64.b64decode(audio[0]["input_audio"]["data"]))) as w:
        assert w.getframerate() == 16000
        samples = np.frombuffer(w.readframes(w.getnframes()), np.int16)
    assert len(samples) == 4 * 16000  # W = [2, 6] s at 16 kHz
    assert np.abs(samples).max() > 0.2 * 32767  # the 0.3-amplitude tone, not silence
    assert any("from 2 s to 6 s" in p.get("text", "") for p in user_parts(body))


def test_rescoring_makes_no_calls_and_gives_identical_files(server, run_dir, tmp_path):
    from interactscope.streaming.scoring.run import score_run

    cache = tmp_path / "v.sqlite"
    score_run(run_dir, judge="openai:m+frames", cache_path=cache, out_dir=tmp_path / "a")
    n = len(server.seen)
    assert n == 2  # one pair per target
    res = score_run(run_dir, judge="openai:m+frames", cache_path=cache, out_dir=tmp_path / "b")
    assert len(server.seen) == n and res.judge_report.calls == 0
    assert res.judge_report.cache_hits == 2
    a, b = (tmp_path / d / "summary.json" for d in ("a", "b"))
    assert a.read_bytes() == b.read_bytes()
    rj = score_run(
        run_dir, judge="openai:m+frames", cache_path=cache, out_dir=tmp_path / "c", rejudge=2
    )
    assert rj.judge_report.rejudged == 2 and rj.judge_report.flip_rate == 0.0
    again = decoded_images(server.seen[-1]) or decoded_images(server.seen[-2])
    assert len(again) == 3  # the rejudge re-asks with the frames attached


def visual_item() -> JudgeItem:
    return JudgeItem("i", "k", 5.0, "req", "ref", "cand", "v", (3.0, 7.0), "visual")


def test_cache_key_changes_when_the_frames_change(server, tmp_path):
    judge = make_judge("openai:m+frames")
    judge.bind_media({"v": coded_clip(tmp_path / "a.mp4")})
    key_a = judge.unit_key(judge.unit(visual_item()))
    assert key_a == judge.unit_key(judge.unit(visual_item()))  # deterministic
    # same times, other pixels: frames at pts 300k − 100 instead of 300k
    judge.bind_media({"v": coded_clip(tmp_path / "b.mp4", first_tick=50)})
    key_b = judge.unit_key(judge.unit(visual_item()))
    assert key_b != key_a
    text = make_judge("openai:m")
    assert text.unit_key(text.unit(visual_item())) not in (key_a, key_b)


def test_old_text_judge_cache_still_hits(server, tmp_path):
    """A row keyed the way caches were always keyed (SHA-256 of the six-field JSON list) is
    found by a text judge given an item that carries the new media fields."""
    old_key = hashlib.sha256(
        json.dumps(["openai", "m", "judge-v1", "req", "ref", "cand"]).encode()
    ).hexdigest()
    with VerdictCache(tmp_path / "old.sqlite") as cache:
        cache.put_many(
            [(old_key, "openai", "m", "judge-v1", ("req", "ref", "cand"), Verdict(True, "yes"))]
        )
        rep = run_judge(make_judge("openai:m"), [visual_item()], cache)
    assert rep.cache_hits == 1 and rep.calls == 0 and server.seen == []
    assert rep.verdicts[("i", "k", 5000)].value is True


def test_unbound_media_and_bad_names_fail_in_one_line(server):
    judge = make_judge("openai:m+frames")
    with pytest.raises(JudgeError, match="no media file for video 'v'"):
        judge.unit(visual_item())
    with pytest.raises(JudgeError, match=r"\+audio goes with \+frames"):
        make_judge("openai:m+audio")
    with pytest.raises(JudgeError, match="openai:MODEL and local:PATH only"):
        make_judge("lexical+frames")
    with pytest.raises(JudgeError, match="max_frames"):
        make_judge("openai:m+frames", max_frames=0)
    assert make_judge("openai+frames").model == "gpt-4o"


@pytest.mark.slow
def test_local_frames_judge_sends_the_frames_to_a_qwen_vl(tmp_path):
    """``local:PATH+frames`` over a tiny random Qwen2.5-VL saved to a folder: the engine gets
    the three frames as images (the verdict of random weights is whatever it is, but parsed)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from interactscope.engines.base import ImagePart
    from tests.helpers.tiny_qwen import tiny_vl

    model, processor = tiny_vl()
    model.save_pretrained(tmp_path / "vl")
    processor.save_pretrained(tmp_path / "vl")
    judge = make_judge(f"local:{tmp_path / 'vl'}+frames")
    assert judge.settings["audio"].startswith("none: the engine takes no audio")  # a VL model
    judge.bind_media({"v": coded_clip(tmp_path / "a.mp4")})
    asked = []
    chat = judge.engine.chat

    def spy(messages, *args, **kwargs):
        asked.append(messages)
        return chat(messages, *args, **kwargs)

    judge.engine.chat = spy
    rep = run_judge(judge, [visual_item()], cache=None)
    images = [p for p in asked[0][1].content if isinstance(p, ImagePart)]
    assert [read_code(p.image) for p in images] == [900, 1500, 2100]
    assert rep.calls == 1 and rep.verdicts[("i", "k", 5000)].error is None

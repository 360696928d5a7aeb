"""Causal observation at t (docs/protocol.md#decision-grid): frames, audio modes, the query and its attachments."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import soundfile as sf

from interactscope.streaming.schema import Interaction
from interactscope.streaming.settings import Settings
from tests.helpers.foundation_fixtures import (
    CITY,  # 7.6 s, 1 fps frames at 0..7 s, speech from 2.0 s
)

SR = 16000


def _it(q=0.0, attachments=(), text="Tell me when someone talks."):
    return Interaction.model_validate(
        {
            "id": "i1",
            "video_id": "city",
            "task": "T2",
            "query": {"time_s": q, "text": text, "attachments": list(attachments)},
            "targets": [{"id": "k1", "time_s": 5.0}],
        }
    )


@pytest.fixture(scope="module")
def media():
    from interactscope.media import CausalMedia

    return CausalMedia(CITY)


def _observer(settings=None, media=None, **kw):
    from interactscope.streaming.protocol.observation import Observer

    return Observer(CITY, settings or Settings(), media=media, **kw)


def test_frames_and_native_audio_are_causal(media):
    ob = _observer(media=media)
    obs = ob.observe(3.4, _it())
    assert [f.second for f in obs.frames] == [0, 1, 2, 3]
    assert all(f.pts_s <= 3.4 for f in obs.frames)
    assert obs.n_frames_available == 4 and obs.n_frames == 4
    assert obs.audio.dtype == np.float32 and obs.audio.shape == (54400,)  # round(3.4 * 16000)
    full = ob.observe(7.6, _it())
    assert full.audio.shape == (121600,)
    np.testing.assert_array_equal(obs.audio, full.audio[:54400])  # a prefix, not a re-render
    assert obs.transcript is None and obs.query_text == "Tell me when someone talks."
    assert media.decode_count == 1  # one decode serves every decision point


def test_frame_cap_policies(media):
    uni = _observer(Settings(frames={"max": 3, "cap_policy": "uniform"}), media).observe(7.6, _it())
    assert uni.n_frames_available == 8  # seconds 0..7
    assert len(uni.frames) == 3 and uni.frames[-1].second == 7  # always the newest
    rec = _observer(Settings(frames={"max": 3, "cap_policy": "recent"}), media).observe(7.6, _it())
    assert [f.second for f in rec.frames] == [5, 6, 7]


def test_max_side_downscales(media):
    obs = _observer(Settings(frames={"max_side": 64}), media).observe(1.0, _it())
    assert max(obs.frames[0].image.shape[:2]) == 64


def test_audio_mode_none_and_scene_none(media):
    none = _observer(Settings(audio={"mode": "none"}), media).observe(5.0, _it())
    assert none.audio is None and none.transcript is None and len(none.frames) == 6
    blind = _observer(Settings(scene="none"), media).observe(5.0, _it())
    assert blind.frames == [] and blind.audio is None and blind.transcript is None
    assert blind.query_text == "Tell me when someone talks."


def test_query_is_invisible_before_q(media):
    obs = _observer(media=media).observe(1.0, _it(q=2.0))
    assert obs.query_visible is False and obs.query_text is None and obs.attachments == []
    assert _observer(media=media).observe(2.0, _it(q=2.0)).query_visible is True


@pytest.fixture
def bench_with_attachments(tmp_path):
    root = tmp_path / "b"
    (root / "media").mkdir(parents=True)
    shutil.copyfile(CITY, root / "media" / "city.mp4")
    tone = (0.25 * np.sin(2 * np.pi * 440 * np.arange(SR) / SR)).astype(np.float32)  # 1 s
    sf.write(root / "media" / "query.wav", tone, SR, subtype="FLOAT")
    from PIL import Image

    img = np.zeros((6, 8, 3), np.uint8)
    img[:, :, 0] = 200
    Image.fromarray(img).save(root / "media" / "ref.png")
    return root, tone, img


def test_audio_attachment_is_mixed_in_from_q(bench_with_attachments):
    from interactscope.streaming.protocol.observation import Observer

    root, tone, img = bench_with_attachments
    it = _it(q=2.0, attachments=[{"kind": "audio", "path": "media/query.wav"},
                                 {"kind": "image", "path": "media/ref.png"}])  # fmt: skip
    plain = Observer(root / "media" / "city.mp4", Settings(), bench_root=root)
    base = plain.observe(3.5, _it(q=2.0)).audio
    ob = Observer(root / "media" / "city.mp4", Settings(), bench_root=root)
    half = ob.observe(2.5, it)
    assert half.audio.shape == (40000,)
    np.testing.assert_array_equal(half.audio[:32000], base[:32000])  # before q: untouched
    np.testing.assert_allclose(
        half.audio[32000:], np.clip(base[32000:40000] + tone[:8000], -1, 1), atol=1e-6
    )
    audio_view = [a for a in half.attachments if a.kind == "audio"][0]
    assert audio_view.heard_s == 0.5
    later = ob.observe(3.5, it)
    assert later.audio.shape == (56000,)
    np.testing.assert_allclose(later.audio[32000:48000], np.clip(base[32000:48000] + tone, -1, 1),
                               atol=1e-6)  # fmt: skip
    np.testing.assert_array_equal(later.audio[48000:], base[48000:56000])  # the tone has ended
    image_view = [a for a in later.attachments if a.kind == "image"][0]
    np.testing.assert_array_equal(image_view.image, img)
    at_q = ob.observe(2.0, it)
    assert (
        at_q.audio.shape == (32000,)
        and [a for a in at_q.attachments if a.kind == "audio"][0].heard_s == 0.0
    )


def test_attachment_resolved_without_bench_root_and_missing_one_fails(bench_with_attachments):
    from interactscope.streaming.protocol.observation import ObservationError, Observer

    root, _tone, img = bench_with_attachments
    ob = Observer(root / "media" / "city.mp4", Settings())  # looks up from the media's folder
    obs = ob.observe(1.0, _it(attachments=[{"kind": "image", "path": "media/ref.png"}]))
    np.testing.assert_array_equal(obs.attachments[0].image, img)
    with pytest.raises(ObservationError, match="nope.png"):
        ob.observe(1.0, _it(attachments=[{"kind": "image", "path": "media/nope.png"}]))


def test_bad_time_is_rejected(media):
    with pytest.raises(ValueError):
        _observer(media=media).observe(float("nan"), _it())
    with pytest.raises(ValueError):
        _observer(media=media).observe(-1.0, _it())


@pytest.mark.slow
def test_asr_mode_transcript_is_causal(media):
    pytest.importorskip("faster_whisper", reason="the [asr] extra is not installed")
    from interactscope.media import default_model_available

    if not default_model_available():
        pytest.skip("the [asr] extra's whisper weights are not installed")
    ob = _observer(Settings(audio={"mode": "asr"}), media)
    early = ob.observe(1.5, _it())
    assert early.audio is None and early.transcript == ""  # speech starts at 2.0 s
    late = ob.observe(7.6, _it())
    assert late.transcript and all(w.end_s <= 7.6 for w in late.words)
    mid = ob.observe(4.0, _it())
    assert all(w.end_s <= 4.0 for w in mid.words)
    assert len(mid.words) < len(late.words)

"""Frames shown at no grid second are not decoded (``CausalMedia(skip_unshown=True)``, the
default): the samples, pixels, pts and ``info`` stay those of a decode of every frame."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import pytest
from av.video.frame import PictureType

import interactscope.media.causal as causal
from interactscope.media import CausalMedia
from tests.helpers.media_fixtures import code_image, encode_frames, read_code

CITY = Path(causal.__file__).parents[1] / "data" / "demo" / "media" / "city_speech.mp4"

FPS = 25
N = 8 * FPS  # 8 s: frames 0..199, pts i / 25 s


OPTIONS = {  # 3 B-frames between references, none of them a reference, no scene cuts
    "libx264": {"x264-params": "bframes=3:b-adapt=0:b-pyramid=none:scenecut=0:keyint=50"},
    "libx265": {"x265-params": "bframes=3:b-adapt=0:b-pyramid=0:scenecut=0:keyint=50:"
                "log-level=error"},
}  # fmt: skip


@pytest.fixture(scope="module", params=sorted(OPTIONS))
def bclip(request, tmp_path_factory):
    """H.264 / HEVC with non-reference B-frames; frame i shows the code i, pts i / 25 s."""
    path = tmp_path_factory.mktemp("skip") / f"bframes-{request.param}.mp4"
    out = av.open(str(path), "w")
    s = out.add_stream(request.param, rate=FPS)
    s.width, s.height, s.pix_fmt = 192, 64, "yuv420p"
    s.codec_context.options = {"preset": "ultrafast", **OPTIONS[request.param]}
    encode_frames(out, s, (code_image(i) for i in range(N)), FPS)
    out.close()
    return path


def _b_frames(path) -> set[int]:
    """Display indices of the B-frames (a plain PyAV decode of every frame)."""
    with av.open(str(path)) as c:
        return {i for i, f in enumerate(c.decode(video=0)) if f.pict_type == PictureType.B}


def _everything(cm: CausalMedia):
    frames = cm.frames_until(1e9, max_frames=10**6)
    return [(f.second, f.pts_s, f.image.tobytes()) for f in frames], cm.info


def test_unshown_b_frames_are_not_decoded_and_nothing_changes(bclip):
    b = _b_frames(bclip)
    assert len(b) > 100  # the clip does have non-reference B-frames (about 3 in 4 frames)
    full, skip = CausalMedia(bclip, skip_unshown=False), CausalMedia(bclip)
    assert _everything(skip) == _everything(full)
    # second k shows the frame of pts k exactly (frame 25k), second 8 the last one (pts 7.96,
    # shown until the end at 8.0 s): 9 frames are shown, every other B-frame need not be decoded
    frames = skip.frames_until(8)
    assert [read_code(f.image) for f in frames] == [25 * k for k in range(8)] + [N - 1]
    shown = {25 * k for k in range(8)} | {N - 1}
    assert skip.skipped_frames == len(b - shown) and full.skipped_frames == 0
    assert skip.decode_count == full.decode_count == 1


def test_real_clip_with_b_frames_unchanged():
    """city_speech.mp4 (H.264 720x404, 25 fps, B-frames): same samples and info."""
    clip = CITY
    skip = CausalMedia(clip)
    assert _everything(skip) == _everything(CausalMedia(clip, skip_unshown=False))
    assert skip.skipped_frames > 0


def test_an_unconfirmed_skip_is_redone_without_it(bclip, monkeypatch):
    """A pass whose skipped frames may have been shown (here: the check says so) is decoded
    again, every frame: the same output, two decodes."""
    want = _everything(CausalMedia(bclip, skip_unshown=False))
    monkeypatch.setattr(causal._Unshown, "not_decoded", lambda self, decoded, last: None)
    cm = CausalMedia(bclip)
    assert _everything(cm) == want
    assert cm.decode_count == 2 and cm.skipped_frames == 0


def test_the_check_finds_a_lost_frame():
    """Hand-worked: frames at 0, 0.5, 1.0, 1.5 s, the one at 0.5 skipped. Decoded 0, 1.0, 1.5:
    [0.5, 1.0) holds no second (confirmed). Had 1.0 been lost too, [0.5, 1.5) holds second 1."""

    class _CC:
        skip_frame = "DEFAULT"

    u = causal._Unshown(_CC(), Fraction(1, 2), Fraction(0))
    u.skipped = [1]  # tick 1 = 0.5 s
    assert u.not_decoded([Fraction(0), Fraction(1), Fraction(3, 2)], last=2) == 1
    assert u.not_decoded([Fraction(0), Fraction(3, 2)], last=2) is None
    # past the last decoded frame: shown if its second is still in the clip
    assert u.not_decoded([Fraction(0)], last=0) == 1
    assert u.not_decoded([Fraction(0)], last=1) is None


def test_shown_rule_in_ticks():
    """The release decision: pts 0.2 s with the next frame at 0.6 s covers no second; pts 0.6
    with the next at 1.0 neither; pts 0.8 with the next at 1.2 covers second 1."""

    class _CC:
        skip_frame = "DEFAULT"

    u = causal._Unshown(_CC(), Fraction(1, 5), Fraction(0))
    u.seen = [0, 1, 3, 4, 6]  # 0, 0.2, 0.6, 0.8, 1.2 s
    assert not u._shown(1) and not u._shown(3)
    assert u._shown(4) and u._shown(0) and u._shown(6)  # covers 1; first; last so far
    # an origin of 0.1 s: pts 1.0 s is 0.9 s on the file clock, next 1.2 -> 1.1: covers 1;
    # pts 0.8 -> 0.7 with the next at 0.9 does not
    v = causal._Unshown(_CC(), Fraction(1, 5), Fraction(1, 10))
    v.seen = [0, 1, 3, 4, 5, 6]  # 0.9 s (tick 5) with the next at 1.1 s (tick 6)
    assert v._shown(5) and not v._shown(4)
    assert v._ceil(5) == 1 and v._ceil(0) == 0  # ceil(0.9), ceil(-0.1)

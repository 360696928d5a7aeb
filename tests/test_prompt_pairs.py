"""``frames_as: video_pairs`` (issue 29): the stream frames as consecutive 2-frame video items
(one Qwen temporal patch each; an odd newest pick alone), each after a label with its frames'
times, so consecutive Offline Probing prompts keep every earlier item; prompt v3 places each item
on the timeline at its last frame's time. Online Rolling sends them as ``video`` does."""

from __future__ import annotations

import numpy as np
import pytest

from interactscope.streaming.protocol.prompts import build_messages, online_turn
from tests.test_prompt_layout import HEAD, NOW, REQ, _user
from tests.test_prompt_timeline import HEAD3, _request

PAIRS = "video_pairs"


def _media(msgs):
    """(kind, text or bytes) of every user part up to the last media part (a video: its
    frames' bytes)."""
    out = []
    for p in msgs[1]["content"]:
        if p["type"] == "text":
            out.append(("text", p["text"]))
        else:
            arrays = p["video"] if p["type"] == "video" else [p.get("image", p.get("audio"))]
            out.append((p["type"], b"".join(np.ascontiguousarray(a).tobytes() for a in arrays)))
    last = max(i for i, (k, _) in enumerate(out) if k != "text")
    return out[: last + 1]


def test_v2_five_frames_as_pairs_hand_worked():
    """t = 4.5 s: frames 0..4 -> items (0, 1), (2, 3), (4); each after its label, then v2's
    tail: the audio [0, 4.5 s] = 72000 samples and the time."""
    got = _user(build_messages(_request(4.5, prompt_version="v2"), frames_as=PAIRS))
    assert got == [
        f"{REQ}\n{HEAD}\n[video: frames at 0.0 s, 1.0 s]",
        "video@0,1",
        "[video: frames at 2.0 s, 3.0 s]",
        "video@2,3",
        "[video: frames at 4.0 s]",
        "video@4",
        "Audio from 0 s to 4.5 s:",
        "audio:72000",
        NOW.format(t="4.5"),
    ]


def test_v3_five_frames_as_pairs_audio_after_items_ending_by_its_end():
    """t = 4.5 s, 2 s segments: [0, 2) after item (0, 1) (ends 1 s <= 2 s) and before (2, 3)
    (ends 3 s); [2, 4) after (2, 3) and, at equal times, before the lone newest item (4); the
    tail [4, 4.5] (8000 samples) after the newest item."""
    got = _user(build_messages(_request(4.5, audio={"segment_s": 2}), frames_as=PAIRS))
    assert got[:-1] == [
        f"{REQ}\n{HEAD3}\n[video: frames at 0.0 s, 1.0 s]",
        "video@0,1",
        "[audio from 0.0 s to 2.0 s]",
        "audio:32000",
        "[video: frames at 2.0 s, 3.0 s]",
        "video@2,3",
        "[audio from 2.0 s to 4.0 s]",
        "audio:32000",
        "[video: frames at 4.0 s]",
        "video@4",
        "[audio from 4.0 s to 4.5 s]",
        "audio:8000",
    ]
    assert got[-1] == NOW.format(t="4.5")


def test_v3_pairs_at_equal_times_a_pair_first():
    """t = 5 s, 4 s segments: [0, 4) ends at 4 s, after the pairs (0, 1), (2, 3) and before (4,
    5); the tail [4, 5] last. At t = 3 s, 3 s segments: the full [0, 3) follows the pair (2, 3),
    which ends at its end (a pair first), with no tail."""
    got = _user(build_messages(_request(5.0, audio={"segment_s": 4}), frames_as=PAIRS))
    assert got[1:-1] == ["video@0,1", "[video: frames at 2.0 s, 3.0 s]", "video@2,3",
                         "[audio from 0.0 s to 4.0 s]", "audio:64000",
                         "[video: frames at 4.0 s, 5.0 s]", "video@4,5",
                         "[audio from 4.0 s to 5.0 s]", "audio:16000"]  # fmt: skip
    got = _user(build_messages(_request(3.0, audio={"segment_s": 3}), frames_as=PAIRS))
    assert got[1:-1] == ["video@0,1", "[video: frames at 2.0 s, 3.0 s]", "video@2,3",
                         "[audio from 0.0 s to 3.0 s]", "audio:48000"]  # fmt: skip


def test_items_carry_the_frames_themselves():
    msgs = build_messages(_request(4.5, prompt_version="v2"), frames_as=PAIRS)
    videos = [p for p in msgs[1]["content"] if p["type"] == "video"]
    images = [p["image"] for p in build_messages(_request(4.5, prompt_version="v2"))[1]["content"]
              if p["type"] == "image"]  # fmt: skip
    assert [len(v["video"]) for v in videos] == [2, 2, 1]
    sent = [f for v in videos for f in v["video"]]
    assert all(np.array_equal(a, b) for a, b in zip(sent, images, strict=True))


def _items(msgs):
    """The (label, frame bytes) of every video item, in order."""
    out, label = [], None
    for p in msgs[1]["content"]:
        if p["type"] == "text":
            label = p["text"].split("\n")[-1]
        elif p["type"] == "video":
            out.append((label, b"".join(np.ascontiguousarray(f).tobytes() for f in p["video"])))
    return out


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_consecutive_prompts_change_only_the_newest_item(version):
    """Within the cap (8 frames) every item of t but the newest is again at its place at t + 1;
    past it with ``stride`` too, but where the stride doubles (t + 1 = 8, 15 s)."""
    changed = []
    for t in range(1, 24):
        s = {"prompt_version": version, "frames": {"max": 8, "cap_policy": "stride"}}
        a, b = (
            _items(build_messages(_request(float(x), **s), frames_as=PAIRS)) for x in (t, t + 1)
        )
        if b[: len(a) - 1] != a[:-1]:
            changed.append(t)
    assert changed == [7, 14]


def test_v3_prompts_share_all_media_before_the_newest_item():
    """t -> t + 1 (8 s segments): the media parts of t before the newest item's label are the
    first parts of t + 1 (within the cap and past it with ``stride``, but where the stride
    doubles: t + 1 = 32, 63 s)."""
    lost = []
    for t in range(1, 70):
        s = {"audio": {"segment_s": 8}, "frames": {"cap_policy": "stride"}}
        a, b = (_media(build_messages(_request(float(x), **s), frames_as=PAIRS))
                for x in (t, t + 1))  # fmt: skip
        newest = max(i for i, (k, _) in enumerate(a) if k == "video")
        if b[: newest - 1] != a[: newest - 1]:
            lost.append(t)
    assert lost == [31, 62]


def test_a_full_tail_before_a_lone_newest_frame_stays_in_place():
    """At t = 8 s the tail [0, 8] is full: it is placed by its end, before the lone item (8)
    (ending at 8 s too); at t = 9 s it is in the same place, before the pair (8, 9), so the
    prompt at 9 s keeps every media part of the one at 8 s but the lone item."""
    a, b = (_media(build_messages(_request(x, audio={"segment_s": 8}), frames_as=PAIRS))
            for x in (8.0, 9.0))  # fmt: skip
    assert a[-4] == ("text", "[audio from 0.0 s to 8.0 s]")
    assert a[-2] == ("text", "[video: frames at 8.0 s]")
    assert b[: len(a) - 2] == a[:-2]
    assert b[len(a) - 2] == ("text", "[video: frames at 8.0 s, 9.0 s]")


def test_online_rolling_sends_pairs_as_one_video():
    """The session path keeps ``video``'s turns: the replay's frames as one video part."""
    req = _request(3.0, prompt_version="v2")
    assert online_turn(req, None, frames_as=PAIRS) == online_turn(req, None, frames_as="video")


def test_image_and_video_text_unchanged_by_the_new_key():
    for v in ("v1", "v2", "v3"):
        for fa in ("image", "video"):
            assert "[video: frames at" not in str(
                _user(build_messages(_request(3.0, prompt_version=v), frames_as=fa))
            )


def test_preview_shows_each_item_and_the_padded_newest():
    from interactscope.streaming.protocol.preview import preview_parts

    (_, user) = preview_parts(build_messages(_request(4.5, prompt_version="v2"), frames_as=PAIRS))
    videos = [p for p in user.parts if p.kind == "video"]
    assert [p.pts_s for p in videos] == [[0.0, 1.0], [2.0, 3.0], [4.0]]
    assert [p.sent_pts_s for p in videos] == [None, None, [4.0, 4.0]]

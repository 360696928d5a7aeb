"""Prompt layouts: the old version reproduces its recorded prompts exactly; the cache-friendly
version keeps every earlier frame of consecutive Offline Probing prompts in their shared prefix.

``tests/data/prompts_v1_demo.json`` holds renderings of the old version made before the new
layout was written (``python tests/test_prompt_layout.py`` rewrites it: only ever do that for a
new fixture, never to make a failing comparison pass).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

from interactscope.media import Frame
from interactscope.media.asr import Word
from interactscope.streaming.bench import load_benchmark
from interactscope.streaming.protocol.observation import Observation
from interactscope.streaming.protocol.prompts import (
    build_messages,
    messages_to_text,
    online_turn,
    render_text,
)
from interactscope.streaming.protocol.requests import request_at
from interactscope.streaming.schema import Interaction, ResponseRecord
from interactscope.streaming.settings import Settings

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "data" / "prompts_v1_demo.json"
DEMO_IDS = ("t1-taxi", "t1-speech", "t2-cut", "t8b-said")


def _frames(t: float, n_max: int) -> tuple[list[Frame], int]:
    """Synthetic 1 fps frames 0..floor(t) (6x8, value 7k mod 256), uniformly capped to n_max."""
    from interactscope.media.causal import select_indices

    secs = list(range(int(math.floor(t)) + 1))
    keep = select_indices(len(secs), n_max, "uniform")
    return [
        Frame(secs[i], float(secs[i]), np.full((6, 8, 3), secs[i] * 7 % 256, np.uint8))
        for i in keep
    ], len(secs)


def _obs(t: float, mode: str = "native", n_max: int = 32) -> Observation:
    frames, total = _frames(t, n_max)
    n = int(round(t * 16000))
    words = (Word(" hello", 0.5, 1.0), Word(" there", 1.2, 2.5), Word(" friend.", 3.0, 4.0))
    heard = tuple(w for w in words if w.end_s <= t)
    return Observation(
        t=t,
        frames=frames,
        n_frames_available=total,
        audio=np.sin(np.arange(n, dtype=np.float32) * 0.01) if mode == "native" else None,
        transcript="".join(w.text for w in heard).strip() if mode == "asr" else None,
        words=heard if mode == "asr" else (),
        has_audio=True,
        query_text="x",
        audio_mode=mode,
    )


def _media_digest(messages: list[dict]) -> str:
    """Shapes, times and bytes of every media part (the text dump shows no pixel values)."""
    h = hashlib.sha1()
    for m in messages:
        for p in m["content"] if isinstance(m["content"], list) else []:
            arrays = {"image": [p.get("image")], "video": p.get("video"), "audio": [p.get("audio")]}
            for a in arrays.get(p["type"], []) or []:
                a = np.ascontiguousarray(a)
                h.update(f"{p['type']}{a.shape}{a.dtype}{p.get('pts_s')}".encode())
                h.update(a.tobytes())
    return h.hexdigest()


def _dump(messages: list[dict]) -> str:
    return messages_to_text(messages) + "\n#media " + _media_digest(messages)


def golden_cases(version: str | None = None) -> dict[str, str]:
    """``{case name: rendering}`` of demo requests at a few decision points (synthetic media,
    so the renderings depend on the prompt code only). ``version=None``: the default."""
    bench = load_benchmark(REPO / "annotations" / "demo", probe_media=False)
    by_id = {it.id: it for it in bench.interactions}
    base = {} if version is None else {"prompt_version": version}
    out: dict[str, str] = {}
    for iid in DEMO_IDS:
        it = by_id[iid]
        q = it.query.time_s
        for dt in (0.0, 1.0, 3.0, 6.5):
            t = round(q + dt, 3)
            for name, extra, mode, kw in (
                ("image", {}, "native", {}),
                ("video", {}, "native", {"frames_as": "video"}),
                ("cap4", {"frames": {"max": 4}}, "native", {}),
                ("asr", {"audio": {"mode": "asr"}}, "asr", {}),
                ("none", {"scene": "none"}, "native", {}),
            ):
                s = Settings.model_validate({**base, **extra})
                obs = None if name == "none" else _obs(t, mode, s.frames.max)
                req = request_at(bench, it, t, s, observation=obs)
                out[f"{iid}@{t}:{name}"] = _dump(build_messages(req, **kw))
            s = Settings.model_validate({**base, "audio": {"mode": "asr"}, "history": {"n": 2}})
            hist = [ResponseRecord(interaction_id=iid, t=q, text="Noted.", silent=False)]
            req = request_at(bench, it, t, s, observation=_obs(t, "asr"), history=hist)
            out[f"{iid}@{t}:text"] = json.dumps(render_text(req), sort_keys=True)
            out[f"{iid}@{t}:history"] = _dump(build_messages(req))
        s = Settings.model_validate(base)
        prev = None
        for step, t in enumerate((q, q + 1.0, q + 2.0)):
            req = request_at(bench, it, t, s, observation=_obs(t))
            out[f"{iid}@{t}:online{step}"] = _dump(online_turn(req, prev))
            prev = req.observation
    return out


# ------------------------------------------------------------------------------ old version
def test_old_version_renders_exactly_as_before():
    """Every recorded rendering of the old versions (text, media order, media bytes) is unchanged
    when named (v1: the default of runs made before issue 25, v2: before issue 29; run.json
    records it)."""
    for version in ("v1", "v2"):  # v2's fixture was made before prompt v3 (issue 29)
        want = json.loads(FIXTURE.with_name(f"prompts_{version}_demo.json").read_text("utf-8"))
        assert len(want) == 4 * (4 * 7 + 3)
        got = golden_cases(version)
        assert sorted(got) == sorted(want)
        diff = [k for k in want if got[k] != want[k]]
        assert diff == [], f"changed renderings ({version}): {diff[:5]}"


# ------------------------------------------------------------------------------ new layout
def _request(t: float, **settings):
    bench = load_benchmark(REPO / "annotations" / "demo", probe_media=False)
    it = next(i for i in bench.interactions if i.id == "t1-taxi")
    s = Settings.model_validate({"prompt_version": "v2", **settings})
    mode = s.audio.mode
    return request_at(bench, it, t, s, observation=_obs(t, mode, s.frames.max))


def _user(msgs: list[dict]) -> list[str]:
    """The user turn as one line per part: text verbatim, media as kind@pts."""
    out = []
    for p in msgs[1]["content"]:
        if p["type"] == "text":
            out.append(p["text"])
        elif p["type"] == "image":
            out.append(f"image@{p['pts_s']:g}")
        elif p["type"] == "video":
            out.append("video@" + ",".join(f"{x:g}" for x in p["pts_s"]))
        else:
            out.append(f"audio:{len(p['audio'])}")
    return out


REQ = "User request (made at 0.0 s): When you see a taxi, look up taxi fares in this city for me."
HEAD = "The stream so far, in time order (one frame per second):"
NOW = (
    "Current stream time: t = {t} s. Respond now if the request calls for it at this moment, "
    "otherwise answer exactly <SILENT>."
)


def test_prefix_layout_puts_every_changing_part_after_the_last_frame():
    """v2 at t = 2: request, a header without t, the frames in time order; then the audio
    [0, 2] and the time. The cap note, when capping, also follows the frames."""
    assert _user(build_messages(_request(2.0))) == [
        f"{REQ}\n{HEAD}\n[frame at 0.0 s]",
        "image@0",
        "[frame at 1.0 s]",
        "image@1",
        "[frame at 2.0 s]",
        "image@2",
        "Audio from 0 s to 2.0 s:",
        "audio:32000",
        NOW.format(t="2.0"),
    ]
    capped = _user(build_messages(_request(3.0, frames={"max": 2})))
    assert capped[:5] == [f"{REQ}\n{HEAD}\n[frame at 0.0 s]", "image@0", "[frame at 3.0 s]",
                          "image@3", "(the frames above are 2 of the 4 frames so far, one per "
                          "second)\nAudio from 0 s to 3.0 s:"]  # fmt: skip


def test_prefix_layout_video_label_and_transcript_follow_the_media():
    video = _user(build_messages(_request(1.0), frames_as="video"))
    assert video[:2] == [f"{REQ}\n{HEAD}", "video@0,1"]
    assert video[2].startswith("[the video above: 2 frames, at 0.0 s, 1.0 s]\nAudio from 0 s")
    asr = _user(build_messages(_request(3.0, audio={"mode": "asr"})))
    assert asr[-1] == (
        "Speech heard so far (automatic transcript): hello there\n" + NOW.format(t="3.0")
    )
    text = render_text(_request(3.0, audio={"mode": "asr"}))[1]["content"]
    assert text.splitlines()[:3] == [
        REQ,
        HEAD,
        "(4 video frames omitted: this model cannot see them)",
    ]


@pytest.mark.parametrize("frames_as", ["image", "video"])
def test_consecutive_prompts_share_everything_up_to_the_older_ones_last_frame(frames_as):
    """Within the cap, prompt t's parts up to its last frame are the first parts of prompt t+1
    (same text, same arrays); under the classic layout they part before the first frame."""
    for version, shared_media in (("v2", True), ("v1", False)):
        for t in (1.0, 2.0, 5.0):
            a = build_messages(_request(t, prompt_version=version), frames_as=frames_as)
            b = build_messages(_request(t + 1, prompt_version=version), frames_as=frames_as)
            assert a[0] == b[0]
            ua, ub = a[1]["content"], b[1]["content"]
            k = max(i for i, p in enumerate(ua) if p["type"] in ("image", "video"))
            same = [_part_key(x) == _part_key(y) for x, y in zip(ua, ub, strict=False)]
            n_same = same.index(False) if False in same else len(same)
            if shared_media and frames_as == "image":
                assert n_same == k + 1  # everything through frame t, then prompt t's tail
            elif shared_media:
                assert n_same == 1  # the header; the video item itself grows
            else:
                assert n_same == 0  # the header names t


def _part_key(p: dict) -> tuple:
    if p["type"] == "text":
        return ("text", p["text"])
    if p["type"] == "image":
        return ("image", p["pts_s"], p["image"].tobytes())
    if p["type"] == "video":
        return ("video", tuple(p["pts_s"]), b"".join(f.tobytes() for f in p["video"]))
    return ("audio", p["audio"].tobytes())


def test_prefix_layout_online_replay_and_history():
    first = _user(online_turn(_request(1.0), None))
    assert first[0] == f"{REQ}\n" + HEAD.replace(":", ", replayed:") + "\n[frame at 0.0 s]"
    hist = [ResponseRecord(interaction_id="t1-taxi", t=0.0, text="Noted.", silent=False)]
    req = _request(1.0, history={"n": 1})
    req.history = hist
    user = _user(build_messages(req))
    assert user[4:] == [
        "Audio from 0 s to 1.0 s:",
        "audio:16000",
        "Your previous responses in this stream:\n[0.0 s] Noted.\n" + NOW.format(t="1.0"),
    ]


def test_prefix_layout_defers_an_attachment_transcript():
    """A spoken request's transcript so far grows with t: in v2 it follows the frames."""
    from interactscope.streaming.protocol.observation import AttachmentView

    req = _request(1.0, audio={"mode": "asr"})
    req.observation.attachments = [AttachmentView(kind="audio", path="q.wav", transcript="hi")]
    user = _user(build_messages(req))
    assert user[-1].startswith("Audio attached to the request (transcript so far): hi\nSpeech")
    req.settings = Settings(audio={"mode": "asr"}, prompt_version="v1")
    assert "Audio attached to the request (transcript so far): hi" in _user(build_messages(req))[0]


def test_layout_of_versions():
    from interactscope.streaming.protocol.prompts import PROMPT_VERSION, layout_of

    assert PROMPT_VERSION == Settings().prompt_version == "v2"  # the default since issue 25
    assert (layout_of(), layout_of("v1"), layout_of("v2")) == ("prefix", "classic", "prefix")
    with pytest.raises(KeyError, match="known"):
        layout_of("v9")


# ------------------------------------------------------------------------------ stride cap
def test_stride_cap_hand_worked():
    from interactscope.media.causal import select_indices

    # n = 5, m = 3: s = 2 fits {0, 2} in m - 1 = 2 slots, plus the newest 4
    assert select_indices(5, 3, "stride") == [0, 2, 4]
    # n = 6, m = 3: multiples of 2 in 0..4 are 3 > 2, so s = 4: {0, 4} + 5
    assert select_indices(6, 3, "stride") == [0, 4, 5]
    # n = 33, m = 32: 32 picks of stride 1 no longer fit 31 slots, s = 2: 0, 2, .., 30 + 32
    assert select_indices(33, 32, "stride") == list(range(0, 31, 2)) + [32]
    assert select_indices(32, 32, "stride") == list(range(32))
    assert select_indices(9, 1, "stride") == [8]


def test_stride_cap_keeps_earlier_picks_until_the_stride_doubles():
    from interactscope.media.causal import select_indices

    doublings = 0
    for n in range(33, 400):
        a, b = select_indices(n, 32, "stride"), select_indices(n + 1, 32, "stride")
        assert len(b) <= 32 and b[0] == 0 and b[-1] == n
        if set(a[:-1]) <= set(b):
            continue  # every pick but the old newest survives
        doublings += 1
        assert a[1] * 2 == b[1]
    assert doublings == 3  # s: 2 -> 4 -> 8 -> 16 at n = 63, 125, 249


def test_stride_policy_is_a_setting_used_by_the_observer():
    from interactscope.streaming.protocol.observation import Observer
    from tests.helpers.foundation_fixtures import CITY, interaction

    s = Settings(frames={"max": 3, "cap_policy": "stride"})
    obs = Observer(CITY, s).observe(7.6, Interaction.model_validate(interaction("i")))
    # 8 frames (0..7), m = 3: s = 4 -> seconds 0, 4 and the newest 7
    assert [round(f.pts_s) for f in obs.frames] == [0, 4, 7]
    assert obs.n_frames_available == 8


if __name__ == "__main__":  # pragma: no cover - regenerates the fixture (see the docstring)
    FIXTURE.write_text(json.dumps(golden_cases("v1"), indent=1, sort_keys=True), encoding="utf-8")
    print(f"wrote {FIXTURE}")
    pytest.main([__file__, "-q"])

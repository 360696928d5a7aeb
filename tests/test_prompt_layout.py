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

from interactscope.bench import load_benchmark
from interactscope.media import Frame
from interactscope.media.asr import Word
from interactscope.protocol.observation import Observation
from interactscope.protocol.prompts import (
    build_messages,
    messages_to_text,
    online_turn,
    render_text,
)
from interactscope.protocol.requests import request_at
from interactscope.schema import ResponseRecord
from interactscope.settings import Settings

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
    """Every recorded rendering of the old version (text, media order, media bytes) is unchanged,
    both as the default and when named explicitly."""
    want = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert len(want) == 4 * (4 * 7 + 3)
    for version in (None, "v1"):
        got = golden_cases(version)
        assert sorted(got) == sorted(want)
        diff = [k for k in want if got[k] != want[k]]
        assert diff == [], f"changed renderings ({version}): {diff[:5]}"


if __name__ == "__main__":  # pragma: no cover - regenerates the fixture (see the docstring)
    FIXTURE.write_text(json.dumps(golden_cases("v1"), indent=1, sort_keys=True), encoding="utf-8")
    print(f"wrote {FIXTURE}")
    pytest.main([__file__, "-q"])

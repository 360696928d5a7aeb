"""Helpers shared by the foundation tests: small benchmark folders over real media."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "annotations" / "demo"
CITY = DEMO / "media" / "city_speech.mp4"  # 7.6 s, speech from 2.0 s

TOOLS = [
    {"name": "take_photo", "description": "Take a photo."},
    {"name": "start_voice_memo", "description": "Start a voice memo."},
]


def interaction(iid: str, task: str = "T2", q: float = 0.0, targets=None, **query) -> dict:
    return {
        "id": iid,
        "video_id": "city",
        "task": task,
        "query": {"time_s": q, "text": f"request {iid}", **query},
        "targets": targets or [{"id": "k1", "reference": "something happens", "time_s": 4.0}],
    }


def write_bench(root: Path, interactions: list[dict], videos: list[dict] | None = None) -> Path:
    """A benchmark folder at ``root`` over city_speech.mp4; returns ``root``."""
    (root / "media").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CITY, root / "media" / "city.mp4")
    bench = {
        "name": "tiny",
        "version": "1",
        "tools": TOOLS,
        "videos": videos or [{"id": "city", "path": "media/city.mp4"}],
    }
    (root / "benchmark.json").write_text(json.dumps(bench, indent=2))
    (root / "interactions.jsonl").write_text("".join(json.dumps(i) + "\n" for i in interactions))
    return root

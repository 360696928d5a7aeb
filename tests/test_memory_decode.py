"""Peak memory of the decode pass (issue 29, "600 s peak < 0.5 GB"): the resampled audio track is
held once (written in place, not a list of chunks joined at the end), and building observations
does not import what it never uses (docs/protocol.md, frames and audio in memory)."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc

import numpy as np

from interactscope.media import CausalMedia
from tests.helpers.foundation_fixtures import CITY  # 7.6 s, AAC audio


def test_track_places_samples_from_the_offset_and_grows():
    """Offset 3 into an empty buffer: [0, 0, 0, 1, 2] then [3, 4] appended -> length 7; the
    buffer grows to max(7, 5 * 3 // 2 = 7) = 7."""
    from interactscope.media.causal import _Track

    tr = _Track(0)
    tr.place(np.array([1, 2], np.float32), 3)
    tr.place(np.array([3, 4], np.float32), 99)  # the offset counts at the first call only
    assert tr.pos == 7
    assert tr.buf[:7].tolist() == [0, 0, 0, 1, 2, 3, 4]
    tr.reserve(20)  # zero padding past the track
    assert len(tr.buf) == 20 and not tr.buf[7:].any()


def test_track_negative_offset_drops_samples_across_chunks():
    """A stream starting 3 samples before the file clock: chunks [1, 2] and [3, 4, 5] -> the
    first 3 samples (1, 2, 3) are dropped, the track is [4, 5] from sample 0."""
    from interactscope.media.causal import _Track

    tr = _Track(4)
    tr.place(np.array([1, 2], np.float32), -3)
    tr.place(np.array([3, 4, 5], np.float32), -3)
    assert tr.pos == 2 and tr.buf[:2].tolist() == [4, 5]


def test_decoded_audio_is_held_once_at_the_peak():
    """The numpy bytes allocated while decoding the audio (tracemalloc peak; it counts calloc'ed
    pages never written too) stay under 1.5x the one buffer holding the track, itself sized
    from the header (7.6 s + 2 s at 16 kHz, 4 B: 614,400 B). Chunks joined at the end held
    the track twice (peak >= 2x the joined buffer)."""
    cm = CausalMedia(CITY)
    tracemalloc.start()
    try:
        cm._decode(video=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    buf = cm._audio_buf
    owner = buf if buf.base is None else buf.base
    assert cm._audio is not None and len(cm._audio) > 5 * 16000
    assert np.shares_memory(cm._audio, buf)  # the track is a view of the padded buffer
    assert owner.nbytes <= round((7.6 + 2) * 16000) * 4
    assert peak < 1.5 * owner.nbytes


def test_observation_imports_leave_out_egobench_scipy_pandas():
    """Building observations (collect's settings, the adapter registry, the Observer) does not
    import egobench, scipy or pandas (~75 MB of RSS on the 600 s goal row)."""
    code = (
        "import sys\n"
        "import interactscope.streaming.collect, interactscope.streaming.adapters.registry\n"
        "import interactscope.streaming.protocol.observation\n"
        "bad = [m for m in ('interactscope.egobench', 'scipy', 'pandas', 'torch') "
        "if m in sys.modules]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_decode_pass_gives_freed_heap_back(monkeypatch):
    """One ``malloc_trim`` after the decode pass (the pages its buffers freed go back to the OS
    instead of adding to the peak while observations are built); glibc has it."""
    import interactscope.media.causal as causal

    assert isinstance(causal._trim_heap(), bool)  # never raises, glibc or not
    calls = []
    monkeypatch.setattr(causal, "_trim_heap", lambda: calls.append(1) or True)
    cm = CausalMedia(CITY)
    _ = cm.info
    assert calls == [1]

"""Bounded host memory (issue 18, item 5): frames held at the size the model uses, requests that
share frame and audio buffers instead of copying them, and batches cut by bytes as well as by
count (docs/protocol.md, frames and audio in memory)."""

from __future__ import annotations

import gc
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import soundfile as sf

from interactscope.media import CausalMedia
from interactscope.media.causal import fit_size
from interactscope.streaming.adapters.base import budget_side, smart_resize
from interactscope.streaming.protocol.observation import ArrayBytes, Observation, Observer
from interactscope.streaming.protocol.types import AdapterOutput, DecisionRequest
from interactscope.streaming.schema import Interaction, VideoRecord
from interactscope.streaming.settings import DEFAULT_BATCH_MAX_MB, Settings, batch_max_bytes
from tests.helpers.foundation_fixtures import CITY  # 720x404, 7.6 s, 8 distinct 1 fps frames, audio
from tests.helpers.media_fixtures import write_silent_video

SR = 16000
D = 7.6
MiB = 1 << 20


def _it(q: float = 0.0, attachments=()) -> Interaction:
    return Interaction.model_validate(
        {
            "id": "i1",
            "video_id": "city",
            "task": "T2",
            "query": {"time_s": q, "text": "Tell me.", "attachments": list(attachments)},
            "targets": [{"id": "k1", "time_s": 5.0}],
        }
    )


# ----------------------------------------------------------------------------- frame sizes
def test_budget_side_of_720p_at_the_qwen_budget_is_600():
    """200,704 px (the Qwen configs). The processor's grid of 1280x720: beta = sqrt(921600 /
    200704) = 15/7, h = floor(720 / (15/7) / 28) * 28 = 336, w = floor(597.3 / 28) * 28 = 588
    (factor 32: 320 x 576). Stored at side 600, fit_size gives 600 x 338 (337.5 rounded to even):
    factor 28: round(338/28)*28 = 336, round(600/28)*28 = 588, 336*588 = 197,568 <= budget, so
    (336, 588); factor 32: 352 x 608 > budget, beta = sqrt(202,800 / 200,704), h = floor(336.25 /
    32) * 32 = 320, w = floor(596.9 / 32) * 32 = 576: both grids kept, and 338 >= 336, 600 >= 588.
    Side 599 -> 600 x 336: factor 32 gives round(336/32) = 10 -> 320 x 608 (area 194,560 <=
    budget): grid changed. Sides below 597.3 give a height < 336."""
    assert smart_resize(720, 1280, 28, 3136, 200704) == (336, 588)
    assert smart_resize(720, 1280, 32, 3136, 200704) == (320, 576)
    assert fit_size(1280, 720, 600) == (600, 338)
    assert budget_side(1280, 720, 200704) == 600
    assert budget_side(720, 1280, 200704) == 600  # portrait: the same long side
    assert budget_side(1920, 1080, 200704) == 600  # 16:9 at any size: the same grid
    assert budget_side(448, 448, 200704) is None  # the processor does not downscale it


def test_frames_max_side_store_is_rgb_and_identical_to_converting_full_size_samples():
    """frames.max_side = 96: 720x404 -> 96 x 53.9 -> 96 x 54 (even). Stored once as RGB: 8
    distinct samples x 96 x 54 x 3 B = 124,416 B; the arrays equal those converted from the
    full-size yuv samples (the old path), and later calls return the very same objects."""
    old = CausalMedia(CITY).frames_until(D, max_side=96)
    cm = CausalMedia(CITY, rgb_max_side=96)
    new = cm.frames_until(D, max_side=96)
    assert [f.second for f in new] == [f.second for f in old] == list(range(8))
    for a, b in zip(old, new, strict=True):
        assert b.image.shape == (54, 96, 3) and not b.image.flags.writeable
        np.testing.assert_array_equal(a.image, b.image)
    assert (cm.stored_as, cm.stored_side) == ("rgb24", 96)
    assert cm.held_bytes - cm._audio.nbytes == 8 * 96 * 54 * 3 == 124_416
    again = cm.frames_until(5.0, max_side=96)
    assert all(f.image is new[f.second].image for f in again)  # views of the one store
    assert cm.rgb_conversions == 0 and cm._rgb_bytes == 0  # no conversion, no cache


def test_observer_stores_frames_at_the_consumer_side():
    """A 112*112 = 12,544 px budget (the tiny Qwen's). Grid of 720x404: factor 28 (56, 140),
    factor 32 (64, 128) -> search from 140: the first side whose fit_size keeps both grids with
    both axes >= them is 154 (154 x 86). Stored as yuv420p: 8 x 154 x 86 x 1.5 = 158,928 B."""
    side = budget_side(720, 404, 12544)
    assert side == 154 and fit_size(720, 404, 154) == (154, 86)
    for f in (28, 32):
        assert smart_resize(86, 154, f, 3136, 12544) == smart_resize(404, 720, f, 3136, 12544)
    ob = Observer(CITY, Settings(), consumer_side=lambda w, h: budget_side(w, h, 12544))
    obs = ob.observe(D, _it())
    assert obs.frames[-1].image.shape == (86, 154, 3)
    info = ob.store_info()
    assert (info["frames_stored_as"], info["frames_stored_side"]) == ("yuv420p", 154)
    m = ob.media
    assert sum(s.yuv.nbytes for s in m._stored) == 8 * 154 * 86 * 3 // 2 == 158_928
    assert not ob.use_consumer(None)  # already decoded: the store cannot change any more


def test_converted_frames_held_by_a_batch_are_never_converted_again():
    """yuv store with an LRU cache of (at most) one frame: while a caller holds the 8 frames,
    asking again converts nothing; after they are dropped, all 8 are converted again (the
    one-frame LRU kept second 7, then evicted it for second 0 before second 7 was asked)."""
    cm = CausalMedia(CITY, rgb_cache_bytes=1)
    held = cm.frames_until(D)
    assert cm.rgb_conversions == 8
    again = cm.frames_until(D)
    assert cm.rgb_conversions == 8 and all(
        a.image is b.image for a, b in zip(held, again, strict=True)
    )
    del held, again
    gc.collect()
    cm.frames_until(D)
    assert cm.rgb_conversions == 16


# ----------------------------------------------------------------------------- audio
def test_audio_until_is_a_read_only_view_of_one_buffer():
    cm = CausalMedia(CITY)
    a3, a5, end = cm.audio_until(3.0), cm.audio_until(5.0), cm.audio_until(D)
    assert a3.shape == (48_000,) and a5.shape == (80_000,) and end.shape == (121_600,)
    assert np.shares_memory(a3, a5) and np.shares_memory(a5, end)
    assert not a3.flags.writeable and not end.flags.writeable
    track = cm.audio_track
    k = min(len(track), 121_600)
    np.testing.assert_array_equal(end[:k], track[:k])
    assert not np.any(end[k:])  # zero-filled past the track's end, still a view
    past = cm.audio_until(D + 5)  # more than 1 s past the clip end: a fresh array
    assert past.shape == (201_600,) and not np.shares_memory(past, end)
    assert not np.any(past[k:]) and not past.flags.writeable
    other = cm.audio_until(3.0, sample_rate=8000)  # another rate: resampled, exact count
    assert other.shape == (24_000,) and not np.shares_memory(other, end)


def test_audio_until_without_audio_shares_one_zero_buffer(tmp_path):
    cm = CausalMedia(write_silent_video(tmp_path / "v.mp4", seconds=4.0))
    a, b = cm.audio_until(2.0), cm.audio_until(4.0)
    assert a.shape == (32_000,) and b.shape == (64_000,) and not np.any(b)
    assert np.shares_memory(a, b) and not b.flags.writeable


def test_observations_share_the_waveform_and_mixing_copies_only_then(tmp_path):
    (tmp_path / "media").mkdir()
    tone = (0.25 * np.ones(8000)).astype(np.float32)
    sf.write(tmp_path / "media" / "q.wav", tone, SR, subtype="FLOAT")
    ob = Observer(CITY, Settings(), bench_root=tmp_path)
    plain3, plain5 = ob.observe(3.0, _it()), ob.observe(5.0, _it())
    assert np.shares_memory(plain3.audio, plain5.audio)
    mixed = ob.observe(3.0, _it(q=2.0, attachments=[{"kind": "audio", "path": "media/q.wav"}]))
    assert not np.shares_memory(mixed.audio, plain5.audio) and not mixed.audio.flags.writeable
    np.testing.assert_allclose(
        mixed.audio[32000:40000], np.clip(plain3.audio[32000:40000] + tone, -1, 1), atol=1e-6
    )
    np.testing.assert_array_equal(ob.observe(3.0, _it()).audio, plain3.audio)  # track intact


# ----------------------------------------------------------------------------- batches by bytes
def test_array_bytes_counts_each_buffer_once():
    frame = SimpleNamespace(image=np.zeros(MiB // 2, np.uint8), second=0, pts_s=0.0)
    track = np.zeros(4 * MiB // 4, np.float32)  # 4 MiB
    held = ArrayBytes()
    assert held.add(Observation(1.0, frames=[frame], audio=track[: MiB // 4])) == 1.5 * MiB
    assert held.add(Observation(2.0, frames=[frame], audio=track[: MiB // 2])) == 1 * MiB
    assert held.add(Observation(2.0, frames=[frame], audio=track[: MiB // 2].copy())) == 2 * MiB
    assert held.total == 4.5 * MiB


class _Recorder:
    def __init__(self):
        self.sizes: list[int] = []

    def respond_batch(self, reqs):
        self.sizes.append(len(reqs))
        return [AdapterOutput(text="<SILENT>") for _ in reqs]


def _chunks(batch_size: int, batch_max_mb: float | None, shared_audio: bool = False):
    """Batch sizes of 10 points that share one 0.5 MiB frame and each hold 1 MiB of audio
    (their own copy, or with ``shared_audio`` the prefix [0, t] of one track)."""
    from interactscope.streaming.protocol import driver

    adapter = {} if batch_max_mb is None else {"batch_max_mb": batch_max_mb}
    settings = Settings(adapter=adapter)
    frame = SimpleNamespace(image=np.zeros(MiB // 2, np.uint8), second=0, pts_s=0.0)
    track = np.zeros(10 * MiB // 4, np.float32)
    it = _it()

    def build(t: float) -> DecisionRequest:
        n = int(t) * MiB // 4
        audio = track[:n] if shared_audio else np.zeros(MiB // 4, np.float32)
        obs = Observation(t, frames=[frame], audio=audio)
        return DecisionRequest(interaction=it, video=VideoRecord(id="city", path="c.mp4"),
                               bench_root=Path("."), t=t, settings=settings, tools=[],
                               observation=obs)  # fmt: skip

    build.observer, build.show_results = None, False
    rec = _Recorder()
    ctx = SimpleNamespace(
        settings=settings, adapter=rec, sink=None, clock=None
    )  # no durability here
    pending = [float(t) for t in range(1, 11)]
    records = list(driver._by_strategy(ctx, it, pending, build, batch_size))
    assert [r.t for r in records] == pending and not any(r.error for r in records)
    return rec.sizes


def test_batches_are_cut_by_bytes_as_well_as_by_count():
    # own 1 MiB audio each + the shared 0.5 MiB frame: a chunk of k points holds 0.5 + k MiB;
    # 3 MiB allows k = 2 (2.5 MiB; a third would make 3.5)
    assert _chunks(16, 3) == [2, 2, 2, 2, 2]
    assert _chunks(16, 6) == [5, 5]  # 0.5 + 5 = 5.5 <= 6
    assert _chunks(4, 100) == [4, 4, 2]  # the count bound alone
    assert _chunks(16, 0) == [10]  # 0: no byte bound
    assert _chunks(16, 1) == [1] * 10  # a point over the bound still goes, alone
    # prefixes of one track count their longest span: point t holds t MiB of it; at 6 MiB the
    # first chunk is t = 1..5 (0.5 + 5 = 5.5), then t = 6 alone (6.5), and so on
    assert _chunks(16, 6, shared_audio=True) == [5, 1, 1, 1, 1, 1]
    assert _chunks(16, None, shared_audio=True) == [10]  # default 1024 MiB: one batch


def test_batch_max_mb_setting():
    assert DEFAULT_BATCH_MAX_MB == 1024
    assert batch_max_bytes(Settings()) == 1024 * MiB
    assert batch_max_bytes(Settings(adapter={"batch_max_mb": 0})) is None
    assert batch_max_bytes(Settings(adapter={"batch_max_mb": 0.5})) == MiB // 2
    with pytest.raises(ValueError, match="batch_max_mb"):
        batch_max_bytes(Settings(adapter={"batch_max_mb": -1}))
    # a driver setting: not refused as an unknown backend option, recorded by the adapter
    from interactscope.streaming.adapters.openai_backend import OpenAIAdapter

    oa = {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    ad = OpenAIAdapter("o", oa, Settings(adapter={"batch_max_mb": 8}))
    assert ad.describe()["batch_max_mb"] == 8
    assert OpenAIAdapter("o", oa, Settings()).describe()["batch_max_mb"] == 1024


# ----------------------------------------------------------------------------- model inputs
class _Spy:
    """Records the processor's keyword arguments; delegates everything else."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []

    def __call__(self, **kw):
        self.calls.append(kw)
        return self.inner(**kw)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.fixture(scope="module")
def tiny():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.helpers.tiny_qwen import tiny_omni

    return tiny_omni()


def _processed(tiny, settings: Settings, observer_of):
    """What the tiny Qwen2.5-Omni's processor makes of the request at t = 5 s."""
    from interactscope.streaming.adapters.transformers_backend import TransformersAdapter

    model, proc = tiny
    spy = _Spy(proc)
    cfg = {"generation": {"max_new_tokens": 1, "temperature": 0},
           "processor_kwargs": {"min_pixels": 3136, "max_pixels": 12544}}  # fmt: skip
    ad = TransformersAdapter("tiny", cfg, settings, model=model, processor=spy)
    ad.prepare(None)
    ob = observer_of(ad)
    it = _it()
    req = DecisionRequest(interaction=it, video=VideoRecord(id="city", path="c.mp4"),
                          bench_root=Path("."), t=5.0, settings=settings, tools=[],
                          observation=ob.observe(5.0, it))  # fmt: skip
    ad.respond(req)
    kw = spy.calls[-1]
    return kw, proc(**kw), ad, ob


@pytest.mark.slow
def test_consumer_side_keeps_the_processor_grid_and_tokens(tiny):
    """No frames.max_side: before, the 720x404 frames went whole to the processor; now they are
    held at 154 x 86 (the adapter's consumer side). The processor still resizes both to the same
    56 x 140 grid: identical token ids and grid; the pixel values differ by the extra downscale."""
    import torch

    s = Settings()
    kw_old, old, _, _ = _processed(tiny, s, lambda ad: Observer(CITY, s))
    kw_new, new, ad, ob = _processed(
        tiny, s, lambda ad: Observer(CITY, s, consumer_side=ad.consumer_max_side)
    )
    assert ad.consumer_max_side(720, 404) == 154
    assert ad.describe()["frames_consumer"].startswith("processor max_pixels=12544")
    assert ob.store_info()["frames_stored_side"] == 154
    assert kw_old["videos"][0][0].shape == (404, 720, 3)
    assert kw_new["videos"][0][0].shape == (86, 154, 3)
    assert torch.equal(old["input_ids"], new["input_ids"])
    assert torch.equal(old["video_grid_thw"], new["video_grid_thw"])
    assert old["video_grid_thw"].tolist() == [[3, 4, 10]]  # 6 frames (t=0..5) / 2; 56/14, 140/14
    assert old["pixel_values_videos"].shape == new["pixel_values_videos"].shape


@pytest.mark.slow
def test_frames_max_side_model_inputs_are_identical(tiny):
    """frames.max_side = 64 (the consumer side is then 64 too): the RGB store gives the processor
    the same arrays as converting the full-size samples did, so the same tensors."""
    import torch

    s = Settings(frames={"max_side": 64})
    kw_old, old, _, _ = _processed(tiny, s, lambda ad: Observer(CITY, s, media=CausalMedia(CITY)))
    kw_new, new, ad, ob = _processed(
        tiny, s, lambda ad: Observer(CITY, s, consumer_side=ad.consumer_max_side)
    )
    assert ob.store_info()["frames_stored_as"] == "rgb24"
    assert kw_new["videos"][0][0].shape == (36, 64, 3)  # 404 * 64 / 720 = 35.9 -> 36
    for a, b in zip(kw_old["videos"][0], kw_new["videos"][0], strict=True):
        np.testing.assert_array_equal(a, b)
    for key in ("input_ids", "video_grid_thw", "pixel_values_videos"):
        assert torch.equal(old[key], new[key])


class _Sink:
    def __init__(self):
        self.done, self.records = set(), []

    def append(self, rec):
        self.records.append(rec)

    def spoken(self, interaction_id):
        return []


def test_collect_holds_frames_at_the_adapters_consumer_side(tmp_path):
    """End to end through ``driver.collect``: an adapter whose consumer uses a 100 px long side
    gets the 720x404 video's frames at 100 x 56 (404 * 100 / 720 = 56.1 -> 56), held so."""
    from interactscope.streaming.bench import load_benchmark
    from interactscope.streaming.protocol.driver import collect
    from interactscope.streaming.protocol.types import Adapter
    from tests.helpers.foundation_fixtures import interaction, write_bench

    class Small(Adapter):
        backend = "small"

        def __init__(self):
            super().__init__("small", {}, Settings())
            self.shapes, self.asked = set(), []

        def consumer_max_side(self, width, height):
            self.asked.append((width, height))
            return 100

        def respond_batch(self, requests):
            self.shapes |= {f.image.shape for r in requests for f in r.observation.frames}
            return [AdapterOutput(text="<SILENT>") for _ in requests]

    bench = load_benchmark(write_bench(tmp_path, [interaction("a", q=1.0)]))
    ad, sink = Small(), _Sink()
    summary = collect(bench, ad, sink, Settings(), bench.interactions, progress=False)
    assert summary.written == 8 and summary.errors == 0  # grid 1..7 s and D = 7.6
    assert ad.asked == [(720, 404)] and ad.shapes == {(56, 100, 3)}


def test_vllm_and_openai_consumer_sides(monkeypatch):
    """vLLM at the Qwen budget: 600 for 720p (as the transformers processor, same rule); with
    frames.max_side = 448 the frames (448 x 252) are under the budget (252 x 448 = 112,896 px,
    already multiples of 28): the processor does not downscale, so they are held at 448.
    OpenAI: 512 with image_detail low, else frames.max_side (None: as they come)."""
    import sys
    import types

    from interactscope.streaming.adapters.openai_backend import OpenAIAdapter
    from interactscope.streaming.adapters.vllm_backend import VLLMAdapter

    fake = types.ModuleType("vllm")  # the engine is never started: only its options are read
    fake.LLM, fake.SamplingParams, fake.__version__ = object, object, "0.0.fake"
    monkeypatch.setitem(sys.modules, "vllm", fake)
    cfg = {"backend": "vllm", "checkpoint": "Qwen/Qwen2.5-Omni-7B", "template": "tokenizer",
           "mm_processor_kwargs": {"max_pixels": 200704}}  # fmt: skip
    assert VLLMAdapter("q", cfg, Settings()).consumer_max_side(1280, 720) == 600
    capped = VLLMAdapter("q", cfg, Settings(frames={"max_side": 448}))
    assert capped.consumer_max_side(448, 252) == 448
    oa = {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1",
          "api_key_optional": True}  # fmt: skip
    # default frames_consumer 200,704 px: the Qwen configs' 600 (grid 336x588 kept)
    assert OpenAIAdapter("o", oa, Settings()).consumer_max_side(1280, 720) == 600
    source = {**oa, "frames_consumer": "source"}  # the old rule: as the observation gives them
    assert OpenAIAdapter("o", source, Settings()).consumer_max_side(1280, 720) is None
    low = OpenAIAdapter("o", {**source, "image_detail": "low"}, Settings())
    assert low.consumer_max_side(1280, 720) == 512
    assert low.describe()["frames_consumer"].startswith("image_detail=low")
    low_budget = OpenAIAdapter("o", {**oa, "image_detail": "low"}, Settings())
    assert low_budget.consumer_max_side(1280, 720) == 512  # min(600, 512)


def test_frame_budget_for_every_backend_default(monkeypatch):
    """docs/protocol.md, frame budget per backend. OpenAI ``frames_consumer: 40000`` on a
    1280x720 frame: Qwen's smart_resize of 720x1280 at 40,000 px is 140x252 (factor 28: beta =
    sqrt(921600 / 40000) = 4.8, floor(150 / 28) * 28 = 140, floor(266.7 / 28) * 28 = 252); the
    smallest long side whose fit_size keeps that grid for factors 28 and 32 is held. A frame
    within the budget stays as it is (None). ``sees_pixels: false`` (cascade): 64 px. A budget
    under 56 x 56 is refused naming the key."""
    from interactscope.streaming.adapters.base import AdapterError, FrameConsumer, smart_resize
    from interactscope.streaming.adapters.openai_backend import OpenAIAdapter

    oa = {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1",
          "api_key_optional": True, "frames_consumer": 40000}  # fmt: skip
    ad = OpenAIAdapter("o", oa, Settings())
    side = ad.consumer_max_side(1280, 720)
    assert smart_resize(720, 1280, 28, 3136, 40000) == (140, 252)
    w, h = (side, round(side * 720 / 1280 / 2) * 2)
    assert smart_resize(h, w, 28, 3136, 40000) == (140, 252) and h >= 140 and w >= 252
    assert 252 <= side < 300
    assert ad.consumer_max_side(160, 90) is None  # 14,400 px: within the budget
    assert "frames_consumer max_pixels=40000" in ad.consumer_rule()
    with pytest.raises(AdapterError, match="frames_consumer"):
        OpenAIAdapter("o", {**oa, "frames_consumer": 100}, Settings())

    class Blind(FrameConsumer):
        def __init__(self, config, settings):
            self.config, self.settings = config, settings

    assert Blind({"sees_pixels": False}, Settings()).consumer_max_side(1280, 720) == 64
    assert Blind({}, Settings()).consumer_max_side(1280, 720) is None
    capped = Blind({"sees_pixels": False}, Settings(frames={"max_side": 32}))
    assert capped.consumer_max_side(32, 18) == 32

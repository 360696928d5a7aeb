"""Backend ``transformers`` with tiny random-weight Qwen models (issue 5).

A spy on the processor's inputs proves causality: at decision time t the model got exactly
round(t * 16000) audio samples (the causal prefix itself) and no frame with pts > t, in both
Offline Probing and Online Rolling.
"""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("transformers")

from interactscope.core import registry as plugins
from interactscope.media import CausalMedia, Frame  # noqa: E402
from interactscope.streaming.adapters import registry  # noqa: E402
from interactscope.streaming.adapters.base import AdapterError  # noqa: E402
from interactscope.streaming.adapters.transformers_backend import TransformersAdapter  # noqa: E402
from interactscope.streaming.collect import run_collect  # noqa: E402
from interactscope.streaming.protocol.grid import decision_grid  # noqa: E402
from interactscope.streaming.protocol.observation import Observation, Observer  # noqa: E402
from interactscope.streaming.runlog import RunFolder  # noqa: E402
from interactscope.streaming.settings import Settings  # noqa: E402
from tests.helpers.foundation_fixtures import CITY, interaction, write_bench  # noqa: E402
from tests.helpers.tiny_qwen import tiny_omni, tiny_qwen3_vl, tiny_vl  # noqa: E402
from tests.helpers.transformers_adapter import (
    GEN,
    IT,
    VIDEO,
    SpyProcessor,
    _adapter,
    _request,
)

SR = 16000
D = 7.6  # city_speech.mp4


def _h(img: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(img).tobytes()).hexdigest()


@pytest.fixture(scope="module")
def media():
    return CausalMedia(CITY)


@pytest.fixture(scope="module")
def pts_of_frame(media):
    """sha1 of each decoded 1 fps frame -> its pts (s); every frame of the clip is distinct."""
    frames = media.frames_until(D, max_frames=1000)
    table = {_h(f.image): f.pts_s for f in frames}
    assert len(table) == len(frames) == 8
    return table


@pytest.fixture(scope="module")
def omni():
    model, proc = tiny_omni()
    return model, proc


def _video_frames(call) -> list[np.ndarray]:
    return [f for video in call.get("videos", []) for f in video]


@pytest.mark.slow
def test_offline_probing_is_causal_at_every_decision_point(omni, media, pts_of_frame):
    ad, spy = _adapter(omni)
    ob = Observer(CITY, Settings(), media=media)
    grid = decision_grid(0.0, D)
    assert grid == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 7.6]
    for t in grid:
        out = ad.respond(_request(t, ob.observe(t, IT)))
        call = spy.calls[-1]
        if t == 0:
            assert "audio" not in call  # nothing heard yet
        else:
            (wav,) = call["audio"]
            assert wav.shape == (round(t * SR),)
            np.testing.assert_array_equal(wav, media.audio_until(t))
        frames = _video_frames(call)
        pts = {pts_of_frame[_h(f)] for f in frames}
        assert max(pts) <= t
        assert pts == {float(k) for k in range(math.floor(t) + 1)}  # every causal frame
        assert len(frames) % 2 == 0  # padded for the temporal patch
        assert out.extra["n_frames"] == math.floor(t) + 1
        assert out.extra["n_frames_sent"] == len(frames)
        assert out.extra["audio_samples"] == round(t * SR)
        if t == grid[-1]:
            assert out.prompt_tokens == int(spy.inner(**call)["input_ids"].shape[1])
        assert 1 <= out.completion_tokens <= 3 and out.latency_s > 0
        assert "t = " in call["text"][0] and "<|AUDIO|>" in call["text"][0] or t == 0


def _synthetic(k: int, t: float | None = None, audio: bool = True) -> Observation:
    t = float(k - 1) if t is None else t
    frames = [Frame(i, float(i), np.full((32, 32, 3), 7 * i, np.uint8)) for i in range(k)]
    wav = np.zeros(round(t * SR), np.float32) if audio else None
    return Observation(t=t, frames=frames, n_frames_available=k, audio=wav,
                       has_audio=audio)  # fmt: skip


@pytest.mark.slow
def test_every_frame_count_from_1_to_32_is_accepted(omni):
    ad, spy = _adapter(omni, Settings(audio={"mode": "none"}))
    ad.max_new_tokens = 1
    for k in range(1, 33):
        out = ad.respond(_request(float(k - 1), _synthetic(k, audio=False)))
        frames = _video_frames(spy.calls[-1])
        assert len(frames) == k + k % 2, k
        assert out.extra["n_frames"] == k and out.extra["n_frames_sent"] == k + k % 2
        assert frames[-1][0, 0, 0] == 7 * (k - 1)  # the padding repeats the newest frame
        if k % 2:
            assert frames[-2] is frames[-1] or np.array_equal(frames[-2], frames[-1])


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 2, 17, 32])
def test_frames_as_images(omni, k):
    ad, spy = _adapter(omni, Settings(audio={"mode": "none"}), frames_as="image")
    out = ad.respond(_request(float(k - 1), _synthetic(k, audio=False)))
    call = spy.calls[-1]
    assert "videos" not in call and len(call["images"]) == k
    assert out.extra["n_frames"] == out.extra["n_frames_sent"] == k


@pytest.mark.slow
def test_configured_pixel_budget_reaches_every_video_call(omni):
    ad, spy = _adapter(omni, Settings(audio={"mode": "none"}))
    obs = _synthetic(2, audio=False)
    obs.frames = [Frame(i, float(i), np.zeros((404, 720, 3), np.uint8)) for i in range(2)]
    ad.respond(_request(1.0, obs, Settings(audio={"mode": "none"})))
    call = spy.calls[-1]
    assert call["videos_kwargs"]["size"] == {"shortest_edge": 3136, "longest_edge": 12544}
    grid = spy.inner(**call)["video_grid_thw"].tolist()
    assert grid == [[1, 4, 10]]  # 404x720 -> 56x140 px: 4x10 patches of 14 px, not 28x52


def test_audio_longer_than_the_feature_window_keeps_the_newest_part(omni):
    ad, spy = _adapter(omni)
    obs = _synthetic(2, t=12.0)
    obs.audio = np.arange(12 * SR, dtype=np.float32) / (12 * SR)
    out = ad.respond(_request(12.0, obs))
    (wav,) = spy.calls[-1]["audio"]
    assert wav.shape == (10 * SR,)  # the tiny feature extractor's 10 s window
    assert wav[0] == obs.audio[2 * SR] and wav[-1] == obs.audio[-1]
    assert out.extra["audio_dropped_s"] == 2.0 and out.extra["audio_samples"] == 12 * SR


@pytest.mark.slow
def test_a_4_ms_audio_step_is_zero_padded_in_front_never_extended(omni):
    ad, spy = _adapter(omni)
    obs = _synthetic(5, t=4.004)  # carphone: the grid ends at D = 4.004 s
    obs.audio = np.ones(64064, np.float32)
    session = ad.open_session(IT, VIDEO)
    session.step(_request(4.0, _synthetic(5, t=4.0)))
    out = session.step(_request(4.004, obs))
    last = spy.calls[-1]["audio"][-1]
    assert last.shape == (1600,) and out.extra["audio_padded_samples"] == 1600 - 64
    assert not np.any(last[:1536]) and np.all(last[1536:] == 1.0)  # the 64 real samples last
    assert out.extra["audio_samples"] == 64064


@pytest.mark.slow
def test_online_rolling_appends_only_what_is_new_and_keeps_own_answers(omni, media, pts_of_frame):
    ad, spy = _adapter(omni, session_cache=False)
    it = IT.model_copy(update={"query": IT.query.model_copy(update={"time_s": 2.5})})
    ob = Observer(CITY, Settings(), media=media)
    session = ad.open_session(it, VIDEO)
    grid = decision_grid(2.5, D)
    assert grid == [2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 7.6]
    outs = []
    for i, t in enumerate(grid):
        n_before = len(spy.calls)
        out = session.step(_request(t, ob.observe(t, it), it=it))
        assert len(spy.calls) == n_before + 1
        call = spy.calls[-1]
        # the whole session so far: its audio parts concatenate to exactly the prefix [0, t]
        wav = np.concatenate(call["audio"])
        assert wav.shape == (round(t * SR),)
        np.testing.assert_array_equal(wav, media.audio_until(t))
        chunks = [len(a) for a in call["audio"]]
        assert chunks[0] == 40000  # the replay 0..q
        assert chunks[1:] == [
            round(b * SR) - round(a * SR) for a, b in zip(grid[:i], grid[1 : i + 1], strict=True)
        ]
        pts = [pts_of_frame[_h(f)] for f in _video_frames(call)]
        assert max(pts) <= t
        assert sorted(set(pts)) == [float(k) for k in range(math.floor(t) + 1)]
        assert out.extra["n_frames"] == math.floor(t) + 1  # each frame sent once
        if outs:  # the model's previous answer is in the conversation it is re-shown
            assert (outs[-1].text.strip() or "<SILENT>") in call["text"][0]
        outs.append(out)
    roles = [m.role for m in session.messages]
    assert roles == ["system", "user", "assistant"] + ["user", "assistant"] * (len(grid) - 1)
    answers = [m.content[0].text for m in session.messages if m.role == "assistant"]
    assert answers == [o.text.strip() or "<SILENT>" for o in outs]
    with pytest.raises(AdapterError, match="forward in time"):
        session.step(_request(3.0, ob.observe(3.0, it), it=it))
    session.close()
    assert session.messages == []


@pytest.mark.slow
def test_online_session_keeps_at_most_frames_max_frames(omni, media, pts_of_frame):
    capped = Settings(frames={"max": 3})
    ad, spy = _adapter(
        omni, capped, session_cache=False, session_reprefill_every=1, session_history="all"
    )
    ob = Observer(CITY, capped, media=media)
    session = ad.open_session(IT, VIDEO)
    for t in [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]:
        out = session.step(_request(t, ob.observe(t, IT), capped))
        pts = sorted(pts_of_frame[_h(f)] for f in _video_frames(spy.calls[-1]))
        newest = [float(k) for k in range(max(0, math.floor(t) - 2), math.floor(t) + 1)]
        assert sorted(set(pts)) == newest  # the 3 newest frames, never more
    assert out.extra["session_frames_dropped"] == 3  # seconds 0, 1, 2
    wav = np.concatenate(spy.calls[-1]["audio"])
    np.testing.assert_array_equal(wav, media.audio_until(5.0))  # history all: audio all kept


def test_vl_model_gets_frames_and_transcript_text_never_audio():
    ad, spy = _adapter(tiny_vl(), Settings(audio={"mode": "asr"}))
    obs = _synthetic(3)
    obs.audio = None
    obs.transcript = "he was not an ill disposed young man"
    out = ad.respond(_request(2.0, obs, Settings(audio={"mode": "asr"})))
    call = spy.calls[-1]
    assert "audio" not in call and len(_video_frames(call)) == 4
    assert (
        "Speech heard so far (automatic transcript): he was not an ill disposed young man"
        in (call["text"][0])
    )
    assert "<|video_pad|>" in call["text"][0] and out.extra["n_frames"] == 3


def test_qwen3_vl_gets_the_true_frame_times_of_capped_frames():
    none = Settings(audio={"mode": "none"})
    ad, spy = _adapter(tiny_qwen3_vl(), none)
    obs = _synthetic(4, t=40.0, audio=False)
    obs.frames = [Frame(s, float(s), np.full((32, 32, 3), s, np.uint8)) for s in (0, 13, 26, 40)]
    obs.n_frames_available = 41  # the uniform cap kept seconds 0, 13, 26, 40
    out = ad.respond(_request(40.0, obs, none))
    call = spy.calls[-1]
    (meta,) = call["videos_kwargs"]["video_metadata"]
    assert meta.frames_indices == [0, 13, 26, 40] and meta.fps == 1.0
    prompt = spy.tokenizer.decode(spy.inner(**call)["input_ids"][0])
    # one timestamp per temporal patch (2 frames): the mean of its frame times
    assert "<6.5 seconds>" in prompt and "<33.0 seconds>" in prompt
    assert out.extra["n_frames"] == 4 and out.completion_tokens >= 1


def test_vl_model_refuses_native_audio():
    model, proc = tiny_vl()
    ad = TransformersAdapter("tiny-vl", {**GEN, "family": "vl"}, Settings(), model=model,
                             processor=proc)  # fmt: skip
    with pytest.raises(AdapterError, match="cannot take native audio"):
        ad.prepare(None)
    ad.family = "vl"
    with pytest.raises(AdapterError, match="audio part"):
        ad.load()
        ad.respond(_request(2.0, _synthetic(3)))


def test_describe_and_missing_checkpoint():
    ad = TransformersAdapter("x", {"backend": "transformers"}, Settings())
    with pytest.raises(AdapterError, match="checkpoint"):
        ad.load()
    model, proc = tiny_omni()
    ad = TransformersAdapter("tiny", GEN, Settings(), model=model, processor=proc)
    ad.prepare(None)
    d = ad.describe()
    assert d["family"] == "omni" and d["model_type"] == "qwen2_5_omni_thinker"
    assert d["temperature"] == 0.0 and d["max_new_tokens"] == 3


class TinyOmni(TransformersAdapter):
    """The tiny thinker behind the registry, as `interactscope collect` builds adapters."""

    def __init__(self, name, config, settings):
        model, proc = tiny_omni()
        super().__init__(name, config, settings, model=model, processor=SpyProcessor(proc))


class TinyVL(TransformersAdapter):
    def __init__(self, name, config, settings):
        model, proc = tiny_vl()
        super().__init__(name, config, settings, model=model, processor=SpyProcessor(proc))


@pytest.mark.parametrize(
    "backend,protocol,audio",
    [
        ("tiny-omni", "offline", "native"),
        ("tiny-omni", "online", "native"),
        ("tiny-vl", "offline", "none"),
    ],  # fmt: skip
)
@pytest.mark.slow
def test_collect_end_to_end_through_the_driver(tmp_path, monkeypatch, backend, protocol, audio):
    monkeypatch.setitem(plugins.table("backends"), "tiny-omni", f"{__name__}:TinyOmni")
    monkeypatch.setitem(plugins.table("backends"), "tiny-vl", f"{__name__}:TinyVL")
    cfg = tmp_path / f"{backend}.yaml"
    cfg.write_text(json.dumps({"backend": backend, **GEN, "settings": {"audio": {"mode": audio}}}))
    late = [{"id": "k1", "reference": "x", "time_s": 6.0}]
    root = write_bench(tmp_path / "b", [interaction("a", q=4.5, targets=late)])
    run = tmp_path / "run"
    summary = run_collect(model=str(cfg), bench=root, out=run, progress=False, protocol=protocol)
    recs = RunFolder(run).responses()
    assert [r.t for r in recs] == [4.5, 5.0, 6.0, 7.0, 7.6]
    assert summary.errors == 0 and all(r.error is None for r in recs)
    assert all(r.prompt_tokens and r.completion_tokens for r in recs)
    assert [r.model_extra["n_frames"] for r in recs] == [5, 6, 7, 8, 8]
    if audio == "native":
        assert [r.model_extra["audio_samples"] for r in recs] == [72000, 80000, 96000, 112000,
                                                                   121600]  # fmt: skip


@pytest.mark.slow
def test_missing_weights_fail_with_a_clear_message_and_no_download(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    name, cfg = registry.load_model_config("qwen2.5-omni-3b")
    assert cfg["backend"] == "transformers" and cfg["checkpoint"] == "Qwen/Qwen2.5-Omni-3B"
    ad = registry.build_adapter(name, cfg, Settings())
    with pytest.raises(AdapterError, match="huggingface-cli download Qwen/Qwen2.5-Omni-3B"):
        ad.prepare(None)
    assert not any((tmp_path / "hf").rglob("*.safetensors"))


# ------------------------------------------------------------------------------ frame cache
def _processed(engine, reqs, frames_as):
    from interactscope.streaming.protocol.prompts import build_messages

    out = []
    for r in reqs:
        rendered = engine.render(build_messages(r, frames_as=frames_as))
        out.append((engine.process(rendered), rendered.frames_reused))
    return out


def _engine(model_proc, **opts):
    from interactscope.engines.qwen_mm import QwenEngine
    from interactscope.engines.qwen_options import QwenOptions

    model, proc = model_proc
    eng = QwenEngine(QwenOptions.model_validate({**GEN, **opts}), "t", model=model, processor=proc)
    eng.load()
    return eng


@pytest.mark.parametrize(
    "frames_as,hits,misses",
    [
        # video: frames 0..k padded to pairs (1+1, 2, 3+1, ..., 8, 8: 48 frames sent); each of
        # the 8 distinct frames processed once, 48 - 8 reused
        ("video", 40, 8),
        # image: each of the 8 distinct frames once; 1+2+..+8+8 = 44 frames sent, 36 reused
        ("image", 36, 8),
        # video_pairs: the same 48 frames sent (items of 2, the lone newest padded), 8 processed
        ("video_pairs", 40, 8),
    ],
)
@pytest.mark.slow
def test_frame_cache_gives_the_same_processor_outputs_processing_each_frame_once(
    omni, media, frames_as, hits, misses
):
    ob = Observer(CITY, Settings(), media=media)
    reqs = [_request(t, ob.observe(t, IT)) for t in decision_grid(0.0, D)]
    plain = _processed(_engine(omni, frame_cache_mb=0, frames_as=frames_as), reqs, frames_as)
    cached_engine = _engine(omni, frames_as=frames_as)
    cached = _processed(cached_engine, reqs, frames_as)
    for (a, none), (b, reused) in zip(plain, cached, strict=True):
        assert none is None and reused is not None
        assert sorted(a.keys()) == sorted(b.keys())
        for k in a.keys():
            assert torch_equal(a[k], b[k]), k
    fc = cached_engine.frame_cache
    assert (fc.hits, fc.misses) == (hits, misses)
    assert sum(r for _, r in cached) == hits
    res = cached_engine.chat(_request_messages(reqs[-1], frames_as))
    assert res.raw["frames_reused"] == 8  # every frame of the clip end was seen at 7 s


def _request_messages(req, frames_as):
    from interactscope.streaming.protocol.prompts import build_messages

    return build_messages(req, frames_as=frames_as)


def torch_equal(a, b) -> bool:
    import torch

    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and bool(torch.equal(a, b))
    return a == b


def test_frame_cache_leaves_calls_it_cannot_reproduce_to_the_processor(media):
    """Qwen2.5-VL's video processor returns metadata the processor reads: not cached (the
    images still are); outputs equal the plain processor's."""
    asr = Settings(audio={"mode": "none"})
    ob = Observer(CITY, asr, media=media)
    reqs = [_request(t, ob.observe(t, IT), asr) for t in (1.0, 2.0)]
    plain = _processed(_engine(tiny_vl(), frame_cache_mb=0), reqs, "video")
    eng = _engine(tiny_vl())
    cached = _processed(eng, reqs, "video")
    for (a, _), (b, reused) in zip(plain, cached, strict=True):
        assert reused == 0 and all(torch_equal(a[k], b[k]) for k in a.keys())
    assert (eng.frame_cache.hits, eng.frame_cache.misses) == (0, 0)


class Qwen2VLVideoProcessor:
    """A stand-in with the real class name and the real patch layout at 1 channel pair: frames
    are padded to pairs by repeating the last one; a pair (a, b) of frames filled with a and b
    gives one pixel row [a, b, a, b] (channels 2 x temporal 2 x patch 1x1, float32, 16 bytes),
    a video of n frames grid (n / 2, 1, 1)."""

    temporal_patch_size = 2
    patch_size = 1

    def __init__(self):
        self.frames = 0

    def __call__(self, videos, **kw):
        import torch
        from transformers.feature_extraction_utils import BatchFeature

        rows, grids = [], []
        for video in videos:
            self.frames += len(video)
            ks = [float(f[0, 0, 0]) for f in video]
            ks += ks[-1:] * (len(ks) % 2)
            rows += [[a, b, a, b] for a, b in zip(ks[::2], ks[1::2], strict=True)]
            grids.append([len(ks) // 2, 1, 1])
        return BatchFeature({"pixel_values_videos": torch.tensor(rows),
                             "video_grid_thw": torch.tensor(grids)})  # fmt: skip


def test_frame_cache_assembles_pieces_in_time_order_and_evicts_least_recently_used():
    from types import SimpleNamespace

    from interactscope.engines.qwen_frames import FrameCache

    inner = Qwen2VLVideoProcessor()
    proc = SimpleNamespace(video_processor=inner)
    video = [np.full((2, 2, 3), k, np.uint8) for k in range(6)]  # 6 frames, 3 pairs
    kw = {"do_sample_frames": False, "return_tensors": "pt"}
    # stored: 6 frames of 8 bytes (1 patch x 2 channels) = 48 bytes; pairs are not stored (each
    # is written from its frames). 96 and 64 bytes hold every frame: the second call processes
    # none. 40 bytes: frame 5 pushes out frame 0 (least recently used): frame 0 is processed
    # again (and pushes out frame 1, which the same call then reads from its own result)
    for max_bytes, second_call_frames in ((96, 0), (64, 0), (40, 1)):
        cache, inner.frames = FrameCache(max_bytes), 0
        with cache.installed(proc):
            out = proc.video_processor([video], **kw)
            assert isinstance(proc.video_processor, type(proc.video_processor))
        assert proc.video_processor is inner  # restored
        assert out["pixel_values_videos"].tolist() == [[0, 1, 0, 1], [2, 3, 2, 3], [4, 5, 4, 5]]
        assert out["video_grid_thw"].tolist() == [[3, 1, 1]]
        with cache.installed(proc):
            again = proc.video_processor([video], **kw)
        assert inner.frames == 6 + second_call_frames
        assert again["pixel_values_videos"].tolist() == out["pixel_values_videos"].tolist()
    with FrameCache().installed(proc):  # sampling frames: not cacheable, straight through
        inner.frames = 0
        proc.video_processor([video[:4]], do_sample_frames=True)
        proc.video_processor([video[:3]], do_sample_frames=False)  # odd count: straight through
    assert inner.frames == 7


def test_frame_cache_pairs_frames_anew_without_processing_them_again():
    """Past the frame cap the uniform picks shift, so frames meet new partners: frames 1, 2, 3
    were processed in the first call; the second call's pairs (1, 2) and (3, 4) are built from
    them, only frame 4 goes to the processor; the two videos of one call share one processor
    call for their new frames."""
    from types import SimpleNamespace

    from interactscope.engines.qwen_frames import FrameCache

    inner = Qwen2VLVideoProcessor()
    proc = SimpleNamespace(video_processor=inner)
    f = [np.full((2, 2, 3), k, np.uint8) for k in range(6)]
    kw = {"do_sample_frames": False, "return_tensors": "pt"}
    cache = FrameCache()
    with cache.installed(proc):
        proc.video_processor([f[0:4]], **kw)
        out = proc.video_processor([f[1:5], [f[5], f[0]]], **kw)
    assert out["pixel_values_videos"].tolist() == [[1, 2, 1, 2], [3, 4, 3, 4], [5, 0, 5, 0]]
    assert out["video_grid_thw"].tolist() == [[2, 1, 1], [1, 1, 1]]
    assert inner.frames == 4 + 2  # frames 4 and 5
    assert (cache.hits, cache.misses) == (10 - 6, 6)  # 10 frames sent, 6 distinct


def test_frame_cache_processes_new_frames_two_at_a_time_as_one_temporal_patch():
    """5 new frames of one size and 1 of another: videos of 2, 2 and 1 frames, and the one frame
    of the other size alone (a temporal patch per video, so no copies padded in but the last
    one's); each frame's rows are its own, as if processed alone."""
    from types import SimpleNamespace

    from interactscope.engines.qwen_frames import FrameCache

    sent: list[list[int]] = []

    def call(self, videos, **kw):
        sent.append(sorted(len(v) for v in videos))
        return Qwen2VLVideoProcessor.__call__(self, videos, **kw)

    spy = type("Qwen2VLVideoProcessor", (Qwen2VLVideoProcessor,), {"__call__": call})()
    proc = SimpleNamespace(video_processor=spy)
    small = [np.full((2, 2, 3), k, np.uint8) for k in range(5)]
    big = np.full((4, 2, 3), 9, np.uint8)
    cache = FrameCache()
    with cache.installed(proc):
        out = proc.video_processor([[*small, small[4]], [big, big]], do_sample_frames=False)
    assert sent == [[1, 1, 2, 2]]  # the 2x2 frames as 2 + 2 + 1, the 4x2 one alone
    assert (spy.frames, cache.misses, cache.hits) == (6, 6, 2)
    rows = [[0, 1, 0, 1], [2, 3, 2, 3], [4, 4, 4, 4], [9, 9, 9, 9]]
    assert out["pixel_values_videos"].tolist() == rows
    assert out["video_grid_thw"].tolist() == [[3, 1, 1], [1, 1, 1]]


def test_frame_cache_equals_the_qwen_video_processor_on_shifting_picks():
    """The real ``Qwen2VLVideoProcessor`` (resize to a multiple of 28, bicubic, rescale,
    normalise, patchify): videos whose frames are re-paired at every call (as uniform picks past
    the frame cap) give exactly the processor's own tensors, each frame processed once."""
    from types import SimpleNamespace

    import torch
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import (
        Qwen2VLVideoProcessor as Real,
    )

    from interactscope.engines.qwen_frames import FrameCache

    real = Real(min_pixels=56 * 56, max_pixels=28 * 28 * 6)
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, (50, 70, 3), dtype=np.uint8) for _ in range(9)]
    picks = [[0, 1, 2, 3], [0, 2, 3, 4], [1, 2, 4, 5], [0, 3, 5, 6, 7, 8]]
    kw = {"do_sample_frames": False, "return_tensors": "pt", "cap_pixels_per_frame": False}
    proc = SimpleNamespace(video_processor=real)
    cache = FrameCache()
    for p in picks:
        video = [frames[i] for i in p]
        want = real([video], **kw)
        with cache.installed(proc):
            got = proc.video_processor([video], **kw)
        assert got["video_grid_thw"].tolist() == want["video_grid_thw"].tolist()
        assert got["video_grid_thw"][0, 1:].tolist() == [4, 4]  # 50x70 resized to 56x56
        assert torch.equal(got["pixel_values_videos"], want["pixel_values_videos"])
    assert cache.misses == 9 and cache.hits == 18 - 9


def test_frame_cache_takes_the_items_by_keyword_as_earlier_transformers_5_pass_them():
    """transformers 5.19's Qwen2.5-Omni processor calls ``video_processor(videos=...)`` (5.24:
    positionally): both are answered from the cache, and a call it cannot cache goes through in
    the caller's form."""
    from types import SimpleNamespace

    from interactscope.engines.qwen_frames import FrameCache

    inner = Qwen2VLVideoProcessor()
    proc = SimpleNamespace(video_processor=inner)
    video = [np.full((2, 2, 3), k, np.uint8) for k in range(4)]
    kw = {"do_sample_frames": False, "return_tensors": "pt"}
    cache = FrameCache()
    with cache.installed(proc):
        by_name = proc.video_processor(videos=[video], **kw)
        positional = proc.video_processor([video], **kw)
        odd = proc.video_processor(videos=[video[:3]], do_sample_frames=False)  # not cacheable
    assert by_name["pixel_values_videos"][:, 0].tolist() == [0, 2]
    assert positional["pixel_values_videos"].tolist() == by_name["pixel_values_videos"].tolist()
    assert odd["video_grid_thw"].tolist() == [[2, 1, 1]]  # the processor's own padding
    assert inner.frames == 4 + 3 and (cache.hits, cache.misses) == (4, 4)


def test_rope_index_is_found_on_the_inner_model_or_the_thinker():
    """transformers 5.24+: ``thinker.model`` (``Qwen2_5OmniThinkerModel``) has
    ``get_rope_index``; 5.19: only the thinker has it, its ``model`` is the text-only model."""
    from types import SimpleNamespace

    from interactscope.engines.qwen_session import rope_index_fn

    def new(**kw):
        return "new"

    def old(**kw):
        return "old"

    assert rope_index_fn(SimpleNamespace(model=SimpleNamespace(get_rope_index=new)))() == "new"
    assert rope_index_fn(SimpleNamespace(model=SimpleNamespace(), get_rope_index=old))() == "old"
    with pytest.raises(AttributeError, match="no get_rope_index"):
        rope_index_fn(SimpleNamespace(model=SimpleNamespace()))

"""Host work outside the model (issue 29, outside-model share): torch's threads limited to
``host_threads`` around the processor and the batch join, the model's own threads untouched."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("transformers")

from interactscope.engines.base import AudioPart, Message, TextPart, VideoPart  # noqa: E402
from interactscope.engines.qwen_mm import QwenEngine, host_threads  # noqa: E402
from interactscope.engines.qwen_options import QwenOptions  # noqa: E402
from tests.helpers.tiny_qwen import tiny_omni  # noqa: E402

SR = 16000


def _engine(**opts) -> QwenEngine:
    model, proc = tiny_omni()
    o = {
        "checkpoint": "tiny",
        "frames_as": "video",
        "generation": {"max_new_tokens": 4, "temperature": 0.0},
        "processor_kwargs": {"min_pixels": 56 * 56, "max_pixels": 112 * 112},
        **opts,
    }
    eng = QwenEngine(QwenOptions.model_validate(o), "t", model=model, processor=proc)
    eng.load()
    return eng


def _conv(n: int, seed: int = 0) -> list[Message]:
    rng = np.random.default_rng(seed)
    frames = [rng.integers(0, 256, (56, 56, 3), dtype=np.uint8) for _ in range(n)]
    audio = rng.normal(0, 0.1, n * SR).astype(np.float32)
    parts = [VideoPart(frames=frames, pts_s=[float(k) for k in range(n)]), AudioPart(audio=audio)]
    return [Message(role="user", content=[*parts, TextPart(text=f"q{n}")])]


def test_host_threads_sets_and_restores():
    prev = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with host_threads(1):
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        with host_threads(None):
            assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(prev)


@pytest.mark.parametrize(("setting", "seen"), [(1, 1), (None, 2)])
def test_processor_and_join_run_on_host_threads_generate_on_the_models(setting, seen):
    eng = _engine(host_threads=setting)
    assert QwenOptions().host_threads == 1  # the default
    counts: dict[str, list[int]] = {"features": [], "generate": []}
    features, generate = eng.audio_cache.features, eng.generator.generate

    def spy_features(*a, **k):
        counts["features"].append(torch.get_num_threads())
        return features(*a, **k)

    def spy_generate(*a, **k):
        counts["generate"].append(torch.get_num_threads())
        return generate(*a, **k)

    eng.audio_cache.features, eng.generator.generate = spy_features, spy_generate
    prev = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        eng.chat_batch([_conv(2), _conv(4)])
    finally:
        torch.set_num_threads(prev)
    assert counts == {"features": [seen, seen], "generate": [2]}


def test_answers_do_not_depend_on_host_threads():
    convs = [_conv(2, 1), _conv(4, 2)]
    a = [r.text for r in _engine(host_threads=None).chat_batch(convs)]
    b = [r.text for r in _engine().chat_batch(convs)]
    assert a == b


def test_join_buffer_reused_with_equal_batches():
    from interactscope.engines.qwen_mm import collate_left

    eng = _engine()
    pad = eng._pad_id()
    bufs: dict = {}
    big = [eng.process(eng.render(_conv(n, n))) for n in (2, 4, 6)]
    small = [eng.process(eng.render(_conv(n, n))) for n in (2, 4)]
    first = collate_left(big, pad, buffers=bufs)
    ptr = bufs["pixel_values_videos"].data_ptr()
    rows = int(first["pixel_values_videos"].shape[0])
    for k, v in collate_left(big, pad).items():  # the same tensors as without a buffer
        assert torch.equal(first[k], v), k
    # 3 rows of 1, 2 and 3 frame pairs of 56x56 (4x4 patches of 14 px): 6 x 16 pixel rows
    assert rows == 96 and bufs["pixel_values_videos"].shape[0] == 96
    second = collate_left(small, pad, buffers=bufs)  # 48 rows fit: written into the same buffer
    assert second["pixel_values_videos"].data_ptr() == ptr
    for k, v in collate_left(small, pad).items():
        assert torch.equal(second[k], v), k
    bigger = [eng.process(eng.render(_conv(n, n))) for n in (2, 4, 6, 8)]
    collate_left(bigger, pad, buffers=bufs)  # 160 rows do not fit: a new buffer is kept
    assert bufs["pixel_values_videos"].shape[0] == 160


def test_validation_counts_videos_without_stacking_their_frames(monkeypatch):
    import transformers.processing_utils as pu

    from interactscope.engines.qwen_mm import counting_validation

    eng = _engine()
    r = eng.render(_conv(6, 5))
    seen: list[list[int]] = []
    stack = pu.make_batched_videos

    def spy(videos):
        seen.append([len(v) for v in videos])
        return stack(videos)

    monkeypatch.setattr(pu, "make_batched_videos", spy)
    fast = eng.process(r)
    assert seen == [[1]]  # one video, validated from its first frame (6 frames without the hook)
    eng.frame_cache = eng.audio_cache = None
    eng.options = eng.options.model_copy(update={"host_threads": None})
    with monkeypatch.context() as m:  # the library's own path, as before the hook
        m.setattr("interactscope.engines.qwen_mm.counting_validation", lambda p: _nothing())
        plain = eng.process(r)
    assert seen[-1] == [6]
    assert sorted(fast) == sorted(plain)
    for k in plain:
        assert torch.equal(torch.as_tensor(fast[k]), torch.as_tensor(plain[k])), k
    kw = eng.processor_inputs(r)
    kw["videos"] = kw["videos"] * 2  # two videos for one placeholder: still refused
    with counting_validation(eng.processor), pytest.raises(ValueError, match="VIDEO"):
        eng.processor(**kw)
    assert "validate_inputs" not in vars(eng.processor)  # removed after


def _nothing():
    import contextlib

    return contextlib.nullcontext()

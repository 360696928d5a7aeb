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


# --------------------------------------------------------------------------- placeholder runs
def test_placeholder_runs_are_tokenized_once_with_the_same_ids(monkeypatch):
    """6 frames of 56x56 (4x4 patches of 14 px) are 3 temporal patches of 2x2 merged patches:
    12 ``<|VIDEO|>`` ids, which the tokenizer now reads as one placeholder of the shortened
    text; every processor output equals the library's own."""
    eng = _engine()
    r = eng.render(_conv(6, 5))
    tok = eng.processor.tokenizer
    seen: list[str] = []
    call = type(tok).__call__

    def spy(self, text=None, *a, **kw):
        seen.append(text[0] if isinstance(text, list) else text)
        return call(self, text, *a, **kw)

    monkeypatch.setattr(type(tok), "__call__", spy)
    fast = eng.process(r)
    assert eng.processor.tokenizer is tok  # restored
    with monkeypatch.context() as m:  # the library's own path, as before the stand-in
        m.setattr("interactscope.engines.qwen_mm.run_tokenizing", lambda p: _nothing())
        plain = eng.process(r)
    video = tok.convert_tokens_to_ids("<|VIDEO|>")
    assert int((plain["input_ids"] == video).sum()) == 12
    assert seen[-1].count("<|VIDEO|>") == 12
    assert seen[0].count("<|VIDEO|>") == 1 and seen[0].count("<|AUDIO|>") == 1
    assert sorted(fast) == sorted(plain)
    for k in plain:
        x, y = torch.as_tensor(fast[k]), torch.as_tensor(plain[k])
        if k == "input_features":  # a later call's log-mel is incremental: float-level equal
            assert x.shape == y.shape and torch.allclose(x, y, rtol=0, atol=1e-6), k
        else:
            assert torch.equal(x, y), k


def test_run_tokenizer_repeats_each_placeholder_id_by_its_run():
    from interactscope.engines.qwen_tokens import run_tokenizing

    proc = _engine().processor
    tok = proc.tokenizer
    v, a = tok.convert_tokens_to_ids("<|VIDEO|>"), tok.convert_tokens_to_ids("<|AUDIO|>")
    pieces = [tok("take a")["input_ids"], [v] * 3, tok(" photo")["input_ids"], [a] * 2, [v]]
    want = [i for p in pieces for i in p]
    text = "take a" + "<|VIDEO|>" * 3 + " photo" + "<|AUDIO|>" * 2 + "<|VIDEO|>"
    kw = {"return_tensors": "pt", "padding": True}
    with run_tokenizing(proc):
        assert type(proc.tokenizer).__name__ == "_RunTokenizer"
        got = proc.tokenizer([text], **kw)
        # truncation would cut the short text elsewhere: handed to the tokenizer as it is
        cut = proc.tokenizer([text], truncation=True, max_length=4, **kw)
    assert proc.tokenizer is tok
    assert got["input_ids"].tolist() == [want]
    assert got["attention_mask"].tolist() == [[1] * len(want)]
    assert cut["input_ids"].tolist() == [want[:4]]


def test_placeholder_counts_checked_by_counting_with_the_librarys_error():
    from interactscope.engines.qwen_tokens import run_tokenizing

    proc = _engine().processor
    v = proc.tokenizer.convert_tokens_to_ids("<|VIDEO|>")
    a, b = (proc.tokenizer(c)["input_ids"][0] for c in "ab")
    text = ["a<|VIDEO|><|VIDEO|>b<|VIDEO|>"]
    with run_tokenizing(proc):
        assert "_check_special_mm_tokens" in vars(proc)  # the counting check, while inside
        check = proc._check_special_mm_tokens
        assert check(text, {"input_ids": torch.tensor([[a, v, v, b, v]])}, ["video"]) is None
        with pytest.raises(ValueError, match=r"Mismatch in `video` token count.*ids=\[2\].*\[3\]"):
            check(text, {"input_ids": torch.tensor([[a, v, v, b]])}, ["video"])  # truncated
    assert "_check_special_mm_tokens" not in vars(proc)

"""Batched generation in the transformers engine: one left-padded ``generate`` per Offline
Probing batch, with the same greedy answers as one request at a time (tiny random models)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("torchvision")
pytest.importorskip("transformers")

import torch  # noqa: E402

from interactscope.engines.base import EngineError  # noqa: E402
from interactscope.engines.qwen_mm import QwenEngine, collate_left  # noqa: E402
from interactscope.engines.qwen_options import QwenOptions  # noqa: E402
from interactscope.streaming.protocol.observation import Observer  # noqa: E402
from interactscope.streaming.settings import Settings  # noqa: E402
from tests.helpers.foundation_fixtures import CITY  # noqa: E402
from tests.helpers.tiny_qwen import tiny_omni, tiny_vl  # noqa: E402
from tests.helpers.transformers_adapter import IT, _adapter, _request  # noqa: E402

GRID = [0.0, 1.0, 2.0, 3.5, 5.0, 7.6]  # t = 0: no audio yet; 7.6: the clip end
EIGHT = {"generation": {"max_new_tokens": 8, "temperature": 0}}


@pytest.fixture(scope="module")
def observer():
    return Observer(CITY, Settings())


def _answers(outs):
    return [(o.text, o.prompt_tokens, o.completion_tokens) for o in outs]


@pytest.mark.slow
@pytest.mark.parametrize("frames_as", ["video", "image"])
def test_batched_greedy_answers_equal_one_at_a_time(observer, frames_as):
    """Prompts of 357..689 tokens (left padding up to 332 tokens) give the same 8 greedy tokens,
    prompt and completion counts batched as alone; the batch was one generate call."""
    ad, _ = _adapter(tiny_omni(), Settings(), frames_as=frames_as, **EIGHT)
    reqs = [_request(t, observer.observe(t, IT)) for t in GRID]
    single = [ad.respond(r) for r in reqs]
    calls = []
    gen = ad.engine.generator
    real = gen.generate

    def spy(**kw):
        calls.append(kw["input_ids"].shape)
        return real(**kw)

    gen.generate = spy
    try:
        batch = ad.respond_batch(reqs)
    finally:
        del gen.generate
    assert calls == [(len(GRID), max(o.prompt_tokens for o in single))]
    assert _answers(batch) == _answers(single)
    assert len({o.prompt_tokens for o in single}) == len(GRID)  # the padding was exercised
    for b, s in zip(batch, single, strict=True):
        assert b.extra["batch_size"] == len(GRID)
        assert b.extra["n_frames"] == s.extra["n_frames"]
        assert b.latency_s == pytest.approx(b.extra["batch_wall_s"] / len(GRID), abs=1e-3)


@pytest.mark.slow
def test_batched_vl_answers_equal_one_at_a_time(observer):
    """Qwen2.5-VL (3-D rotary positions from the attention mask) under left padding."""
    asr = Settings(audio={"mode": "none"})
    ad, _ = _adapter(tiny_vl(), asr, **EIGHT)
    ob = Observer(CITY, asr)
    reqs = [_request(t, ob.observe(t, IT), asr) for t in GRID]
    assert _answers(ad.respond_batch(reqs)) == _answers([ad.respond(r) for r in reqs])


def test_collate_left_pads_in_front_and_concatenates_media():
    rows = [
        {"input_ids": torch.tensor([[1, 2, 3]]), "attention_mask": torch.ones(1, 3, dtype=int),
         "grid": torch.tensor([[1, 2, 2]]), "sec": [0.5]},
        {"input_ids": torch.tensor([[4, 5]]), "attention_mask": torch.ones(1, 2, dtype=int)},
        {"input_ids": torch.tensor([[6]]), "attention_mask": torch.ones(1, 1, dtype=int),
         "grid": torch.tensor([[1, 4, 4], [1, 2, 4]]), "sec": [1.0, 2.0]},
    ]  # fmt: skip
    out = collate_left(rows, pad_id=0)
    assert out["input_ids"].tolist() == [[1, 2, 3], [0, 4, 5], [0, 0, 6]]
    assert out["attention_mask"].tolist() == [[1, 1, 1], [0, 1, 1], [0, 0, 1]]
    assert out["grid"].tolist() == [[1, 2, 2], [1, 4, 4], [1, 2, 4]]
    assert out["sec"] == [0.5, 1.0, 2.0]
    bad = [{**rows[0], "x": torch.zeros(1, 2)}, {**rows[1], "x": torch.zeros(1, 3)}]
    with pytest.raises(ValueError, match="cannot batch 'x'"):
        collate_left(bad, pad_id=0)


def _engine():
    model, proc = tiny_omni()
    eng = QwenEngine(QwenOptions.model_validate(EIGHT), "tiny", model=model, processor=proc)
    eng.load()
    return eng


def _conv(text: str, frames: int = 0):
    parts = [{"type": "text", "text": text}]
    if frames:
        img = [np.full((56, 56, 3), 40 * k, np.uint8) for k in range(frames)]
        parts.append({"type": "video", "video": img, "pts_s": [float(k) for k in range(frames)]})
    return [{"role": "user", "content": parts}]


@pytest.mark.slow
def test_a_bad_conversation_fails_its_slot_and_the_rest_is_batched():
    eng = _engine()
    convs = [_conv("Take a photo.", 2), [{"role": "user", "content": [{"type": "bogus"}]}],
             _conv("request a")]  # fmt: skip
    out = eng.chat_batch(convs)
    assert isinstance(out[1], EngineError) and "bogus" in str(out[1])
    assert [o.raw["batch_size"] for o in (out[0], out[2])] == [2, 2]
    alone = [eng.chat(convs[0]), eng.chat(convs[2])]
    assert [o.text for o in (out[0], out[2])] == [o.text for o in alone]
    assert eng.chat_batch(convs[:1])[0].raw.get("batch_size") is None  # one: plain chat
    assert all(isinstance(o, EngineError) for o in eng.chat_batch(convs, bogus_option=1))


@pytest.mark.slow
def test_a_failed_batched_generate_is_halved_down_to_one_at_a_time(caplog):
    """Out of memory above 2 rows: 5 -> 2 + 3 -> 2 + (1 + 2); above 0 rows: one chat each."""
    eng = _engine()
    convs = [_conv("Take a photo.", 2), _conv("request a"), _conv("request b", 4),
             _conv("Take a photo."), _conv("request a", 2)]  # fmt: skip
    want = [eng.chat(c).text for c in convs]
    real = eng._answer_rows
    for limit, sizes in ((2, [2, 2, 1, 2, 2]), (0, [None] * 5)):

        def boom(rows, *a, limit=limit):
            if len(rows) > limit:
                raise RuntimeError("CUDA out of memory")
            real(rows, *a)

        eng._answer_rows = boom
        with caplog.at_level(logging.WARNING):
            out = eng.chat_batch(convs)
        assert [o.text for o in out] == want
        assert [o.raw.get("batch_size") for o in out] == sizes
        assert "out of memory" in caplog.text


# ------------------------------------------------------------------------------ text causal LM
@pytest.fixture(scope="module")
def tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    from tests.helpers.tiny_qwen import OMNI_SPECIAL, OMNI_TEMPLATE, _tokenizer

    tok = _tokenizer(OMNI_SPECIAL, OMNI_TEMPLATE)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=2048)  # fmt: skip
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).eval()
    model.generation_config.eos_token_id = tok.convert_tokens_to_ids(OMNI_SPECIAL["im_end"])
    model.generation_config.pad_token_id = tok.pad_token_id
    return model, tok


@pytest.mark.slow
def test_causal_lm_batched_greedy_answers_equal_one_at_a_time(tiny_llama):
    from interactscope.engines.causal_lm import CausalLMEngine, CausalLMOptions

    model, tok = tiny_llama
    opts = {"batch_generate": True, "generation": {"max_new_tokens": 8, "temperature": 0}}
    eng = CausalLMEngine(CausalLMOptions.model_validate(opts), model=model, tokenizer=tok)
    convs = [
        [{"role": "system", "content": "You can call these tools:"}, {"role": "user", "content": t}]
        for t in ("Take a photo.", "request a", "Start a voice memo as soon as someone starts "
                  "talking. Current stream time: t = 12.0 s.")
    ]  # fmt: skip
    convs.insert(1, [{"role": "user", "content": [{"type": "audio", "audio": np.zeros(8)}]}])
    calls = []
    real = model.generate
    model.generate = lambda **kw: calls.append(kw["input_ids"].shape) or real(**kw)
    try:
        batch = eng.chat_batch(convs)
    finally:
        del model.generate
    assert len(calls) == 1 and calls[0][0] == 3
    assert isinstance(batch[1], EngineError) and "text only" in str(batch[1])
    single = [eng.chat(c) for c in (convs[0], convs[2], convs[3])]
    got = [batch[0], batch[2], batch[3]]
    assert _answers(got) == _answers(single)
    assert len({s.prompt_tokens for s in single}) == 3  # different lengths: padding exercised
    assert all(s.completion_tokens == 8 and s.text for s in single)  # 8 real tokens each
    assert all(o.raw["batch_size"] == 3 for o in got)
    plain = CausalLMEngine(CausalLMOptions(), model=model, tokenizer=tok)
    assert all("batch_size" not in o.raw for o in plain.chat_batch(convs[2:]))  # off by default

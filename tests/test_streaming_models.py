"""Streaming models in their own loops (docs/protocol.md, "Streaming models"): on tiny random-
weight checkpoints of each architecture, the tokens fed at each step equal, token for token,
the sequences worked out by hand from each model's public inference loop (LiveCC
``demo/infer.py``, MMDuet2 ``proactive_eval/inference.py``, VideoLLM-online
``demo/inference.py``), and nothing after t reaches the model at decision point t.

What the models generate is scripted (``script_replies``) so the fed sequences, which depend on
the replies, can be written down by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")

from interactscope.streaming.protocol.types import DecisionRequest  # noqa: E402
from interactscope.streaming.schema import Interaction, VideoRecord  # noqa: E402
from interactscope.streaming.settings import Settings  # noqa: E402
from tests.helpers.media_fixtures import read_code, write_coded_video  # noqa: E402
from tests.helpers.tiny_streaming import script_replies, tiny_live_llama, tiny_livecc, tiny_mmduet2  # noqa: E402

pytestmark = pytest.mark.slow

QUERY = "Tell me when the door opens."


def _clip(tmp_path: Path, seconds: int) -> Path:
    # 10 fps, each frame showing its own pts (ticks of 1/300 s)
    return write_coded_video(tmp_path / "clip.mp4", list(range(0, 300 * seconds, 30)),
                             300 * seconds)  # fmt: skip


def _interaction(q: float) -> Interaction:
    return Interaction.model_validate({
        "id": "i1", "video_id": "v", "task": "T2", "query": {"time_s": q, "text": QUERY},
        "targets": [{"id": "k", "reference": "door opens", "time_s": q + 1}],
    })  # fmt: skip


def _run(adapter, path: Path, q: float, times: list[float]):
    s = Settings()
    v = VideoRecord(id="v", path=str(path))
    it = _interaction(q)
    session = adapter.open_session(it, v)
    outs = {}
    for t in times:
        req = DecisionRequest(interaction=it, video=v, bench_root=path.parent, t=t, settings=s)
        outs[t] = session.step(req)
    return session, outs


def _assert_causal(adapter, session) -> None:
    """Every frame given to the model at decision point t has stream time <= t, and its
    content (the pts it shows) is <= that time."""
    for t, fed in adapter.frames_fed:
        assert all(x <= t + 1e-9 for x in fed), (t, fed)
        for x, img in zip(fed, session.frames.frames(fed), strict=True):
            assert read_code(img) / 300 <= x + 1e-9


# ------------------------------------------------------------------ LiveCC


def _livecc(tmp_path: Path, seconds: int = 6):
    from interactscope.streaming.adapters.livecc import LiveCCAdapter

    model, proc = tiny_livecc()
    a = LiveCCAdapter("livecc", {"backend": "livecc"}, Settings(), model=model, processor=proc)
    return a, model, proc, _clip(tmp_path, seconds)


def test_livecc_feeds_its_own_loop_token_for_token(tmp_path: Path) -> None:
    a, model, proc, clip = _livecc(tmp_path)
    tok = proc.tokenizer
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    eos = tok(" ...").input_ids
    said = tok("A person walks in.").input_ids
    hook = script_replies(model, [eos + [im_end], eos + [im_end], said + [im_end]])
    try:
        session, outs = _run(a, clip, 4.0, [4.0, 5.0])
    finally:
        hook.remove()
    # 192x64 frames -> smart_resize 56x196 -> 4x14 patches -> 14 tokens per 2 frames
    pad = "<|video_pad|>"
    first = ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
             "Time=0.0-3.0s<|vision_start|>" + pad * 42 + "<|vision_end|><|im_end|>\n"
             "<|im_start|>assistant\n")  # fmt: skip
    second = ("<|im_end|>\n<|im_start|>user\nTime=3.0-4.0s<|vision_start|>" + pad * 14 +
              "<|vision_end|>" + QUERY + "<|im_end|>\n<|im_start|>assistant\n")  # fmt: skip
    third = ("<|im_end|>\n<|im_start|>user\nTime=4.0-5.0s<|vision_start|>" + pad * 14 +
             "<|vision_end|><|im_end|>\n<|im_start|>assistant\n")  # fmt: skip
    expected = [tok(x).input_ids for x in (first, second, third)]
    assert session.stream.fed == expected
    # the cache: each prompt, then its reply less the last token (generate's cache)
    held = expected[0] + eos + expected[1] + eos + expected[2] + said
    assert session.stream.ids == held
    assert outs[4.0].silent and outs[4.0].text == ""
    assert [n["t_s"] for n in outs[4.0].extra["native"]] == [3.0, 4.0]
    assert [n["query_fed"] for n in outs[4.0].extra["native"]] == [False, True]
    assert outs[4.0].extra["native"][0]["p_eos"] > 0.99  # the scripted ' ...'
    assert not outs[5.0].silent and outs[5.0].text == "A person walks in."
    _assert_causal(a, session)


def test_livecc_first_call_at_three_seconds(tmp_path: Path) -> None:
    a, model, proc, clip = _livecc(tmp_path, seconds=4)
    session, outs = _run(a, clip, 1.0, [1.0, 2.0, 3.0])
    assert outs[1.0].extra["native"] == [] and outs[1.0].silent
    assert outs[2.0].extra["native"] == [] and outs[2.0].silent
    assert [n["t_s"] for n in outs[3.0].extra["native"]] == [3.0]
    assert a.frames_fed == [(1.0, []), (2.0, []), (3.0, [0.0, 0.5, 1.0, 1.5, 2.0, 2.5])]
    # the request goes with the first piece fed at or after q: the 0-3 s one here
    assert QUERY in proc.tokenizer.decode(session.stream.fed[0])
    _assert_causal(a, session)


# ------------------------------------------------------------------ MMDuet2


def test_mmduet2_feeds_its_own_loop_token_for_token(tmp_path: Path) -> None:
    from interactscope.streaming.adapters.mmduet2 import SYSTEM_PROMPT, MMDuet2Adapter

    model, proc = tiny_mmduet2()
    tok = proc.tokenizer
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    no = tok("NO REPLY", add_special_tokens=False).input_ids + [im_end]
    said = tok("A person walks in.", add_special_tokens=False).input_ids
    # turn 3 hits max_new_tokens without its end token: the next turn starts at its last token
    script = [no, no, said[:4]]
    a = MMDuet2Adapter("mmduet2", {"backend": "mmduet2", "max_new_tokens": 4}, Settings(),
                       model=model, processor=proc)  # fmt: skip
    clip = _clip(tmp_path, 4)
    hook = script_replies(model, [*script, no])
    try:
        session, outs = _run(a, clip, 2.0, [2.0, 3.0, 4.0])
    finally:
        hook.remove()
    img = "<|vision_start|>" + "<|image_pad|>" * 14 + "<|vision_end|>"  # 56x196 -> 14 tokens
    gen = "<|im_end|>\n<|im_start|>assistant\n"
    t1 = f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\n{img}{gen}"
    t2 = f"<|im_end|>\n<|im_start|>user\n{img}{QUERY}{gen}"
    t3 = f"<|im_end|>\n<|im_start|>user\n{img}{gen}"
    assert session.stream.fed[:3] == [tok(x).input_ids for x in (t1, t2, t3)]
    # turn 4: the re-rendered reply of turn 3 from its last token on, then the new turn
    reply3 = tok.decode(said[:4])
    t4 = tok(reply3 + f"<|im_end|>\n<|im_start|>user\n{img}{gen}").input_ids[3:]
    assert session.stream.fed[3] == t4
    # and the cache equals what the model's loop holds: the whole conversation through turn 4
    # rendered and tokenized with all its images (then turn 4's reply)
    text = proc.apply_chat_template(session.history[:-1], tokenize=False,
                                    add_generation_prompt=True)  # fmt: skip
    full = proc(text=[text], images=session.images, return_tensors="pt")["input_ids"][0].tolist()
    assert session.stream.ids[: len(full)] == full
    assert session.stream.ids[len(full) :] == no[:-1]
    assert outs[2.0].silent and [n["t_s"] for n in outs[2.0].extra["native"]] == [1.0, 2.0]
    assert not outs[3.0].silent and outs[3.0].text == reply3.strip()
    assert outs[4.0].silent and outs[4.0].extra["native"][0]["p_no"] > 0.99
    _assert_causal(a, session)


# ------------------------------------------------------------------ VideoLLM-online


def test_videollm_online_feeds_its_own_loop_token_for_token(tmp_path: Path) -> None:
    from interactscope.streaming.adapters.videollm_online import (
        SYSTEM_PROMPT,
        VideoLLMOnlineAdapter,
    )

    llm, vision, connector, tok = tiny_live_llama()
    cfg = {"backend": "videollm-online", "resolution": 32, "frame_token_pooled": [1, 1]}
    a = VideoLLMOnlineAdapter("vo", cfg, Settings(), model=(llm, vision, connector),
                              processor=tok)  # fmt: skip

    def ids(s: str) -> list[int]:
        return tok(s, add_special_tokens=False).input_ids

    comma, close = tok.convert_tokens_to_ids(","), tok.convert_tokens_to_ids("]")
    eos, v = tok.eos_token_id, tok.convert_tokens_to_ids("<v>")
    said, dots = ids(" A person walks in."), ids(" ...")
    script = [[comma], [comma], [comma], said + [eos], [comma], [close], dots + [eos], [comma]]
    hook = script_replies(llm, script)
    try:
        session, outs = _run(a, _clip(tmp_path, 3), 1.2, [1.2, 2.0, 3.0])
    finally:
        hook.remove()
    frame = [v, v]  # CLS + 1x1 pooled
    expected = (
        [tok.bos_token_id] + ids(SYSTEM_PROMPT + "\n\n[") + frame  # frame 0.0
        + [comma] + frame + [comma] + frame  # frames 0.5, 1.0 (silent: ',' picked)
        + ids(f"]\nUser: {QUERY}\nAssistant:") + said  # the request, before frame 1.5 > q
        + [eos] + ids("\n[") + frame + [comma] + frame  # frames 1.5, 2.0
        + ids("]\nAssistant:") + dots  # ']' picked after frame 2.0: it speaks
        + [eos] + ids("\n[") + frame  # frame 2.5
    )  # fmt: skip
    assert [x for f in session.stream.fed for x in f] == expected
    assert outs[1.2].silent and [n["t_s"] for n in outs[1.2].extra["native"]] == [0.0, 0.5, 1.0]
    assert outs[1.2].extra["native"][0]["p_interval"] > 0.99
    assert outs[2.0].text == "A person walks in.\n..."
    assert outs[3.0].silent
    _assert_causal(a, session)


def test_streaming_adapters_refuse_offline_probing(tmp_path: Path) -> None:
    from interactscope.streaming.adapters.base import AdapterError
    from interactscope.streaming.adapters.registry import adapter_class

    for backend in ("livecc", "mmduet2", "videollm-online"):
        cls = adapter_class(backend)
        assert cls.supports_online and not cls.needs_media
        a = cls("m", {"backend": backend}, Settings(), model=object(), processor=object())
        with pytest.raises(AdapterError, match="Online Rolling only"):
            a.respond(None)  # type: ignore[arg-type]


def test_streaming_adapters_refuse_the_scene_ablation() -> None:
    from interactscope.streaming.adapters.base import AdapterError
    from interactscope.streaming.adapters.livecc import LiveCCAdapter

    s = Settings.model_validate({"scene": "none"})
    a = LiveCCAdapter("m", {"backend": "livecc"}, s, model=object(), processor=object())
    with pytest.raises(AdapterError, match="scene=none"):
        a.prepare(None)

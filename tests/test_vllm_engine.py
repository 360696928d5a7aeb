"""A real ``vllm.LLM`` (the vLLM lane: ``bash .ci/vllm-lane.sh``; skipped without vllm).

On tiny random checkpoints made here (``tests/helpers/vllm_tiny.py``: text Qwen2, Qwen2.5-VL, Qwen3-VL,
the Qwen2.5-Omni thinker inside ``Qwen2_5OmniForConditionalGeneration``), through
``load_engine``: the placeholder tokens vLLM puts in the prompt for each multimodal part equal the
HF processor's for the same input and the counts worked out by hand; greedy answers equal the
transformers engine's on the same folder (run in the main venv when the lane names it:
``INTERACTSCOPE_TRANSFORMERS_PYTHON``; vLLM pins an older transformers); video parts (Qwen2.5-VL
needs metadata, issue 25 item 2) reach the engine.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

if importlib.util.find_spec("vllm") is None:
    pytest.skip(
        "vllm is not installed (the vLLM lane: bash .ci/vllm-lane.sh)", allow_module_level=True
    )

from interactscope.engines import load_engine  # noqa: E402
from interactscope.engines.base import ImagePart, Message, TextPart, VideoPart  # noqa: E402
from tests.helpers.vllm_tiny import messages, save_tiny  # noqa: E402

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
NEW_TOKENS = 8
# hand-worked placeholder counts (see test_placeholders_equal_the_hf_processor)
IMAGE_64x96 = {"vl": 6, "qwen3_vl": 6, "omni": 6}
AUDIO_1S = 25
# 4 frames = 2 temporal patches. Qwen2.5-VL: 56x84 as above, 2 x 6 = 12. The Omni processor
# gives videos its own pixel floor, 128 x 28² = 100352 px: 64x96 scales up by
# sqrt(100352 / 6144) = 4.04 to ceil(9.24) x 28 = 280 by ceil(13.86) x 28 = 392, 10 x 14 = 140
# tokens a patch, 280 in all.
VIDEO_4x64x96 = {"vl": 12, "omni": 280}


def vllm_config(checkpoint: Path, **over) -> dict:
    """Model config of the tiny vLLM engine: float32 (to match the transformers engine), eager
    (no torch.compile warm-up), small context."""
    return {
        "backend": "vllm",
        "checkpoint": str(checkpoint),
        "frames_as": "image",
        "max_model_len": 4096,
        "limit_mm_per_prompt": {"image": 4, "video": 1, "audio": 2},
        "generation": {"max_new_tokens": NEW_TOKENS, "temperature": 0},
        "engine_args": {"dtype": "float32", "enforce_eager": True, "seed": 0},
        **over,
    }


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny-vllm")
    return {k: save_tiny(k, root / k) for k in ("text", "vl", "qwen3_vl", "omni")}


@pytest.fixture(scope="module", params=["text", "vl", "qwen3_vl", "omni"])
def engine(request, folders):
    """(kind, folder, started VLLMEngine); one engine per kind, closed after its tests."""
    kind = request.param
    over = {"limit_mm_per_prompt": None} if kind == "text" else {}
    eng = load_engine(vllm_config(folders[kind], **over))
    eng.llm()
    yield kind, folders[kind], eng
    eng.close()
    gc.collect()


def _runs(ids: list[int], token: int) -> list[int]:
    """Lengths of the runs of ``token`` in ``ids`` (one run per multimodal part)."""
    out, n = [], 0
    for i in [*ids, None]:
        if i == token:
            n += 1
        elif n:
            out.append(n)
            n = 0
    return out


def _prompt_ids(eng, msgs) -> list[int]:
    (o,) = eng.generate([eng.engine_input(eng.render(msgs))])
    return list(o.prompt_token_ids)


def _placeholder(processor, kind: str) -> int:
    tok = processor.tokenizer
    name = {"image": processor.image_token, "video": processor.video_token}.get(kind)
    if kind == "audio":
        name = processor.audio_token
    return tok.convert_tokens_to_ids(name)


def _hf_ids(folder: Path, prompt: str, **mm) -> list[int]:
    from transformers import AutoProcessor

    proc = AutoProcessor.from_pretrained(folder)
    return proc(text=[prompt], return_tensors="np", **mm)["input_ids"][0].tolist()


def test_placeholders_equal_the_hf_processor(engine) -> None:
    """Per multimodal part, vLLM's placeholder tokens = the HF processor's = by hand.

    By hand: a 64x96 frame resizes to 56x84 (multiples of 28 within 56²..112² px) for Qwen2.5
    (14 px patches, 2x2 merge: 2 x 3 = 6 tokens) and to 64x96 for Qwen3-VL (16 px patches, 2x2
    merge: 2 x 3 = 6); 1 s of 16 kHz audio is 100 mel frames, 50 after the stride-2 conv and 25
    after the 2x pooling (Qwen2.5-Omni's audio encoder)."""
    kind, folder, eng = engine
    if kind == "text":
        pytest.skip("no multimodal part")
    from transformers import AutoProcessor

    proc = AutoProcessor.from_pretrained(folder)
    msgs = messages(kind)
    ids = _prompt_ids(eng, msgs)
    r = eng.render(msgs)
    mm = {"images": r.images}
    if r.audios:
        mm["audio"] = [w for w, _ in r.audios]
    hf = _hf_ids(folder, r.prompt, **mm)
    image = _placeholder(proc, "image")
    assert _runs(ids, image) == _runs(hf, image) == [IMAGE_64x96[kind]]
    if kind == "omni":
        audio = _placeholder(proc, "audio")
        assert _runs(ids, audio) == _runs(hf, audio) == [AUDIO_1S]
    assert len(ids) == len(hf)


def test_video_part_reaches_the_engine(engine) -> None:
    """Four 64x96 frames as one video part: Qwen2.5-VL goes with metadata (issue 25 item 2:
    without it vLLM refuses every point); the video's placeholder tokens equal the HF
    processor's for the same frames, rate and metadata, and the hand-worked count
    (``VIDEO_4x64x96``)."""
    kind, folder, eng = engine
    if kind == "text":
        pytest.skip("no multimodal part")
    from interactscope.engines.vllm_engine import video_metadata

    rng = np.random.default_rng(1)
    frames = [rng.integers(0, 255, (64, 96, 3), dtype=np.uint8) for _ in range(4)]
    msgs = [
        Message(
            role="user",
            content=[VideoPart(frames=frames, pts_s=[0.0, 1.0, 2.0, 3.0]), TextPart(text="?")],
        )
    ]
    assert eng.video_metadata is (kind in ("vl", "qwen3_vl"))
    res = eng.chat(msgs)
    assert isinstance(res.text, str) and res.completion_tokens >= 1
    ids = _prompt_ids(eng, msgs)
    r = eng.render(msgs)
    mm: dict = {"videos": [np.stack(frames)], "do_sample_frames": False}
    if eng.video_metadata:  # what vLLM hands the HF processor (less its own sampling flag)
        meta = video_metadata([0.0, 1.0, 2.0, 3.0], 4)
        mm["video_metadata"] = [{k: v for k, v in meta.items() if k != "do_sample_frames"}]
    else:
        mm["fps"] = 1.0
    hf = _hf_ids(folder, r.prompt, **mm)
    from transformers import AutoProcessor

    video = _placeholder(AutoProcessor.from_pretrained(folder), "video")
    assert sum(_runs(ids, video)) == sum(_runs(hf, video)) > 0
    if kind in ("vl", "omni"):
        assert _runs(ids, video) == [VIDEO_4x64x96[kind]]


def _reference(kind: str, folder: Path) -> str:
    """The transformers engine's greedy answer, in the main venv when the lane names it."""
    py = os.environ.get("INTERACTSCOPE_TRANSFORMERS_PYTHON") or sys.executable
    out = subprocess.run(
        [py, "-m", "tests.helpers.vllm_tiny", kind, str(folder), str(NEW_TOKENS)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])["text"]


def test_greedy_answer_equals_the_transformers_engine(engine) -> None:
    """Same folder, same conversation, greedy, float32: the same text from both engines."""
    kind, folder, eng = engine
    if kind == "omni" and not os.environ.get("INTERACTSCOPE_TRANSFORMERS_PYTHON"):
        pytest.skip("the Omni transformers engine needs transformers >= 5.24 (the main venv)")
    res = eng.chat(messages(kind))
    assert res.completion_tokens == NEW_TOKENS or res.raw["finish_reason"] == "stop"
    assert res.text == _reference(kind, folder)


def _block_size(eng) -> int:
    """The engine's KV block size in tokens (16 on CUDA; the CPU backend's default is 128)."""
    return int(eng.llm().llm_engine.vllm_config.cache_config.block_size)


def test_prefix_cache_reports_hits(engine) -> None:
    """The same conversation twice: the second is served from the prefix cache in whole KV
    blocks (all but the last prompt token), and the count reaches ``raw['cached_tokens']``."""
    kind, _, eng = engine
    msgs = messages(kind)
    long = TextPart(text=" x" * (2 * _block_size(eng)))  # past one block whatever the tokenizer
    msgs = [msgs[0], Message(role="user", content=[*_parts(msgs[1]), long])]
    first = eng.chat(msgs)
    second = eng.chat(msgs)
    b = _block_size(eng)
    assert second.prompt_tokens > b
    assert second.raw["cached_tokens"] == (second.prompt_tokens - 1) // b * b > 0
    assert first.text == second.text


def _parts(msg: Message) -> list:
    return [TextPart(text=msg.content)] if isinstance(msg.content, str) else list(msg.content)


def test_image_attachment_and_frames_in_one_prompt(engine) -> None:
    """Two image parts in one prompt: two runs of placeholders of the hand-worked size."""
    kind, _, eng = engine
    if kind == "text":
        pytest.skip("no multimodal part")
    from transformers import AutoProcessor

    img = np.zeros((64, 96, 3), np.uint8)
    msgs = [Message(role="user", content=[ImagePart(image=img), ImagePart(image=img + 9)])]
    ids = _prompt_ids(eng, msgs)
    image = _placeholder(AutoProcessor.from_pretrained(eng.checkpoint), "image")
    assert _runs(ids, image) == [IMAGE_64x96[kind]] * 2

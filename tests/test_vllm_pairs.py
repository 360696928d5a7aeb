"""``frames_as: video_pairs`` on vLLM (issue 29; the vLLM lane, skipped without vllm): the
default ``limit_mm_per_prompt`` takes a prompt's 2-frame video items (ceil(frames.max / 2)),
and the prefix cache reuses every earlier item: ``num_cached_tokens`` of the prompt at t + 1
reaches 0.9 of the tokens it shares with the prompt at t (item-keyed, as
``benchmarks/bench_vllm.py`` counts them), far more of each prompt than the one video."""

from __future__ import annotations

import gc
import importlib.util

import pytest

if importlib.util.find_spec("vllm") is None:
    pytest.skip(
        "vllm is not installed (the vLLM lane: bash .ci/vllm-lane.sh)", allow_module_level=True
    )

from benchmarks.bench_vllm import adapter_for, measure  # noqa: E402
from tests.helpers.vllm_tiny import save_tiny  # noqa: E402

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


def test_pairs_keep_every_earlier_item_in_the_prefix_cache(tmp_path) -> None:
    ckpt = str(save_tiny("omni", tmp_path / "omni"))
    adapter = adapter_for(ckpt, "v2", "video_pairs", audio=True, limit_mm_per_prompt=None)
    assert adapter.limit_mm_per_prompt == {"image": 4, "video": 16, "audio": 2}
    pairs = measure(adapter, seconds=8)
    llm = adapter.engine()
    video = measure(adapter_for(ckpt, "v2", "video", audio=True, llm=llm), seconds=8)
    assert pairs.pairs == 7
    assert pairs.hit_of_shared >= 0.9, pairs
    assert pairs.hit_of_prompt > video.hit_of_prompt, (pairs, video)
    adapter.close()
    del llm
    gc.collect()

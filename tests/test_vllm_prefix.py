"""Prefix caching reuses every earlier frame with the default layout (issue 25 item 3; the vLLM
lane, skipped without vllm).

For consecutive Offline Probing points t, t + 1 within the frame cap, vLLM's
``num_cached_tokens`` of the prompt at t + 1 must reach 0.9 of the tokens it shares with the
prompt at t (``benchmarks/bench_vllm.py`` measures it; the rest is lost to whole KV blocks: 128
tokens on the CPU backend) with the defaults of a new run: ``Settings().prompt_version`` and the
shipped config's ``frames_as``, per shipped config family (Omni: ``qwen2.5-omni-7b``; VL:
``qwen3-vl-8b``). The old layout (prompt v1, frames as one video) reuses less of each prompt.
"""

from __future__ import annotations

import gc
import importlib.util

import pytest
import yaml

if importlib.util.find_spec("vllm") is None:
    pytest.skip(
        "vllm is not installed (the vLLM lane: bash .ci/vllm-lane.sh)", allow_module_level=True
    )

from benchmarks.bench_vllm import OLD, adapter_for, measure  # noqa: E402
from interactscope.core.resources import bundled_models_dir  # noqa: E402
from interactscope.streaming.settings import Settings  # noqa: E402
from tests.helpers.vllm_tiny import save_tiny  # noqa: E402

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

FAMILIES = {"omni": "qwen2.5-omni-7b", "qwen3_vl": "qwen3-vl-8b"}


@pytest.mark.parametrize("kind", sorted(FAMILIES))
def test_new_default_reuses_the_shared_prompt(tmp_path, kind) -> None:
    shipped = yaml.safe_load((bundled_models_dir() / f"{FAMILIES[kind]}.yaml").read_text())
    new = (Settings().prompt_version, shipped["frames_as"])
    ckpt = str(save_tiny(kind, tmp_path / kind))
    adapter = adapter_for(ckpt, *new, audio=kind == "omni")
    figures_new = measure(adapter, seconds=8)
    llm = adapter.engine()
    figures_old = measure(adapter_for(ckpt, *OLD, audio=kind == "omni", llm=llm), seconds=8)
    assert figures_new.pairs == 7
    assert figures_new.hit_of_shared >= 0.9, (new, figures_new)
    assert figures_new.hit_of_prompt > figures_old.hit_of_prompt, (figures_new, figures_old)
    adapter.close()
    del llm
    gc.collect()

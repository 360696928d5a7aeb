"""Moved to :mod:`interactscope.engines.smollm2`; re-exported so old imports keep working."""

from interactscope.engines.smollm2 import (
    FOLDER_NAME,
    GGUF_NAME,
    SmolLM2Unavailable,
    cache_root,
    smollm2_folder,
    smollm2_gguf,
)

__all__ = [
    "FOLDER_NAME",
    "GGUF_NAME",
    "SmolLM2Unavailable",
    "cache_root",
    "smollm2_folder",
    "smollm2_gguf",
]

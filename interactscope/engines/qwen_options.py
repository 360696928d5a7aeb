"""Options of the two Qwen multimodal backends, ``vllm`` and ``transformers``.

One model: the shipped Qwen model configs serve both backends (change ``backend:`` and every key
still means the same), so each backend accepts the other's keys and ignores what it does not use.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from interactscope.engines.config import BackendOptions

__all__ = ["PreflightOptions", "QwenOptions", "TokenEstimate"]


class TokenEstimate(BaseModel):
    """vLLM preflight's multimodal token model (Qwen defaults): one token per ``patch_px``² pixels
    after the processor's resize within [``min_pixels``, ``max_pixels``], ``audio_tokens_per_s``
    per second of audio, ``per_item_overhead`` per item."""

    model_config = ConfigDict(extra="forbid")

    patch_px: int = Field(28, ge=1)
    min_pixels: int = Field(3136, ge=1)
    max_pixels: int | None = Field(None, ge=1, description="default: mm_processor_kwargs's")
    audio_tokens_per_s: float = Field(25.0, ge=0)
    per_item_overhead: int = Field(0, ge=0)


class PreflightOptions(BaseModel):
    """vLLM preflight: may it lower the frames' long side (not below ``min_side`` px) to fit the
    context, and how ``prepare`` builds each interaction's largest request."""

    model_config = ConfigDict(extra="forbid")

    reduce_pixels: bool = True
    min_side: int = Field(224, ge=16)
    on_prepare: Literal["synthetic", "decode", "off"] = "synthetic"


class QwenOptions(BackendOptions):
    """Model config keys of the ``vllm`` and ``transformers`` backends (see the module docstring).
    ``frames_as`` (``image`` | ``video`` | ``video_pairs``: 2-frame video items,
    docs/protocol.md) defaults to ``image`` on vLLM and ``video`` on transformers."""

    checkpoint: str | None = Field(None, description="hub id or local folder")
    family: Literal["omni", "vl"] | None = Field(None, description="default from model_type")
    frames_as: Literal["image", "video", "video_pairs"] | None = None
    mm_processor_kwargs: dict[str, Any] | None = None
    processor_kwargs: dict[str, Any] | None = Field(None, description="alias of the above")
    videos_kwargs: dict[str, Any] = Field(default_factory=dict)
    trust_remote_code: bool = False
    # vllm
    max_model_len: int = Field(32768, ge=1, description="prompt + new tokens")
    limit_mm_per_prompt: dict[str, int] | None = None
    video_metadata: bool | Literal["auto"] = "auto"
    audio_window_s: float | None = Field(None, gt=0)
    template: Literal["auto", "processor", "tokenizer"] = "auto"
    engine_args: dict[str, Any] = Field(default_factory=dict, description="vllm.LLM kwargs")
    token_estimate: TokenEstimate = Field(default_factory=TokenEstimate)
    preflight: PreflightOptions = Field(default_factory=PreflightOptions)
    # transformers
    device: str | None = None
    dtype: str | None = None
    attn_implementation: str | None = None
    min_audio_samples: int = Field(1600, ge=0)
    session_max_frames: int | None = Field(None, ge=1)
    session_cache: bool = Field(True, description="Online Rolling: keep the KV cache")
    session_reprefill_every: int | None = Field(
        None, ge=1, description="frames past the cap leave this many at a time; default cap // 2"
    )
    session_audio_padding: Literal["tight", "window"] = "tight"
    session_window: Literal["reprefill", "evict"] = "reprefill"
    session_history: Literal["window", "all"] = Field(
        "window",
        description="Online Rolling: later turns leave with their frames (window) or all stay",
    )
    frame_cache_mb: int = Field(256, ge=0, description="processed frames kept (MiB); 0 = off")
    audio_padding: Literal["tight", "window"] = Field(
        "tight",
        description="Offline Probing: audio zero-padded to its length (tight) or the window",
    )
    audio_feature_cache: bool = Field(True, description="log-mel STFT frames reused across points")
    host_threads: int | None = Field(
        1,
        ge=1,
        description="torch threads for host work (processor, log-mel, batch join); "
        "None = torch's own count",
    )

    def processor_options(self) -> dict[str, Any]:
        """``mm_processor_kwargs`` or its alias ``processor_kwargs`` (a copy; empty if unset)."""
        return dict(self.mm_processor_kwargs or self.processor_kwargs or {})

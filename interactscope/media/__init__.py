"""Causal media layer (SPEC §2): probe, causal frames, causal audio, causal ASR transcript."""

from interactscope.media.probe import MediaError, MediaInfo, probe

__all__ = ["MediaError", "MediaInfo", "probe"]

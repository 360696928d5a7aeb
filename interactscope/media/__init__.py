"""Causal media layer (docs/protocol.md#decision-grid): probe, causal frames, causal audio, causal ASR transcript.

Every time is in seconds on the file clock (measured from the file start); audio is float32 mono
(16 kHz by default); frames are (H, W, 3) uint8 RGB, upright.
"""

from interactscope.media.asr import (
    AsrError,
    AsrSettings,
    Transcript,
    Word,
    cache_dir,
    default_model_available,
    default_model_path,
    transcribe,
    transcript_from_segments,
)
from interactscope.media.causal import CausalMedia, Frame, load_audio, select_indices
from interactscope.media.observe import observe
from interactscope.media.probe import MediaError, MediaInfo, probe

__all__ = [
    "AsrError",
    "AsrSettings",
    "CausalMedia",
    "Frame",
    "MediaError",
    "MediaInfo",
    "Transcript",
    "Word",
    "cache_dir",
    "default_model_available",
    "default_model_path",
    "load_audio",
    "observe",
    "probe",
    "select_indices",
    "transcribe",
    "transcript_from_segments",
]

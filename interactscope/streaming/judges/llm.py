"""Model judges: ``openai:MODEL`` (any OpenAI-compatible endpoint) and ``local:PATH`` (a
transformers causal LM), both through :mod:`interactscope.engines`; and their looking variants
``openai:MODEL+frames`` and ``local:PATH+frames`` (:mod:`interactscope.streaming.judges.frames`).

Both send the versioned prompt :func:`~interactscope.streaming.judges.base.judge_messages` at temperature 0
(greedy decoding locally) and parse the answer with the strict
:func:`~interactscope.streaming.judges.base.parse_verdict`.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import ValidationError

from interactscope.core.secrets import redact
from interactscope.engines.base import EngineError
from interactscope.engines.causal_lm import CausalLMEngine, CausalLMOptions
from interactscope.engines.openai_compat import OpenAIEngine, OpenAIOptions
from interactscope.engines.qwen_mm import QwenEngine
from interactscope.engines.qwen_options import QwenOptions
from interactscope.streaming.judges.base import (
    JUDGE_PROMPT_VERSION,
    Judge,
    JudgeError,
    Verdict,
    judge_messages,
    parse_verdict,
)
from interactscope.streaming.judges.frames import FramesJudge, FramesSettings

__all__ = ["LocalJudge", "OpenAIJudge", "local_frames_judge", "openai_frames_judge"]

DEFAULT_OPENAI_MODEL = "gpt-4o"


class OpenAIJudge(Judge):
    """Judge through an OpenAI-compatible chat endpoint.

    The base URL and key come from the environment (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``; a
    local server that needs no key gets the placeholder ``"EMPTY"``). Transport errors, 408/409/429
    and 5xx answers are retried by the ``openai`` client with exponential backoff
    (``max_retries``, default 5); up to ``concurrency`` requests (default 8) are in flight.
    ``max_tokens`` caps the answer (default 16: the verdict is the leading word).

    Args:
        model: model name sent to the endpoint (default ``gpt-4o``, the paper's judge).
        client: an already-built ``openai.OpenAI`` (tests); otherwise one is built.

    Raises:
        JudgeError: the ``openai`` package is missing, or neither variable is set.
    """

    backend = "openai"
    prompt_version = JUDGE_PROMPT_VERSION

    def __init__(
        self,
        model: str = DEFAULT_OPENAI_MODEL,
        *,
        concurrency: int = 8,
        max_retries: int = 5,
        timeout_s: float = 60.0,
        max_tokens: int = 16,
        client: Any = None,
    ):
        self.model = model or DEFAULT_OPENAI_MODEL
        self.name = f"openai:{self.model}"
        self.max_tokens = int(max_tokens)
        self.max_retries = int(max_retries)
        if client is None and not (
            os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")
        ):
            raise JudgeError(
                f"judge {self.name}: set OPENAI_API_KEY (hosted endpoint) or OPENAI_BASE_URL "
                "(a local OpenAI-compatible server, e.g. `vllm serve`)"
            )
        options = OpenAIOptions(
            model=self.model,
            api_key_env="OPENAI_API_KEY",
            base_url_env="OPENAI_BASE_URL",
            api_key_optional=True,
            max_concurrency=max(1, int(concurrency)),
            max_retries=self.max_retries,
            timeout_s=float(timeout_s),
            generation={"temperature": 0.0, "max_new_tokens": self.max_tokens},
        )
        self.engine = OpenAIEngine(options, self.name, client=client)
        try:
            self.engine.client()
        except EngineError as exc:
            raise JudgeError(f"judge {self.name}: {exc}") from exc

    @property
    def concurrency(self) -> int:
        return self.engine.options.max_concurrency

    @property
    def settings(self) -> dict[str, Any]:
        return {"temperature": 0, "max_tokens": self.max_tokens}

    def judge(self, triples: list[tuple[str, str, str]]) -> list[Verdict]:
        """One verdict per (request, reference, candidate); a transport error is a verdict with
        ``error`` set, never a yes/no."""
        if not triples:
            return []
        answers = self.engine.chat_batch([judge_messages(*t) for t in triples])
        return [
            Verdict(None, "", error=redact(a))
            if isinstance(a, EngineError)
            else Verdict(parse_verdict(a.text), a.text)
            for a in answers
        ]


class LocalJudge(Judge):
    """Judge through a local transformers causal LM (a folder with weights and a tokenizer; with a
    chat template the prompt is rendered by it, else the judge's messages are joined and end in
    ``Answer:``). Greedy decoding of ``max_new_tokens`` (default 8) tokens; CPU unless ``device``
    says otherwise. Needs ``torch`` and ``transformers`` (extra ``[transformers]``).

    Raises:
        JudgeError: the packages are missing or the model cannot be loaded.
    """

    backend = "local"
    prompt_version = JUDGE_PROMPT_VERSION

    def __init__(self, path: str, *, device: str = "cpu", max_new_tokens: int = 8):
        self.model = str(path)
        self.name = f"local:{path}"
        self.device = device
        self.max_new_tokens = int(max_new_tokens)
        options = CausalLMOptions(
            checkpoint=self.model,
            device=device,
            prefix_cache=False,
            generation={"temperature": 0.0, "max_new_tokens": self.max_new_tokens},
        )
        self.engine = CausalLMEngine(options, self.name)
        try:
            self.engine.load()
        except EngineError as exc:
            raise JudgeError(f"cannot load local judge model {path}: {exc}") from exc

    @property
    def tokenizer(self) -> Any:
        return self.engine.tokenizer

    @property
    def lm(self) -> Any:
        return self.engine.model

    @property
    def settings(self) -> dict[str, Any]:
        return {"max_new_tokens": self.max_new_tokens, "decoding": "greedy"}

    def _prompt(self, triple: tuple[str, str, str]) -> str:
        messages = judge_messages(*triple)
        if self.engine.has_chat_template:
            return self.engine.render_chat(messages)
        return "\n\n".join(m["content"] for m in messages) + "\n\nAnswer:"

    def judge(self, triples: list[tuple[str, str, str]]) -> list[Verdict]:
        """One verdict per (request, reference, candidate), greedily decoded."""
        out: list[Verdict] = []
        for triple in triples:
            text = self.engine.complete(self._prompt(triple)).text
            out.append(Verdict(parse_verdict(text), text))
        return out


def openai_frames_judge(model: str, *, audio: bool = False, **options: Any) -> Judge:
    """``openai:MODEL+frames`` (``+audio``: the model takes ``input_audio``, e.g.
    ``gpt-4o-audio-preview``; without it auditory targets are judged on text and that is
    recorded). ``options`` are those of :class:`OpenAIJudge` plus ``max_frames``, ``max_side``.

    Raises:
        JudgeError: as :class:`OpenAIJudge`; a bad frames option.
    """

    settings = _frames_settings(options)
    text = OpenAIJudge(model, **options)
    return FramesJudge(
        text.engine,
        name=text.name + "+frames" + ("+audio" if audio else ""),
        backend="openai+frames",
        model=text.model,
        settings=settings,
        takes_audio=audio,
        extra_settings=text.settings,
        concurrency=text.concurrency,
    )


def local_frames_judge(
    path: str, *, device: str = "cpu", max_new_tokens: int = 8, **options: Any
) -> Judge:
    """``local:PATH+frames``: a local Qwen VL / Qwen Omni checkpoint through the
    ``transformers`` engine, greedy decoding; Omni models also get the audio of auditory
    targets. ``options``: ``max_frames``, ``max_side``, ``audio``.

    Raises:
        JudgeError: the packages are missing, or PATH is not a model that takes images.
    """

    settings = _frames_settings(options)
    if options:
        raise JudgeError(f"local frames judge: unknown option(s) {sorted(options)}")
    qopts = QwenOptions(
        checkpoint=str(path),
        device=device,
        frames_as="image",
        generation={"temperature": 0.0, "max_new_tokens": int(max_new_tokens)},
    )
    engine = QwenEngine(qopts, f"local:{path}")
    try:
        engine.load()
    except EngineError as exc:
        raise JudgeError(
            f"local:{path}+frames needs a model that takes images (Qwen2/2.5/3-VL, Qwen Omni): "
            f"{exc}; use local:{path} for a text-only model"
        ) from exc
    return FramesJudge(
        engine,
        name=f"local:{path}+frames",
        backend="local+frames",
        model=str(path),
        settings=settings,
        takes_audio=engine.family == "omni",
        extra_settings={"max_new_tokens": int(max_new_tokens), "decoding": "greedy"},
    )


def _frames_settings(options: dict[str, Any]) -> Any:
    """Pop the frames options (``max_frames``, ``max_side``, ``audio``) into FramesSettings."""

    keys = ("max_frames", "max_side", "audio", "max_audio_s")
    picked = {k: options.pop(k) for k in keys if k in options}
    try:
        return FramesSettings(**picked)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise JudgeError(f"frames judge: {e['loc'][0]}: {e['msg']}") from None

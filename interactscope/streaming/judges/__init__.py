"""Content judges and the on-disk verdict cache (docs/protocol.md#content-check, docs/protocol.md#judges-and-caching).

``make_judge(name)`` builds a judge from its ``--judge`` string:

========================  =====================================================================
``toolset``               T1's exact tool-name set check only (always used for targets with
                          ``tools``); T2–T8 targets then have no judge and scoring refuses.
``openai[:MODEL]``        OpenAI-compatible endpoint, default model ``gpt-4o`` (the paper's).
``local:PATH``            a local transformers causal LM with the same prompt.
``embedding[:THRESH]``    all-MiniLM-L6-v2 cosine ≥ 0.6 (approximation).
``lexical[:THRESH]``      token F1 ≥ 0.5 (approximation; the default ``--judge``).
``file:PATH``             verdicts from a JSONL file keyed by (interaction, target, time).
``openai:MODEL+frames``   the OpenAI judge also sees K = 3 frames of each visual target's window
                          (``+frames+audio``: auditory targets get the window's audio).
``local:PATH+frames``     a local Qwen VL / Omni checkpoint, the same (Omni: audio too).
========================  =====================================================================
"""

from __future__ import annotations

import logging

from interactscope.core.errors import first_problem
from interactscope.core.registry import PluginError, UnknownPluginError, lookup, names, register
from interactscope.core.text import plural
from interactscope.streaming.judges.base import (
    JUDGE_PROMPT_VERSION,
    Judge,
    JudgeError,
    JudgeItem,
    Verdict,
    judge_messages,
    parse_verdict,
)
from interactscope.streaming.judges.cache import VerdictCache, cache_key
from interactscope.streaming.judges.embedding import DEFAULT_EMBEDDING_THRESHOLD, EmbeddingJudge
from interactscope.streaming.judges.file import FileJudge
from interactscope.streaming.judges.lexical import DEFAULT_THRESHOLD, LexicalJudge
from interactscope.streaming.judges.llm import (
    LocalJudge,
    OpenAIJudge,
    local_frames_judge,
    openai_frames_judge,
)
from interactscope.streaming.judges.runner import JudgeReport, run_judge
from interactscope.streaming.judges.toolset import tool_names, toolset_match

log = logging.getLogger(__name__)

__all__ = [
    "JUDGE_PROMPT_VERSION",
    "DEFAULT_JUDGE",
    "Judge",
    "JudgeError",
    "JudgeItem",
    "JudgeReport",
    "LexicalJudge",
    "ToolsetOnly",
    "Verdict",
    "VerdictCache",
    "cache_key",
    "judge_messages",
    "make_judge",
    "parse_verdict",
    "run_judge",
    "tool_names",
    "toolset_match",
]

DEFAULT_JUDGE = "lexical"
"""Default ``--judge``: deterministic and offline. The paper's judge is ``openai:gpt-4o``."""


class ToolsetOnly(Judge):
    """``--judge toolset``: no text judge. Scoring a run with T2–T8 targets raises JudgeError."""

    name = "toolset"
    backend = "toolset"
    model = ""
    prompt_version = "toolset-v1"

    def judge(self, triples: list[tuple[str, str, str]]) -> list[Verdict]:
        if triples:
            raise JudgeError(
                "--judge toolset only checks T1 tool names; "
                f"{plural(len(triples), 'text pair')} need a text judge (openai:, local:, embedding, "
                "lexical or file:)"
            )
        return []


def _threshold(arg: str, default: float) -> float:
    if not arg:
        return default
    try:
        return float(arg)
    except ValueError as exc:
        raise JudgeError(f"bad judge threshold {arg!r}") from exc


_LOOKS = ("frames", "audio")


def _looking_suffixes(arg: str) -> tuple[str, set[str]]:
    """``MODEL+frames+audio`` -> (``MODEL``, {frames, audio}); only known suffixes are taken."""
    looks: set[str] = set()
    while "+" in arg and arg.rsplit("+", 1)[1].strip().casefold() in _LOOKS:
        arg, suffix = arg.rsplit("+", 1)
        looks.add(suffix.strip().casefold())
    return arg, looks


def _looking_judge(name: str, backend: str, arg: str, looks: set[str], options: dict) -> Judge:
    """``openai:MODEL+frames[+audio]`` or ``local:PATH+frames``."""
    if "frames" not in looks:
        raise JudgeError(
            f"judge {name!r}: +audio goes with +frames, e.g. openai:MODEL+frames+audio"
        )
    if backend == "openai":
        return openai_frames_judge(arg or "gpt-4o", audio="audio" in looks, **options)
    if backend == "local":
        if not arg:
            raise JudgeError("local frames judge needs a path: --judge local:PATH+frames")
        if "audio" in looks:
            raise JudgeError("local:PATH+frames sends audio by itself when the model takes it")
        return local_frames_judge(arg, **options)
    raise JudgeError(f"judge {name!r}: +frames works with openai:MODEL and local:PATH only")


def _lexical(arg: str, **_options: object) -> Judge:

    return LexicalJudge(_threshold(arg, DEFAULT_THRESHOLD))


def _embedding(arg: str, **_options: object) -> Judge:

    return EmbeddingJudge(_threshold(arg, DEFAULT_EMBEDDING_THRESHOLD))


def _openai(arg: str, **options: object) -> Judge:

    return OpenAIJudge(arg or "gpt-4o", **options)  # type: ignore[arg-type]


def _local(arg: str, **options: object) -> Judge:

    if not arg:
        raise JudgeError("local judge needs a path: --judge local:PATH")
    return LocalJudge(arg, **options)  # type: ignore[arg-type]


def _file(arg: str, **_options: object) -> Judge:

    if not arg:
        raise JudgeError("file judge needs a path: --judge file:PATH")
    return FileJudge(arg)


KIND = "judges"
"""Registry kind of judges: ``factory(ARG, **options) -> Judge`` for ``--judge NAME[:ARG]``."""

for _name, _factory in {
    "toolset": lambda arg, **_: ToolsetOnly(),
    "lexical": _lexical,
    "embedding": _embedding,
    "openai": _openai,
    "local": _local,
    "file": _file,
}.items():
    register(KIND, _name, _factory)


def make_judge(name: str, **options: object) -> Judge:
    """Build a judge from its ``--judge`` string (see the module docstring): ``NAME[:ARG]``
    calls the factory registered as ``NAME`` of kind ``judges`` (bundled, ``register`` or an
    ``interactscope.judges`` entry point) with ``ARG`` and ``options``.

    Raises:
        JudgeError: unknown name, a backend whose packages are missing, or a factory that raises
            (one line naming the judge; the traceback is logged at DEBUG, ``-v``).
    """
    base, looks = _looking_suffixes(name)
    backend, _, arg = base.partition(":")
    backend = backend.strip().casefold()
    if looks:
        return _looking_judge(name, backend, arg, looks, options)
    try:
        factory = lookup(KIND, backend, what="judge")
    except UnknownPluginError:
        raise JudgeError(
            f"unknown judge {name!r}: use toolset, openai[:MODEL][+frames], local:PATH[+frames], "
            "embedding, lexical, file:PATH or a registered one (" + ", ".join(names(KIND)) + ")"
        ) from None
    except PluginError as exc:
        raise JudgeError(str(exc)) from exc
    try:
        return factory(arg, **options)
    except JudgeError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure inside a (plug-in) judge's constructor
        log.debug("judge %r cannot be built", name, exc_info=True)  # shown with -v
        raise JudgeError(
            f"judge {name!r} cannot be built: {type(exc).__name__}: {first_problem(exc)} "
            "(-v shows the traceback)"
        ) from exc

"""Tokenize a Qwen prompt's media placeholders once per run instead of once per token.

The Qwen processors expand each media placeholder of the prompt into one placeholder token per
vision or audio token (``<|VIDEO|>`` x 252 per temporal patch of a 720p frame at the shipped
budget, ``<|AUDIO|>`` x 25 per second) and then tokenize that text: at a 60 s decision point
some 5,000 placeholder tokens, each matched, split out and turned into an id by the tokenizer
one by one. :func:`run_tokenizing` puts a stand-in for the processor's tokenizer while inside
that gives the same ids from a shorter text: each run of one placeholder token becomes a single
token, the text is tokenized, and each placeholder id is repeated as often as its run was long.

This equals tokenizing the expanded text because a placeholder is an added special token: the
tokenizer splits the text on added tokens before it normalises or pre-tokenizes the rest, so a
run of ``k`` copies is ``k`` ids of its own and the text around it is split the same way. The
stand-in checks what it relies on and hands the call to the tokenizer unchanged otherwise: one
text, no truncation or length limit, no control-token markers (transformers' escaping of
placeholders typed by a user), the placeholder a single added token of the vocabulary, as many
placeholder ids in the short text's encoding as runs, and outputs ``input_ids`` and
``attention_mask`` only.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

__all__ = ["run_tokenizing"]

_MEDIA = ("image_token", "video_token", "audio_token")
_PASS_KWARGS = {"return_tensors", "padding", "padding_side", "add_special_tokens"}


@contextlib.contextmanager
def run_tokenizing(processor: Any) -> Iterator[None]:
    """``processor.tokenizer`` answered by :class:`_RunTokenizer` while inside (see the module
    docstring), and the processor's check of the placeholder counts after tokenizing done by
    counting (:func:`_counting_check`), both restored after; a processor without a tokenizer or
    media tokens is left alone."""
    inner = getattr(processor, "tokenizer", None)
    own = getattr(processor, "__dict__", None)
    tokens = _media_tokens(processor, inner)
    if inner is None or own is None or not tokens or isinstance(inner, _RunTokenizer):
        yield
        return
    check = getattr(processor, "_check_special_mm_tokens", None)
    own_check = check is not None and "_check_special_mm_tokens" not in own
    processor.tokenizer = _RunTokenizer(inner, tokens)
    if own_check:
        processor._check_special_mm_tokens = _counting_check(processor, check)
    try:
        yield
    finally:
        processor.tokenizer = inner
        if own_check:
            del processor._check_special_mm_tokens


def _counting_check(processor: Any, check: Any) -> Any:
    """transformers' ``_check_special_mm_tokens(text, text_inputs, modalities)`` (placeholder
    ids in ``input_ids`` = placeholders in the text, else truncation cut some), counting with
    ``str.count`` instead of a regular expression over the expanded text: the same counts where
    the text holds no control-token marker (the library's regular expression only skips
    placeholders right after one); any other case, and any mismatch (to raise the library's
    error), goes to ``check``."""
    # optional dependency ([transformers])
    from transformers.processing_utils import _CONTROL_TOKEN_START

    def counting(text: Any, text_inputs: Any, modalities: list[str]) -> Any:
        ids = text_inputs["input_ids"]
        rows = ids.tolist() if hasattr(ids, "tolist") else ids
        if not isinstance(text, list) or any(_CONTROL_TOKEN_START in t for t in text):
            return check(text, text_inputs, modalities)
        for modality in modalities:
            s = getattr(processor, f"{modality}_token", None)
            i = getattr(processor, f"{modality}_token_id", None)
            if s is None or i is None:
                continue
            if [list(r).count(i) for r in rows] != [t.count(s) for t in text]:
                return check(text, text_inputs, modalities)
        return None

    return counting


def _media_tokens(processor: Any, tok: Any) -> dict[str, int]:
    """The processor's media placeholder strings -> their ids, those that are one added token."""
    added = getattr(tok, "get_added_vocab", None)
    vocab = added() if callable(added) else {}
    out = {}
    for name in _MEDIA:
        s = getattr(processor, name, None)
        if isinstance(s, str) and s and isinstance(vocab.get(s), int):
            out[s] = int(vocab[s])
    return out


class _RunTokenizer:
    """Stands in for a tokenizer during one processor call; anything but ``__call__`` is the
    real tokenizer's."""

    def __init__(self, inner: Any, tokens: dict[str, int]):
        self._inner, self._tokens = inner, tokens
        alts = "|".join(f"(?:{re.escape(t)})+" for t in sorted(tokens, key=len, reverse=True))
        self._runs = re.compile(alts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __call__(self, text: Any = None, *args: Any, **kw: Any) -> Any:
        got = self._short(text, args, kw)
        return got if got is not None else self._inner(text, *args, **kw)

    def _short(self, text: Any, args: tuple, kw: dict) -> Any:
        """The encoding from the shortened text; None where the stand-in does not apply."""
        import torch  # optional dependency ([transformers])
        from transformers.processing_utils import _CONTROL_TOKEN_START

        if args or set(kw) - _PASS_KWARGS or kw.get("return_tensors") != "pt":
            return None
        if not (isinstance(text, list) and len(text) == 1 and isinstance(text[0], str)):
            return None
        if _CONTROL_TOKEN_START in text[0]:
            return None
        lens: list[int] = []
        ids_of: list[int] = []

        def one(m: re.Match) -> str:
            run = m.group(0)
            tok = next(t for t in self._tokens if run.startswith(t))
            lens.append(len(run) // len(tok))
            ids_of.append(self._tokens[tok])
            return tok

        short = self._runs.sub(one, text[0])
        if not lens or max(lens) < 2:
            return None
        out = self._inner([short], **kw)
        if set(out.keys()) != {"input_ids", "attention_mask"}:
            return None
        ids, mask = out["input_ids"], out["attention_mask"]
        media = torch.tensor(sorted(set(ids_of)), dtype=ids.dtype)
        at = torch.isin(ids[0], media).nonzero().flatten()
        if len(at) != len(lens) or ids[0, at].tolist() != ids_of:
            return None
        reps = torch.ones(ids.shape[1], dtype=torch.long)
        reps[at] = torch.tensor(lens)
        out["input_ids"] = ids[0].repeat_interleave(reps)[None]
        out["attention_mask"] = mask[0].repeat_interleave(reps)[None]
        out._encodings = None  # the short text's offsets: not this text's
        return out

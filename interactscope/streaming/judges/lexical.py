"""``lexical`` judge: normalised token overlap, deterministic, no model (an approximation)."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from interactscope.streaming.judges.base import Judge, Verdict

__all__ = ["LexicalJudge", "token_f1", "tokens"]

LEXICAL_VERSION = "lexical-f1-v1"
DEFAULT_THRESHOLD = 0.5
_STOP = frozenset(
    "a an the is are was were be been being am to of in on at for and or but it its this that "
    "there here i you he she we they me my your our their his her them us do does did has have "
    "had will would can could should shall may might just now so as by with from up down out "
    "please".split()
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_WORD = re.compile(r"\w+", re.UNICODE)


def tokens(text: str) -> list[str]:
    """NFKC-normalised, case-folded word tokens without English stop words; CJK characters
    are one token each."""
    norm = unicodedata.normalize("NFKC", text).casefold()
    out: list[str] = []
    for w in _WORD.findall(norm):
        if _CJK.search(w):
            out.extend(ch for ch in w if not ch.isspace())
        elif w not in _STOP:
            out.append(w)
    return out


def token_f1(reference: str, candidate: str) -> float | None:
    """SQuAD-style token F1 between reference and candidate (multiset overlap), in [0, 1];
    ``None`` when the reference has no content token."""
    ref, cand = Counter(tokens(reference)), Counter(tokens(candidate))
    if not ref:
        return None
    common = sum((ref & cand).values())
    if common == 0:
        return 0.0
    p, r = common / sum(cand.values()), common / sum(ref.values())
    return 2 * p * r / (p + r)


class LexicalJudge(Judge):
    """Yes iff token F1(reference, candidate) ≥ ``threshold`` (default 0.5). The request is not
    used. An offline approximation of the paper's GPT-4o judge: it rewards shared words, not
    meaning, and is labelled so in every output."""

    backend = "lexical"
    prompt_version = LEXICAL_VERSION

    def __init__(self, threshold: float = DEFAULT_THRESHOLD):
        self.threshold = float(threshold)
        self.name = "lexical"
        self.model = f"token-f1>={self.threshold:g}"
        self.approximation = (
            f"lexical token-F1 >= {self.threshold:g} (offline approximation of an LLM judge)"
        )

    @property
    def settings(self) -> dict[str, float]:
        return {"threshold": self.threshold}

    def judge(self, triples: list[tuple[str, str, str]]) -> list[Verdict]:
        out = []
        for _request, reference, candidate in triples:
            f1 = token_f1(reference, candidate)
            if f1 is None:
                out.append(Verdict(None, "reference has no content token"))
            else:
                out.append(Verdict(f1 >= self.threshold, f"f1={f1:.4f}"))
        return out

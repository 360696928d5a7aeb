"""Static HTML viewer of run folders (``interactscope view RUN [RUN_B] --out FILE.html``).

Flow: run folders (:mod:`.runs`) -> per-response classes (:mod:`.classify`), score cells
(:mod:`.scores`), frames seen (:mod:`.frames`) -> :class:`PageData` (:mod:`.streaming`) -> one
HTML file (:mod:`.render`). A page kind is a builder plus a template in :data:`render.PAGES`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from interactscope.view.ego import build_ego_comparison, build_ego_page, is_ego_run
from interactscope.view.ego_model import EgoPageData
from interactscope.view.model import PageData, ViewSettings
from interactscope.view.render import PAGES, render_page, write_page
from interactscope.view.runs import LoadedRun, ViewError, load_run
from interactscope.view.streaming import build_streaming_page

__all__ = [
    "PAGES",
    "EgoPageData",
    "LoadedRun",
    "PageData",
    "ViewError",
    "ViewSettings",
    "build_ego_page",
    "build_view",
    "load_run",
    "render_page",
    "write_view",
]


def _labels(paths: Sequence[Path], runs: list[LoadedRun]) -> None:
    models = [r.manifest.model for r in runs]
    for p, r in zip(paths, runs, strict=True):
        # Two runs of one model are told apart by their folder names.
        r.label = r.manifest.model if models.count(r.manifest.model) == 1 else p.name


def build_view(
    runs: Sequence[str | Path], settings: ViewSettings | None = None
) -> PageData | EgoPageData:
    """Load run folders and assemble the page data.

    Args:
        runs: one or more run folders of the same benchmark (scored with ``interactscope score``
            to see outcomes; an unscored run shows its responses only). With two, the page
            lists the targets B gained and lost against A.
        settings: viewer settings (thumbnail cap, bootstrap resamples, ...).

    A folder of ``interactscope ego run`` (it holds ``episodes.jsonl``) gets the EgoBench page
    (:func:`build_ego_page`); two of them are shown side by side (:func:`build_ego_comparison`).

    Raises:
        ViewError: no runs, an unreadable run folder, runs of different benchmarks, or an
            EgoBench run given with a streaming run, or more than two EgoBench runs.
    """
    if not runs:
        raise ViewError("no run folders given")
    ego = [is_ego_run(r) for r in runs]
    if any(ego):
        if len(runs) > 2 or not all(ego):
            raise ViewError(
                "EgoBench run folders are viewed alone or two side by side: give one or two "
                "`ego run` folders (no streaming runs with them)"
            )
        return build_ego_page(runs[0]) if len(runs) == 1 else build_ego_comparison(*runs)
    settings = settings or ViewSettings()
    paths = [Path(r) for r in runs]
    loaded = [load_run(p) for p in paths]
    names = {r.manifest.benchmark.name for r in loaded}
    if len(names) > 1:
        raise ViewError(
            f"runs of different benchmarks ({', '.join(sorted(names))}): view runs of one benchmark"
        )
    _labels(paths, loaded)
    return build_streaming_page(loaded, settings)


def write_view(
    runs: Sequence[str | Path], out: str | Path, settings: ViewSettings | None = None
) -> Path:
    """:func:`build_view` then write the HTML file ``out``; returns its path. Raises as
    :func:`build_view`."""
    return write_page(build_view(runs, settings), out)

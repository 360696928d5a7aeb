"""The evidence controls, registered by name: ``interactscope control NAME`` has one command per
entry and ``interactscope report`` one section per entry with a report function.

An entry names its module and functions instead of importing them, so listing the commands
(``interactscope --help``) loads no analysis code. A control's ``run`` function takes
``(args, options)``: the command-line values by parameter name and the
:class:`~interactscope.stats.BootstrapOptions`; its ``report`` function takes
``(inputs, sink)`` (:class:`~interactscope.streaming.analysis.controls.base.ReportInputs`, a
:class:`~interactscope.streaming.analysis.controls.base.ReportSink`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from interactscope.core import registry as plugins

__all__ = ["CONTROLS", "ControlParam", "ControlSpec", "register", "registered"]

_PKG = "interactscope.streaming.analysis.controls"
_TOLERANCES = [1.0, 2.0, 4.0]  # = scene.TOLERANCES (kept literal: no import at CLI start)
_DELAYS = [0.0, 1.0, 2.0, 3.0, 5.0, 8.0]  # = priors.BLIND_FIRE_DELAYS


@dataclass(frozen=True)
class ControlParam:
    """One command-line parameter of a control.

    ``kind``: ``argument`` (positional) or ``option``; ``type``: its annotation (``Path``,
    ``list[float]``, ``str | None``, ...); ``default``: ``...`` when required; ``flags``: the
    option's spellings (default ``--NAME``)."""

    name: str
    kind: Literal["argument", "option"]
    type: Any
    default: Any = ...
    help: str = ""
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class ControlSpec:
    """A registered control.

    Attributes:
        name: the command, ``interactscope control NAME``.
        summary: its help line.
        params: command-line parameters besides ``--out`` and ``--resamples``.
        module: the module holding its functions.
        run: name of ``run(args, options) -> ControlResult`` in ``module``.
        report: name of ``report(inputs, sink)`` in ``module``, or ``None`` (no report section).
        rank: position among the commands and report sections (ascending).
    """

    name: str
    summary: str
    params: tuple[ControlParam, ...]
    module: str
    run: str
    report: str | None = None
    rank: int = 100

    def _function(self, name: str) -> Callable[..., Any]:
        return getattr(importlib.import_module(self.module), name)

    def runner(self) -> Callable[..., Any]:
        """The ``run(args, options)`` function (imports the module)."""
        return self._function(self.run)

    def reporter(self) -> Callable[..., Any] | None:
        """The ``report(inputs, sink)`` function, or ``None``."""
        return None if self.report is None else self._function(self.report)


KIND = "controls"
CONTROLS: dict[str, ControlSpec] = plugins.table(KIND)
"""Control name → spec (the ``controls`` table of :mod:`interactscope.core.registry`)."""


def register(spec: ControlSpec) -> ControlSpec:
    """Register a control as kind ``controls`` (the CLI and the report pick it up); a plug-in
    package may instead name a ControlSpec in an ``interactscope.controls`` entry point.

    Raises:
        ValueError: another control of that name is already registered.
    """
    if spec.name in CONTROLS and CONTROLS[spec.name] != spec:
        raise ValueError(f"control {spec.name!r} is already registered")
    plugins.register(KIND, spec.name, spec)
    return spec


def registered() -> list[ControlSpec]:
    """Every registered control by ``rank`` (the paper's order: priors, scene, policy,
    schedule)."""
    specs = [plugins.lookup(KIND, n) for n in plugins.names(KIND)]
    return sorted(specs, key=lambda s: (s.rank, s.name))


_NONE_RUN = ControlParam("run", "argument", Path, help="A run collected with --set scene=none.")

register(
    ControlSpec(
        name="request-prior",
        summary="T1 tool labels from the request text alone: recovery rate vs the constant "
        "baseline.",
        params=(
            _NONE_RUN,
            ControlParam(
                "source",
                "option",
                str,
                "first",
                "first (first response ≥ q) or at_q.",
                ("--source",),
            ),
        ),
        module=f"{_PKG}.priors",
        run="run_request_prior_cli",
        rank=10,
    )
)
register(
    ControlSpec(
        name="blind-fire",
        summary="Fixed-delay blind fire: the request-prior labels fired at q + d (simulated), "
        "T1 joint %.",
        params=(
            _NONE_RUN,
            ControlParam(
                "delay",
                "option",
                list[float],
                _DELAYS,
                "d values, s (fired at q + d).",
                ("--delay",),
            ),
            ControlParam("tolerance", "option", float, 2.0, "", ("--tolerance",)),
        ),
        module=f"{_PKG}.priors",
        run="run_blind_fire_cli",
        report="report_priors",
        rank=20,
    )
)
register(
    ControlSpec(
        name="scene",
        summary="Scene ablation: request-only run − full run, paired, at each tolerance (pp).",
        params=(
            ControlParam("full", "argument", Path, help="Run with scene input (scored)."),
            ControlParam(
                "none", "argument", Path, help="The same model collected with --set scene=none."
            ),
            ControlParam(
                "tolerance", "option", list[float], _TOLERANCES, "δ values, s.", ("--tolerance",)
            ),
            ControlParam("judge", "option", str | None, None, "", ("--judge",)),
        ),
        module=f"{_PKG}.scene",
        run="run_cli",
        report="report_scene",
        rank=30,
    )
)
register(
    ControlSpec(
        name="policy",
        summary="History and cooldown controls: recall, output count and volume vs the plain run.",
        params=(
            ControlParam("plain", "argument", Path, help="Plain run (scored)."),
            ControlParam(
                "controls", "argument", list[Path], help="history.n / cooldown_s runs (scored)."
            ),
            ControlParam("task", "option", str, "T8-A", "", ("--task",)),
        ),
        module=f"{_PKG}.policy",
        run="run_cli",
        report="report_policy",
        rank=40,
    )
)
register(
    ControlSpec(
        name="schedule",
        summary="Decision-schedule control: every metric, sparse − dense, paired.",
        params=(
            ControlParam("dense", "argument", Path, help="Run on the per-second grid (scored)."),
            ControlParam(
                "sparse",
                "argument",
                Path,
                help="The same model with a larger grid.step_s (scored).",
            ),
        ),
        module=f"{_PKG}.schedule",
        run="run_cli",
        report="report_schedule",
        rank=50,
    )
)

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

__all__ = ["CONTROLS", "ControlParam", "ControlSpec", "control", "register", "registered"]

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


def _spec(name: str, target: Any) -> ControlSpec:
    """A registered target as a :class:`ControlSpec`. Raises ``PluginError`` (one line)."""
    if not isinstance(target, ControlSpec):
        raise plugins.PluginError(
            f"control {name!r}: {type(target).__name__} is not a ControlSpec; see "
            "docs/architecture.md, 'A control'"
        )
    if target.name != name and target.name in CONTROLS:  # its command would be a built-in's
        raise plugins.PluginError(
            f"control {name!r}: named {target.name!r}, a built-in control (the built-in wins); "
            "rename it"
        )
    return target


def control(name: str) -> ControlSpec:
    """The control registered as ``name``.

    Raises:
        UnknownPluginError: no such control; PluginError: it cannot be loaded or is not a
            ControlSpec (one line naming it and the fix).
    """
    return _spec(name, plugins.lookup(KIND, name, what="control"))


def registered(*, built_in: bool = False) -> list[ControlSpec]:
    """Every registered control by ``rank`` (the paper's order: priors, scene, policy,
    schedule). A plug-in that cannot be loaded is left out with a one-line
    :class:`~interactscope.core.registry.PluginWarning`. ``built_in``: only the controls of
    :data:`CONTROLS` (no entry point is read: what the CLI lists at start-up)."""
    if built_in:
        specs = list(CONTROLS.values())
    else:
        specs = plugins.load_each(KIND, plugins.names(KIND), _spec, what="control")
    return sorted(specs, key=lambda s: (s.rank, s.name))


def _arg(name: str, help: str, type: Any = Path) -> ControlParam:
    """A positional parameter (a run folder unless ``type`` says otherwise)."""
    return ControlParam(name, "argument", type, help=help)


def _opt(name: str, type: Any, default: Any, help: str = "") -> ControlParam:
    """An option ``--NAME``."""
    return ControlParam(name, "option", type, default, help)


_NONE_RUN = _arg("run", "A run collected with --set scene=none.")
_BUILT_IN = (
    # name, help line, parameters, module (under controls/), run function, report function;
    # rank: 10, 20, ... in this order (the paper's).
    (
        "request-prior",
        "T1 tool labels from the request text alone: recovery rate vs the constant baseline.",
        (_NONE_RUN, _opt("source", str, "first", "first (first response ≥ q) or at_q.")),
        "priors", "run_request_prior_cli", None,
    ),
    (
        "blind-fire",
        "Fixed-delay blind fire: the request-prior labels fired at q + d (simulated), T1 joint %.",
        (
            _NONE_RUN,
            _opt("delay", list[float], _DELAYS, "d values, s (fired at q + d)."),
            _opt("tolerance", float, 2.0),
        ),
        "priors", "run_blind_fire_cli", "report_priors",
    ),
    (
        "scene",
        "Scene ablation: request-only run − full run, paired, at each tolerance (pp).",
        (
            _arg("full", "Run with scene input (scored)."),
            _arg("none", "The same model collected with --set scene=none."),
            _opt("tolerance", list[float], _TOLERANCES, "δ values, s."),
            _opt("judge", str | None, None),
        ),
        "scene", "run_cli", "report_scene",
    ),
    (
        "policy",
        "History and cooldown controls: recall, output count and volume vs the plain run.",
        (
            _arg("plain", "Plain run (scored)."),
            _arg("controls", "history.n / cooldown_s runs (scored).", list[Path]),
            _opt("task", str, "T8-A"),
        ),
        "policy", "run_cli", "report_policy",
    ),
    (
        "schedule",
        "Decision-schedule control: every metric, sparse − dense, paired.",
        (
            _arg("dense", "Run on the per-second grid (scored)."),
            _arg("sparse", "The same model with a larger grid.step_s (scored)."),
        ),
        "schedule", "run_cli", "report_schedule",
    ),
)  # fmt: skip
for _i, (_name, _summary, _params, _module, _run, _report) in enumerate(_BUILT_IN, 1):
    register(
        ControlSpec(
            name=_name,
            summary=_summary,
            params=_params,
            module=f"{_PKG}.{_module}",
            run=_run,
            report=_report,
            rank=10 * _i,
        )
    )

"""The importable formats by name: converter, settings model, one-line description."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from interactscope.core import registry as plugins
from interactscope.streaming.importers import omnimmi, ovo, proassist, streamingbench
from interactscope.streaming.importers.common import Conversion, ImporterError


@dataclass(frozen=True)
class Format:
    """One peer annotation format."""

    name: str
    description: str
    convert: Callable[[list, Any], Conversion]
    settings: type[BaseModel]


KIND = "importers"
"""Registry kind of peer formats: a :class:`Format` per name (``interactscope.importers`` entry
points may add one)."""

for _f in (
    Format(
        "streamingbench-po",
        "StreamingBench Proactive Output (questions_proactive.json) -> T2",
        streamingbench.convert,
        streamingbench.Settings,
    ),
    Format(
        "ovo-forward",
        "OVO-Bench CRR/REC/SSR (ovo_bench_new.json) -> T2/T4/T8-C",
        ovo.convert_forward,
        ovo.ForwardSettings,
    ),
    Format(
        "ovo-backward",
        "OVO-Bench backward / real-time multiple choice (ovo_bench_new.json) -> T8-B",
        ovo.convert_backward,
        ovo.BackwardSettings,
    ),
    Format(
        "omnimmi-pa",
        "OmniMMI proactive alerting (proactive_alerting.json) -> T2 (or T8-A)",
        omnimmi.convert_pa,
        omnimmi.PASettings,
    ),
    Format(
        "omnimmi-si",
        "OmniMMI speaker identification (speaker_identification.json) -> T8-B",
        omnimmi.convert_si,
        omnimmi.SISettings,
    ),
    Format(
        "proassist",
        "ProAssist dialogs (generated_dialogs/*_filtered.json) -> T8-C",
        proassist.convert,
        proassist.Settings,
    ),
):
    plugins.register(KIND, _f.name, _f)
FORMATS: dict[str, Format] = plugins.table(KIND)
"""Format name -> :class:`Format` (the bundled ones and any registered)."""


def _known() -> list[str]:
    """Format names: the bundled ones in their order, then plug-ins."""
    return list(dict.fromkeys([*FORMATS, *plugins.names(KIND)]))


def get_format(name: str) -> Format:
    """The format called ``name``. Raises ImporterError listing the known names."""
    try:
        return plugins.lookup(KIND, name)
    except plugins.UnknownPluginError:
        raise ImporterError(
            f"unknown format {name!r}; choose one of: {', '.join(_known())}"
        ) from None


def make_settings(fmt: Format, values: dict[str, Any]) -> BaseModel:
    """The format's settings from ``--set KEY=VALUE`` pairs. Raises ImporterError naming the key
    and the settings the format accepts."""
    try:
        return fmt.settings.model_validate(values)
    except ValidationError as exc:
        e = exc.errors()[0]
        key = ".".join(str(x) for x in e["loc"])
        known = ", ".join(fmt.settings.model_fields) or "none"
        raise ImporterError(
            f"format {fmt.name}: setting {key!r}: {e['msg']} (settings: {known})"
        ) from None

"""``interactscope prompt``: the exact messages a model would receive at one decision point,
without calling it (``collect --dry-run`` shows the first decision point of each interaction)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from interactscope.cli.app import app
from interactscope.cli.common import bench_dir, fail, parse_sets
from interactscope.core.model_configs import resolve_model_config
from interactscope.streaming.adapters.base import AdapterError, options_of
from interactscope.streaming.adapters.registry import (
    adapter_class,
    build_adapter,
    load_model_config,
)
from interactscope.streaming.bench import BenchmarkError, load_benchmark
from interactscope.streaming.collect import resolve_settings
from interactscope.streaming.protocol.observation import Observer
from interactscope.streaming.protocol.preview import (
    format_preview,
    preview_online,
    preview_prompt,
    preview_two_step,
)
from interactscope.streaming.protocol.requests import interaction_grid


def build_previews(
    model: str,
    bench: Path,
    overrides: dict[str, Any],
    points: list[tuple[str | None, float | None]],
    *,
    loaded: tuple[str, dict[str, Any]] | None = None,
    build: bool = True,
) -> list[Any]:
    """Previews for ``[(interaction id or None = every interaction, t or None = its first
    decision point), ...]``, as the model's adapter builds them (:func:`engine_view`): its
    ``frames_as``, its own part rewrite, frames at its consumer side; Online Rolling
    (``protocol: online``) as turn 1 and the turn at t (default: the second decision point).
    ``loaded``: the model's ``(name, config)`` when the caller has loaded it; ``build=False``
    only checks the points (ids, ``t``) and returns ``[(interaction id, t), ...]``, ``t`` (s)
    defaulting to the first decision point (for a model sent no prompt).
    Raises ``typer.Exit`` with one line on any bad input."""

    try:
        name, config = loaded or load_model_config(model)
        settings = resolve_settings(config, overrides, config_path=resolve_model_config(model).path)
        b = load_benchmark(bench_dir(bench), media_errors="record")
    except BenchmarkError as exc:  # the first problem; `validate` lists them all
        fail(str(exc).splitlines()[0])
    text_only = config.get("sees_pixels") is False or config.get("backend") == "cascade"
    view = engine_view(name, config, settings) if build else {}
    out = []
    for iid, t in points:
        chosen = b.interactions if iid is None else [_find(b, iid)]
        for it in chosen:
            video = b.video_of(it)
            if t is not None:
                _check_at(it, t, video.duration_s)
                _note_off_grid(b, it, t, settings)
            if not build:
                out.append((it.id, interaction_grid(b, it, settings)[0] if t is None else t))
                continue
            obs = None
            if settings.scene != "none" and video.id not in b.media_errors:
                obs = Observer(
                    b.media_path(video),
                    settings,
                    bench_root=b.root,
                    consumer_side=view["consumer_side"],
                )
            try:
                if settings.protocol == "online":
                    out += _online(b, it, t, settings, obs, text_only, view)
                    continue
                at = interaction_grid(b, it, settings)[0] if t is None else t
                out += _offline(b, it, at, settings, obs, text_only, view)
            except Exception as exc:  # media/ASR errors: one line naming the file
                fail(f"{b.media_path(video)}: {type(exc).__name__}: {exc}")
    return out


def _check_at(it: Any, t: float, duration_s: float | None) -> None:
    """Refuse (one line) a decision time outside the interaction's decision grid [q, D]:
    before the request time q nothing is asked yet, past the clip end D there is no stream."""
    end = f"{duration_s:g}" if duration_s is not None else "the clip end"
    if t < it.q - 1e-9 or (duration_s is not None and t > duration_s + 1e-9):
        fail(
            f"--at {t:g}: outside the decision points of interaction {it.id!r}; "
            f"pick t in [{it.q:g}, {end}] s (request time q to the clip end)"
        )


def unprompted_note(name: str, config: dict[str, Any]) -> str | None:
    """The one line for a model whose backend is sent no prompt (a baseline or control:
    ``Adapter.unprompted`` says what it does instead), or None for a prompted model."""
    try:
        cls = adapter_class(config["backend"])
    except AdapterError:  # left to the preview's own fallback and errors
        return None
    if cls.unprompted is None:
        return None
    return (
        f"model {name!r} (backend {cls.backend}) is sent no prompt, so there is nothing to "
        f"preview: {cls.unprompted}"
    )


def _note_off_grid(b: Any, it: Any, t: float, settings: Any) -> None:
    """One note on stderr when ``t`` (s, inside [q, D]) is not on the interaction's decision grid
    ({q, D} and the multiples of ``grid.step_s`` between), naming the grid points either side:
    the preview is still printed (scripts keep working), but collect never asks at ``t``."""
    grid = interaction_grid(b, it, settings)
    at = round(t, 3)  # grid times are rounded to milliseconds
    if len(grid) < 2 or at in grid:  # [q] only: the video could not be measured
        return
    below = max(g for g in grid if g < at)
    above = min(g for g in grid if g > at)
    typer.secho(
        f"note: t = {t:g} s is not a decision point of interaction {it.id!r} (collect never asks "
        f"there; grid.step_s = {settings.grid.step_s:g}); the nearest are {below:g} s and "
        f"{above:g} s",
        fg=typer.colors.YELLOW,
        err=True,
    )


def _offline(b: Any, it: Any, at: float, settings: Any, obs: Any, text_only: bool, view: dict):
    """One preview, or the two calls of the cascade's two-step decision."""
    if view.get("decision") == "two_step":
        threshold = view["speak_threshold"]
        return preview_two_step(b, it, at, settings, observer=obs, speak_threshold=threshold)
    pv = preview_prompt(
        b,
        it,
        at,
        settings,
        observer=obs,
        text_only=text_only,
        frames_as=view["frames_as"],
        convert=view["convert"],
    )
    return [pv]


def _online(b: Any, it: Any, t: float | None, settings: Any, obs: Any, text_only: bool, view: dict):

    return preview_online(
        b, it, t, settings, observer=obs, text_only=text_only, frames_as=view["frames_as"]
    )


def engine_view(name: str, config: dict[str, Any], settings: Any) -> dict[str, Any]:
    """How the model's adapter shapes what its engine receives, without loading weights:
    ``frames_as`` (``image`` | ``video`` | ``video_pairs``: how the prompt's messages are built), ``convert`` (the
    adapter's own rewrite of a message's parts: the vLLM adapter builds image parts and turns
    them into one video part itself), ``consumer_side`` (the adapter's
    ``consumer_max_side``, the frame size the collection driver holds frames at). An adapter
    that cannot be built here (e.g. vLLM without its package) is read from its config
    (``frames_as``) and a warning says the frame size and labels may differ. Raises
    ``typer.Exit`` (exit 1, one line, as ``collect``) on an invalid backend option, and when
    the protocol is online and the backend does not support it."""

    check_options(name, config, settings)
    try:
        adapter = build_adapter(name, config, settings)
    except (AdapterError, ImportError) as exc:
        typer.secho(
            f"warning: model {name}: {str(exc).splitlines()[0]}; the preview shows the template's "
            "rendering at the observation's frame size (the adapter may resize or relabel)",
            fg=typer.colors.YELLOW,
            err=True,
        )
        frames_as = config.get("frames_as") or (config.get("limits") or {}).get("frames_as")
        return {"frames_as": frames_as or "image", "convert": None, "consumer_side": None}
    if settings.protocol == "online" and not adapter.supports_online:
        fail(f"model {name}: backend {adapter.backend!r} does not support Online Rolling")
    side = getattr(adapter, "consumer_max_side", None)
    # the vLLM adapter with v1 renders frames as images and joins them into one video part itself
    joins = getattr(adapter, "joins_video_itself", None)
    convert = adapter._as_video if callable(joins) and joins() else None
    options = getattr(adapter, "options", None)
    return {
        "frames_as": "image" if convert else getattr(adapter, "frames_as", None) or "image",
        "convert": convert,
        "consumer_side": side if callable(side) else None,
        # the cascade's adapter.decision: two_step previews both of its calls
        "decision": getattr(options, "decision", "direct"),
        "speak_threshold": getattr(options, "speak_threshold", None),
    }


def check_options(name: str, config: dict[str, Any], settings: Any) -> None:
    """Refuse, in one line (exit 1, as ``collect``), a model config or ``--set adapter.KEY``
    option its backend's options model rejects: an unknown key (the valid ones listed) or a
    bad value (the value given, then what is valid). Checked before the adapter is built, so
    the preview's fallback for an adapter that cannot be built here (its package missing)
    never hides a typo; a backend whose class cannot be imported is left to that fallback."""
    try:
        options_class = adapter_class(config["backend"]).options_model()
    except AdapterError:
        return
    if options_class is None:
        return
    try:
        options_of(options_class, name, config, settings)
    except AdapterError as exc:
        fail(str(exc).splitlines()[0])


def _find(b: Any, iid: str) -> Any:
    try:
        return b.interaction(iid)
    except KeyError:
        ids = ", ".join(it.id for it in b.interactions[:12])
        fail(
            f"no interaction {iid!r} in {b.root}; ids: {ids}{' ...' if len(b.interactions) > 12 else ''}"
        )


def echo_previews(previews: list[Any], as_json: bool) -> None:
    """Print previews as text (one block each) or as one JSON list."""

    if as_json:
        typer.echo(json.dumps([p.model_dump() for p in previews], indent=2))
    else:
        typer.echo("\n\n".join(format_preview(p) for p in previews))


@app.command("prompt")
def prompt(
    model: str = typer.Option(
        ..., "--model", "-m", help="Model config name (see `interactscope models`)."
    ),
    bench: Path = typer.Option(
        ..., "--bench", "-b", help="Benchmark folder, or demo (the bundled demo benchmark)."
    ),
    interaction_id: str = typer.Option(..., "--id", help="Interaction id."),
    at: float | None = typer.Option(
        None,
        "--at",
        help="Decision time t, s (default: the interaction's first decision point, q); a time "
        "off the decision grid is previewed with a note naming the nearest decision points.",
    ),
    set_: list[str] = typer.Option([], "--set", help="Override a setting, as for collect."),
    as_json: bool = typer.Option(False, "--json", help="One JSON document, for scripts."),
) -> None:
    """Print the exact messages the model would receive at one decision point — system text,
    request, tool catalogue, history, and each attached frame/audio part described (count, times,
    sizes) — without calling the model.

    A baseline or control that is sent no prompt (oracle, silent, blind-fire, change-detector)
    gets one line saying what it does instead (exit 0; with --json an empty list).

    Example: interactscope prompt --model qwen3-omni --bench demo --id t1-taxi --at 4
    (demo: the bundled demo benchmark, in a checkout or a pip install)."""
    if at is not None and at < 0:
        fail("--at must be >= 0 (seconds from the file start)")
    name, config = load_model_config(model)
    note = unprompted_note(name, config)
    previews = build_previews(
        model, bench, parse_sets(set_), [(interaction_id, at)], loaded=(name, config),
        build=note is None,
    )  # fmt: skip
    if note is None:
        echo_previews(previews, as_json)
    elif as_json:  # scripts get an empty list: no message is sent
        typer.echo("[]")
        typer.echo(note, err=True)
    else:
        typer.echo(note)

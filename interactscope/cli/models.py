"""``interactscope models``: the model configs this installation can run."""

from __future__ import annotations

import json

import typer

from interactscope.cli.app import app


@app.command("models")
def models(
    as_json: bool = typer.Option(False, "--json", help="One JSON list on stdout, for scripts."),
) -> None:
    """List the available model configs (bundled with the package, ./configs/models,
    $INTERACTSCOPE_CONFIGS): name, backend, what each sees and hears, where the file is.

    Use a name with `interactscope collect --model NAME`; copy a bundled file into
    ./configs/models/ to change it (the local copy then shadows the bundled one)."""
    from interactscope.core.model_configs import list_models

    rows = list_models()
    if as_json:
        typer.echo(json.dumps([r.model_dump() for r in rows], indent=2))
        return
    w = max(len(r.name) for r in rows)
    b = max(len(r.backend) for r in rows)
    typer.echo(f"{'model':<{w}}  {'backend':<{b}}  sees / hears")
    for r in rows:
        typer.echo(f"{r.name:<{w}}  {r.backend:<{b}}  {r.sees} / {r.hears}  [{r.source}]")

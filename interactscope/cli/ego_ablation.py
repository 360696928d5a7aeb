"""``interactscope ego ablation RUN... --out DIR``: the EgoInteract ablation table (Joint /
Micro / Result / Tool per policy with paired cluster-bootstrap differences against the full
policy; docs/egointeract.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from interactscope.cli.common import fail
from interactscope.cli.ego import ego_app
from interactscope.egobench.egointeract.ablation import (
    ablation_table,
    load_policy,
    markdown,
    write_ablation,
)


@ego_app.command("ablation")
def ablation(
    runs: list[Path] = typer.Argument(..., help="Run folders of `ego run`, one per policy."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for ablation.md/.tex/.csv."),
    reference: str | None = typer.Option(
        None, "--reference", help="Label of the reference policy (default: full, else the first)."
    ),
    cluster: str = typer.Option("task", "--cluster", help="Bootstrap cluster: task | variant."),
    resamples: int = typer.Option(10_000, "--resamples", help="Bootstrap resamples."),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Score each run (into RUN/scores) and write the ablation table; print it as Markdown."""

    if cluster not in ("task", "variant"):
        fail(f"--cluster {cluster!r}: expected task or variant")
    try:
        policies = [load_policy(r) for r in runs]
        table, notes = ablation_table(
            policies, reference=reference, cluster=cluster, n_resamples=resamples, seed=seed
        )
    except ValueError as exc:  # plain ValueErrors: bad --reference, no common task
        fail(str(exc).splitlines()[0])
    paths = write_ablation(table, notes, out)
    typer.echo(markdown(table), nl=False)
    for n in notes:
        typer.echo(f"note: {n}", err=True)
    typer.echo(f"wrote {', '.join(str(p) for p in paths)}")

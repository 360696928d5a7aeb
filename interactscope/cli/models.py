"""``interactscope models``: the model configs, grouped as the paper's panel groups them, with
what each needs and whether it can run here; ``collect --panel`` (its runner is here too)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from interactscope.cli.app import app
from interactscope.cli.common import (
    EXIT_RECORD_ERRORS,
    disk_errors,
    echo_judge_note,
    interrupts,
)
from interactscope.core.model_configs import CONFIG_ENV, list_models, local_is_bundled
from interactscope.streaming.panel import GROUP_TITLES, PanelRow, load_panel, row_status, run_panel


def _rows(panel_name: str) -> list[dict]:
    """One dict per config: the panel row naming it (if any), its group, what it lacks here."""

    panel = load_panel(panel_name)
    by_model = {r.model: r for r in panel.rows if r.model}
    out = []
    for m in list_models():
        row = by_model.get(m.name) or PanelRow(row=m.name, group="baseline", model=m.name)
        group = row.group if m.name in by_model else "other"
        st = row_status(row)
        out.append({**m.model_dump(), "row": row.row if m.name in by_model else "",
                    "group": group, "memory": row.memory, "licence": row.licence,
                    "missing": st.missing, "can_run": st.runnable})  # fmt: skip
    for r in panel.rows:
        if r.model is None:
            out.append({"name": "-", "backend": "-", "row": r.row, "group": r.group,
                        "sees": "", "hears": "", "notes": "", "source": "", "path": "",
                        "memory": "", "licence": "", "missing": [r.missing or "no config"],
                        "can_run": False})  # fmt: skip
    return out


LOCAL_IS_BUNDLED = (
    "note: ./configs/models is the bundled folder (linked in a clone): a file added there is "
    f"a bundled config; to shadow one, copy it into a folder named by ${CONFIG_ENV} or pass "
    "--model path/to/file.yaml"
)


@app.command("models")
def models(
    as_json: bool = typer.Option(False, "--json", help="One JSON list on stdout, for scripts."),
    panel: str = typer.Option("paper", "--panel", help="The panel whose groups to list by."),
) -> None:
    """List the model configs (bundled with the package, ./configs/models,
    $INTERACTSCOPE_CONFIGS) grouped as the paper does (API / open prompted / streaming), then
    the CPU reference model (cascade) and the baselines (no model): name, the paper's row, backend, what each sees and hears, and whether it can
    run here (package installed, API key variable set, GPU present, weights in the local HF
    cache; nothing is downloaded, no key is printed).

    Use a name with `interactscope collect --model NAME`, or run the rows that can run with
    `interactscope collect --panel paper`; to change a bundled config, copy it into a folder
    named by $INTERACTSCOPE_CONFIGS (or ./configs/models/ outside a clone, where that folder is
    the bundled one), which then shadows the bundled one, or pass --model path/to/file.yaml."""

    rows = _rows(panel)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    w = max(len(r["name"]) for r in rows)
    b = max(len(r["backend"]) for r in rows)
    for group, title in GROUP_TITLES.items():
        sub = [r for r in rows if r["group"] == group]
        if not sub:
            continue
        typer.echo(f"\n{title}")
        for r in sub:
            here = "can run here" if r["can_run"] else "needs: " + "; ".join(r["missing"])
            row = f" = {r['row']}" if r["row"] and r["row"] != r["name"] else ""
            senses = f"{r['sees']} / {r['hears']}" if r["sees"] else ""
            typer.echo(f"  {r['name']:<{w}}  {r['backend']:<{b}}  {senses}{row}  [{here}]")
    if local_is_bundled():  # a clone: what looks like a local folder is the bundled one
        typer.echo("\n" + LOCAL_IS_BUNDLED)


def collect_panel(
    name: str, bench: Path, out: Path, limit: int | None, progress: bool = True
) -> None:
    """``collect --panel NAME``: every runnable row of the panel into OUT/<model>/, scored,
    then the paper's tables over the panel (OUT/report/) and a leaderboard; one line per
    skipped row; each row's progress bar; Ctrl-C / SIGTERM print the resume line (a re-run
    resumes every row's folder). Exit 3 when a row failed to collect."""

    with interrupts(out), disk_errors(out):
        res = run_panel(
            load_panel(name), bench, out, limit=limit, echo=typer.echo, progress=progress
        )
    if res.leaderboard:
        typer.echo(f"\nPanel {name} (% of targets [95% CI]):\n\n{res.leaderboard}")
        echo_judge_note(res.judge_note)
        typer.echo(f"\ntables: {res.report}")
    typer.echo(f"{out}: {len(res.runs)} row(s) ran, {len(res.skipped)} skipped, "
               f"{len(res.failed)} failed")  # fmt: skip
    if res.failed:
        raise typer.Exit(EXIT_RECORD_ERRORS)

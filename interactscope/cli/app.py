"""The typer application object; command modules register on it."""

from __future__ import annotations

import typer

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help=(
        "Evaluate omni-modal models as always-on assistants (Omni-InteractScope protocol).\n\n"
        "Typical use: `interactscope validate BENCH`, `interactscope collect --model NAME "
        "--bench BENCH --out RUN`, `interactscope score RUN`."
    ),
)

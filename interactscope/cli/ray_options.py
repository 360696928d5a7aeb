"""``--ray``, ``--ray-address``, ``--workers``, ``--gpus-per-worker``: the options a command adds
to collect through Ray workers (docs/distributed.md), and their checking.

Typer cannot parse an option whose value is optional, so ``--ray`` is a flag (a private local
Ray instance) and ``--ray-address ADDRESS`` names a running cluster (and implies ``--ray``).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from functools import partial
from typing import Any

import typer

from interactscope.cli.common import fail
from interactscope.streaming.collect import run_collect
from interactscope.streaming.distributed import LOCAL, RayOptions, run_collect_ray

INSTALL_HINT = "pip install 'interactscope[distributed]'"

RAY = typer.Option(
    False,
    "--ray",
    help="Collect with Ray workers, one model each, on a private local Ray instance "
    "(or the cluster of --ray-address). Needs Ray: the package's distributed extra (--ray "
    "without it prints the pip command).",
)
RAY_ADDRESS = typer.Option(
    None,
    "--ray-address",
    metavar="ADDRESS",
    help="Address of a running Ray cluster (auto, HOST:PORT, ray://HOST:PORT); implies --ray.",
)
WORKERS = typer.Option(
    None, "--workers", min=1, help="With --ray: number of workers (Ray actors), default 2."
)
GPUS_PER_WORKER = typer.Option(
    None,
    "--gpus-per-worker",
    min=0.0,
    help="With --ray: GPUs Ray reserves for each worker (fractions allowed), default 0.",
)


def ray_options(
    ray: bool, address: str | None, workers: int | None, gpus_per_worker: float | None
) -> Any | None:
    """The :class:`~interactscope.streaming.distributed.RayOptions` the options ask for, or None without
    ``--ray``/``--ray-address``.

    Ends the command with one line (exit 1) when ``--workers``/``--gpus-per-worker`` come
    without ``--ray``, or when Ray is not installed (naming the install command)."""
    if not ray and address is None:
        if workers is not None or gpus_per_worker is not None:
            fail("--workers and --gpus-per-worker need --ray (or --ray-address ADDRESS)")
        return None
    if importlib.util.find_spec("ray") is None:
        fail(f"--ray needs Ray, which is not installed: {INSTALL_HINT}")

    return RayOptions(
        address=address or LOCAL,
        workers=2 if workers is None else workers,
        gpus_per_worker=0.0 if gpus_per_worker is None else gpus_per_worker,
    )


def collector(options: Any | None) -> Callable[..., Any]:
    """``run_collect`` without Ray options, else ``run_collect_ray`` bound to them (both take
    the same keyword arguments)."""
    if options is None:
        return run_collect

    return partial(run_collect_ray, ray_options=options)

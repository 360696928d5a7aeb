"""EgoBench episode commands: ``interactscope ego run | merge | demo``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer
from pydantic import ValidationError
from tqdm.auto import tqdm

from interactscope.cli.common import (
    EXIT_INCOMPLETE,
    disk_errors,
    fail,
    interrupts,
    parse_sets,
    setup_logging,
)
from interactscope.cli.ego import ego_app
from interactscope.core.text import plural
from interactscope.egobench import list_variants, package_data_dir
from interactscope.egobench.agents import AGENTS
from interactscope.egobench.chat_models import chat_model_names
from interactscope.egobench.run_folder import merge_runs, read_manifest
from interactscope.egobench.run_score import headline, score_run
from interactscope.egobench.runner import RunRequest, execute, prepare

DEMO_TASKS = "1-3"
"""Tasks of every shipped variant the demo plays."""


def _run(
    agent: str,
    user: str,
    data: Path | None,
    variants: list[str],
    mode: str,
    out: Path,
    video_dir: Path | None,
    tasks: str | None,
    shard: str | None,
    sets: dict,
    quiet: bool = False,
    trials: int = 1,
    max_concurrency: int = 1,
) -> object:

    try:
        req = RunRequest(
            agent=agent,
            user=user,
            data=data or package_data_dir(),
            variants=variants,
            mode=mode,
            out=out,
            video_dir=video_dir,
            tasks=tasks,
            shard=shard,
            sets=sets,
            trials=trials,
            max_concurrency=max_concurrency,
            command=sys.argv,
        )
        run = prepare(req)
    except ValidationError as exc:
        e = exc.errors()[0]
        fail(f"--{'-'.join(map(str, e['loc'])).replace('_', '-')}: {e['msg']}")
    except (ValueError, FileNotFoundError) as exc:
        fail(str(exc).splitlines()[0])
    try:
        with interrupts(out), disk_errors(out):
            return execute(
                run, progress=None if quiet else _progress, bar=None if quiet else sys.stderr
            )
    except FileNotFoundError as exc:
        fail(str(exc).splitlines()[0])


def _policy_spec(agent: str | None, agent_model: str | None, auditor_model: str | None) -> str:
    """``--agent egointeract[:key=value...] --agent-model M [--auditor-model A]`` ->
    ``egointeract:M[,A][,key=value...]`` (the spec the agent registry reads); no ``--agent``:
    the agents listed, exit 2."""
    if agent is None:
        fail(_missing_agent(), 2)  # a usage error, as a missing --variant or --out
    if agent_model is None and auditor_model is None:
        return agent
    head, _, rest = agent.partition(":")
    if head != "egointeract" or agent_model is None:
        fail(
            "--agent-model / --auditor-model: use them with --agent egointeract "
            "and name --agent-model"
        )
    models = ",".join([agent_model, *([auditor_model] if auditor_model else [])])
    return f"egointeract:{models}" + (f",{rest}" if rest else "")


def _progress(rec: object) -> None:
    """One line per episode on stderr, above the progress bar when there is one."""

    trial = f" trial {rec.trial}" if rec.trial > 1 else ""
    n = len(rec.calls)
    tqdm.write(
        f"{rec.variant}:{rec.task_id}{trial} {rec.stop_reason} ({n} call{'' if n == 1 else 's'})",
        file=sys.stderr,
    )


_QUIET = typer.Option(
    False,
    "--quiet",
    "-q",
    "--no-progress",
    help="No progress bar and no line per episode (the bar shows only on a terminal).",
)


# No word longer than the help column at 80 columns: typer would cut it with an ellipsis.
AGENT_HELP = (
    "Agent (required): a model name (configs/models; cascade on a CPU), oracle, none, or "
    "egointeract with --agent-model (inline: egointeract:MODEL[,AUDITOR] plus ,key=value "
    "options; docs/egointeract.md)."
)


def _missing_agent() -> str:
    """The one line for ``ego run`` without ``--agent``: every agent it takes, and the CPU
    default. There is no default agent: oracle would report JointSucc 1.0 for a run that
    measured nothing, and a model needs its weights or key, so a run always names one."""
    builtins = ", ".join(f"{a} (with --agent-model)" if a == "egointeract" else a for a in AGENTS)
    return (
        f"--agent: missing; name the agent: {builtins}, or a chat model "
        f"({', '.join(chat_model_names()) or 'none configured'}); e.g. --agent cascade (the CPU "
        "default, sees no pixels) or --agent oracle (replays the ground truth)"
    )


@ego_app.command("run")
def run(
    agent: str | None = typer.Option(
        None,
        "--agent",
        "-a",
        help=AGENT_HELP,
        show_default=False,
    ),
    user: str = typer.Option(
        "scripted",
        "--user",
        "-u",
        help="Simulated user: a model name, scripted, or scripted:FILE (YAML: 'variant:task_id' -> messages).",
    ),
    data: Path | None = typer.Option(
        None, "--data", "-d", help="Data folder (tasks/, db/, tools/); default: the package's copy."
    ),
    variant: list[str] = typer.Option(
        ..., "--variant", "-v", help="Variant(s), e.g. retail1 (repeat the option)."
    ),
    mode: str = typer.Option("easy", "--mode", help="easy | hard | static."),
    out: Path = typer.Option(..., "--out", "-o", help="Run folder (created, or resumed)."),
    video_dir: Path | None = typer.Option(
        None,
        "--video-dir",
        help="Folder with the task videos; without it the agent gets image_description (sees_pixels: false).",
    ),
    tasks: str | None = typer.Option(None, "--tasks", help="Task ids, e.g. 1,5-9 (default: all)."),
    shard: str | None = typer.Option(
        None, "--shard", help="K/N: play only this shard of the tasks (merge with `ego merge`)."
    ),
    set_: list[str] = typer.Option(
        [],
        "--set",
        help="Episode setting, e.g. --set limits.max_user_turns=5 --set frames.every_turn=true.",
    ),
    agent_model: str | None = typer.Option(
        None, "--agent-model", help="With --agent egointeract: the service agent's model."
    ),
    auditor_model: str | None = typer.Option(
        None,
        "--auditor-model",
        help="With --agent egointeract: the auditor's model (default: --agent-model).",
    ),
    trials: int = typer.Option(
        1,
        "--trials",
        help="Play each task K times (seed user.seed + trial - 1); score gives pass^k.",
    ),
    max_concurrency: int = typer.Option(
        1, "--max-concurrency", help="Episodes in flight at once (for API engines)."
    ),
    verbose: bool = typer.Option(False, "--verbose"),
    quiet: bool = _QUIET,
) -> None:
    """Play one episode per task: the agent talks to the simulated user and calls tools on a
    fresh environment until the user says STOP, 10 user turns or 200 tool calls. Every episode
    is appended to OUT/episodes.jsonl; a killed run resumes with the same command."""
    setup_logging(verbose)
    agent = _policy_spec(agent, agent_model, auditor_model)
    result = _run(
        agent,
        user,
        data,
        variant,
        mode,
        out,
        video_dir,
        tasks,
        shard,
        parse_sets(set_),
        quiet=quiet,
        trials=trials,
        max_concurrency=max_concurrency,
    )
    typer.echo(f"{out}: {result.line()}; score with `interactscope ego score {out}`")
    if result.errors:
        raise typer.Exit(3)


@ego_app.command("score-run", hidden=True)
def score_run_cmd(
    run: Path = typer.Argument(..., help="Run folder written by `ego run`."),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Scores folder (default RUN/scores)."
    ),
    data: Path | None = typer.Option(
        None, "--data", "-d", help="Data folder (default: the run's)."
    ),
) -> None:
    """Score a run folder: per variant JointSucc / MicroAcc / ToolSucc / ResultSucc (as `ego
    score`) and the simulated user's health (per-criterion pass rates, trajectory all-pass)."""
    score_run_with(run, out, data)


def score_run_with(
    run: Path, out: Path | None, data: Path | None, settings: Any = None, strict: bool = False
) -> None:
    """``ego score RUN``: score and print; ``settings`` (a ``ScoreSettings``) overrides the run's
    own profile; ``strict``: exit ``EXIT_INCOMPLETE`` (4) when planned episodes are missing."""

    score = score_run(run, out, data=data, settings=settings)
    for name, r in score.results.items():
        s = r.summary
        typer.echo(
            f"{name}: {plural(s.n_tasks, 'task')} | JointSucc {s.joint_succ:.3f}  MicroAcc "
            f"{s.micro_acc:.3f} ({s.matched}/{s.total_gt})  ToolSucc {s.tool_succ:.3f}  "
            f"ResultSucc {s.result_succ:.3f}"
        )
    h = score.health
    if h.trajectories:
        rates = "  ".join(f"{k} {v:.3f}" for k, v in h.rates.items())
        typer.echo(
            f"user health over {plural(h.turns, 'turn')}: {rates} | all-pass {h.all_pass:.3f} "
            f"({plural(h.trajectories, 'trajectory', 'trajectories')}, {plural(h.rewrites, 'rewrite')})"
        )
    typer.echo(headline(score))
    for k, r in score.pass_k.items():
        typer.echo(
            f"pass^{k} {r['estimate']:.3f} [{r['low']:.3f}, {r['high']:.3f}] "
            f"({plural(r['tasks'], 'task')}, {plural(score.trials, 'trial')})"
        )
    typer.echo(f"wrote {out or run / 'scores'}")
    for name, n in score.gt_failures.items():
        s = score.results[name].summary
        rejected = s.scenario == "kitchen" and s.settings["kitchen_numeric_strings"] == "reject"
        hint = (
            "kitchen_numeric_strings=reject (set, or read so from a run made before the rule) "
            "rejects the GT's "
            "quantities given as strings; --set kitchen_numeric_strings=float converts them as "
            "the official tools do; "
            if rejected
            else ""
        )
        typer.secho(
            f"warning: {name}: {plural(n, 'ground-truth call')} fail under these tool rules, so "
            "its GT state lacks their effects and ResultSucc compares against a partial state "
            f"({hint}docs/egobench.md, equality rules)",
            fg=typer.colors.YELLOW,
            err=True,
        )
    _warn_incomplete(run, sum(score.sees_pixels.values()), strict)


def _warn_incomplete(run: Path, scored: int, strict: bool) -> None:
    """As ``score`` on a streaming run: a warning (stderr) when planned episodes are missing,
    "no episodes scored" when all are; exit 0, or ``EXIT_INCOMPLETE`` with ``--strict``."""

    planned = len(read_manifest(run).keys())
    if scored >= planned:
        return
    what = "no episodes scored: none of its " if scored == 0 else f"{planned - scored} of its "
    typer.secho(
        f"warning: {run}: {what}{plural(planned, 'planned episode')} "
        f"{'is' if planned - scored == 1 else 'are'} in episodes.jsonl; missing ones count as "
        "failures. Resume by running the same `interactscope ego run` command again.",
        fg=typer.colors.YELLOW,
        err=True,
    )
    if strict:
        raise typer.Exit(EXIT_INCOMPLETE)


@ego_app.command("merge")
def merge(
    runs: list[Path] = typer.Argument(..., help="Shard run folders (ego run --shard K/N)."),
    out: Path = typer.Option(..., "--out", "-o", help="New run folder."),
) -> None:
    """Join the shards of one EgoBench run into one folder (refuses gaps, overlaps and shards
    with other settings)."""

    m = merge_runs(runs, out)
    typer.echo(
        f"{out}: {plural(m.summary['episodes'], 'episode')} from {plural(len(runs), 'shard')}"
    )


@ego_app.command("demo")
def demo(
    agent: str = typer.Option(
        "oracle", "--agent", "-a", help="Agent (default oracle: JointSucc 1.0)."
    ),
    user: str = typer.Option("scripted", "--user", "-u", help="Simulated user (default scripted)."),
    mode: str = typer.Option("easy", "--mode"),
    out: Path = typer.Option(Path("runs") / "ego-demo", "--out", "-o", help="Run folder."),
    tasks: str = typer.Option(DEMO_TASKS, "--tasks", help="Tasks of each shipped variant."),
) -> None:
    """Play a few shipped tasks of every variant (oracle agent, scripted user by default),
    score them and print the result in two lines."""
    setup_logging(False)

    variants = list_variants(package_data_dir())
    if mode != "easy" or agent != "oracle" or user != "scripted":
        out = out.with_name(f"{out.name}-{agent}-{user}-{mode}".replace(":", "_").replace("/", "_"))
    result = _run(agent, user, None, variants, mode, out, None, tasks, None, {}, quiet=True)
    score = score_run(out)
    typer.echo(
        f"ego demo: agent {agent}, user {user}, {mode} mode, {plural(len(variants), 'variant')}, "
        f"tasks {tasks}: {result.written} played, {result.skipped} resumed -> {out}"
    )
    typer.echo(headline(score))

"""Plug-ins by name through the one registry (interactscope/core/registry.py): a third-party
package, installed only as a dist-info with ``entry_points.txt`` on ``sys.path``, adds a backend,
a judge and a metric that ``collect --model``, ``score --judge`` and ``score --json`` then use
without any edit of ours."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from interactscope.core import registry
from tests.helpers.foundation_fixtures import REPO, interaction, write_bench

PLUGIN = '''
from interactscope.streaming.adapters.base import Adapter, AdapterOutput
from interactscope.streaming.judges.base import Judge, Verdict

class Parrot(Adapter):
    """Says the same words at every decision point."""
    backend = "parrot"
    needs_media = False
    def respond(self, request):
        return AdapterOutput(text="plugin says hi")

class AlwaysYes(Judge):
    backend = "plugin"
    prompt_version = "always-yes-v1"
    def __init__(self, log):
        self.name, self.model, self.log = "always-yes", "none", log
    def judge(self, triples):
        with open(self.log, "a") as fh:
            for _req, ref, cand in triples:
                fh.write(json.dumps([ref, cand]) + "\\n")
        return [Verdict(True, "yes") for _ in triples]

def make_judge(arg, **options):
    return AlwaysYes(arg)

def hits_per_target():
    """A plug-in metric: the fields of a Metric (its summary.json keys default to plugins.)."""
    return {"display": "hits/target", "numerator": "hits", "denominator": "targets",
            "tasks": ["T2"], "section": "plug-in", "paper": False}
'''


def _install(site: Path) -> Path:
    """A tiny installed distribution ``isc-plugin-demo``: its module and its dist-info."""
    pkg = site / "isc_plugin_demo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("import json\n" + PLUGIN)
    info = site / "isc_plugin_demo-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: isc-plugin-demo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[interactscope.backends]\nparrot = isc_plugin_demo:Parrot\n\n"
        "[interactscope.judges]\nalways-yes = isc_plugin_demo:make_judge\n\n"
        "[interactscope.metrics]\nhits-per-target = isc_plugin_demo:hits_per_target\n"
    )
    return site


@pytest.mark.slow
def test_a_plugin_backend_and_judge_work_by_name(tmp_path):
    site = _install(tmp_path / "site")
    targets = [{"id": "k1", "reference": "the kettle boils", "time_s": 2.0}]
    bench = write_bench(tmp_path / "b", [interaction("a", targets=targets)])
    cfg = tmp_path / "parrot.yaml"
    cfg.write_text("backend: parrot\n")
    run, log = tmp_path / "run", tmp_path / "judged.jsonl"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
    }
    cli = [sys.executable, "-m", "interactscope.cli"]
    res = subprocess.run([*cli, "collect", "-m", str(cfg), "-b", str(bench), "-o", str(run),
                          "--no-progress"], capture_output=True, text=True, env=env)  # fmt: skip
    assert res.returncode == 0, res.stderr
    rows = [json.loads(x) for x in (run / "responses.jsonl").read_text().splitlines()]
    assert rows and {r["text"] for r in rows} == {"plugin says hi"}
    assert json.loads((run / "run.json").read_text())["backend"] == "parrot"
    res = subprocess.run([*cli, "score", str(run), "--judge", f"always-yes:{log}", "--json"],
                         capture_output=True, text=True, env=env)  # fmt: skip
    assert res.returncode == 0, res.stderr
    judged = [json.loads(x) for x in log.read_text().splitlines()]
    assert judged == [["the kettle boils", "plugin says hi"]]  # one target, one first response
    # the plug-in metric: 1 hit (always-yes on the one first response) / 1 target of T2
    metrics = json.loads(res.stdout)["summary"]["metrics"]
    assert metrics["plugins"] == {"hits-per-target": {"value": 1.0, "numerator": 1,
                                                      "denominator": 1}}  # fmt: skip
    assert metrics["tasks"]["T2"]["score"] == 1.0


def test_unknown_names_list_registered_and_entry_point_ones(tmp_path, monkeypatch):
    import interactscope.streaming.adapters.registry  # noqa: F401 - registers the built-ins

    site = _install(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    registry.refresh()
    try:
        assert "parrot" in registry.names("backends") and "silent" in registry.names("backends")
        assert registry.lookup("backends", "parrot").__name__ == "Parrot"
        from interactscope.streaming.judges import JudgeError, make_judge

        assert make_judge(f"always-yes:{tmp_path / 'x'}").name == "always-yes"
        with pytest.raises(JudgeError, match=r"unknown judge 'nope'.*always-yes"):
            make_judge("nope")
    finally:
        registry.refresh()


def test_register_lazy_target_explicit_wins_and_bad_target_is_one_line(monkeypatch):
    import interactscope.streaming.judges  # noqa: F401 - its built-ins register before the swap

    monkeypatch.setattr(registry, "_TABLES", {})
    registry.register("judges", "x", "interactscope.streaming.judges.lexical:LexicalJudge")
    assert registry.lookup("judges", "x").__name__ == "LexicalJudge"  # imported on lookup
    registry.register("judges", "gone", "no_such_module_here:thing")
    with pytest.raises(registry.PluginError, match="'gone' needs a package"):
        registry.lookup("judges", "gone")
    with pytest.raises(registry.UnknownPluginError, match=r"unknown judge 'y'; known: gone, x"):
        registry.lookup("judges", "y", what="judge")
    with pytest.raises(ValueError, match="module:attr"):
        registry.register("judges", "z", "nocolon")


# ----------------------------------------------------------------- broken plug-ins (one line)

BROKEN_EPS = (
    "[interactscope.metrics]\nmissing = nosuchmod:x\nhalf = isc_broken:half\n\n"
    "[interactscope.judges]\nmissing = nosuchmod:x\n\n"
    "[interactscope.controls]\nmissing = nosuchmod:x\n"
)
BROKEN_MODULE = (
    "half = {'numerator': 'hits', 'denominator': 'targets', 'tasks': ['T1'], 'section': 'x'}\n"
)


def _dist(site: Path, name: str, entry_points: str, module: str = "") -> Path:
    """An installed distribution ``name`` (module ``name`` with ``-`` as ``_``) on ``site``."""
    mod = name.replace("-", "_")
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{mod}.py").write_text(module)
    info = site / f"{mod}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    return site


def _cli(args: list[str], env: dict[str, str], cwd: Path | None = None):
    return subprocess.run([sys.executable, "-m", "interactscope", *args], capture_output=True,
                          text=True, env=env, cwd=cwd)  # fmt: skip


def _env(**extra: str) -> dict[str, str]:
    """The CLI's environment: this checkout (and ``path``) on PYTHONPATH, ``extra`` set."""
    path = os.pathsep.join([*extra.pop("path", "").split(os.pathsep), str(REPO)])
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": path.strip(os.pathsep), **extra}


def _oracle_run(tmp_path: Path, task: str = "T1") -> Path:
    """The oracle's run over one interaction of ``task`` with one target at 4 s."""
    from interactscope.streaming.collect import run_collect

    tgt = [{"id": "k1", "reference": "take_photo", "tools": ["take_photo"], "time_s": 4.0}]
    bench = write_bench(tmp_path / "b", [interaction("a", task=task, targets=tgt)])
    run_collect(model="oracle", bench=bench, out=tmp_path / "run", progress=False)
    return tmp_path / "run"


NOT_LOADED = (
    "{what} 'missing': entry point missing = nosuchmod:x of package isc-broken cannot be "
    "loaded (No module named 'nosuchmod'); install what it needs or pip uninstall isc-broken"
)


@pytest.mark.slow
def test_a_broken_plugin_is_skipped_by_other_commands_and_one_line_when_asked_for(tmp_path):
    env = _env(path=str(_dist(tmp_path / "site", "isc-broken", BROKEN_EPS, BROKEN_MODULE)))
    res = _cli(["--version"], env)  # metrics and controls are not read at start-up
    assert (res.returncode, res.stderr) == (0, "") and res.stdout.startswith("interactscope ")
    run = _oracle_run(tmp_path)
    res = _cli(["score", str(run), "--judge", "toolset"], env)  # metrics: skipped, warned
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines()[:2] == [
        "warning: metric 'half': not a Metric (field 'display': Field required); see "
        "docs/architecture.md, 'A metric'; skipped",
        "warning: " + NOT_LOADED.format(what="metric") + "; skipped",
    ]
    metrics = json.loads((run / "scores" / "summary.json").read_text())["metrics"]
    assert "plugins" not in metrics and metrics["T1"]["joint"] == 1.0  # 1 hit of 1 target
    res = _cli(["score", str(run), "--judge", "missing"], env)  # the judge asked for: an error
    assert res.returncode == 1 and res.stderr.splitlines()[-1] == NOT_LOADED.format(what="judge")
    assert "Traceback" not in res.stderr
    res = _cli(["control", "missing"], env)
    assert (res.returncode, res.stderr) == (1, NOT_LOADED.format(what="control") + "\n")


def test_a_table_read_whole_skips_a_broken_plugin_with_one_warning(monkeypatch):
    from interactscope.streaming.scoring.metrics import METRICS, metrics_table

    monkeypatch.setitem(registry.table("metrics"), "gone", "no_such_module_zz:m")
    registry.refresh()
    with pytest.warns(registry.PluginWarning) as caught:
        assert metrics_table() == METRICS
        assert metrics_table() == METRICS  # read twice, warned once
    assert [str(w.message) for w in caught] == [
        "metric 'gone' needs a package that is not installed (No module named "
        "'no_such_module_zz'); see the README's Models section for the extra to install; skipped"
    ]
    with pytest.raises(registry.PluginError, match=r"^metric 'gone' needs a package"):
        registry.lookup("metrics", "gone", what="metric")


# ------------------------------------------------------- a scratch module: $INTERACTSCOPE_PLUGINS

SCRATCH = """
from interactscope.core.registry import register
from interactscope.streaming.judges.base import Judge, Verdict

class Nope(Judge):
    backend, prompt_version = "scratch", "nope-v1"

    def __init__(self):
        self.name, self.model = "nope", "none"

    @property
    def settings(self):
        return {}

    def judge(self, triples):
        return [Verdict(False, "never") for _ in triples]

register("judges", "nope", lambda arg, **options: Nope())
register("metrics", "wrong-share", {"display": "wrong/target", "numerator": "wrong",
                                    "denominator": "targets", "tasks": ["T2"], "section": "x"})
"""


@pytest.mark.slow
def test_a_scratch_module_named_in_the_env_var_is_used_by_the_cli(tmp_path):
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "scratch_plug.py").write_text(SCRATCH)
    run = _oracle_run(tmp_path, task="T2")
    res = _cli(["--version"], _env(INTERACTSCOPE_PLUGINS="no_such_mod_zz"))
    assert (res.returncode, res.stderr) == (0, "")  # not imported at start-up
    # a module name found in the current folder; a module that does not import: one warning
    env = _env(INTERACTSCOPE_PLUGINS="scratch_plug, no_such_mod_zz")
    res = _cli(["score", str(run), "--judge", "nope", "--json"], env, cwd=tmp_path / "lab")
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines()[0] == (
        "warning: INTERACTSCOPE_PLUGINS: no_such_mod_zz cannot be imported (No module named "
        "'no_such_mod_zz'); skipped: fix it or take it out of INTERACTSCOPE_PLUGINS"
    )
    metrics = json.loads(res.stdout)["summary"]["metrics"]
    # the oracle's one answer judged "no" by the scratch judge: T2 0/1, wrong 1 of 1 target
    assert metrics["tasks"]["T2"]["score"] == 0.0
    assert metrics["plugins"] == {"wrong-share": {"value": 1.0, "numerator": 1, "denominator": 1}}
    # a file path works from any folder
    env = _env(INTERACTSCOPE_PLUGINS=str(tmp_path / "lab" / "scratch_plug.py"))
    res = _cli(["score", str(run), "--judge", "nope", "--json"], env)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert json.loads(res.stdout)["summary"]["metrics"]["tasks"]["T2"]["failures"]["wrong"] == 1


def test_a_metric_of_name_and_display_only_is_hits_over_scored_of_every_task(monkeypatch):
    import pandas as pd

    from interactscope.streaming.scoring.metrics import CLUSTER_COLUMNS, compute_metrics

    monkeypatch.setitem(registry.table("metrics"), "mini", {"name": "mini", "display": "Mini"})
    rows = [dict.fromkeys(CLUSTER_COLUMNS, 0) for _ in range(2)]
    rows[0].update(cluster="c1", task="T1", targets=2, scored=2, hits=1)
    rows[1].update(cluster="c2", task="T8-A", targets=3, scored=2, hits=2)
    # the defaults: Σ hits / Σ scored over every task = (1 + 2) / (2 + 2)
    got = compute_metrics(pd.DataFrame(rows))["plugins"]["mini"]
    assert got == {"value": 0.75, "numerator": 3, "denominator": 4}


def test_a_metric_naming_no_column_is_one_line_with_the_valid_ones(monkeypatch):
    import pandas as pd

    from interactscope.streaming.scoring.metrics import CLUSTER_COLUMNS, compute_metrics

    bad = {"display": "X", "numerator": "hitz", "tasks": ["T1"]}
    monkeypatch.setitem(registry.table("metrics"), "typo", bad)
    row = dict.fromkeys(CLUSTER_COLUMNS, 0) | {"cluster": "c1", "task": "T1", "targets": 1}
    registry.refresh()
    with pytest.warns(registry.PluginWarning) as caught:
        metrics = compute_metrics(pd.DataFrame([row]))  # was: KeyError 'hitz'
    assert "plugins" not in metrics and metrics["T1"]["targets"] == 1
    assert [str(w.message) for w in caught] == [
        "metric 'typo': numerator 'hitz' is not a cluster-table column; valid: targets, scored, "
        "hits, on_time, premature, wrong, late, missed, unjudged, infra_error, interactions, "
        "episodes, complete, responses, probed_s, infrastructure_errors; skipped"
    ]


# ------------------------------------------------------- a plug-in of a built-in name: ignored

DUP_MODULE = """
from pathlib import Path
from interactscope.streaming.analysis.controls.registry import ControlSpec
from interactscope.streaming.scoring.metrics import Metric

joint = Metric(name="T1 joint", display="X", numerator="hits", denominator="targets")
judge = lambda arg, **options: None
scene = ControlSpec(name="scene", summary="Mine.", params=(), module="x", run="y")
"""
DUP_EPS = (
    "[interactscope.metrics]\njoint2 = isc_dup:joint\n\n"
    "[interactscope.judges]\nlexical = isc_dup:judge\n\n"
    "[interactscope.controls]\nscene2 = isc_dup:scene\n"
)


def test_a_plugin_of_a_built_in_name_is_ignored_with_one_warning_each(tmp_path, monkeypatch):
    from interactscope.streaming.analysis.controls.registry import registered
    from interactscope.streaming.judges import make_judge
    from interactscope.streaming.scoring.metrics import METRICS, metrics_table

    monkeypatch.syspath_prepend(str(_dist(tmp_path / "site", "isc-dup", DUP_EPS, DUP_MODULE)))
    registry.refresh()
    try:
        with pytest.warns(registry.PluginWarning) as caught:
            assert metrics_table() == METRICS  # no column "X", no plugins."T1 joint"
            assert make_judge("lexical").name == "lexical"  # the built-in
            assert [s.summary for s in registered() if s.name == "scene"] == [
                "Scene ablation: request-only run − full run, paired, at each tolerance (pp)."
            ]
    finally:
        registry.refresh()
    assert sorted(str(w.message) for w in caught) == [
        "control 'scene2': named 'scene', a built-in control (the built-in wins); rename it; "
        "skipped",
        "judges 'lexical' of entry point isc_dup:judge of package isc-dup ignored: the name is "
        "a built-in one (it wins); rename it",
        "metric 'joint2': named 'T1 joint', a built-in metric (the built-in wins); rename it; "
        "skipped",
    ]


@contextlib.contextmanager
def _env_plugin(plug: Path, source: str, monkeypatch):
    """``plug`` written with ``source`` and named by $INTERACTSCOPE_PLUGINS for the block; the
    variable unset and the registry refreshed after it. Yields ``plug``."""
    plug.write_text(source)
    monkeypatch.setenv(registry.ENV_VAR, str(plug))
    registry.refresh()
    try:
        yield plug
    finally:
        monkeypatch.delenv(registry.ENV_VAR)
        registry.refresh()


def test_an_env_var_module_registering_a_built_in_name_is_ignored(tmp_path, monkeypatch):
    from interactscope.streaming.judges import make_judge

    src = (
        "from interactscope.core.registry import register\n"
        "import interactscope.streaming.judges\n"
        "register('judges', 'lexical', lambda arg, **options: None)\n"
    )
    with _env_plugin(tmp_path / "shadow.py", src, monkeypatch) as plug:
        with pytest.warns(registry.PluginWarning) as caught:
            assert make_judge("lexical").name == "lexical"  # the built-in, not None
    assert [str(w.message) for w in caught] == [
        f"judges 'lexical' of INTERACTSCOPE_PLUGINS module {plug} ignored: the name is a "
        "built-in one (it wins); rename it"
    ]


def test_register_over_a_built_in_metric_is_ignored_with_a_warning(monkeypatch):
    from interactscope.streaming.scoring.metrics import METRICS, Metric, metrics_table

    other = Metric(name="T1 joint", display="X", numerator="wrong", denominator="targets")
    monkeypatch.setitem(registry.table("metrics"), "T1 joint", other)
    registry.refresh()
    with pytest.warns(registry.PluginWarning, match=r"^metric 'T1 joint': a built-in metric"):
        assert metrics_table() == METRICS


def test_a_table_read_first_sees_what_the_env_var_module_registers(tmp_path, monkeypatch):
    from interactscope.streaming.analysis.controls.registry import CONTROLS, registered

    src = (
        "from interactscope.core.registry import register\n"
        "from interactscope.streaming.analysis.controls.registry import ControlSpec\n"
        "register('controls', 'delay', ControlSpec('delay', 'Delay.', (), 'm', 'run', rank=60))\n"
    )
    with _env_plugin(tmp_path / "delay_ctl.py", src, monkeypatch):
        try:  # the first read of any table imports the module, and that read already sees it
            assert [s.name for s in registered()] == [
                "request-prior",
                "blind-fire",
                "scene",
                "policy",
                "schedule",
                "delay",
            ]  # fmt: skip  (ranks 10 ... 50 built in, then delay's 60)
        finally:
            CONTROLS.pop("delay", None)

"""``collect --ray`` on environment interactions (issue 13): the calls are executed by the
worker that collects the interaction, in time order, on a fresh environment per interaction,
and the run folder equals a local ``collect``'s (records, ``tool_results``, ``env_state_hash``,
``scores/environment_scores.json``).

Three layers: the worker body (no Ray), the whole ``run_collect_ray`` over an in-process
stand-in for the Ray API (no Ray, every argument and result pickled as Ray would), and the same
runs on a real local Ray instance, started once for the module inside a loopback-only network
namespace (``test_ray_env_runs_in_a_loopback_namespace`` launches this module that way).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from interactscope.core import registry as plugins
from interactscope.streaming.adapters import registry
from interactscope.streaming.adapters.base import Adapter, AdapterOutput
from interactscope.streaming.bench import load_benchmark
from interactscope.streaming.collect import CollectError, run_collect
from interactscope.streaming.distributed import (
    InteractionWorker,
    RayOptions,
    _Driver,
    _host_port,
    _solo,
    ray_instance,
    run_collect_ray,
)
from interactscope.streaming.environments.scores import write_environment_scores
from interactscope.streaming.schema import ResponseRecord, ToolCall
from interactscope.streaming.settings import Settings
from tests.helpers.env_bench import ADD, GET, TARGET, U1, WASH, env_bench
from tests.helpers.foundation_fixtures import interaction
from tests.helpers.plugins import isolate_plugins
from tests.helpers.ray_net import NETNS_ENV, _loopback_only

ROOT = Path(__file__).resolve().parents[1]
DEMO_ENV = ROOT / "interactscope" / "data" / "demo-env"
ME = "tests.test_distributed_env"

PILLOW = {**WASH, "name": "Throw Pillow"}
# per interaction ("ID@T") or for every interaction ("T"); silent elsewhere
CALLS = {
    "env1@1": [{"name": GET, "arguments": {"user_id": U1}}, {"name": ADD, "arguments": WASH}],
    "env1@2": [{"name": ADD, "arguments": WASH}],  # a repeat: dropped when results are shown
    "env1@4": [{"name": "remove_from_household_action_list", "arguments": WASH}],
    "env1@6": [{"name": ADD, "arguments": PILLOW}],
    "env2@2": [{"name": ADD, "arguments": PILLOW}],
    "env2@3": [{"name": ADD, "arguments": {**WASH, "required_action": "polish"}}],  # invalid
    "3": [{"name": "take_photo", "arguments": {}}],
}


class ResultAware(Adapter):
    """Emits the calls its config scripts (``calls``) at each decision time, except a call that
    the request shows already executed with a change (``environment.show_results``): its
    answers depend on the results of its earlier calls. Online Rolling steps the same rule."""

    free_options = True  # its script is in its config

    backend = "result-aware"
    needs_media = False
    supports_online = True

    def respond(self, request):
        script = self.config.get("calls", {})
        key = f"{request.t:g}"
        wanted = script.get(f"{request.interaction.id}@{key}", script.get(key, []))
        done = [(e["name"], e["arguments"]) for e in request.tool_results if e["result"]["changed"]]
        calls = [ToolCall(**c) for c in wanted if (c["name"], c["arguments"]) not in done]
        return AdapterOutput(text="" if calls else "<SILENT>", tool_calls=calls or None)

    def open_session(self, interaction, video):
        return SimpleNamespace(step=self.respond, close=lambda: None)


def register() -> None:
    """``RayOptions.setup`` of these tests: the adapter, registered in each worker."""
    plugins.register("backends", "result-aware", f"{ME}:ResultAware")


@pytest.fixture(scope="module")
def bench_root(tmp_path_factory) -> Path:
    """Two environment interactions on the household scenario (q 0 and 1) and one without."""
    root = tmp_path_factory.mktemp("bench") / "b"
    env2 = {**interaction("env2", task="T1", q=1.0, environment="home"), "targets": [TARGET]}
    plain = interaction(
        "p", task="T1", targets=[{"id": "k", "time_s": 3.0, "tools": ["take_photo"]}]
    )
    return env_bench(root, [TARGET], extra=[env2, plain])


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> str:
    p = tmp_path_factory.mktemp("cfg") / "result-aware.yaml"
    p.write_text(json.dumps({"backend": "result-aware", "calls": CALLS, "batch_size": 4}))
    return str(p)


@pytest.fixture(autouse=True)
def _registered(monkeypatch):
    isolate_plugins(monkeypatch)
    register()


def _records(run: Path) -> dict[tuple[str, float], dict]:
    out = {}
    for line in (run / "responses.jsonl").read_text().splitlines():
        d = json.loads(line)
        d.pop("latency_s", None)
        assert (d["interaction_id"], d["t"]) not in out, "a record written twice"
        out[(d["interaction_id"], d["t"])] = d
    return out


def _scores(run: Path) -> dict:
    write_environment_scores(run, run / "scores")
    return json.loads((run / "scores" / "environment_scores.json").read_text())


def _local(config: str, bench: Path, out: Path, over: dict | None = None) -> Path:
    run_collect(model=config, bench=bench, out=out, progress=False, overrides=dict(over or {}))
    return out


SHOW = {"environment.show_results": True}
MODES = {"plain": {}, "show_results": SHOW, "online": {"protocol": "online"}}


# --------------------------------------------------------------------------- worker body


def _worker(bench_root: Path, config: str) -> InteractionWorker:
    b = load_benchmark(bench_root, media_errors="record")
    name, cfg = registry.load_model_config(config)
    return InteractionWorker(b, name, cfg, Settings().model_dump(mode="json"), 4)


def _dumped(results) -> dict[tuple[str, float], dict]:
    out = {}
    for res in results:
        for r in res.records:
            d = r.model_dump(mode="json")
            d.pop("latency_s", None)
            out[(r.interaction_id, r.t)] = d
    return out


def test_worker_executes_the_calls_as_a_local_collect(tmp_path, bench_root, config) -> None:
    want = _records(_local(config, bench_root, tmp_path / "local"))
    w = _worker(bench_root, config)
    ids = ["env1", "env2", "p"]
    assert _dumped(w.collect(i, [], []) for i in ids) == want
    # cross-interaction batching: three threads, three environments, one batch gate
    assert _dumped(w.collect_group([(i, [], []) for i in ids])) == want
    # worked by hand: get (no change) + add at 1, the repeated add at 2 adds a second row,
    # the remove at 4 removes one row; env2's "polish" is refused by the schema
    assert [r["changed"] for r in want[("env1", 1.0)]["tool_results"]] == [False, True]
    assert want[("env1", 2.0)]["tool_results"][0]["changed"] is True
    assert want[("env1", 4.0)]["tool_results"][0]["changed"] is True
    assert want[("env2", 3.0)]["tool_results"][0]["ok"] is False
    assert "tool_results" not in want[("p", 3.0)]
    hashes = {k[0]: d["env_state_hash"] for k, d in want.items() if "env_state_hash" in d}
    assert set(hashes) == {"env1", "env2"} and hashes["env1"] != hashes["env2"]


def test_worker_resume_replays_the_calls_already_written(tmp_path, bench_root, config) -> None:
    want = _records(_local(config, bench_root, tmp_path / "local"))
    grid = sorted(t for i, t in want if i == "env1")
    done = [t for t in grid if t <= 2.0]  # the adds at 1 and 2 written, the rest pending
    spoken = [
        ResponseRecord.model_validate(want[("env1", t)])
        for t in done
        if not want[("env1", t)]["silent"]
    ]
    w = _worker(bench_root, config)
    got = _dumped([w.collect("env1", done, spoken)])
    assert got == {k: v for k, v in want.items() if k[0] == "env1" and k[1] > 2.0}
    # without the replay the state would differ: the test sees a missing replay
    fresh = _dumped([w.collect("env1", done, [])])
    assert fresh[("env1", grid[-1])]["env_state_hash"] != want[("env1", grid[-1])]["env_state_hash"]


def test_show_results_changes_the_records(tmp_path, bench_root, config) -> None:
    """The repeat at 2 s is dropped when the add at 1 s is shown (the adapter reads results):
    a distributed run that did not execute between points would differ."""
    plain = _records(_local(config, bench_root, tmp_path / "plain"))
    shown = _records(_local(config, bench_root, tmp_path / "shown", SHOW))
    assert plain[("env1", 2.0)]["tool_calls"] and shown[("env1", 2.0)]["silent"]


def test_show_results_interactions_are_never_grouped() -> None:
    its = [SimpleNamespace(id=i, query=SimpleNamespace(environment=e))
           for i, e in [("e", "home"), ("a", None), ("b", None)]]  # fmt: skip
    assert _solo(Settings(), its) == frozenset()
    assert _solo(Settings.model_validate({"environment": {"show_results": True}}), its) == {"e"}
    online = {"protocol": "online", "environment": {"show_results": True}}
    assert _solo(Settings.model_validate(online), its) == frozenset()  # one at a time anyway
    from collections import deque

    d = _Driver(None, None, None, None, 10, solo=frozenset({"e"}))
    q = deque([("a", [0.0] * 2, []), ("e", [0.0] * 2, []), ("b", [0.0] * 2, []),
               ("c", [0.0] * 2, [])])  # fmt: skip
    assert [t[0] for t in d._group(q)] == ["a"]  # stops before the solo one
    assert [t[0] for t in d._group(q)] == ["e"]  # alone
    assert [t[0] for t in d._group(q)] == ["b", "c"]


# --------------------------------------------------------------------------- in-process Ray


def _ship(x):
    """What Ray does to arguments and results: a pickle round trip."""
    return pickle.loads(pickle.dumps(x))


class _Ref:
    def __init__(self, fn, *args):
        try:
            self.value, self.error = _ship(fn(*_ship(args))), None
        except Exception as exc:  # noqa: BLE001 - raised by get(), as Ray's RayTaskError
            self.value, self.error = None, exc


class _Actor:
    def __init__(self, cls, args):
        self._obj = cls(*_ship(args))

    def __getattr__(self, name):
        return SimpleNamespace(remote=lambda *a: _Ref(getattr(self._obj, name), *a))


class _TaskError(Exception):
    def __init__(self, cause):
        super().__init__(str(cause))
        self.cause = cause


class FakeRay:
    """The Ray calls ``run_collect_ray`` makes, in process: an actor is the worker object, a
    remote call runs at once; ``initialised`` so ``ray_instance`` neither starts nor stops it."""

    __version__ = "in-process"
    exceptions = SimpleNamespace(RayActorError=type("RayActorError", (Exception,), {}),
                                 RayTaskError=_TaskError)  # fmt: skip

    def __init__(self):
        self.actors: list[_Actor] = []

    def is_initialized(self):
        return True

    def cluster_resources(self):
        return {"CPU": 4.0}

    def put(self, x):
        return x

    def remote(self, cls):
        def start(*args):
            self.actors.append(_Actor(cls, args))
            return self.actors[-1]

        return SimpleNamespace(options=lambda **kw: SimpleNamespace(remote=start))

    def get(self, ref):
        if isinstance(ref, list):
            return [self.get(r) for r in ref]
        if ref.error is not None:
            raise _TaskError(ref.error)
        return ref.value

    def wait(self, refs, num_returns, timeout):
        return refs[:num_returns], refs[num_returns:]

    def kill(self, actor):
        pass

    def get_runtime_context(self):
        return SimpleNamespace(get_accelerator_ids=lambda: {"GPU": []})


@pytest.fixture
def fake_ray(monkeypatch):
    fake = FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    return fake


def _ray(config: str, bench: Path, out: Path, over: dict | None = None, **kw):
    return run_collect_ray(
        model=config,
        bench=bench,
        out=out,
        ray_options=RayOptions(workers=2, setup=f"{ME}:register"),
        overrides=dict(over or {}),
        progress=False,
        **kw,
    )


@pytest.mark.parametrize("mode", list(MODES))
def test_ray_run_equals_the_local_run(tmp_path, bench_root, config, fake_ray, mode) -> None:
    over = MODES[mode]
    local = _local(config, bench_root, tmp_path / "local", over)
    summary = _ray(config, bench_root, tmp_path / "ray", over)
    assert len(fake_ray.actors) == 2
    assert _records(tmp_path / "ray") == _records(local)
    assert summary.written == len(_records(local)) and summary.errors == 0
    assert _scores(tmp_path / "ray") == _scores(local)
    info = json.loads((tmp_path / "ray" / "run.json").read_text())["invocations"][-1]
    assert info["distributed"]["ray_version"] == "in-process"


def test_ray_run_of_the_demo_env_with_the_oracle(tmp_path, fake_ray) -> None:
    local = tmp_path / "local"
    run_collect(model="oracle", bench=DEMO_ENV, out=local, progress=False)
    run_collect_ray(model="oracle", bench=DEMO_ENV, out=tmp_path / "ray", progress=False)
    assert _records(tmp_path / "ray") == _records(local)
    doc = _scores(tmp_path / "ray")
    assert doc == _scores(local)
    assert doc["totals"]["state_correct"] == {"correct": 1, "interactions": 1}  # README


def _truncated(run: Path, out: Path, keep: int) -> Path:
    """A copy of ``run`` with only its first ``keep`` records, as a killed collect leaves it."""
    shutil.copytree(run, out)
    lines = (out / "responses.jsonl").read_text().splitlines(keepends=True)
    (out / "responses.jsonl").write_text("".join(lines[:keep]))
    return out


@pytest.mark.parametrize("mode", ["plain", "show_results"])
def test_ray_resume_rebuilds_the_state(tmp_path, bench_root, config, fake_ray, mode) -> None:
    over = MODES[mode]
    local = _local(config, bench_root, tmp_path / "local", over)
    lines = (local / "responses.jsonl").read_text().splitlines()
    # cut inside env1 after its calls at 1 s and 2 s were written (interactions go in order)
    keep = next(i for i, x in enumerate(lines) if json.loads(x)["t"] == 3.0 and "env1" in x)
    assert json.loads(lines[keep])["interaction_id"] == "env1"
    part = _truncated(local, tmp_path / "part", keep)
    summary = _ray(config, bench_root, part, over)
    assert summary.already_present == keep
    assert _records(part) == _records(local)
    assert _scores(part) == _scores(local)


# --------------------------------------------------------------------------- cluster address


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_address_forms() -> None:
    assert _host_port("auto") is None
    assert _host_port("127.0.0.1:6379") == ("127.0.0.1", 6379)
    assert _host_port("ray://head.example:10001") == ("head.example", 10001)
    assert _host_port("[::1]:6379") == ("::1", 6379)
    assert _host_port("head:port") is None


@pytest.mark.parametrize("form", ["127.0.0.1:{}", "ray://127.0.0.1:{}"])
def test_unreachable_address_fails_before_ray_init(monkeypatch, form) -> None:
    calls: list[dict] = []
    fake = SimpleNamespace(is_initialized=lambda: False, init=lambda **kw: calls.append(kw))
    monkeypatch.setitem(sys.modules, "ray", fake)
    address = form.format(_closed_port())
    with pytest.raises(CollectError) as ei:
        with ray_instance(RayOptions(address=address, connect_timeout_s=2)):
            pass
    msg = str(ei.value)
    assert calls == []  # Ray never got to retry
    assert "\n" not in msg and f"--ray-address {address}: no Ray cluster answers" in msg
    assert "within 2 s" in msg


def test_cli_unreachable_address_is_one_line(tmp_path) -> None:
    pytest.importorskip("ray")
    from typer.testing import CliRunner

    from interactscope.cli import app

    out = tmp_path / "r"
    args = ["collect", "--model", "oracle", "--bench", str(DEMO_ENV), "--out", str(out),
            "--ray-address", f"127.0.0.1:{_closed_port()}", "--no-progress"]  # fmt: skip
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 1 and "no Ray cluster answers" in r.output
    assert len(r.output.strip().splitlines()) == 1, r.output
    assert not out.exists()


# --------------------------------------------------------------------------- real Ray


in_namespace = pytest.mark.skipif(
    os.environ.get(NETNS_ENV) != "1" or not _loopback_only(),
    reason="run through test_ray_env_runs_in_a_loopback_namespace (loopback-only namespace)",
)


@pytest.fixture(scope="module")
def real_ray(tmp_path_factory):
    """One private local Ray for the module; ``run_collect_ray`` uses it as it is."""
    import ray

    from interactscope.streaming.distributed import _local_init_kwargs

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(**_local_init_kwargs(2, str(tmp_path_factory.mktemp("ray"))))
    yield ray
    ray.shutdown()


@in_namespace
def test_real_ray_demo_env_oracle(tmp_path, real_ray) -> None:
    local = tmp_path / "local"
    run_collect(model="oracle", bench=DEMO_ENV, out=local, progress=False)
    run_collect_ray(model="oracle", bench=DEMO_ENV, out=tmp_path / "ray", progress=False)
    assert _records(tmp_path / "ray") == _records(local)
    assert _scores(tmp_path / "ray") == _scores(local)


@in_namespace
@pytest.mark.parametrize("mode", list(MODES))
def test_real_ray_scripted(tmp_path, bench_root, config, real_ray, mode) -> None:
    over = MODES[mode]
    local = _local(config, bench_root, tmp_path / "local", over)
    _ray(config, bench_root, tmp_path / "ray", over)
    assert _records(tmp_path / "ray") == _records(local)
    assert _scores(tmp_path / "ray") == _scores(local)
    lines = (local / "responses.jsonl").read_text().splitlines()
    keep = next(i for i, x in enumerate(lines) if json.loads(x)["t"] == 3.0 and "env1" in x)
    part = _truncated(local, tmp_path / "part", keep)
    _ray(config, bench_root, part, over)
    assert _records(part) == _records(local)


@pytest.mark.slow
def test_ray_env_runs_in_a_loopback_namespace(tmp_path) -> None:
    from tests.helpers.ray_net import _can_isolate

    why = _can_isolate()
    if why:
        pytest.skip(why)
    home = tmp_path / "home"
    home.mkdir()
    cmd = (
        f"ip link set lo up && exec {sys.executable} -m pytest -q -p no:cacheprovider "
        f"tests/test_distributed_env.py -k real_ray"
    )
    env = {**os.environ, NETNS_ENV: "1", "HOME": str(home), "RAY_USAGE_STATS_ENABLED": "0",
           "PYTHONPATH": str(ROOT)}  # fmt: skip
    p = subprocess.run(["unshare", "--net", "bash", "-c", cmd], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)  # fmt: skip
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    assert "4 passed" in p.stdout, p.stdout[-2000:]

"""Ray collection: the worker body, the queue, option checking (no Ray needed), and the launcher
that runs tests/test_distributed_ray.py in a loopback-only network namespace under strace."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interactscope.core import registry as plugins
from interactscope.streaming.adapters import registry
from interactscope.streaming.adapters.base import Adapter, AdapterOutput
from interactscope.streaming.bench import load_benchmark
from interactscope.streaming.collect import CollectError, run_collect
from interactscope.streaming.distributed import (
    INSTALL_HINT,
    InteractionWorker,
    RayOptions,
    WorkerStats,
    _MemorySink,
    _pending,
    check_resources,
    require_ray,
)
from interactscope.streaming.schema import ResponseRecord
from interactscope.streaming.settings import Settings
from tests.helpers.plugins import isolate_plugins
from tests.helpers.ray_net import NETNS_ENV, _can_isolate

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "annotations" / "demo"


def _records(run: Path) -> dict[tuple[str, float], dict]:
    out = {}
    for line in (run / "responses.jsonl").read_text().splitlines():
        d = json.loads(line)
        d.pop("latency_s")
        out[(d["interaction_id"], d["t"])] = d
    return out


@pytest.fixture(scope="module")
def demo():
    return load_benchmark(DEMO, media_errors="record")


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    out = tmp_path_factory.mktemp("serial") / "run"
    run_collect(model="oracle", bench=DEMO, out=out, progress=False)
    return _records(out)


def _worker(demo, model: str = "oracle", **kw) -> InteractionWorker:
    config = {k: v for k, v in kw.items() if k != "setup"}  # setup: a worker's, not the model's
    name, config = registry.load_model_config(model) if model == "oracle" else (model, config)
    return InteractionWorker(demo, name, config, Settings().model_dump(mode="json"), 16,
                             setup=kw.get("setup"))  # fmt: skip


def test_worker_body_gives_the_serial_records(demo, serial) -> None:
    w = _worker(demo)
    got = {}
    for it in demo.interactions:
        res = w.collect(it.id, [], [])
        assert res.interaction_id == it.id and res.written == len(res.records)
        for r in res.records:
            d = r.model_dump(mode="json")
            d.pop("latency_s")
            got[(r.interaction_id, r.t)] = d
    assert got == serial
    assert sum(1 for d in got.values() if not d["silent"]) == 14  # one per demo target


def test_worker_skips_points_already_written(demo, serial) -> None:
    it = demo.interactions[0]
    ts = sorted(t for iid, t in serial if iid == it.id)
    res = _worker(demo).collect(it.id, ts[:2], [])
    assert [r.t for r in res.records] == ts[2:]


def test_worker_keeps_its_startup_error_for_the_driver(demo) -> None:
    w = _worker(demo, "nope", backend="no-such-backend")
    assert w.error is not None and "unknown backend 'no-such-backend'" in w.error
    with pytest.raises(RuntimeError, match="no-such-backend"):
        w.collect(demo.interactions[0].id, [], [])


class Echo(Adapter):
    backend = "echo-test"
    needs_media = False

    def respond(self, request):
        return AdapterOutput(text=f"at {request.t:g}")


def register_echo() -> None:
    plugins.register("backends", "echo-test", "tests.test_distributed:Echo")


def test_setup_hook_runs_before_the_adapter_is_built(demo, monkeypatch) -> None:
    isolate_plugins(monkeypatch)
    w = _worker(demo, "echo", backend="echo-test", setup="tests.test_distributed:register_echo")
    assert w.error is None
    it = demo.interactions[0]
    res = w.collect(it.id, [], [])
    assert res.records[0].text == f"at {res.records[0].t:g}" and res.non_silent == res.written


def test_setup_must_name_module_and_function() -> None:
    with pytest.raises(ValueError, match="setup"):
        RayOptions(setup="not a path")


def test_memory_sink_buffers_one_interaction_and_keeps_history() -> None:
    old = ResponseRecord(interaction_id="a", t=3.0, silent=False, text="earlier")
    sink = _MemorySink({("a", 3.0)}, [old])
    sink.append(ResponseRecord(interaction_id="a", t=1.0, silent=False, text="x"))
    sink.append(ResponseRecord(interaction_id="a", t=2.0, silent=True))
    assert [r.t for r in sink.records] == [1.0, 2.0]
    assert [r.t for r in sink.spoken("a")] == [1.0, 3.0]  # non-silent, in time order
    with pytest.raises(RuntimeError, match="already collected"):
        sink.append(ResponseRecord(interaction_id="a", t=3.0))


class _Done:
    def __init__(self, done):
        self.done = done


def test_queue_is_longest_grid_first_and_skips_finished(demo) -> None:
    from interactscope.streaming.protocol.driver import interaction_grid

    s = Settings()
    grids = {it.id: interaction_grid(demo, it, s) for it in demo.interactions}
    finished = min(grids, key=lambda i: len(grids[i]))
    done = {(finished, t) for t in grids[finished]}
    tasks = _pending(demo, s, demo.interactions, _Done(done))
    assert finished not in [t[0] for t in tasks]
    lengths = [len(g) for _, g, _ in tasks]
    assert lengths == sorted(lengths, reverse=True) and len(tasks) == len(grids) - 1
    ties = [iid for iid, g, _ in tasks if len(g) == lengths[0]]
    assert ties == sorted(ties)


def test_require_ray_says_how_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(CollectError, match=re.escape(INSTALL_HINT)):
        require_ray()


class _FakeRay:
    def __init__(self, res):
        self.res = res

    def cluster_resources(self):
        return self.res


def test_cluster_too_small_is_refused_with_the_numbers() -> None:
    with pytest.raises(CollectError, match=r"needs 3 GPU\(s\); the Ray cluster has 2"):
        check_resources(_FakeRay({"CPU": 8, "GPU": 2}), RayOptions(workers=3, gpus_per_worker=1))
    with pytest.raises(CollectError, match=r"needs 4 CPU\(s\).*has 2"):
        check_resources(_FakeRay({"CPU": 2}), RayOptions(workers=4))
    check_resources(_FakeRay({"CPU": 2, "GPU": 1}), RayOptions(workers=2, gpus_per_worker=0.5))


def test_ray_collect_refuses_a_subset_before_anything_starts(tmp_path) -> None:
    # run_collect(ray_options=) is the Ray route of the one collect; a subset is serial-only
    with pytest.raises(CollectError, match="only/tasks do not work with Ray"):
        run_collect(model="oracle", bench=DEMO, out=tmp_path / "r", tasks=["T1"],
                    ray_options=RayOptions(), progress=False)  # fmt: skip
    assert not (tmp_path / "r").exists()


def test_worker_throughput_is_derived_from_its_counts() -> None:
    st = WorkerStats(slot=0, decision_points=7, busy_s=2.5)
    assert st.points_per_s == 2.8  # 7 points / 2.5 s
    st.decision_points, st.busy_s = 10, 3.0
    assert st.model_dump()["points_per_s"] == 3.333  # 10 / 3, three decimals, never stale
    assert WorkerStats(slot=1).model_dump()["points_per_s"] is None  # no busy time yet


def _cli(*args: str):
    from interactscope.cli import app

    base = ["collect", "--model", "oracle", "--bench", str(DEMO)]
    return CliRunner().invoke(app, base + list(args))


def test_cli_workers_without_ray_is_one_line(tmp_path) -> None:
    r = _cli("--out", str(tmp_path / "r"), "--workers", "2")
    assert r.exit_code == 1 and "need --ray" in r.output
    assert not (tmp_path / "r").exists()


def test_cli_ray_without_ray_installed_names_the_extra(tmp_path, monkeypatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "ray" else real(n, *a)
    )
    r = _cli("--out", str(tmp_path / "r"), "--ray", "--workers", "2")
    assert r.exit_code == 1 and INSTALL_HINT in r.output
    assert not (tmp_path / "r").exists()


# --------------------------------------------------------------------------- network check

LOOPBACK = re.compile(
    r'inet_addr\("127\.|inet_pton\(AF_INET6, "::1"|inet_pton\(AF_INET6, "::ffff:127\.'
)
CONNECT = re.compile(r"^(\d+)\s+connect\(\d+, \{sa_family=(AF_INET6?),(.*?)\}")
RESULT = re.compile(r"= (-?\d+)(?: (E[A-Z]+))?")


def outside_connections(trace: str) -> tuple[list[str], list[str], int]:
    """From ``strace -f -e trace=connect`` output: (connects to a non-loopback address that
    succeeded or were in progress, those that failed, number of loopback IP connects).
    Lines split by ``<unfinished ...>`` are joined per PID."""
    pending: dict[str, str] = {}
    ok, failed, loop = [], [], 0
    for line in trace.splitlines():
        resumed = re.match(r"^(\d+)\s+<\.\.\. connect resumed>(.*)", line)
        if resumed:
            line = pending.pop(resumed.group(1), "") + resumed.group(2)
        elif line.endswith("<unfinished ...>"):
            pid = line.split()[0]
            pending[pid] = line[: -len("<unfinished ...>")]
            continue
        m = CONNECT.match(line)
        if not m:
            continue
        if LOOPBACK.search(m.group(3)):
            loop += 1
            continue
        res = RESULT.search(line[m.end() :])
        good = res is not None and (res.group(1) == "0" or res.group(2) == "EINPROGRESS")
        (ok if good else failed).append(line.strip())
    return ok, failed, loop


def test_trace_parser_on_hand_written_lines() -> None:
    trace = "\n".join(
        [
            '10 connect(3, {sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr("169.254.169.254")}, 16) = -1 ENETUNREACH (Network is unreachable)',
            '11 connect(4, {sa_family=AF_INET, sin_port=htons(6379), sin_addr=inet_addr("127.0.0.1")}, 16) = 0',
            '12 connect(5, {sa_family=AF_UNIX, sun_path="/tmp/x"}, 110) = 0',
            '13 connect(6, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.0.0.2")}, 16 <unfinished ...>',
            '11 connect(7, {sa_family=AF_INET6, sin6_port=htons(1), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = 0',
            "13 <... connect resumed>) = -1 EINPROGRESS (Operation now in progress)",
        ]
    )
    ok, failed, loop = outside_connections(trace)
    assert len(ok) == 1 and "10.0.0.2" in ok[0]
    assert len(failed) == 1 and "169.254.169.254" in failed[0]
    assert loop == 2


@pytest.mark.slow
def test_ray_runs_in_a_loopback_namespace_and_connects_nowhere_else(tmp_path) -> None:
    why = _can_isolate()
    if why:
        pytest.skip(why)
    trace, home = tmp_path / "connect.trace", tmp_path / "home"
    home.mkdir()
    cmd = (
        f"ip link set lo up && exec strace -f -qq --seccomp-bpf -e trace=connect -o {trace} "
        f"{sys.executable} -m pytest -q -p no:cacheprovider tests/test_distributed_ray.py"
    )
    env = {**os.environ, NETNS_ENV: "1", "HOME": str(home), "RAY_USAGE_STATS_ENABLED": "0"}
    p = subprocess.run(
        ["unshare", "--net", "bash", "-c", cmd],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    assert re.search(r"\b3 passed\b", p.stdout), p.stdout[-2000:]
    ok, failed, loop = outside_connections(trace.read_text())
    assert loop > 0, "strace saw no loopback connection: it did not follow Ray's processes"
    assert not ok, "connections outside 127.0.0.0/8:\n" + "\n".join(ok[:20])
    assert list(home.iterdir()) == [], "Ray wrote into HOME"


# --------------------------------------------------------------------------- driver loop


class _ActorDied(Exception):
    pass


class _TaskFailed(Exception):
    cause = None


class _Ray:
    """Just what the driver loop calls: results are ready at once, an exception is raised."""

    class exceptions:
        RayActorError = _ActorDied
        RayTaskError = _TaskFailed

    def wait(self, refs, num_returns, timeout):
        return refs[:1], refs[1:]

    def get(self, ref):
        if isinstance(ref.value, Exception):
            raise ref.value
        return ref.value


class _Ref:
    def __init__(self, value):
        self.value = value


class _Pool:
    def __init__(self, outcome):
        from types import SimpleNamespace

        from interactscope.streaming.distributed import WorkerStats

        self.ray, self.options = _Ray(), RayOptions(workers=2, max_attempts=3)
        self.stats = [WorkerStats(slot=i) for i in range(2)]
        self.replaced: list[int] = []

        def group(args):
            outs = [outcome(*a) for a in args]
            died = [o for o in outs if isinstance(o, Exception)]
            return _Ref(died[0] if died else outs)

        actor = SimpleNamespace(collect_group=SimpleNamespace(remote=group))
        self.actors = [actor, actor]

    def replace(self, slot):
        self.replaced.append(slot)


def test_interaction_losing_its_worker_every_time_gets_error_records() -> None:
    from interactscope.streaming.distributed import DistributedInfo, WorkResult, _Driver

    def outcome(iid, done, spoken):
        if iid == "a":
            return _ActorDied("The actor died unexpectedly before finishing this task.")
        recs = [ResponseRecord(interaction_id=iid, t=t) for t in (1.0, 2.0)]
        return WorkResult(interaction_id=iid, records=recs, busy_s=0.5, written=2, pid=7)

    pool, sink = _Pool(outcome), _MemorySink(set(), [])
    info = DistributedInfo(ray_version="x", address="local", workers=2, gpus_per_worker=0)
    bar = type("Bar", (), {"update": lambda self, n: None})()
    d = _Driver(pool, sink, info, bar, 1)
    d.run([("a", [0.0, 1.0, 2.0], [0.0]), ("b", [1.0, 2.0], [])])
    keys = sorted(r.key for r in sink.records)
    assert keys == [("a", 1.0), ("a", 2.0), ("b", 1.0), ("b", 2.0)]  # a's t=0 was written before
    lost = [r for r in sink.records if r.interaction_id == "a"]
    assert all("Ray worker died 3 times: The actor died" in r.error for r in lost)
    assert info.requeued == {"a": 3} and len(pool.replaced) == 3
    assert d.summary.errors == 2 and d.summary.written == 4
    assert set(d.summary.failed_interactions) == {"a"}
    assert sum(s.decision_points for s in pool.stats) == 4


def test_cross_interaction_batches_give_the_per_interaction_records(demo, serial) -> None:
    w = _worker(demo)
    results = w.collect_group([(it.id, [], []) for it in demo.interactions])
    got = {}
    for res in results:
        for r in res.records:
            d = r.model_dump(mode="json")
            d.pop("latency_s")
            got[(r.interaction_id, r.t)] = d
    assert got == serial
    # 89 points in adapter calls of at most 16 that mix interactions (each has < 16 points)
    sizes = w.last_batch_sizes
    assert sum(sizes) == 89 and max(sizes) <= 16
    per_interaction = {iid: sum(1 for i, _ in serial if i == iid) for iid, _ in serial}
    assert max(per_interaction.values()) < max(sizes)
    assert len(sizes) < len(per_interaction)


def test_group_formation_fills_up_to_the_batch(demo) -> None:
    from collections import deque

    from interactscope.streaming.distributed import _Driver

    d = _Driver(None, None, None, None, 10)
    q = deque([("a", [0.0] * 12, []), ("b", [0.0] * 4, [0.0]), ("c", [0.0] * 5, []),
               ("d", [0.0] * 9, []), ("e", [0.0] * 2, [])])  # fmt: skip
    assert [t[0] for t in d._group(q)] == ["a"]  # 12 pending: alone
    assert [t[0] for t in d._group(q)] == ["b", "c", "d"]  # 3 + 5 < 10, + 9 reaches it
    assert [t[0] for t in d._group(q)] == ["e"]

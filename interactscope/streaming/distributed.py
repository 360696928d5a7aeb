"""``interactscope collect --ray``: collection spread over Ray actors, into one run folder.

Each worker is a Ray actor that builds its adapter once (model config + settings, as a serial
``collect`` does) and collects **whole interactions** pulled from a queue, longest grid first.
A worker returns all records of an interaction at once; the driver process alone writes the run
folder, through the same :func:`~interactscope.streaming.runlog.open_run` writer (append + fsync), under the
same lock and into the same ``run.json``, so resume, ``score``, ``view`` and ``merge`` work
unchanged. In plain Offline Probing a worker may take several short interactions at once and join
their decision points into adapter batches of up to ``batch_size`` (cross-interaction batching).

Environment interactions (``query.environment``, docs/protocol.md#environments) are collected
whole by one worker too, with the serial driver's executor: a fresh environment per interaction
per attempt, the calls of the records already written replayed first, each new record's calls
executed in time order between decision points (``tool_results``), the final state hash on the
last decision point (``env_state_hash``). With ``environment.show_results`` such an interaction is
never batched with others (its requests depend on its earlier results).

Failure semantics (docs/distributed.md):

- Records are buffered per interaction and written when the interaction completes, so a worker
  that dies mid-interaction leaves nothing of it on disk; the interaction is re-queued and a new
  actor takes the dead one's place. An interaction whose worker died ``max_attempts`` times is
  written with an ``error`` on each record (``collect --retry-errors`` redoes it).
- A killed driver loses at most the interactions in flight; running the same command again
  resumes (records already written are kept, nothing is written twice).

Network hygiene for a local instance (no ``--ray ADDRESS``): dashboard and usage statistics off,
every Ray process bound to 127.0.0.1, token authentication off, Ray's session files in a
temporary folder that is removed afterwards.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import shutil
import socket
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import BaseModel, Field, computed_field
from tqdm.auto import tqdm

from interactscope.streaming.adapters.base import AdapterError
from interactscope.streaming.adapters.registry import (
    adapter_class,
    build_adapter,
    require_online_support,
)
from interactscope.streaming.bench import Benchmark
from interactscope.streaming.collect import (
    CollectError,
    CollectJob,
    run_collect,
    tool_executor,
    write_run,
)
from interactscope.streaming.protocol.driver import CollectSummary, collect
from interactscope.streaming.protocol.requests import interaction_grid
from interactscope.streaming.runlog import RunWriter
from interactscope.streaming.schema import ResponseRecord
from interactscope.streaming.settings import Settings, collection_strategy

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'interactscope[distributed]'"
WORKER_NAME = "interactscope-worker"
"""Ray actor names are ``WORKER_NAME-SLOT-N`` (``ray.get_actor`` finds them)."""
LOCAL = "local"
"""``RayOptions.address`` value meaning: start a private Ray instance on this machine."""


def require_ray() -> Any:
    """Import Ray.

    Raises:
        CollectError: Ray is not installed (the message says how to install it).
    """
    try:
        import ray  # optional dependency ([distributed])
    except ImportError as exc:
        raise CollectError(f"--ray needs Ray, which is not installed: {INSTALL_HINT}") from exc
    return ray


class RayOptions(BaseModel):
    """How to spread a collection over Ray.

    Attributes:
        address: ``"local"`` (start a private instance on this machine) or the address of a
            running cluster (``auto``, ``HOST:PORT``, ``ray://HOST:PORT``).
        workers: actors, one adapter (one engine) each.
        gpus_per_worker: GPUs Ray reserves for each actor (fractions allowed, 0: CPU only).
        max_attempts: how many times an interaction may lose its worker before its records
            are written with an error.
        setup: ``"module:function"`` each worker calls (no arguments) before building its
            adapter, e.g. to register a custom backend in
            ``interactscope.core.registry`` (kind ``backends``) inside the worker process.
        connect_timeout_s: seconds a TCP connection to a ``HOST:PORT`` or ``ray://HOST:PORT``
            address may take before ``--ray-address`` is refused (Ray itself would retry for
            minutes); ``auto`` and ``local`` are not probed.
    """

    address: str = LOCAL
    workers: int = Field(2, ge=1)
    gpus_per_worker: float = Field(0.0, ge=0)
    max_attempts: int = Field(3, ge=1)
    setup: str | None = Field(None, pattern=r"^[\w.]+:\w+$")
    connect_timeout_s: float = Field(5.0, gt=0)


class WorkerStats(BaseModel):
    """Throughput of one worker slot (recorded in ``run.json``, invocation ``distributed``).

    ``busy_s`` is the seconds (wall, measured in the worker) spent collecting; ``actors`` counts
    the actors that served the slot (more than 1 after a worker died and was replaced)."""

    slot: int
    actors: int = 0
    host: str | None = None
    pid: int | None = None
    gpu_ids: list[str] = Field(default_factory=list)
    interactions: int = 0
    decision_points: int = 0
    busy_s: float = 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def points_per_s(self) -> float | None:
        """Decision points per busy second (3 decimals); ``None`` before any."""
        return round(self.decision_points / self.busy_s, 3) if self.busy_s > 0 else None


class DistributedInfo(BaseModel):
    """What ``--ray`` recorded about one invocation: where it ran, start-up cost (s), per-worker
    throughput, and the interactions re-queued after a worker died (id -> lost workers)."""

    ray_version: str
    address: str
    workers: int
    gpus_per_worker: float
    start_s: float = 0.0
    requeued: dict[str, int] = Field(default_factory=dict)
    worker_stats: list[WorkerStats] = Field(default_factory=list)


class WorkResult(BaseModel):
    """One interaction collected by a worker: its new records in collection order, the
    driver-side counts of that collection and the worker's busy seconds."""

    interaction_id: str
    records: list[ResponseRecord]
    busy_s: float
    host: str | None = None
    pid: int | None = None
    written: int = 0
    non_silent: int = 0
    suppressed: int = 0
    errors: int = 0
    model_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0


# --------------------------------------------------------------------------- worker side


class _MemorySink:
    """A record sink holding one interaction's records in memory (the worker's buffer)."""

    def __init__(self, done: set[tuple[str, float]], spoken: list[ResponseRecord]):
        self.done = set(done)
        self.records: list[ResponseRecord] = []
        self._spoken = list(spoken)

    def append(self, record: ResponseRecord) -> None:
        if record.key in self.done:
            raise RuntimeError(f"record {record.key} already collected")
        self.done.add(record.key)
        self.records.append(record)
        if not record.silent and not record.error:
            self._spoken.append(record)

    def spoken(self, interaction_id: str) -> list[ResponseRecord]:
        return sorted(
            (r for r in self._spoken if r.interaction_id == interaction_id), key=lambda r: r.t
        )


class _Prepared:
    """The worker's adapter, prepared once for the whole benchmark: the driver's per-call
    ``prepare`` becomes a no-op (a vLLM preflight runs once per worker, not per interaction)."""

    def __init__(self, adapter: Any):
        self._adapter = adapter

    def prepare(self, bench: Benchmark) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._adapter, name)


class _Call:
    """One thread's ``respond_batch`` request waiting in a :class:`_BatchGate`."""

    def __init__(self, requests: list[Any]):
        self.requests = requests
        self.result: list[Any] | None = None
        self.error: BaseException | None = None


class _BatchGate:
    """Joins the ``respond_batch`` calls of threads collecting different interactions into
    adapter calls of up to ``batch_size`` decision points (cross-interaction batching).

    A batch goes out when it is full or when every thread still collecting is waiting in the
    gate; each thread gets back exactly the answers to its own requests. ``sizes`` lists the
    decision points of each adapter call."""

    def __init__(self, adapter: Any, batch_size: int, parties: int):
        self._adapter = adapter
        self.batch_size = max(1, batch_size)
        self._cond = threading.Condition()
        self._active = parties
        self._waiting: list[_Call] = []
        self._busy = False
        self.sizes: list[int] = []

    def leave(self) -> None:
        """A thread finished its interaction: waiting threads need not wait for it."""
        with self._cond:
            self._active -= 1
            self._cond.notify_all()

    def _ready(self) -> bool:
        n = sum(len(c.requests) for c in self._waiting)
        return (
            bool(self._waiting)
            and not self._busy
            and (n >= self.batch_size or len(self._waiting) >= self._active)
        )

    def respond_batch(self, requests: list[Any]) -> list[Any]:
        call = _Call(requests)
        with self._cond:
            self._waiting.append(call)
            while call.result is None and call.error is None:
                if self._ready():
                    self._run(self._take())
                else:
                    self._cond.wait()
        if call.error is not None:
            raise call.error
        return call.result

    def _take(self) -> list[_Call]:
        batch, n = [], 0
        while self._waiting and (
            not batch or n + len(self._waiting[0].requests) <= self.batch_size
        ):
            c = self._waiting.pop(0)
            batch.append(c)
            n += len(c.requests)
        return batch

    def _run(self, batch: list[_Call]) -> None:
        """One adapter call for ``batch`` (the lock is released meanwhile)."""
        reqs = [r for c in batch for r in c.requests]
        self._busy = True
        self._cond.release()
        try:
            outs: Any = self._adapter.respond_batch(reqs)
            if len(outs) != len(reqs):
                outs = RuntimeError(
                    f"adapter returned {len(outs)} answers for {len(reqs)} requests"
                )
        except Exception as exc:  # noqa: BLE001 - each thread's driver records it
            outs = exc
        finally:
            self._cond.acquire()
            self._busy = False
        self.sizes.append(len(reqs))
        i = 0
        for c in batch:
            if isinstance(outs, BaseException):
                c.error = outs
            else:
                c.result = list(outs[i : i + len(c.requests)])
            i += len(c.requests)
        self._cond.notify_all()


class _Gated(_Prepared):
    """The prepared adapter with its ``respond_batch`` going through a shared gate."""

    def __init__(self, adapter: Any, gate: _BatchGate):
        super().__init__(adapter)
        self._gate = gate

    def respond_batch(self, requests: list[Any]) -> list[Any]:
        return self._gate.respond_batch(requests)


def _tool_executor(bench: Benchmark) -> Any:
    """The worker's executor of environment interactions' tool calls (docs/protocol.md,
    environments), as a serial ``collect`` builds it; ``None`` without environments. Each
    interaction a worker collects gets a fresh environment, on which the calls of its records
    already written are replayed first (resume, re-queue after a worker died)."""
    return tool_executor(bench)


class InteractionWorker:
    """Body of a Ray actor: builds and prepares the adapter once, then collects interactions.

    A failure to build or prepare the adapter is kept (not raised) so the driver can stop the
    run with that message instead of Ray's actor-death report."""

    def __init__(
        self,
        bench: Benchmark,
        model: str,
        config: dict[str, Any],
        settings: dict[str, Any],
        batch: int,
        setup: str | None = None,
    ):

        self.bench = bench
        self.settings = Settings.model_validate(settings)
        self.batch_size = batch
        self.by_id = {it.id: it for it in bench.interactions}
        self.tools = _tool_executor(bench)
        self.error: str | None = None
        self.adapter: Any = None
        try:
            if setup:
                module, fn = setup.split(":")
                getattr(importlib.import_module(module), fn)()
            self.adapter = build_adapter(model, config, self.settings)
            self.adapter.prepare(bench)
        except Exception as exc:  # noqa: BLE001 - reported by info()
            self.error = f"{type(exc).__name__}: {exc}"

    def info(self) -> dict[str, Any]:
        """Host, PID, GPU ids and the adapter's ``describe()`` (or the start-up error)."""
        import ray  # optional dependency ([distributed])

        gpus = ray.get_runtime_context().get_accelerator_ids().get("GPU", [])
        return {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "gpu_ids": [str(g) for g in gpus],
            "error": self.error,
            "describe": self.adapter.describe() if self.adapter and not self.error else None,
        }

    def collect(
        self, interaction_id: str, done: list[float], spoken: list[ResponseRecord]
    ) -> WorkResult:
        """Collect the decision points of one interaction not in ``done`` (times, s), with
        ``spoken`` (its non-silent records already written) as history.

        Raises:
            RuntimeError: the adapter could not be built (the message names why).
        """
        if self.error:
            raise RuntimeError(self.error)
        return self._one(_Prepared(self.adapter), interaction_id, done, spoken)

    def collect_group(
        self, tasks: list[tuple[str, list[float], list[ResponseRecord]]]
    ) -> list[WorkResult]:
        """Collect several interactions (``collect``'s arguments each) at once, their decision
        points joined into adapter batches of up to ``batch_size`` (plain Offline Probing: the
        requests are independent, so the records equal per-interaction collection's).

        Raises:
            RuntimeError: the adapter could not be built (the message names why).
        """
        if self.error:
            raise RuntimeError(self.error)
        gate = _BatchGate(self.adapter, self.batch_size, len(tasks))

        def run(task: tuple[str, list[float], list[ResponseRecord]]) -> WorkResult:
            try:
                return self._one(_Gated(self.adapter, gate), *task)
            finally:
                gate.leave()

        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=len(tasks)) as pool:
            results = list(pool.map(run, tasks))
        wall = time.perf_counter() - start
        points = sum(len(r.records) for r in results) or 1
        for r in results:  # the interactions ran side by side: share out the wall time
            r.busy_s = round(wall * len(r.records) / points, 4)
        self.last_batch_sizes = gate.sizes
        return results

    def _one(
        self, adapter: Any, interaction_id: str, done: list[float], spoken: list[ResponseRecord]
    ) -> WorkResult:
        start = time.perf_counter()
        it = self.by_id[interaction_id]
        sink = _MemorySink({(interaction_id, round(t, 3)) for t in done}, spoken)
        s = collect(
            self.bench, adapter, sink, self.settings, [it], batch_size=self.batch_size,
            progress=False, tool_executor=self.tools,
        )  # fmt: skip
        return WorkResult(
            interaction_id=interaction_id,
            records=sink.records,
            busy_s=round(time.perf_counter() - start, 4),
            host=socket.gethostname(),
            pid=os.getpid(),
            **{k: getattr(s, k) for k in _COUNTS},
        )


_COUNTS = ("written", "non_silent", "suppressed", "errors", "model_s", "prompt_tokens",
           "completion_tokens")  # fmt: skip


# --------------------------------------------------------------------------- Ray instance


def _local_init_kwargs(workers: int, temp_dir: str) -> dict[str, Any]:
    """``ray.init`` arguments of a private, loopback-only instance with room for ``workers``."""
    return {
        "num_cpus": max(workers, os.cpu_count() or 1),
        "include_dashboard": False,
        "_node_ip_address": "127.0.0.1",
        "_temp_dir": temp_dir,
        "logging_level": logging.WARNING,
    }


@contextlib.contextmanager
def ray_instance(options: RayOptions) -> Iterator[Any]:
    """Connect to ``options.address`` or start a private local instance; shut it down after.
    A Ray already initialised in this process is used as it is (and left running).

    A local instance is started with the dashboard and usage statistics off, bound to
    127.0.0.1, token authentication off (``RAY_AUTH_MODE=disabled`` unless set), and its
    session files in a temporary folder removed on exit.

    Yields:
        The ``ray`` module, initialised.

    Raises:
        CollectError: Ray is not installed, or the cluster cannot be reached (a ``HOST:PORT``
            address that refuses a TCP connection within ``connect_timeout_s`` is refused at
            once, see :func:`probe_address`).
    """
    ray = require_ray()
    if ray.is_initialized():  # e.g. a notebook that called ray.init(): use it, leave it running
        yield ray
        return
    if options.address != LOCAL:
        probe_address(options.address, options.connect_timeout_s)
    temp_dir: str | None = None
    try:
        if options.address == LOCAL:
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            os.environ.setdefault("RAY_AUTH_MODE", "disabled")
            temp_dir = tempfile.mkdtemp(prefix="interactscope-ray-")
            ray.init(**_local_init_kwargs(options.workers, temp_dir))
        else:
            ray.init(address=options.address, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        if temp_dir:
            shutil.rmtree(temp_dir, ignore_errors=True)
        raise CollectError(f"--ray {options.address}: cannot start or reach Ray ({exc})") from exc
    try:
        yield ray
    finally:
        ray.shutdown()
        if temp_dir:
            shutil.rmtree(temp_dir, ignore_errors=True)


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of ``HOST:PORT``, ``[IPv6]:PORT`` or ``ray://HOST:PORT``; ``None`` for an
    address without a port (``auto``)."""
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def probe_address(address: str, timeout_s: float) -> None:
    """Fail fast when nothing listens at a cluster address: one TCP connection attempt of at
    most ``timeout_s`` seconds to the GCS (``HOST:PORT``) or Ray client (``ray://HOST:PORT``)
    port, before ``ray.init``, which would otherwise retry for minutes. Addresses without a
    port (``auto``) are left to Ray.

    Raises:
        CollectError: one line naming the address, the error and the timeout.
    """
    hp = _host_port(address)
    if hp is None:
        return
    try:
        with socket.create_connection(hp, timeout=timeout_s):
            pass
    except OSError as exc:
        why = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise CollectError(
            f"--ray-address {address}: no Ray cluster answers at {hp[0]}:{hp[1]} ({why}, "
            f"within {timeout_s:g} s); start one with `ray start --head` or use --ray"
        ) from None


def check_resources(ray: Any, options: RayOptions) -> None:
    """Refuse a request the cluster cannot place (actors would wait forever).

    Raises:
        CollectError: fewer GPUs or CPUs in the cluster than ``workers`` need, with the numbers.
    """
    res = ray.cluster_resources()
    need_gpu = options.workers * options.gpus_per_worker
    if need_gpu > float(res.get("GPU", 0)):
        raise CollectError(
            f"--workers {options.workers} --gpus-per-worker {options.gpus_per_worker:g} needs "
            f"{need_gpu:g} GPU(s); the Ray cluster has {float(res.get('GPU', 0)):g}"
        )
    if options.workers > float(res.get("CPU", 0)):
        raise CollectError(
            f"--workers {options.workers} needs {options.workers} CPU(s) (one per worker); "
            f"the Ray cluster has {float(res.get('CPU', 0)):g}"
        )


# --------------------------------------------------------------------------- worker pool


class _Pool:
    """The worker slots: one actor each, replaced by a new actor when it dies."""

    def __init__(self, ray: Any, options: RayOptions, args: tuple[Any, ...]):
        self.ray = ray
        self.options = options
        self._cls = ray.remote(InteractionWorker)
        self._resources = {
            "num_cpus": 1,
            "num_gpus": options.gpus_per_worker,
            "max_restarts": 0,
            "max_task_retries": 0,
        }
        self._args = args
        self.stats = [WorkerStats(slot=i) for i in range(options.workers)]
        self.actors = [self._start(slot) for slot in range(options.workers)]
        self.replaced = 0

    def _start(self, slot: int) -> Any:
        """A new actor for ``slot``, named ``interactscope-worker-SLOT-N`` (N-th of the slot)."""
        st = self.stats[slot]
        st.actors += 1
        name = f"{WORKER_NAME}-{slot}-{st.actors}"
        return self._cls.options(name=name, **self._resources).remote(*self._args)

    def ready(self) -> dict[str, Any] | None:
        """Wait for every actor to build its adapter; the first one's ``describe()``.

        Raises:
            CollectError: an actor could not build or prepare its adapter (its message), or
                died while starting.
        """
        try:
            infos = self.ray.get([a.info.remote() for a in self.actors])
        except self.ray.exceptions.RayActorError as exc:
            first = str(exc).strip().splitlines()[0]
            raise CollectError(f"a Ray worker died while starting the model: {first}") from exc
        for st, info in zip(self.stats, infos, strict=True):
            if info["error"]:
                raise CollectError(f"worker {st.slot} could not start the model: {info['error']}")
            self._note(st, info)
        return infos[0]["describe"]

    def _note(self, st: WorkerStats, info: dict[str, Any]) -> None:
        st.host, st.pid, st.gpu_ids = info["host"], info["pid"], info["gpu_ids"]

    def replace(self, slot: int) -> None:
        """Start a new actor in ``slot`` (the old one died).

        Raises:
            CollectError: workers died more often than ``workers * max_attempts`` times.
        """
        self.replaced += 1
        if self.replaced > self.options.workers * self.options.max_attempts:
            raise CollectError(
                f"Ray workers died {self.replaced} times; stopping (records written so far are "
                "kept; run the same command again to resume)"
            )
        with contextlib.suppress(Exception):
            self.ray.kill(self.actors[slot])
        self.actors[slot] = self._start(slot)

    def close(self) -> None:
        for a in self.actors:
            with contextlib.suppress(Exception):
                self.ray.kill(a)


# --------------------------------------------------------------------------- driver loop


def _pending(bench: Benchmark, settings: Settings, interactions: list[Any], writer: RunWriter):
    """(interaction id, grid, times already written) of every interaction with pending points,
    longest grid first (ties by id, so the order is reproducible)."""
    out = []
    for it in interactions:
        grid = interaction_grid(bench, it, settings)
        done = [t for t in grid if (it.id, t) in writer.done]
        if len(done) < len(grid):
            out.append((it.id, grid, done))
    return sorted(out, key=lambda x: (-len(x[1]), x[0]))


def _add(summary: CollectSummary, res: WorkResult) -> None:
    for k in _COUNTS:
        setattr(summary, k, getattr(summary, k) + getattr(res, k))
    for r in res.records:
        if r.error:
            summary.failed_interactions.setdefault(r.interaction_id, r.error)


def _lost_records(iid: str, grid: list[float], done: list[float], why: str) -> WorkResult:
    """Error records for an interaction whose worker died on every attempt."""
    recs = [
        ResponseRecord(interaction_id=iid, t=t, silent=False, error=why)
        for t in grid
        if t not in set(done)
    ]
    return WorkResult(
        interaction_id=iid, records=recs, busy_s=0.0, written=len(recs), errors=len(recs)
    )


Task = tuple[str, list[float], list[float]]
"""(interaction id, its decision grid, times already written)."""


class _Driver:
    """Feeds the queue to the pool and writes each finished interaction through the writer.

    With ``group_points`` > 1 a worker gets several short interactions at once (up to that
    many pending decision points in all, at least one interaction) and batches their points
    together; otherwise one interaction at a time. An interaction in ``solo`` always goes
    alone (its points depend on the results of its earlier calls)."""

    def __init__(
        self,
        pool: _Pool,
        writer: RunWriter,
        info: DistributedInfo,
        bar: Any,
        group_points: int,
        *,
        solo: frozenset[str] = frozenset(),
    ):
        self.pool, self.writer, self.info, self.bar = pool, writer, info, bar
        self.group_points = group_points
        self.solo = solo
        self.summary = CollectSummary()
        self.inflight: dict[Any, tuple[int, list[Task]]] = {}

    def _group(self, queue: deque[Task]) -> list[Task]:
        group = [queue.popleft()]
        n = len(group[0][1]) - len(group[0][2])
        if group[0][0] in self.solo:
            return group
        while queue and n < self.group_points and queue[0][0] not in self.solo:
            group.append(queue.popleft())
            n += len(group[-1][1]) - len(group[-1][2])
        return group

    def run(self, tasks: list[Task]) -> None:
        ray = self.pool.ray
        queue = deque(tasks)
        while queue or self.inflight:
            busy = {slot for slot, _ in self.inflight.values()}
            for slot in range(len(self.pool.actors)):
                if slot not in busy and queue:
                    group = self._group(queue)
                    args = [(iid, done, self.writer.spoken(iid)) for iid, _, done in group]
                    ref = self.pool.actors[slot].collect_group.remote(args)
                    self.inflight[ref] = (slot, group)
            ready, _ = ray.wait(list(self.inflight), num_returns=1, timeout=1.0)
            for ref in ready:
                slot, group = self.inflight.pop(ref)
                for res in self._results(ref, slot, group, queue):
                    self._write(slot, res)

    def _results(self, ref: Any, slot: int, group: list[Task], queue: deque[Task]) -> list:
        """The worker's results. When the worker died, its interactions go back to the front
        of the queue, or get error records after ``max_attempts`` deaths.

        Raises:
            CollectError: the worker raised (not an adapter failure, which is recorded).
        """
        ray = self.pool.ray
        try:
            return ray.get(ref)
        except ray.exceptions.RayActorError as exc:
            why = str(exc).strip().splitlines()[0]
            ids = [iid for iid, _, _ in group]
            log.warning("worker %d died while collecting %s (%s); re-queued", slot, ids, why)
            self.pool.replace(slot)
            lost = []
            for task in reversed(group):
                iid, grid, done = task
                n = self.info.requeued[iid] = self.info.requeued.get(iid, 0) + 1
                if n >= self.pool.options.max_attempts:
                    lost.append(_lost_records(iid, grid, done, f"Ray worker died {n} times: {why}"))
                else:
                    queue.appendleft(task)
            return lost
        except ray.exceptions.RayTaskError as exc:
            ids = ", ".join(t[0] for t in group)
            raise CollectError(f"worker {slot} failed on {ids}: {exc.cause or exc}") from exc

    def _write(self, slot: int, res: WorkResult) -> None:
        for rec in res.records:
            self.writer.append(rec)
        sync = getattr(self.writer, "sync", None)  # a RunWriter: one fsync per interaction
        if sync is not None:
            sync()
        self.bar.update(len(res.records))
        _add(self.summary, res)
        st = self.pool.stats[slot]
        if res.pid is not None:  # the slot's current actor (a new one after a death)
            st.host, st.pid = res.host, res.pid
        st.interactions += 1
        st.decision_points += len(res.records)
        st.busy_s = round(st.busy_s + res.busy_s, 4)


# --------------------------------------------------------------------------- entry point


def _check_model(name: str, config: dict[str, Any], settings: Settings) -> None:
    """Refuse an unknown backend or Online Rolling on a backend without it, before Ray starts.

    Raises:
        CollectError: naming the model and backend.
    """
    try:
        cls = adapter_class(config["backend"])
        require_online_support(cls, name, config["backend"], settings)
    except AdapterError as exc:
        raise CollectError(str(exc)) from exc


def run_collect_ray(
    *, ray_options: RayOptions | None = None, **collect_args: Any
) -> CollectSummary:
    """``run_collect`` spread over Ray workers: the same keyword arguments (``only`` / ``tasks``
    excepted), the same run folder, the same records; ``ray_options`` default: two local
    workers. See :func:`collect_ray`.

    Raises:
        CollectError: what :func:`collect_ray` raises.
    """
    return run_collect(ray_options=ray_options or RayOptions(), **collect_args)


def collect_ray(job: CollectJob, opts: RayOptions) -> CollectSummary:
    """Collect ``job`` over ``opts.workers`` Ray actors (``run_collect(..., ray_options=)``).

    Each actor builds the adapter once; interactions go to the first free worker, longest
    decision grid first. The run folder is created only once every worker has built its
    adapter, and is locked while the driver writes it.

    Returns:
        This invocation's counts; ``run.json``'s last invocation gets a ``distributed`` entry
        (:class:`DistributedInfo`: start-up seconds, per-worker throughput, re-queues).

    Raises:
        CollectError: what ``run_collect`` raises, plus: Ray not installed (with the install
            command), the cluster unreachable or too small, a worker unable to build the model.
    """
    b, settings, interactions = job.bench, job.settings, job.interactions
    name, config = job.model.name, dict(job.model.config)
    _check_model(name, config, settings)
    manifest = job.manifest()
    t0 = time.perf_counter()
    with ray_instance(opts) as ray:
        check_resources(ray, opts)
        settings_json = settings.model_dump(mode="json")
        setup = (ray.put(b), name, config, settings_json, job.batch_size, opts.setup)
        pool = _Pool(ray, opts, setup)
        try:
            describe = pool.ready()
            info = DistributedInfo(
                ray_version=ray.__version__,
                address=opts.address,
                workers=opts.workers,
                gpus_per_worker=opts.gpus_per_worker,
                start_s=round(time.perf_counter() - t0, 3),
            )
            solo = _solo(settings, interactions)

            def fill(writer: RunWriter) -> CollectSummary:
                summary = _drive(job, writer, pool, info, solo)
                summary.wall_s = round(time.perf_counter() - t0, 3)
                writer.manifest.adapter = describe
                inv = writer.manifest.invocations[-1]
                inv.distributed = info.model_dump()  # type: ignore[attr-defined]
                return summary

            return write_run(job, manifest, t0, fill)
        finally:
            pool.close()


def _solo(settings: Settings, interactions: list[Any]) -> frozenset[str]:
    """Environment interactions whose requests show the calls executed so far
    (``environment.show_results`` in Offline Probing): the serial driver asks their points one
    at a time (``Adapter.respond``), each after the previous point's calls were executed, so a
    worker collects them alone, never side by side with a cross-interaction batch."""
    if settings.protocol != "offline" or not settings.environment.show_results:
        return frozenset()
    return frozenset(it.id for it in interactions if it.query.environment)


def _drive(
    job: CollectJob, writer: RunWriter, pool: _Pool, info: DistributedInfo, solo: frozenset[str]
) -> CollectSummary:
    """Collect every pending interaction through the pool (``solo``: interactions never
    grouped with others, see :func:`_solo`); the invocation's counts."""
    b, settings, interactions = job.bench, job.settings, job.interactions
    grids = {it.id: interaction_grid(b, it, settings) for it in interactions}
    total = sum(len(g) for g in grids.values())
    present = sum(1 for iid, g in grids.items() for t in g if (iid, t) in writer.done)
    tasks = _pending(b, settings, interactions, writer)
    bar = tqdm(
        total=total,
        initial=present,
        unit="pt",
        desc=f"collect ({pool.options.workers} Ray workers)",
        disable=not job.progress,
        dynamic_ncols=True,
    )
    plain = collection_strategy(settings) == "batched"
    driver = _Driver(pool, writer, info, bar, job.batch_size if plain else 1, solo=solo)
    try:
        driver.run(tasks)
    finally:
        bar.close()
    s = driver.summary
    s.interactions, s.decision_points, s.already_present = len(interactions), total, present
    s.model_s = round(s.model_s, 3)
    info.worker_stats = pool.stats
    return s

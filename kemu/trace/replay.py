"""A trace replayed on a fresh kemu cluster in virtual time (`python -m kemu.trace replay`).

The cluster (kemu.testing's `Cluster`, as kemu.chaos and kemu.skew start theirs) runs on the
virtual clock, started a minute of virtual time before the trace's first event so that the
cluster's timestamps are the trace's: every component starts while the clock holds, then the
clock moves to each event's instant (`advance_to`), the event's objects are applied one by
one, each followed by `advance_clock(0)` (the work due now is done before the next write:
ARCHITECTURE.md "Time"'s determinism rule), and after the last event the cluster runs `tail`
more seconds. With `speed` N the clock runs at rate N instead and each event is applied when
the cluster's time reaches it (as SimKube's driver does in real time: not repeatable).

Applying is kubectl apply's create-or-merge: a new object is created, an existing one gets
its manifest as a merge patch; a deleted one is deleted in the background. An object the
apiserver refuses (a priority class the trace does not have, ...) is listed in the report's
`refused` and the replay goes on.
"""

from __future__ import annotations

import logging
import math
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypedDict

import anyio
import anyio.to_thread

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery import convert, kinds
from kemu.machinery.delete_options import BACKGROUND
from kemu.machinery.errors import AlreadyExists, ApiError, NotFound
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.namespaces import new_namespace
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.cluster import Cluster, Component
from kemu.testing.cluster_time import START_SECONDS, ClusterClock, advance_to, cluster_now
from kemu.testing.eventually import eventually
from kemu.testing.processes import child_pids, memory_kib, url_ok
from kemu.timeline.model import Timeline
from kemu.trace import objects, report
from kemu.trace.cluster_config import ClusterConfig
from kemu.trace.model import Trace, gvk_of, ns_name
from kemu.trace.observe import Observed, follow
from kemu.trace.report import Refusal, Report

logger = logging.getLogger(__name__)

LEAD: Final = 60.0
"""Virtual seconds the cluster's clock starts before the trace's first event (start-up)."""
DEFAULT_TAIL: Final = 60.0


@dataclass(frozen=True)
class ReplayOptions:
    speed: float | None = None
    """None: as fast as the work allows (rate max); N: N times real time."""
    tail: float = DEFAULT_TAIL
    """Virtual seconds the cluster runs after the last event."""
    root: Path | None = None
    """Where the cluster's data and logs go (default: a temporary directory)."""
    progress: Callable[[str], None] = field(default=lambda _: None)


class ComponentVersion(TypedDict):
    """A component's version and gates, as Cluster's start_* methods take them."""

    emulated_version: str | None
    feature_gates: Mapping[str, bool] | None


@dataclass(frozen=True)
class ReplayResult:
    report: Report
    """The report (docs/traces.md lists its keys)."""
    timeline: Timeline
    """The run's picture (kemu.timeline), t=0 the trace's first event, the report's figures
    as its facts."""


def _rfc3339(seconds: float) -> str:
    return convert.format_time(convert.timestamp(seconds), "second")


class Replay:
    def __init__(
        self,
        trace: Trace,
        config: ClusterConfig,
        options: ReplayOptions,
        trace_info: report.TraceInfo,
    ) -> None:
        if not trace.events:
            raise ValueError("the trace has no events")
        self.trace = trace
        self.config = config
        self.options = options
        self.trace_info = trace_info
        self.unsupported = objects.Unsupported()
        self.refused: list[Refusal] = []
        self.applied: dict[str, tuple[kinds.Kind, str, str]] = {}
        """Every object applied, by report key, in the order first applied."""
        start = trace.start
        assert start is not None
        self.origin = math.floor(start)
        """The cluster's time of the trace's first event (the trace's own: the clock is
        started LEAD seconds before it)."""

    def run(self) -> ReplayResult:
        """Starts the cluster, replays, stops it; the report and the picture."""
        root = self.options.root or Path(tempfile.mkdtemp(prefix="kemu-replay-"))
        root.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with Cluster(
            root / "cluster", clock=ClockMode.VIRTUAL, latency=self.config.latency
        ) as cluster:
            cluster.start_etcd(unsafe_no_fsync=True)
            cluster.start_apiserver(
                extra_args=[
                    "--clock-start",
                    _rfc3339(self.origin - LEAD),
                    *self.config.args.get("apiserver", ()),
                ],
                **self._component("apiserver"),
            )
            self.options.progress(f"cluster in {root}")
            return anyio.run(self._run, cluster, started)

    def _component(self, name: str) -> ComponentVersion:
        return {
            "emulated_version": self.config.versions.get(name),
            "feature_gates": self.config.feature_gates.get(name),
        }

    # ------------------------------------------------------------ start-up

    def _start_components(self, cluster: Cluster) -> None:
        """Every component, started while the clock holds (one phase for all their timers)."""
        config = self.config
        seed = ["--seed", str(config.seed)]
        scheduler_config = None
        if config.scheduler_config is not None:
            scheduler_config = cluster.root / "scheduler.yaml"
            scheduler_config.write_text(config.scheduler_config)
        cluster.start_scheduler(
            config=scheduler_config,
            extra_args=[*seed, *config.args.get("scheduler", ())],
            wait=False,
            **self._component("scheduler"),
        )
        cluster.start_controllermanager(
            extra_args=list(config.args.get("controllermanager", ())),
            wait=False,
            **self._component("controllermanager"),
        )
        for pool in config.nodes:
            args = [
                "--server", cluster.server,
                "--nodes", str(pool.count),
                "--node-name-prefix", pool.name,
                "--capacity", ",".join(f"{k}={v}" for k, v in pool.capacity.items()),
                "--root-dir", str(cluster.root / f"kubelet-{pool.name}"),
            ]  # fmt: skip
            if pool.labels:
                args += ["--node-labels", ",".join(f"{k}={v}" for k, v in pool.labels.items())]
            if pool.taints:
                args += ["--register-with-taints", ",".join(pool.taints)]
            args += pool.kubelet_args
            cluster.start_component(
                "kubelet", f"kubelet-{pool.name}", args, wait=False, **self._component("kubelet")
            )
        if config.node_groups is not None:
            # Each node group's instances are the nodes of one hollow kubelet, as the static
            # pools are: a process per instance costs more than its node's work at scale.
            cloud = cluster.start_cloud(
                config.node_groups,
                emulated_version=config.versions.get("cloud"),
                extra_args=["--kubelet-processes", "node-group"],
                wait=False,
            )
            if self.config.latency.none:  # (with latency, its readiness needs the clock)
                cluster.wait_ready("cloud")
            cluster.start_autoscaler(
                cloud,
                scan_interval="10s",
                extra_args=[*seed, *config.autoscaler_flags],
                wait=False,
                **self._component("autoscaler"),
            )

    @staticmethod
    def _wait_components(cluster: Cluster) -> None:
        for name in cluster.processes:
            cluster.wait_ready(name)

    async def _start_up(self, client: Client, cluster: Cluster) -> None:
        """Every component started while the clock holds, and ready, the work due then done.
        Their first lists wait for their rate limiters' tokens once past the burst: the clock
        gives them START_SECONDS. With latency on the API path a component is ready only once
        its calls at start have waited their latency on the cluster's clock too: the clock is
        then moved a second at a time (each move ends quiescent, so when readiness is seen is
        the same run after run) until every one is, within LEAD."""
        await anyio.to_thread.run_sync(self._start_components, cluster)
        await client.advance_clock(START_SECONDS)
        if self.config.latency.none:
            await anyio.to_thread.run_sync(self._wait_components, cluster)
            await client.advance_clock(0)
            return
        for _ in range(int(LEAD / 2)):
            waiting = await anyio.to_thread.run_sync(_not_ready, cluster)
            if not waiting:
                return
            await client.advance_clock(1)
        raise RuntimeError(
            f"with latency {self.config.latency.describe()}, not ready after {LEAD / 2:g} "
            f"virtual seconds: {', '.join(waiting)}"
        )

    async def _wait_nodes(self, client: Client) -> None:
        expected = self.config.node_count()

        async def ready() -> bool:
            nodes = (await client.list(types_pb2.Node)).items
            up = [
                n
                for n in nodes
                if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)
            ]
            assert len(up) >= expected, f"{len(up)} of {expected} nodes Ready"
            return True

        await eventually(ready, timeout=60)

    # ------------------------------------------------------------ the replay

    async def _run(self, cluster: Cluster, started: float) -> ReplayResult:
        async with (
            Client(cluster.server, timeout=30.0) as client,
            Client(cluster.server, timeout=30.0) as watcher,
        ):
            await client.wait_ready(timeout=60)
            await client.set_clock_rate(0)
            await self._start_up(client, cluster)
            await self._wait_nodes(client)
            for namespace in self.trace.namespaces():
                try:
                    await client.create(new_namespace(namespace))
                except AlreadyExists:
                    pass
            clock = ClusterClock(await watcher.clock_status())
            timeline = Timeline(f"replay of {self.trace_info['file']}")
            # t=0 and the picture's start: the trace's first event (the cluster's nodes came
            # up in the minute before it)
            timeline.begin(clock.now, at=self.origin)
            timeline.notes.append(
                "on the cluster's virtual clock; t=0 is the trace's first event, "
                f"{_rfc3339(self.origin)}"
            )
            observed = Observed(timeline=timeline)
            now = clock.now
            async with anyio.create_task_group() as tg:
                await tg.start(clock.follow, watcher)
                await tg.start(follow, watcher, types_pb2.Node, observed.node, now)
                await tg.start(follow, watcher, types_pb2.ReplicaSet, observed.replica_set, now)
                await tg.start(follow, watcher, types_pb2.Event, observed.event, now)
                await tg.start(follow, watcher, types_pb2.Pod, observed.pod, now)
                startup = time.monotonic() - started
                self.options.progress(
                    f"cluster up in {startup:.1f} s; replaying {len(self.trace.events)} events "
                    f"over {self.trace.span:.0f} s of trace time"
                )
                first = time.monotonic()
                await self._replay(client)
                end = await cluster_now(client)
                wall = time.monotonic() - first
                states = await self._end_states(client)
                await self._catch_up(client, observed)
                memory = {
                    name: m
                    for name, proc in cluster.processes.items()
                    if proc.pid is not None and (m := memory_kib(proc.pid)) is not None
                }
                cloud = cluster.processes.get("cloud")
                if cloud is not None and cloud.pid is not None:
                    # the cloud's node-group kubelets, children of its process
                    for i, pid in enumerate(child_pids(cloud.pid)):
                        if (m := memory_kib(pid)) is not None:
                            memory[f"kubelet-cloud-{i}"] = m
                tg.cancel_scope.cancel()
        timeline.finish(end)
        built = report.build(
            observed,
            origin=self.origin,
            end=end,
            span=self.trace.span,
            wall=wall,
            startup=startup,
            objects=states,
            unsupported=self.unsupported.as_dict(),
            refused=self.refused,
            trace_info=self.trace_info,
            cluster_info=self._cluster_info(),
            processes=memory,
        )
        timeline.facts = report.figures(built)
        return ReplayResult(built, timeline)

    async def _replay(self, client: Client) -> None:
        speed = self.options.speed
        start = self.trace.start
        assert start is not None
        if speed is not None:
            await advance_to(client, self.origin)
            await client.set_clock_rate(speed)
        for event in self.trace.events:
            target = self.origin + (event.ts - start)
            await self._reach(client, target)
            for obj in event.applied:
                await self._apply(client, obj)
                if speed is None:
                    await client.advance_clock(0)
            for obj in event.deleted:
                await self._delete(client, obj)
                if speed is None:
                    await client.advance_clock(0)
        end = self.origin + self.trace.span + self.options.tail
        await self._reach(client, end)
        if speed is not None:
            await client.set_clock_rate(0)

    async def _reach(self, client: Client, target: float) -> None:
        """Until the cluster's time is `target`: moved there (rate max), or waited for."""
        speed = self.options.speed
        if speed is None:
            await advance_to(client, target)
            return
        while True:  # the clock is the cluster's, polled: no event says it got there
            now = await cluster_now(client)
            if now >= target:
                return
            await anyio.sleep(min(1.0, (target - now) / speed))

    async def _apply(self, client: Client, obj: JSONObject) -> None:
        gvk = gvk_of(obj)
        try:
            prepared = objects.prepare(obj, run_duration=objects.run_duration(self.trace, obj))
        except ApiError as e:
            self.refused.append({"object": f"{gvk} {ns_name(obj)}", "message": str(e)})
            return
        if prepared is None:
            self.unsupported.kinds[gvk] += 1
            return
        for path in prepared.dropped:
            self.unsupported.fields[f"{prepared.kind.kind}: {path}"] += 1
        kind, ns, name = prepared.kind, prepared.namespace, prepared.name
        key = objects.key_of(kind, ns, name)
        try:
            try:
                await client.create(prepared.obj)
            except AlreadyExists:
                patch = convert.to_dict(prepared.obj)
                for drop in ("apiVersion", "kind", "status"):
                    patch.pop(drop, None)
                await client.patch(kind.message, name, patch, ns)
        except ApiError as e:
            self.refused.append({"object": key, "message": str(e)})
            return
        self.applied.setdefault(key, (kind, ns, name))

    async def _delete(self, client: Client, obj: JSONObject) -> None:
        kind = objects.kind_for(gvk_of(obj))
        if kind is None:
            self.unsupported.kinds[gvk_of(obj)] += 1
            return
        ns, _, name = ns_name(obj).rpartition("/")
        try:
            await client.delete(kind.message, name, ns, propagation_policy=BACKGROUND)
        except NotFound:
            pass
        except ApiError as e:
            self.refused.append(
                {"object": objects.key_of(kind, ns, name), "message": f"delete: {e}"}
            )

    async def _end_states(self, client: Client) -> list[report.ObjectState]:
        states = []
        for kind, ns, name in self.applied.values():
            if kind.kind in ("Namespace", "Node", "PriorityClass"):
                continue
            desired: int | None
            try:
                obj: Any = await client.get(kind.message, name, ns)
            except NotFound:
                desired = None
            else:
                if kind.kind in ("Deployment", "ReplicaSet"):
                    desired = obj.spec.replicas if obj.spec.HasField("replicas") else 1
                elif kind.kind == "Job":
                    desired = obj.spec.parallelism if obj.spec.HasField("parallelism") else 1
                elif kind.kind == "DaemonSet":
                    desired = obj.status.desired_number_scheduled
                elif kind.kind == "Pod":
                    desired = 1
                else:
                    continue
            states.append(report.ObjectState(kind.kind, ns, name, desired))
        return states

    async def _catch_up(self, client: Client, observed: Observed) -> None:
        """Waits until the pod watch has seen what a list now returns (the report's end
        state is the cluster's)."""
        listed = await client.list_all(types_pb2.Pod)

        async def seen() -> bool:
            for pod in listed.items:
                rec = observed.pods.get(pod.metadata.uid)
                assert rec is not None, f"pod {pod.metadata.name} not seen yet"
                assert rec.phase == pod.status.phase, f"pod {pod.metadata.name} behind"
            return True

        await eventually(seen, timeout=30)

    def _cluster_info(self) -> JSONObject:
        c = self.config
        return {
            "nodes": [
                {"pool": p.name, "count": p.count, "capacity": {**p.capacity}} for p in c.nodes
            ],
            "autoscaler": c.autoscaling,
            "scheduler_config": c.scheduler_config is not None,
            "versions": dict(c.versions),
            "feature_gates": {k: dict(v) for k, v in c.feature_gates.items()},
            "seed": c.seed,
        }


def _not_ready(cluster: Cluster) -> list[str]:
    """The components of `cluster` whose /readyz fails now (or does not answer yet)."""

    def ready(proc: Component) -> bool:
        try:
            return url_ok(proc.readyz_url)
        except OSError:
            return False

    return [
        name
        for name, proc in cluster.processes.items()
        if isinstance(proc, Component) and not ready(proc)
    ]

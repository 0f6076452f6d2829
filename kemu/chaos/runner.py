"""A chaos run on real processes: a cluster (three etcd members, two apiservers given all
three, two schedulers with leader election and SlowPreBind, a controller-manager, kubelets,
and with a scaling phase the cloud and the cluster autoscaler; every component and every
client of the run is given both apiservers; every process dials the others through the
cluster's fault proxy, the run's clients dial directly), a workload, the faults of the
seed's schedule (faults.py, netfaults.py), and the checks afterwards.

Faults run one after another in a worker thread (Cluster is synchronous); the workload and
the recorders run in the event loop.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Final

import anyio
import anyio.to_thread

from kemu.api.v1 import types_pb2
from kemu.chaos import autoscaling, caches, checks, leaders
from kemu.chaos.faults import APISERVERS, LEASE_DURATION, SCHEDULERS, Injector, RunState
from kemu.chaos.profiles import Profile
from kemu.chaos.recorder import LEASE_NAMESPACE, LeaseRecorder, TimedPodHistory
from kemu.chaos.report import Report
from kemu.chaos.schedule import AUTOSCALING_ROLES, make_schedule
from kemu.chaos.workload import Workload
from kemu.client.client import Client
from kemu.client.cloudprovider import CloudProviderClient
from kemu.machinery.errors import AlreadyExists, ApiError
from kemu.machinery.resources import amount
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.builders import make_pod, make_priority_class
from kemu.testing.cluster import Cluster
from kemu.testing.etcd import CRASH_CONSISTENT
from kemu.testing.eventually import eventually
from kemu.testing.faultproxy import FaultProxy
from kemu.testing.invariants import check_invariants, record_leases, record_nodes, record_pods
from kemu.testing.scenarios import SHUTDOWN_ANNOTATION, priority_class_name
from kemu.timeline.model import MarkerKind, Timeline
from kemu.timeline.record import record_timeline

logger = logging.getLogger(__name__)

NAMESPACE: Final = "chaos"
NODE_LABEL: Final = "chaos.kemu.io/node"
PREBIND_DELAY: Final = "scheduling.kemu.io/prebind-delay"
ETCD_MEMBERS: Final = 3
__all__ = ["LEASE_DURATION", "ChaosRun"]
ELECTION: Final = [
    "--leader-elect",
    "--leader-elect-lease-duration", f"{LEASE_DURATION:g}s",
    "--leader-elect-renew-deadline", "2s",
    "--leader-elect-retry-period", "500ms",
]  # fmt: skip
# The bindings are judged from the schedulers' "bound ns/name to node" lines (leaders.py),
# logged at -v=2 as upstream's "Successfully bound pod to node".
SCHEDULER_VERBOSITY: Final = ["-v", "2"]
# Short enough that a partitioned kubelet's node goes Unknown within a fault (upstream's
# defaults: 5s, 50s and 10s), long enough that a kubelet restarted by a kill keeps it Ready.
NODE_MONITOR: Final = ["--node-monitor-period", "500ms", "--node-monitor-grace-period", "5s"]
NODE_LEASE: Final = ["--node-lease-renew-interval", "1s"]
SCHEDULER_CONFIG: Final = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: SlowPreBind
"""


class ChaosRun:
    def __init__(
        self,
        root: Path,
        profile: Profile,
        seed: int,
        workload: Workload | None = None,
        progress: Callable[[str], None] | None = None,
        election: leaders.Election = leaders.Election.UPSTREAM,
        clock: ClockMode = ClockMode.REAL,
        timeline: bool = False,
    ) -> None:
        """`clock`: the cluster's clock mode (virtual: at rate 1; the fault schedule and the
        workload's pace are wall time either way). `timeline`: record the run's timeline
        (every pod and node, the autoscaler's Events, the faults) into `self.timeline`, for
        its picture (kemu.timeline.render)."""
        self.root = root
        self.record_timeline = timeline
        self.timeline: Timeline | None = None
        self.election = election
        self.clock = clock
        self.profile = profile
        self.seed = seed
        self.workload = workload or profile.workload
        self.progress = progress or (lambda _: None)
        self.rng = random.Random(seed)
        self.state = RunState()
        self.nodes = [f"chaos-n{i}" for i in range(self.workload.nodes.count)]
        # (a workload of the user's: faults while it creates pods)
        duration = profile.fault_window if self.workload is profile.workload else None
        if duration is None:
            duration = self.workload.pods.total / self.workload.pods.rate
        self.duration = duration
        self.scaling = self.workload.scaling if self.workload.scaling.waves > 0 else None
        mix = profile.mix if self.scaling else profile.mix.without(AUTOSCALING_ROLES)
        self.schedule = make_schedule(seed, duration, mix)

    # ------------------------------------------------------------ cluster

    def _start(self, cluster: Cluster) -> None:
        # Three etcd members under two apiservers; every client is given both apiservers. The
        # members are SIGKILLed under writes: CRASH_CONSISTENT keeps etcd 3.5.1 consistent then.
        cluster.start_etcd(members=ETCD_MEMBERS, extra_args=CRASH_CONSISTENT)
        # Started together and then waited for: each waits for what it depends on.
        for name in APISERVERS:
            cluster.start_apiserver(name=name, wait=False)
        cluster.component_server = cluster.servers
        config = self.root / "scheduler.yaml"
        config.write_text(SCHEDULER_CONFIG)
        for name in SCHEDULERS:
            cluster.start_scheduler(
                name=name,
                config=config,
                extra_args=ELECTION + self.election.args + SCHEDULER_VERBOSITY,
                wait=False,
            )
        cluster.start_controllermanager(extra_args=NODE_MONITOR, wait=False)
        n = self.workload.nodes
        for node in self.nodes:
            cluster.start_kubelet(
                node,
                capacity={"cpu": n.cpu, "memory": n.memory, "pods": n.pods},
                extra_args=["--node-labels", f"{NODE_LABEL}=true", *NODE_LEASE],
                wait=False,
            )
        if self.scaling is not None:
            autoscaling.start(cluster, self.scaling)
        for name in cluster.processes:
            cluster.wait_ready(name)

    def run(self) -> Report:
        self.root.mkdir(parents=True, exist_ok=True)
        with Cluster(self.root / "cluster", proxy=FaultProxy(), clock=self.clock) as cluster:
            self._start(cluster)
            report = anyio.run(self._run, cluster)
            for proc in cluster.processes.values():
                proc.resume()
        return report

    async def _run(self, cluster: Cluster) -> Report:
        servers = cluster.servers
        async with (
            Client(servers, timeout=10.0) as client,
            Client(servers, timeout=10.0) as watch_a,
            Client(servers, timeout=10.0) as watch_b,
            Client(servers, timeout=10.0) as watch_scale,
        ):
            await self._prepare(client)
            phase = None
            if self.scaling is not None:
                cloud = CloudProviderClient(autoscaling.cloud_address(cluster), timeout=5.0)
                phase = autoscaling.ScalingPhase(self.scaling, client, cloud)
                await phase.prepare()
            try:
                return await self._record_and_break(
                    cluster, client, watch_a, watch_b, watch_scale, phase
                )
            finally:
                if phase is not None:
                    await phase.cloud.close()

    async def _record_and_break(
        self,
        cluster: Cluster,
        client: Client,
        watch_a: Client,
        watch_b: Client,
        watch_scale: Client,
        phase: autoscaling.ScalingPhase | None,
    ) -> Report:
        lease = LeaseRecorder()
        a, b = TimedPodHistory(NAMESPACE), TimedPodHistory(NAMESPACE)
        scale_record = phase.record if phase is not None else None
        async with (
            self._recording_timeline(cluster) as timeline,
            record_pods(watch_a, NAMESPACE, history=a),
            record_pods(watch_b, NAMESPACE, history=b),
            record_nodes(watch_scale, f"{autoscaling.GROUP_LABEL}={autoscaling.GROUP}") as nodes,
            record_pods(watch_scale, autoscaling.NAMESPACE) as scale_pods,
            record_leases(client, LEASE_NAMESPACE, history=lease),
            anyio.create_task_group() as tg,
        ):
            if scale_record is not None:
                scale_record.nodes, scale_record.pods = nodes, scale_pods
            a.listed, b.listed = len(a.versions), len(b.versions)
            if phase is not None:
                tg.start_soon(phase.sample)
            self.state.t0 = time.monotonic()
            if timeline is not None:
                timeline.origin = timeline.since_monotonic(self.state.t0)
            self.progress(f"seed {self.seed}: {len(self.schedule)} faults scheduled")
            injector = Injector(
                cluster, self.state, self.nodes, lease, phase, self.progress, client
            )
            faults_over = anyio.Event()
            async with anyio.create_task_group() as work:
                work.start_soon(self._workload, client, a)
                if phase is not None:
                    work.start_soon(phase.cycle, faults_over)
                await anyio.to_thread.run_sync(injector.run, self.schedule)
                faults_over.set()
            last_fault = time.monotonic()
            self.state.note("last fault over; settling")
            self.progress("last fault over; settling")
            settle = await self._settle(client, a, last_fault)
            scale_violations: list[str] = []
            if phase is not None:
                self.progress(f"pods settled ({settle}); the node group settling")
                scale_violations = await phase.settle(self.profile.settle_timeout)
                for name, history in (("node group", nodes), ("scaling pods", scale_pods)):
                    self.progress(f"{name} history catching up")
                    try:
                        await history.sync(client)
                    except AssertionError as e:
                        scale_violations.append(f"{name} history: {e}")
                scale_violations += phase.check()
            self.progress("checking")
            report = await self._check(client, cluster, a, b, lease, settle)
            report.violations += scale_violations + self.state.failed_restarts
            report.faults_by_kind = dict(sorted(self.state.by_kind.items()))
            if phase is not None:
                report.scaling = phase.figures()
            tg.cancel_scope.cancel()
        if timeline is not None:
            for w in self.state.fault_windows:
                timeline.mark(
                    MarkerKind.FAULT,
                    w.what,
                    at=timeline.since_monotonic(w.start),
                    until=timeline.since_monotonic(w.end),
                )
        return report

    @contextlib.asynccontextmanager
    async def _recording_timeline(self, cluster: Cluster) -> AsyncIterator[Timeline | None]:
        """With --html, the run's timeline recorded through a client of its own (its watches
        do not slow the checked ones); else nothing."""
        if not self.record_timeline:
            yield None
            return
        self.timeline = Timeline(
            f"--profile {self.profile.name} --seed {self.seed}"
            + (" --fencing" if self.election is leaders.Election.FENCED else "")
            + (f" --clock {self.clock.value}" if self.clock is not ClockMode.REAL else "")
        )
        w = self.workload
        self.timeline.notes.append(
            f"{w.nodes.count} nodes of {w.nodes.cpu} CPU; {w.pods.total} pods at "
            f"{w.pods.rate:g}/s, priorities {', '.join(map(str, w.pods.priorities))}; "
            f"{len(self.schedule)} faults scheduled"
            + (f"; {w.scaling.waves} scaling waves" if self.scaling is not None else "")
        )
        async with (
            Client(cluster.servers, timeout=10.0) as client,
            record_timeline(client, self.timeline) as timeline,
        ):
            yield timeline

    async def _prepare(self, client: Client) -> None:
        await client.wait_ready(timeout=30)
        try:
            await client.create(types_pb2.Namespace(metadata=types_pb2.ObjectMeta(name=NAMESPACE)))
        except AlreadyExists:
            pass
        for value in sorted(set(self.workload.pods.priorities)):
            for never in (False, True):
                pc = make_priority_class(priority_class_name(value, never=never), value)
                obj = pc.obj()
                if never:
                    obj.preemption_policy = "Never"
                try:
                    await client.create(obj)
                except AlreadyExists:
                    pass

        async def nodes_ready() -> bool:
            listed = await client.list(types_pb2.Node, label_selector=f"{NODE_LABEL}=true")
            ready = [
                n
                for n in listed.items
                if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)
            ]
            assert len(ready) == len(self.nodes), f"{len(ready)} of {len(self.nodes)} ready"
            return True

        await eventually(nodes_ready, timeout=60)

    # ------------------------------------------------------------ workload (event loop)

    async def _workload(self, client: Client, history: TimedPodHistory) -> None:
        p = self.workload.pods
        rng = random.Random(self.seed ^ 0x5EED)
        async with anyio.create_task_group() as tg:
            for i in range(p.total):
                await anyio.sleep_until(self.state.t0 + i / p.rate)
                pod = self._pod(f"p{i:05d}", rng)
                tg.start_soon(self._churn, client, history, pod, rng.random(), rng.random())

    def _pod(self, name: str, rng: random.Random) -> types_pb2.Pod:
        p = self.workload.pods
        never = rng.random() < p.neverFraction
        b = (
            make_pod(name)
            .namespace(NAMESPACE)
            .req(cpu=p.cpu, memory=p.memory)
            .node_selector({NODE_LABEL: "true"})
            .priority_class(priority_class_name(rng.choice(p.priorities), never=never))
            .annotation(SHUTDOWN_ANNOTATION, p.shutdown)
        )
        if rng.random() < p.slowPreBind.fraction:
            b = b.annotation(PREBIND_DELAY, p.slowPreBind.delay)
        return b.obj()

    async def _churn(
        self,
        client: Client,
        history: TimedPodHistory,
        pod: types_pb2.Pod,
        delete_draw: float,
        resize_draw: float,
    ) -> None:
        p = self.workload.pods
        key = f"{NAMESPACE}/{pod.metadata.name}"
        try:
            created = await client.create(pod)
        except ApiError as e:
            self.state.failed_writes += 1
            logger.info("create %s failed: %s", key, e)
            return
        self._ack(created, f"create {key}")
        born = anyio.current_time()
        if resize_draw < p.resizeFraction:
            await anyio.sleep(3.0)
            await self._resize(client, created)
        lifetime = p.lifetime_seconds()
        if delete_draw < p.deleteFraction:
            await anyio.sleep(2.0)
        elif lifetime is not None:
            await anyio.sleep_until(born + lifetime)
        else:
            return
        self.state.deleted_by_workload.add(key)
        try:
            deleted = await client.delete(
                types_pb2.Pod, pod.metadata.name, NAMESPACE, uid=created.metadata.uid
            )
        except ApiError as e:
            self.state.failed_writes += 1
            logger.info("delete %s failed: %s", key, e)
            return
        if deleted.metadata.HasField("deletion_timestamp"):
            self._ack(deleted, f"delete {key}")
            if deleted.spec.node_name:
                self.state.terminating_nodes[deleted.spec.node_name] = time.monotonic()

    async def _resize(self, client: Client, created: types_pb2.Pod) -> None:
        key = f"{NAMESPACE}/{created.metadata.name}"
        try:
            pod = await client.get(types_pb2.Pod, created.metadata.name, NAMESPACE)
            if pod.status.phase != "Running" or pod.metadata.uid != created.metadata.uid:
                return
            c = pod.spec.containers[0]
            cpu = amount("cpu", c.resources.requests["cpu"])
            c.resources.requests["cpu"] = f"{max(cpu // 2, 1)}m"
            if "cpu" in c.resources.limits:
                del c.resources.limits["cpu"]
            resized = await client.resize(pod)
        except ApiError as e:
            self.state.failed_writes += 1
            logger.info("resize %s failed: %s", key, e)
            return
        self._ack(resized, f"resize {key}")
        if resized.spec.node_name:
            self.state.terminating_nodes[resized.spec.node_name] = time.monotonic()

    def _ack(self, obj: types_pb2.Pod, what: str) -> None:
        self.state.acks.append(checks.Ack(obj.metadata.uid, obj.metadata.resource_version, what))

    # ------------------------------------------------------------ after the faults

    async def _settle(self, client: Client, history: TimedPodHistory, since: float) -> float | None:
        """Seconds until no pod that fits a node is left pending; None past the timeout."""
        allocatable = await self._allocatable(client)

        def settled() -> bool:
            pending = checks.pending_that_fit(history.versions, allocatable)
            assert not pending, f"{len(pending)} pods fit but are not bound: {pending[:5]}"
            terminating = checks.still_terminating(history.versions)
            assert not terminating, f"{len(terminating)} pods still terminating"
            return True

        try:
            await eventually(settled, timeout=self.profile.settle_timeout, interval=0.5)
        except AssertionError:
            return None
        return time.monotonic() - since

    async def _allocatable(self, client: Client) -> dict[str, dict[str, str]]:
        listed = await client.list(types_pb2.Node, label_selector=f"{NODE_LABEL}=true")
        return {n.metadata.name: dict(n.status.allocatable) for n in listed.items}

    async def _check(
        self,
        client: Client,
        cluster: Cluster,
        a: TimedPodHistory,
        b: TimedPodHistory,
        lease: LeaseRecorder,
        settle: float | None,
    ) -> Report:
        violations: list[str] = []
        events = await client.list_all(types_pb2.Event, NAMESPACE)
        for name, h in (("watcher A", a), ("watcher B", b)):
            try:
                await h.sync(client, timeout=30)
            except AssertionError as e:
                violations.append(f"{name}: {e}")
        violations += await caches.check(cluster)
        allocatable = await self._allocatable(client)
        violations += checks.check_bound_once(a.versions)
        violations += checks.check_watch_order(a.versions, a.listed)
        violations += checks.check_watch_order(b.versions, b.listed)
        violations += checks.check_watchers_agree(
            "watcher A",
            a.versions,
            "watcher B",
            b.versions,
            watches={"watcher A": a.watches, "watcher B": b.watches},
            t0=self.state.t0,
        )
        violations += checks.check_acknowledged(self.state.acks, a.versions, "watcher A")
        violations += checks.check_acknowledged(self.state.acks, b.versions, "watcher B")
        try:
            await lease.sync(client, timeout=30)
        except AssertionError as e:
            violations.append(f"lease history: {e}")
        logged = self._logged_bindings(cluster)
        unconfirmed = checks.unconfirmed_bindings(a.versions, logged)
        if unconfirmed and not logged:
            # The exemption below rests on the schedulers' "bound" lines: without any, every
            # binding would be exempt.
            violations.append("the schedulers' logs name no binding (has the log line changed?)")
        stale = self._stale_bindings(cluster, a, lease)
        stale_uids = {w.uid for w, _ in stale}
        apiserver_logs = {n: cluster.processes[n].logs() for n in APISERVERS}
        stale_writes = leaders.all_stale(
            stale, leaders.apiserver_lines(apiserver_logs, leaders.STALE_WRITE)
        )
        if self.election is leaders.Election.FENCED:
            violations += [f"stale leader write despite fencing: {w}" for w in stale_writes]
        violations += checks.check_no_late_changes(apiserver_logs)
        # A stale leader bound with a view the real leader did not share, and the real leader
        # may not have seen that binding yet when it bound next: both as for an unconfirmed
        # binding (the kubelet's view still counts every pod).
        violations += checks.check_node_capacity(
            a.versions, allocatable, unconfirmed | stale_uids, a.bound_at, stale=stale_uids
        )
        violations += check_invariants(
            a.versions,
            events.items,
            clearing_gate_on=True,
            externally_deleted=self.state.deleted_by_workload,
        )
        if settle is None:
            pending = checks.pending_that_fit(a.versions, allocatable)
            if pending:
                violations.append(
                    f"{len(pending)} pods that fit were still not bound "
                    f"{self.profile.settle_timeout:g}s after the last fault: {pending[:10]}"
                )
            terminating = checks.still_terminating(a.versions)
            if terminating:
                violations.append(
                    f"{len(terminating)} pods were still terminating "
                    f"{self.profile.settle_timeout:g}s after the last fault: {terminating[:10]}"
                )
        expected, bound = checks.pods_expected_and_bound(a.versions, allocatable)
        recoveries = checks.recovery_times(self.state.restarts, list(a.bound_at.values()))
        failovers = []
        for t, holder in self.state.leader_faults:
            changed = lease.first_change_after(t, holder)
            if changed is not None:
                failovers.append(changed - t)
        return Report(
            seed=self.seed,
            profile=self.profile.name,
            faults=self.state.injected,
            timeline=self.state.timeline,
            violations=violations,
            pods_created=len(a.versions),
            pods_expected=expected,
            pods_bound=bound,
            pods_ever_bound=sum(
                1 for vs in a.versions.values() if any(v.pod.spec.node_name for v in vs)
            ),
            failed_writes=self.state.failed_writes,
            acknowledged_writes=len(self.state.acks),
            recorded_versions=sum(len(v) for v in a.versions.values()),
            recovery_s=recoveries,
            failover_s=failovers,
            settle_s=settle,
            settle_timeout=self.profile.settle_timeout,
            stale_leader_writes=stale_writes,
            fenced_writes=len(leaders.apiserver_lines(apiserver_logs, leaders.FENCED)),
            fencing=self.election is leaders.Election.FENCED,
            clock=self.clock.value,
        )

    def _logged_bindings(self, cluster: Cluster) -> set[tuple[str, str]]:
        """Every binding (namespace/name, node) a scheduler logged as done, over all its
        lives (a restarted process appends to its log)."""
        out = set()
        for name in SCHEDULERS:
            if name in cluster.processes:
                for m in leaders.BOUND.finditer(cluster.processes[name].logs()):
                    out.add((f"{m.group(1)}/{m.group(2)}", m.group(3)))
        return out

    def _stale_bindings(
        self, cluster: Cluster, history: TimedPodHistory, lease: LeaseRecorder
    ) -> list[tuple[leaders.LeaderWrite, str]]:
        """The bindings a scheduler made while the lease was another's (leaders.py)."""
        writes = [
            w
            for name in SCHEDULERS
            if name in cluster.processes
            for w in leaders.bindings(name, cluster.processes[name].logs(), history.versions)
        ]
        return leaders.stale(writes, lease.holder_at)

"""What the autoscaler's integration modules (test_autoscaler.py, test_autoscaler_scale_down.py,
test_autoscaler_chaos.py, test_cloud.py) share: the cluster under the cloud and the
autoscaler, the autoscaler at one emulated version at a time, the API and cloud clients, and
the readings of its metrics and events. Each module keeps its own cloud config and its own
module-scoped fixtures (a few lines over these helpers)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.cloudprovider import CloudProviderClient
from kemu.machinery.duration import parse_duration
from kemu.machinery.pod_conditions import get_pod_condition
from kemu.machinery.virtual_time import ClockMode
from kemu.testing import Cluster, eventually
from kemu.testing.ports import LOOPBACK

GROUP = "pool-a"
GROUP_LABEL = "kemu.io/node-group"
SHUTDOWN_ANNOTATION = "kubelet.kemu.io/shutdown-duration"
LOOPS = "cluster_autoscaler_function_duration_seconds_count"
VERSIONS = ("1.36", "1.37")
"""The autoscaler's emulated versions: before and after kubernetes/autoscaler#9607."""


@contextmanager
def cloud_cluster(
    root: Path,
    config: str,
    *,
    provision_delay: str = "0s",
    controllermanager_args: Sequence[str] = (),
    cloud_args: Sequence[str] = (),
    clock: ClockMode = ClockMode.REAL,
    feature_gates: Mapping[str, bool] | None = None,
    runtime_config: Mapping[str, str] | None = None,
) -> Iterator[Cluster]:
    """etcd, the apiserver, the scheduler, the controller-manager and the cloud (`config`),
    stopped at the end, every process on `clock` (`feature_gates`: the apiserver's, the
    scheduler's and the controller-manager's; `runtime_config`: the apiserver's); the caller starts the autoscaler (or
    `Autoscalers` does)."""
    with Cluster(root, clock=clock) as c:
        c.start_etcd()
        c.start_apiserver(feature_gates=feature_gates, runtime_config=runtime_config)
        c.start_scheduler(feature_gates=feature_gates)
        c.start_controllermanager(
            extra_args=list(controllermanager_args), feature_gates=feature_gates
        )
        c.start_cloud(config, provision_delay=provision_delay, extra_args=list(cloud_args))
        yield c


UPSTREAM_SCAN_INTERVAL = 10.0
"""cluster-autoscaler's --scan-interval default."""
UPSTREAM_QPS, UPSTREAM_BURST = 5.0, 10
"""Its --kube-client-qps and --kube-client-burst defaults."""


def scaled_client_args(scan_interval: str) -> list[str]:
    """--kube-client-qps and --kube-client-burst, upstream's defaults scaled as the test's
    scan interval shortens upstream's: the status ConfigMap's get and update of every loop
    alone used up 5 qps at a loop each 0.5 s, and at rate max every token waited for was a
    jump of the clock (test_autoscaler_scale_down.py: 760 of its 1,900)."""
    factor = max(1.0, UPSTREAM_SCAN_INTERVAL / parse_duration(scan_interval))
    return [
        "--kube-client-qps", f"{UPSTREAM_QPS * factor:g}",
        "--kube-client-burst", f"{round(UPSTREAM_BURST * factor)}",
    ]  # fmt: skip


class Autoscalers:
    """The autoscaler of a module's cluster, at one emulated version at a time: `use(version)`
    stops the one running at another version and starts one at `version` (same flags: the
    client's limits scaled as the scan interval is, `scaled_client_args`)."""

    def __init__(
        self, cluster: Cluster, *, scan_interval: str = "1s", extra_args: Sequence[str] = ()
    ) -> None:
        self._cluster = cluster
        self._scan_interval = scan_interval
        self._extra_args = list(extra_args)
        self._running: tuple[tuple[str, ...], str] | None = None

    def use(self, version: str, *extra_args: str) -> str:
        """The process name of the autoscaler at `version` (with `extra_args` after the
        common flags), started if need be."""
        key = (version, *extra_args)
        if self._running is not None:
            if self._running[0] == key:
                return self._running[1]
            self._cluster.terminate(self._running[1])
        name = f"autoscaler-{version.replace('.', '-')}-{len(self._cluster.processes)}"
        self._cluster.start_autoscaler(
            self._cluster.component("cloud"),
            name=name,
            scan_interval=self._scan_interval,
            emulated_version=version,
            extra_args=[
                *scaled_client_args(self._scan_interval),
                *self._extra_args,
                *extra_args,
            ],
        )
        self._running = (key, name)
        return name

    @property
    def current(self) -> str:
        """The process name of the autoscaler running now."""
        assert self._running is not None, "no autoscaler started"
        return self._running[1]

    def log(self) -> str:
        return self._cluster.logs()[self.current]


@asynccontextmanager
async def open_clients(cluster: Cluster) -> AsyncIterator[tuple[Client, CloudProviderClient]]:
    """An API client and a client of the cloud's gRPC API, closed at the end."""
    api = Client(cluster.server)
    cloud = CloudProviderClient(f"{LOOPBACK}:{cluster.component('cloud').port}")
    try:
        yield api, cloud
    finally:
        await cloud.close()
        await api.close()


def sample(cluster: Cluster, process: str, name: str, labels: dict[str, str]) -> float:
    """The value of the sample `name` with (at least) `labels` on `process`'s /metrics; 0 if
    absent."""
    for family in text_string_to_metric_families(cluster.component(process).scrape()):
        for smp in family.samples:
            if smp.name == name and all(smp.labels.get(k) == v for k, v in labels.items()):
                return float(smp.value)
    return 0.0


async def two_more_loops(cluster: Cluster, process: str) -> None:
    """Waits until the autoscaler has run two whole loops from now (so it has seen the
    cluster as it stands now at least once)."""
    start = sample(cluster, process, LOOPS, {"function": "main"})
    await eventually(
        lambda: sample(cluster, process, LOOPS, {"function": "main"}) >= start + 2,
        timeout=15,
        interval=0.2,
    )


async def events(api: Client, ns: str, reason: str) -> list[types_pb2.Event]:
    """The events `reason` in `ns`."""
    return [e for e in (await api.list(types_pb2.Event, ns)).items if e.reason == reason]


async def pod_events(api: Client, ns: str, reason: str) -> dict[str, str]:
    """Object name -> message of the events `reason` in `ns`."""
    return {e.involved_object.name: e.message for e in await events(api, ns, reason)}


async def recorded_pod_events(
    api: Client, ns: str, reason: str, names: Collection[str]
) -> dict[str, str]:
    """Object name -> message of the events `reason` in `ns`, once there is one for each of
    `names` (an event is written after what it reports: the autoscaler's recorder sends it
    on its own events client, rate limited, cluster-autoscaler/main.go eventsKubeClient)."""

    async def recorded() -> dict[str, str]:
        got = await pod_events(api, ns, reason)
        assert set(names) <= set(got), (reason, got)
        return got

    return await eventually(recorded, timeout=15, interval=0.2)


async def group_nodes(api: Client, group: str, n: int | None = None) -> list[types_pb2.Node]:
    """The Nodes of `group` by name (asserting there are `n`, if given)."""
    items = (await api.list(types_pb2.Node, label_selector=f"{GROUP_LABEL}={group}")).items
    nodes = sorted(items, key=lambda n: n.metadata.name)
    if n is not None:
        assert len(nodes) == n, [x.metadata.name for x in nodes]
    return nodes


async def unschedulable(api: Client, ns: str, name: str) -> types_pb2.Pod:
    """The pod, asserted PodScheduled=False/Unschedulable."""
    pod = await api.get(types_pb2.Pod, name, ns)
    cond = get_pod_condition(pod.status, "PodScheduled")
    assert cond is not None and (cond.status, cond.reason) == ("False", "Unschedulable"), cond
    return pod


async def nominate(
    api: Client, pod: types_pb2.Pod, node: str, *, unschedulable: bool
) -> types_pb2.Pod:
    """Creates `pod` (of a scheduler that does not run, so nothing else writes its status)
    and writes status.nominatedNodeName = `node` as its scheduler would: with
    PodScheduled=False/Unschedulable for a preemptor waiting for its victims
    (`unschedulable`), without for a pod in its binding cycle (KEP-5278)."""
    pod.spec.scheduler_name = "elsewhere"
    created = await api.create(pod)
    created.status.nominated_node_name = node
    if unschedulable:
        created.status.conditions.add(
            type="PodScheduled",
            status="False",
            reason="Unschedulable",
            message="0/1 nodes are available: waiting for the preemption of its victims.",
        )
    return await api.update_status(created)


def counted_on_nominated_node(version: str, *, unschedulable: bool, expendable: bool) -> bool:
    """Whether the autoscaler at `version` counts an unbound pod on the node its
    status.nominatedNodeName names (when that node exists), as cluster-autoscaler does: from
    1.37 (kubernetes/autoscaler#9607) every such pod but the expendable ones (filtered out
    first); before, only an unschedulable (PodScheduled=False/Unschedulable), non-expendable
    one ("waiting for lower priority pods preemption"). A pod counted on its node keeps that
    node from being scaled down. (A pod being deleted is never counted there.)"""
    major, minor = (int(x) for x in version.split("."))
    if (major, minor) >= (1, 37):
        return not expendable
    return unschedulable and not expendable


def scales_up_for_nomination_to_a_gone_node(version: str) -> bool:
    """Whether an unschedulable pod nominated to a node that does not exist can trigger a
    scale-up (cluster-autoscaler: before #9607 it is an ordinary unschedulable pod; from 1.37 it never
    does)."""
    return not counted_on_nominated_node(version, unschedulable=False, expendable=False)

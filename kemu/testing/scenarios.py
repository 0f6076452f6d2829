"""Helpers for the scheduling scenario tests (KEP-1923, KEP-5278 and DefaultPreemption) on real processes.

A scenario runs in its own namespace on its own nodes, so that scenarios can share one
cluster: `Scenario.nodes()` starts one kubelet per node (a real one: graceful termination, the
pod lifecycle) with the label `scenario=<ns>`, and `Scenario.pod()` builds pods that select that
label and run with a short simulated shutdown, so that a preempted victim really terminates
(DisruptionTarget, deletionTimestamp, then gone) within a test's time.

    async with Scenario.open(cluster, "s-pre-1") as s:
        await s.nodes("node1", cpu="500m", memory="500", pods="32")
        await s.run(s.pod("victim", priority=100, cpu="400m", memory="200"))
        await s.create(s.pod("preemptor", priority=300, cpu="300m", memory="200"))
        assert await s.wait_bound("preemptor") == s.node_name("node1")

`Scenario.eventually` waits for something to happen; `Scenario.holds` is its converse, a
bounded observation window for something that must not happen (a preemption, a binding).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Final, TypeVar, cast, overload

import anyio

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.errors import AlreadyExists
from kemu.testing.builders import PodBuilder, PriorityClassBuilder, make_node, make_pod
from kemu.testing.cluster import Cluster
from kemu.testing.cluster_time import cluster_now
from kemu.testing.eventually import eventually
from kemu.testing.namespaces import create_namespace

SCENARIO_LABEL: Final = "scenario"
SHUTDOWN_ANNOTATION: Final = "kubelet.kemu.io/shutdown-duration"
DEFAULT_SHUTDOWN: Final = "200ms"
DEFAULT_TIMEOUT: Final = 30.0
# How long `Scenario.holds` watches for something that must not happen.
DEFAULT_OBSERVATION: Final = 3.0
WINDOW_TIMEOUT: Final = 60.0
"""Wall seconds an observation window may take beyond its length (a slow virtual clock)."""
PRIORITY_CLASS_PREFIX: Final = "kemu-prio-"
NEVER_SUFFIX: Final = "-never"
HOLD_GATE: Final = "scheduling.kemu.io/hold"
"""The scheduling gate of `Scenario.create_held`."""

T = TypeVar("T")


class Scenario:
    def __init__(self, cluster: Cluster, client: Client, namespace: str) -> None:
        self.cluster = cluster
        self.client = client
        self.ns = namespace
        self.kubelets: list[str] = []

    @classmethod
    @asynccontextmanager
    async def open(cls, cluster: Cluster, prefix: str) -> AsyncIterator[Scenario]:
        """A scenario in a fresh namespace; its kubelets are stopped at the end."""
        async with Client(cluster.server, timeout=10.0) as client:
            s = cls(cluster, client, await create_namespace(client, prefix))
            try:
                yield s
            finally:
                for name in s.kubelets:
                    cluster.terminate(name)

    # ------------------------------------------------------------ nodes

    def node_name(self, name: str) -> str:
        """The cluster-wide name of the scenario's node `name`."""
        return f"{self.ns}-{name}"

    async def nodes(
        self,
        *names: str,
        labels: Mapping[str, str] | None = None,
        taints: str = "",
        feature_gates: Mapping[str, bool] | None = None,
        emulated_version: str | None = None,
        **capacity: str,
    ) -> list[str]:
        """Starts a kubelet for each node (capacity as kubelet --capacity, `feature_gates` and
        `emulated_version` its flags) and waits until the scheduler can see them Ready. Returns
        the cluster-wide node names."""
        out = []
        node_labels = {SCENARIO_LABEL: self.ns, **(labels or {})}
        extra = ["--node-labels", ",".join(f"{k}={v}" for k, v in node_labels.items())]
        if taints:
            extra += ["--register-with-taints", taints]
        for name in names:
            full = self.node_name(name)
            proc = self.cluster.start_kubelet(
                full,
                capacity=capacity,
                feature_gates=feature_gates,
                emulated_version=emulated_version,
                extra_args=extra,
            )
            self.kubelets.append(proc.name)
            out.append(full)
        for full in out:

            async def ready(full: str = full) -> bool:
                node = await self.client.get(types_pb2.Node, full)
                return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)

            await eventually(ready, timeout=DEFAULT_TIMEOUT)
        return out

    async def bare_node(self, name: str, **capacity: str) -> str:
        """A Node object without a kubelet (pods bound there never run or terminate)."""
        full = self.node_name(name)
        await self.client.create(
            make_node(full).capacity(**capacity).labels({SCENARIO_LABEL: self.ns}).obj()
        )
        return full

    # ------------------------------------------------------------ pods

    def pod(
        self,
        name: str,
        *,
        priority: int | None = None,
        never: bool = False,
        cpu: str = "",
        memory: str = "",
        shutdown: str = DEFAULT_SHUTDOWN,
    ) -> PodBuilder:
        """A pod of this scenario: in its namespace, selecting its nodes, with requests and a
        short simulated shutdown (`shutdown`: the kubelet's annotation; "never" for a victim
        that ignores SIGTERM and lingers through its grace period; "" for the kubelet's
        default, an exit at once). `priority` goes through a PriorityClass (created on demand,
        as Priority admission wants), `never` makes its preemptionPolicy Never."""
        b = make_pod(name).namespace(self.ns).node_selector({SCENARIO_LABEL: self.ns})
        req = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
        if req:
            b.req(req)
        if priority is not None or never:
            b.priority_class(priority_class_name(priority or 0, never=never))
        if shutdown:
            b.annotation(SHUTDOWN_ANNOTATION, shutdown)
        return b

    async def create(self, pod: PodBuilder | types_pb2.Pod) -> types_pb2.Pod:
        obj = pod.obj() if isinstance(pod, PodBuilder) else pod
        await self._ensure_priority_class(obj.spec.priority_class_name)
        return await self.client.create(obj)

    async def priority_class(self, value: int, *, never: bool = False) -> str:
        """The scenario PriorityClass of `value`, created if need be (for objects other than
        pods that name one: a PodGroup's spec.priorityClassName)."""
        name = priority_class_name(value, never=never)
        await self._ensure_priority_class(name)
        return name

    async def _ensure_priority_class(self, name: str) -> None:
        parsed = parse_priority_class_name(name)
        if parsed is None:
            return
        value, never = parsed
        pc = PriorityClassBuilder(name, value)
        if never:
            pc.preemption_policy("Never")
        try:
            created = await self.client.create(pc.obj())
        except AlreadyExists:
            return
        # Priority admission reads the apiserver's PriorityClass cache, which follows etcd a
        # moment later (as upstream's informer-fed plugin): a list not older than the create's
        # revision returns once the cache has it, so the pod that names the class is admitted.
        await self.client.list(
            types_pb2.PriorityClass, resource_version=created.metadata.resource_version
        )

    async def get(self, name: str) -> types_pb2.Pod:
        return await self.client.get(types_pb2.Pod, name, self.ns)

    async def run(self, pod: PodBuilder | types_pb2.Pod, *, node: str = "") -> types_pb2.Pod:
        """Creates the pod (bound to the scenario node `node` if given, else scheduled) and
        waits until it is Running."""
        obj = pod.obj() if isinstance(pod, PodBuilder) else pod
        if node:
            obj.spec.node_name = self.node_name(node)
        created = await self.create(obj)
        name = created.metadata.name

        async def running() -> types_pb2.Pod:
            p = await self.get(name)
            assert p.status.phase == "Running", f"{name}: {p.status.phase}"
            return p

        return await eventually(running, timeout=DEFAULT_TIMEOUT)

    async def wait_bound(self, name: str, timeout: float = DEFAULT_TIMEOUT) -> str:  # noqa: ASYNC109
        async def bound() -> str:
            p = await self.get(name)
            assert p.spec.node_name, f"{name} is not bound"
            return p.spec.node_name

        return await eventually(bound, timeout=timeout)

    async def wait_nominated(
        self,
        name: str,
        node: str | None,
        timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109
    ) -> types_pb2.Pod:
        """Until the pod's NNN is the scenario node `node` ("" or None: empty)."""
        want = self.node_name(node) if node else ""

        async def nominated() -> types_pb2.Pod:
            p = await self.get(name)
            assert p.status.nominated_node_name == want, (
                f"{name}: nominatedNodeName {p.status.nominated_node_name!r}, want {want!r}"
            )
            return p

        return await eventually(nominated, timeout=timeout)

    async def wait_gone(self, name: str, timeout: float = DEFAULT_TIMEOUT) -> None:  # noqa: ASYNC109
        async def gone() -> bool:
            items = (await self.client.list(types_pb2.Pod, self.ns)).items
            assert name not in {p.metadata.name for p in items}, f"{name} still exists"
            return True

        await eventually(gone, timeout=timeout)

    async def wait_unschedulable(
        self,
        name: str,
        timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109
    ) -> types_pb2.PodCondition:
        async def unschedulable() -> types_pb2.PodCondition:
            p = await self.get(name)
            cond = [c for c in p.status.conditions if c.type == "PodScheduled"]
            # A scheduler's verdict, not the apiserver's SchedulingGated of a gated pod.
            assert cond and cond[0].status == "False" and cond[0].reason != "SchedulingGated", (
                f"{name}: {p.status.conditions}"
            )
            return cond[0]

        return await eventually(unschedulable, timeout=timeout)

    # ------------------------------------------------------------ gates and nominations

    async def create_held(
        self, pod: PodBuilder | types_pb2.Pod, gate: str = HOLD_GATE
    ) -> types_pb2.Pod:
        """Creates the pod with the scheduling gate `gate`: schedulers keep it (gated) in their
        queues, and their nominators already count its nominatedNodeName, until `release`."""
        obj = pod.obj() if isinstance(pod, PodBuilder) else pod
        obj.spec.scheduling_gates.add(name=gate)
        return await self.create(obj)

    async def release(self, name: str) -> types_pb2.Pod:
        """Removes every scheduling gate of the pod (the apiserver allows only removals)."""
        return await self.client.patch(
            types_pb2.Pod, name, {"spec": {"schedulingGates": None}}, self.ns
        )

    async def nominate(self, name: str, node: str | None) -> types_pb2.Pod:
        """Sets the pod's status.nominatedNodeName to the scenario node `node` (None or "":
        clears it) through the status subresource, as an external writer may (KEP-5278, keps/sig-scheduling/5278-*).
        The node need not exist."""
        value = self.node_name(node) if node else None
        return await self.client.patch(
            types_pb2.Pod,
            name,
            {"status": {"nominatedNodeName": value}},
            self.ns,
            subresource="status",
        )

    async def create_nominated(
        self, pod: PodBuilder | types_pb2.Pod, node: str, *, release: bool = True
    ) -> types_pb2.Pod:
        """Creates the pod already nominated to the scenario node `node`, so that the first
        scheduling cycle sees the nomination: a PATCH after a plain create could land after
        that cycle. The pod is created held by a gate, nominated, then released (unless
        `release` is False: then it stays gated, nominated, until `release(name)`)."""
        created = await self.create_held(pod)
        nominated = await self.nominate(created.metadata.name, node)
        if release:
            return await self.release(created.metadata.name)
        return nominated

    async def wait_logged(
        self,
        process: str,
        text: str,
        timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109
    ) -> None:
        """Until the log of the cluster's process `process` contains `text` (for a step that
        leaves no trace in the API, such as a binding cycle entering a PreBind plugin)."""

        async def logged() -> bool:
            assert text in self.cluster.processes[process].logs(), f"{process}: no {text!r}"
            return True

        await eventually(logged, timeout=timeout)

    async def events(self, reason: str = "", name: str = "") -> list[types_pb2.Event]:
        items = (await self.client.list(types_pb2.Event, self.ns)).items
        return [
            e
            for e in items
            if (not reason or e.reason == reason) and (not name or e.involved_object.name == name)
        ]

    async def pods(self) -> dict[str, types_pb2.Pod]:
        return {p.metadata.name: p for p in (await self.client.list(types_pb2.Pod, self.ns)).items}

    @overload
    async def eventually(
        self,
        check: Callable[[], Awaitable[T]],
        timeout: float = ...,  # noqa: ASYNC109
    ) -> T: ...

    @overload
    async def eventually(
        self,
        check: Callable[[], T],
        timeout: float = ...,  # noqa: ASYNC109
    ) -> T: ...

    async def eventually(
        self,
        check: Callable[[], Awaitable[T] | T],
        timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109
    ) -> T:
        # (kemu.testing.eventually's own overloads, passed on: it awaits what is awaitable)
        return await eventually(cast(Callable[[], T], check), timeout=timeout)

    async def holds(
        self,
        check: Callable[[], Awaitable[object]],
        seconds: float = DEFAULT_OBSERVATION,
        interval: float = 0.1,
    ) -> None:
        """The converse of `eventually`: runs `check` (which asserts) over and over for
        `seconds` of the cluster's time, a bounded observation window for "nothing happens"
        (no preemption, no binding); its first AssertionError fails the test at once. On
        the virtual clock at rate max the window is over as soon as the cluster has done its
        work and moved its clock that far: what was due in it has happened (a clock that
        holds would never get there: AssertionError after WINDOW_TIMEOUT wall seconds)."""
        until = await cluster_now(self.client) + seconds
        deadline = time.monotonic() + seconds + WINDOW_TIMEOUT
        while True:
            await check()
            now = await cluster_now(self.client)
            if now >= until:
                return
            assert time.monotonic() < deadline, (
                f"the cluster's clock is at {now:.3f}, short of the window's end {until:.3f}"
            )
            await anyio.sleep(interval)


def priority_class_name(value: int, *, never: bool = False) -> str:
    """The scenario PriorityClass of `value` ("kemu-prio-100", "kemu-prio-m5" for -5)."""
    text = str(value) if value >= 0 else f"m{-value}"
    return f"{PRIORITY_CLASS_PREFIX}{text}{NEVER_SUFFIX if never else ''}"


def parse_priority_class_name(name: str) -> tuple[int, bool] | None:
    if not name.startswith(PRIORITY_CLASS_PREFIX):
        return None
    text = name.removeprefix(PRIORITY_CLASS_PREFIX)
    never = text.endswith(NEVER_SUFFIX)
    text = text.removesuffix(NEVER_SUFFIX)
    value = -int(text[1:]) if text.startswith("m") else int(text)
    return value, never


def disruption_target(pod: types_pb2.Pod) -> types_pb2.PodCondition | None:
    for c in pod.status.conditions:
        if c.type == "DisruptionTarget":
            return c
    return None

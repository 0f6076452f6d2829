"""The rolling upgrade scenario: a cell at version n is upgraded to n+1 in upstream's order
(version-skew-policy "Supported component upgrade order"): the apiserver(s), then the
scheduler, controller-manager and autoscaler, then the kubelets one by one, each drained first (cordoned,
its pods deleted, restarted at n+1, uncordoned). A light load runs throughout: a pod created
every LOAD_INTERVAL and the oldest deleted beyond LOAD_KEPT. After every step the pods
created so far are all bound, and the invariants hold on the history recorded during the
step (an apiserver restart breaks a watch, so each step has its own history)."""

from __future__ import annotations

import itertools
import logging
from typing import Final

import anyio

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING, FeatureGates
from kemu.component.version import Version
from kemu.machinery.errors import ApiError
from kemu.skew.expect import Facts
from kemu.skew.policy import Cell
from kemu.testing.cluster import Cluster
from kemu.testing.eventually import eventually
from kemu.testing.invariants import assert_invariants, record_pods
from kemu.testing.scenarios import Scenario

logger = logging.getLogger(__name__)

LOAD_INTERVAL: Final = 0.25
LOAD_KEPT: Final = 8
KUBELETS: Final = ("node-1", "node-2")
TIMEOUT: Final = 30.0


def set_version(cluster: Cluster, name: str, version: Version) -> None:
    """Restarts process `name` (same flags, ports and data) emulating `version`."""
    proc = cluster.processes[name]
    i = proc.argv.index("--emulated-version")
    proc.argv[i + 1] = str(version)
    cluster.restart(name)


class Load:
    """Creates a pod every LOAD_INTERVAL in the scenario's namespace, deleting the oldest
    beyond LOAD_KEPT; write errors (the apiserver restarting) are counted and retried."""

    def __init__(self, s: Scenario) -> None:
        self.s = s
        self.created: list[str] = []
        self.errors = 0

    async def run(self) -> None:
        for i in itertools.count():
            name = f"load-{i}"
            while True:
                try:
                    await self.s.create(self.s.pod(name, cpu="10m", memory="10Mi"))
                    break
                except ApiError:
                    self.errors += 1
                    await anyio.sleep(LOAD_INTERVAL)
            self.created.append(name)
            if len(self.created) > LOAD_KEPT:
                old = self.created.pop(0)
                try:
                    await self.s.client.delete(types_pb2.Pod, old, self.s.ns)
                except ApiError:
                    self.errors += 1
            await anyio.sleep(LOAD_INTERVAL)

    async def all_bound(self) -> bool:
        pods = await self.s.pods()
        unbound = [p for p in self.created if p in pods and not pods[p].spec.node_name]
        assert not unbound, f"unbound: {unbound}"
        return True


async def _drain(cluster: Cluster, s: Scenario, node: str, process: str, to: Version) -> None:
    await s.client.patch(types_pb2.Node, node, {"spec": {"unschedulable": True}})
    for p in (await s.pods()).values():
        if p.spec.node_name == node:
            try:
                await s.client.delete(types_pb2.Pod, p.metadata.name, s.ns)
            except ApiError:
                pass

    async def empty() -> bool:
        on = [p.metadata.name for p in (await s.pods()).values() if p.spec.node_name == node]
        assert not on, f"{node} still runs {on}"
        return True

    await eventually(empty, timeout=TIMEOUT)
    set_version(cluster, process, to)

    async def ready() -> bool:
        n = await s.client.get(types_pb2.Node, node)
        assert any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)
        return True

    await eventually(ready, timeout=TIMEOUT)
    await s.client.patch(types_pb2.Node, node, {"spec": {"unschedulable": False}})


async def rolling_upgrade(cluster: Cluster, cell: Cell) -> Facts:
    """Facts: every step done, the load bound after each, the invariants held in each."""
    assert cell.upgrade_to is not None
    to = cell.upgrade_to
    steps: list[str] = []
    async with Scenario.open(cluster, "skew-upgrade") as s:
        nodes = await s.nodes(
            *KUBELETS, cpu="2", memory="2Gi", pods="110", emulated_version=str(cell.kubelet)
        )
        load = Load(s)
        async with anyio.create_task_group() as tg:
            tg.start_soon(load.run)
            await anyio.sleep(1.0)
            apiservers = [n for n in ("apiserver", "apiserver-2") if n in cluster.processes]
            for api in apiservers:
                set_version(cluster, api, to)
            steps.append("apiserver")
            plan: list[tuple[str, list[str]]] = [
                (
                    "scheduler+controllermanager+autoscaler",
                    ["scheduler", "controllermanager", "autoscaler"],
                )
            ]
            plan += [(f"kubelet {n}", [n]) for n in nodes]
            for step, names in plan:
                async with record_pods(s.client, s.ns) as history:
                    if step.startswith("kubelet"):
                        await _drain(cluster, s, names[0], s.kubelets[nodes.index(names[0])], to)
                    else:
                        for name in names:
                            set_version(cluster, name, to)
                    await anyio.sleep(1.0)  # some load on the upgraded step
                    await eventually(load.all_bound, timeout=TIMEOUT)
                    await assert_invariants(s.client, history, s.ns, clearing_gate_on=_clearing(to))
                steps.append(step)
            tg.cancel_scope.cancel()
        names = [*apiservers, "scheduler", "controllermanager", "autoscaler", *s.kubelets]
        upgraded = all(
            cluster.processes[n].starts >= 2
            and cluster.processes[n].argv[cluster.processes[n].argv.index("--emulated-version") + 1]
            == str(to)
            and cluster.processes[n].running
            for n in names
        )
    logger.info("rolling upgrade %s: %s; %d write errors", cell.name, steps, load.errors)
    return {
        "upgraded": upgraded and len(steps) == 2 + len(KUBELETS),
        "load_bound_and_invariants_held": True,
    }


def _clearing(version: Version) -> bool:
    return FeatureGates.for_version(version).enabled(CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING)

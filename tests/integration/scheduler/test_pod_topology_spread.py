"""PodTopologySpread on real processes (etcd, apiserver, controller-manager, scheduler) with bare
nodes carrying zone and hostname labels: a DoNotSchedule constraint keeps the zones' skew within
maxSkew as pods arrive, the system default constraints spread a ReplicaSet's pods over
hostnames where resources alone would stack them, and preemption picks the victim that keeps
the skew (the plugin's RemovePod/AddPod in the dry run's victim selection and reprieve).

Each test has its own namespace and nodes (`Scenario`; its pods select its nodes by label, so
the other tests' nodes are neither eligible nor counted: nodeAffinityPolicy Honor).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.testing import Cluster
from kemu.testing.builders import make_node, make_replica_set
from kemu.testing.informers import wait_cached
from kemu.testing.scenarios import SCENARIO_LABEL, Scenario

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
TIMEOUT = 30.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("pts")) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_controllermanager()
        # (decisions: a failed placement test says what each pod was scored)
        c.start_scheduler(extra_args=["--seed", "1", "--record-decisions"])
        yield c


async def zoned_node(s: Scenario, name: str, zone: str | None, **capacity: str) -> str:
    """A bare Node of the scenario with hostname (and zone) labels."""
    full = s.node_name(name)
    labels = {SCENARIO_LABEL: s.ns, HOST: full}
    if zone is not None:
        labels[ZONE] = zone
    await s.client.create(make_node(full).capacity(**capacity).labels(labels).obj())
    return full


async def placements(s: Scenario, label: str, value: str) -> Counter[str]:
    """Bound pods of the scenario with `label=value`, per node."""
    pods = await s.pods()
    return Counter(
        p.spec.node_name
        for p in pods.values()
        if p.spec.node_name and p.metadata.labels.get(label) == value
    )


async def test_do_not_schedule_keeps_zone_skew_within_max_skew(cluster: Cluster) -> None:
    async with Scenario.open(cluster, "pts-zones") as s:
        # Zone a has two nodes: spreading by resources alone would give it twice the pods.
        nodes = {
            await zoned_node(s, "a1", "a", cpu="8", memory="16Gi", pods="110"): "a",
            await zoned_node(s, "a2", "a", cpu="8", memory="16Gi", pods="110"): "a",
            await zoned_node(s, "b1", "b", cpu="8", memory="16Gi", pods="110"): "b",
            await zoned_node(s, "c1", "c", cpu="8", memory="16Gi", pods="110"): "c",
        }
        for i in range(9):
            await s.create(
                s.pod(f"web-{i}", cpu="100m", memory="100Mi")
                .label("app", "web")
                .spread(1, ZONE, selector={"app": "web"})
            )
            await s.wait_bound(f"web-{i}", timeout=TIMEOUT)
            per_zone = Counter({"a": 0, "b": 0, "c": 0})
            for node, n in (await placements(s, "app", "web")).items():
                per_zone[nodes[node]] += n
            assert max(per_zone.values()) - min(per_zone.values()) <= 1, per_zone
        assert per_zone == {"a": 3, "b": 3, "c": 3}


async def test_system_defaults_spread_a_replica_sets_pods_over_hostnames(
    cluster: Cluster,
) -> None:
    async with Scenario.open(cluster, "pts-rs") as s:
        # node-big is so much larger that the resource scores always prefer it, by ~1 point.
        big = await zoned_node(s, "big", None, cpu="64", memory="256Gi", pods="110")
        small = [
            await zoned_node(s, f"small{i}", None, cpu="4", memory="16Gi", pods="110")
            for i in range(2)
        ]
        # Control: pods that no workload owns have no default selector, so only the resource
        # scores decide and they all land on node-big.
        for i in range(3):
            await s.create(s.pod(f"orphan-{i}", cpu="100m", memory="100Mi").label("app", "solo"))
            assert await s.wait_bound(f"orphan-{i}", timeout=TIMEOUT) == big
        rs = (
            make_replica_set("web")
            .namespace(s.ns)
            .selector(app="web")
            .replicas(0)
            .req(cpu="100m", memory="100Mi")
        )
        obj = rs.obj()
        obj.spec.template.spec.node_selector[SCENARIO_LABEL] = s.ns
        created = await s.client.create(obj)
        # The ReplicaSet comes to the scheduler on a watch of its own, which gives no order
        # against its pods' watch: scaled up once the scheduler holds it (a pod scored before
        # would have no default selector, as upstream's would).
        await wait_cached(s.cluster.component("scheduler"), created, timeout=TIMEOUT)
        await s.client.patch(types_pb2.ReplicaSet, "web", {"spec": {"replicas": 6}}, s.ns)

        async def spread() -> Counter[str] | None:
            counts = await placements(s, "app", "web")
            return counts if sum(counts.values()) == 6 else None

        counts = await s.eventually(spread, timeout=TIMEOUT)
        # Hostname maxSkew 3 with weight 2 outweighs the resource scores: 2/2/2.
        if counts != {big: 2, small[0]: 2, small[1]: 2}:
            pytest.fail(f"{counts}; the scheduler's attempts:\n{await decided(s, 'app', 'web')}")


async def decided(s: Scenario, label: str, value: str) -> str:
    """The scheduler's last attempt of each pod with `label=value` (its decision record), in
    the order scheduled: the node, and the best candidates with their scores per plugin."""
    scheduler = s.cluster.component("scheduler")
    lines: list[tuple[float, str]] = []
    for name, pod in (await s.pods()).items():
        if pod.metadata.labels.get(label) != value:
            continue
        record = await anyio.to_thread.run_sync(
            scheduler.debug, "decisions", {"pod": f"{s.ns}/{name}"}
        )
        if not record["attempts"]:
            lines.append((0.0, f"{name}: no attempt recorded"))
            continue
        last = record["attempts"][-1]
        scored = ", ".join(f"{c['node']} {c['scores']}" for c in last["candidates"])
        lines.append((last["time"], f"{name} -> {last['node']}: {scored}"))
    return "\n".join(line for _, line in sorted(lines))


async def test_preemption_evicts_the_victim_that_keeps_the_skew(cluster: Cluster) -> None:
    async with Scenario.open(cluster, "pts-preempt") as s:
        n1 = await zoned_node(s, "n1", "zone1", cpu="1", memory="4Gi", pods="110")
        n2 = await zoned_node(s, "n2", "zone2", cpu="1", memory="4Gi", pods="110")
        # zone2 is full with a pod the preemptor may not evict; it stays an empty domain.
        await s.create(s.pod("guard", priority=1000, cpu="1").node_selector({HOST: n2}).grace(0))
        # On n1: "match" (300m) is spread-matching and more important than "other" (500m).
        await s.create(
            s.pod("match", priority=200, cpu="300m")
            .label("app", "spread")
            .node_selector({HOST: n1})
            .grace(0)
        )
        await s.create(s.pod("other", priority=100, cpu="500m").node_selector({HOST: n1}).grace(0))
        for name in ("guard", "match", "other"):
            await s.wait_bound(name, timeout=TIMEOUT)
        # The preemptor (500m) fits n1 by resources once "other" goes; but with "match" there
        # zone1 holds 1 matching pod against zone2's 0, and 1 + 1 - 0 > maxSkew 1. The dry run
        # removes both, then reprieves "match" first (more important): PodTopologySpread's
        # AddPod puts it back in zone1's count and Filter fails, so "match" is the victim and
        # "other" is reprieved (resources alone would have evicted "other").
        await s.create(
            s.pod("preemptor", priority=300, cpu="500m")
            .label("app", "spread")
            .spread(1, ZONE, selector={"app": "spread"})
        )
        assert await s.wait_bound("preemptor", timeout=TIMEOUT) == n1
        pods = await s.pods()
        assert "match" not in pods
        assert pods["other"].spec.node_name == n1 and not pods["other"].metadata.HasField(
            "deletion_timestamp"
        )
        preempted = await s.events(reason="Preempted", name="match")
        assert preempted, "the victim has a Preempted event"


async def test_the_apiserver_merges_match_label_keys_into_the_selector(cluster: Cluster) -> None:
    """MatchLabelKeysInPodTopologySpreadSelectorMerge (beta, on from 1.34): at creation the
    apiserver adds `key In [the pod's value]` to the constraint's labelSelector for each
    matchLabelKeys key the pod has a label for; a key the pod lacks adds nothing."""
    async with Scenario.open(cluster, "pts-merge") as s:
        pod = (
            s.pod("web-1")
            .labels({"app": "web", "pod-template-hash": "abc"})
            .spread(1, ZONE, selector={"app": "web"}, match_label_keys=["pod-template-hash", "x"])
        )
        created = await s.create(pod)
        (constraint,) = created.spec.topology_spread_constraints
        assert dict(constraint.label_selector.match_labels) == {"app": "web"}
        assert [
            (r.key, r.operator, list(r.values)) for r in constraint.label_selector.match_expressions
        ] == [("pod-template-hash", "In", ["abc"])]
        assert list(constraint.match_label_keys) == ["pod-template-hash", "x"]

"""The scheduler's decision record (`--record-decisions`, GET /debug/decisions) on real
processes: etcd, the apiserver and the scheduler; nodes are bare Node objects, as in
scheduler_perf. Every pod bound in a 1,000-pod run has the node it was bound to as its recorded
choice; an unschedulable pod's record has upstream's reasons with their node counts and the
FailedScheduling message; a preemptor's record has the node preemption nominated and the
victims with their priorities."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.component.featuregate import GENERIC_WORKLOAD
from kemu.machinery.pod_conditions import get_pod_condition
from kemu.testing import Cluster, eventually, make_node, make_pod
from kemu.testing.builders import make_gang_pod_group, make_pdb, make_priority_class
from kemu.testing.namespaces import create_namespace
from tests.integration.cli.test_kemuctl import kemuctl

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

PODS = 1000
PHASES = ("Reserve", "Permit", "PreBind", "Bind")  # (WaitOnPermit: only when a pod waits)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("decisions")) as c:
        c.start_etcd()
        c.start_apiserver(
            feature_gates={GENERIC_WORKLOAD: True},
            runtime_config={"scheduling.k8s.io/v1beta1": "true"},
        )
        c.start_scheduler(
            extra_args=["--seed", "1", "--record-decisions"],
            feature_gates={GENERIC_WORKLOAD: True},
        )
        yield c


async def decisions(cluster: Cluster, pod: str) -> dict[str, Any]:
    document: dict[str, Any] = await anyio.to_thread.run_sync(
        cluster.component("scheduler").debug, "decisions", {"pod": pod}
    )
    return document


async def test_every_bound_pod_was_recorded_with_the_node_it_was_bound_to(
    cluster: Cluster,
) -> None:
    async with Client(cluster.server, timeout=30.0) as c:
        ns = await create_namespace(c, "bound")
        for i in range(10):
            builder = make_node(f"bound-{i}").capacity(cpu="32", memory="64Gi", pods="200")
            await c.create(builder.labels(group="bound").obj())
        limiter = anyio.CapacityLimiter(16)

        async def create(i: int) -> None:
            async with limiter:
                pod = make_pod(f"p{i:04}").namespace(ns).req(cpu="10m")
                await c.create(pod.node_selector(group="bound").obj())

        async with anyio.create_task_group() as tg:
            for i in range(PODS):
                tg.start_soon(create, i)

        async def all_bound() -> dict[str, str]:
            pods = (await c.list(types_pb2.Pod, ns)).items
            bound = {p.metadata.name: p.spec.node_name for p in pods if p.spec.node_name}
            assert len(bound) == PODS, len(bound)
            return bound

        bound = await eventually(all_bound, timeout=120, interval=0.5)

        async def recorded_as_bound() -> bool:
            # (The scheduler marks an attempt bound once the binding's answer is back, a
            # moment after the API shows the pod bound.)
            wrong: list[str] = []
            for name, on in sorted(bound.items()):
                record = await decisions(cluster, f"{ns}/{name}")
                last = record["attempts"][-1]
                if (last["result"], last["node"], last.get("bound")) != ("scheduled", on, True):
                    wrong.append(f"{name} on {on}: {last}")
                # The chosen node leads the scored candidates (each the sum of its plugins'
                # weighted scores), and the binding cycle's points all ran and succeeded.
                candidates = last["candidates"]
                if last["feasibleNodes"] > 1 and (
                    not candidates
                    or candidates[0]["node"] != on
                    or any(c["total"] != sum(c["scores"].values()) for c in candidates)
                ):
                    wrong.append(f"{name} on {on}: candidates {candidates}")
                points = [(p["point"], p["code"]) for p in last["phases"]]
                if points != [(point, "Success") for point in PHASES]:
                    wrong.append(f"{name} on {on}: phases {points}")
            assert wrong == []
            return True

        await eventually(recorded_as_bound, timeout=30, interval=0.5)
        summary = await anyio.to_thread.run_sync(cluster.component("scheduler").debug, "decisions")
        assert summary["pods"] >= PODS


async def test_an_unschedulable_pods_record_has_upstreams_reasons_and_message(
    cluster: Cluster,
) -> None:
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "reasons")
        for i in range(2):  # (and whatever nodes the module's other tests made: none fits)
            await c.create(make_node(f"{ns}-{i}").capacity(cpu="4", memory="8Gi", pods="10").obj())
        await c.create(make_pod("big").namespace(ns).req(cpu="64").obj())

        async def failed() -> str:
            pod = await c.get(types_pb2.Pod, "big", ns)
            cond = get_pod_condition(pod.status, "PodScheduled")
            assert cond is not None and cond.reason == "Unschedulable", pod.status
            return cond.message

        message = await eventually(failed, timeout=30)
        # The condition is written after the attempt is recorded: the attempt whose message
        # the condition carries is there.
        record = await decisions(cluster, f"{ns}/big")
        told = [a for a in record["attempts"] if a["message"] == message]
        assert told, (message, record)
        first = told[0]
        nodes = first["nodes"]
        assert first["result"] == "unschedulable" and first["node"] is None
        assert first["reasons"] == {"Insufficient cpu": nodes}, first
        assert first["rejectedBy"] == {"NodeResourcesFit": nodes}, first
        (examples,) = first["exampleNodes"].values()
        assert len(examples) == min(3, nodes) and len(set(examples)) == len(examples), first
        assert message.startswith(f"0/{nodes} nodes are available: {nodes} Insufficient cpu.")
        assert first["cycle"] == "schedule" and first["profile"] == "default-scheduler"


async def test_a_preemptors_record_names_the_node_and_the_victims(cluster: Cluster) -> None:
    """On a 2-cpu node run low (priority 10, 1 cpu) and guarded (20, 800m), under a
    PodDisruptionBudget that allows no disruption (no controller computes it here:
    disruptionsAllowed stays 0). mid (500, 1 cpu) preempts low alone and is nominated to the
    node while low terminates (no kubelet finishes it). high (1000, 1500m) then needs both
    gone: it preempts guarded, breaking the budget, and clears mid's nomination, of lower
    priority (upstream prepareCandidate)."""
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "preempt")
        for name, value in [("low", 10), ("guarded", 20), ("mid", 500), ("high", 1000)]:
            await c.create(make_priority_class(f"{ns}-{name}", value).obj())
        await c.create(make_node(f"{ns}-node").capacity(cpu="2", memory="4Gi", pods="10").obj())
        budget = make_pdb("budget").namespace(ns).selector(app="guarded").min_available(1)
        await c.create(budget.obj())
        pin = {"kubernetes.io/hostname": f"{ns}-node"}

        def pod(name: str, cpu: str) -> Any:
            builder = make_pod(name).namespace(ns).req(cpu=cpu).priority_class(f"{ns}-{name}")
            return builder.labels(app=name).node_selector(pin).obj()

        await c.create(pod("low", "1"))
        await c.create(pod("guarded", "800m"))

        async def running() -> bool:
            for name in ("low", "guarded"):
                assert (await c.get(types_pb2.Pod, name, ns)).spec.node_name == f"{ns}-node"
            return True

        await eventually(running, timeout=30)

        async def preempted(name: str) -> dict[str, Any]:
            record = await decisions(cluster, f"{ns}/{name}")
            assert record["attempts"], record  # not attempted yet
            preemption = record["attempts"][0].get("preemption")
            assert preemption is not None, record
            pod = await c.get(types_pb2.Pod, name, ns)
            assert pod.status.nominated_node_name == f"{ns}-node", pod.status
            return dict(preemption)

        await c.create(pod("mid", "1"))
        preemption = await eventually(lambda: preempted("mid"), timeout=30)
        assert preemption["victims"] == [{"pod": f"{ns}/low", "priority": 10, "pdbs": []}]
        assert preemption["clearedNominations"] == []
        await c.create(pod("high", "1500m"))
        preemption = await eventually(lambda: preempted("high"), timeout=30)
        assert preemption == {
            "nominatedNodeName": f"{ns}-node",
            "victims": [
                {"pod": f"{ns}/guarded", "priority": 20, "pdbs": [f"{ns}/budget"]},
                {"pod": f"{ns}/low", "priority": 10, "pdbs": []},
            ],
            "pdbViolations": 1,
            "candidates": 1,
            "criterion": "onlyCandidate",
            "clearedNominations": [f"{ns}/mid"],
        }
        record = await decisions(cluster, f"{ns}/high")
        assert record["attempts"][0]["victims"] == [f"{ns}/guarded", f"{ns}/low"]

        async def mid_cleared() -> bool:
            assert (await c.get(types_pb2.Pod, "mid", ns)).status.nominated_node_name == ""
            return True

        await eventually(mid_cleared, timeout=30)

        # kemuctl why tells the story: no kubelet finishes the victim, so it is removed
        # by hand; the preemptor then binds to the node it was nominated to, and the
        # apiserver clears the nomination (ClearingNominatedNodeNameAfterBinding).
        for victim in ("guarded", "low"):
            await c.delete(types_pb2.Pod, victim, ns, grace_period_seconds=0)

        async def bound() -> bool:
            assert (await c.get(types_pb2.Pod, "high", ns)).spec.node_name == f"{ns}-node"
            return True

        await eventually(bound, timeout=30)
        scheduler = f"http://127.0.0.1:{cluster.component('scheduler').metrics_port}"

        async def told() -> dict[str, Any]:
            done = await anyio.to_thread.run_sync(
                lambda: kemuctl(
                    cluster, "why", "pod/high", "-n", ns, "-o", "json", "--scheduler", scheduler
                )
            )
            assert done.returncode == 0, done.stderr
            story: dict[str, Any] = json.loads(done.stdout)
            assert story["attempts"][-1].get("bound") is True, story["attempts"]
            # (Events reach the API a moment after what they tell.)
            assert any(e["reason"] == "Scheduled" for e in story["events"]), story["events"]
            return story

        story = await eventually(told, timeout=30)
        assert story["node"] == f"{ns}-node" and story["nominatedNodeName"] is None
        first, last = story["attempts"][0], story["attempts"][-1]
        victims = [f"{ns}/guarded", f"{ns}/low"]
        assert (first["result"], first["victims"]) == ("unschedulable", victims)
        assert (last["result"], last["node"]) == ("scheduled", f"{ns}-node")
        assert [(n["action"], n["node"], n["by"]) for n in story["nominations"]] == [
            ("set", f"{ns}-node", "scheduler (preemption)"),
            ("cleared", f"{ns}-node", "apiserver (binding, KEP-5278)"),
        ]
        text = kemuctl(cluster, "why", "pod/high", "-n", ns, "--scheduler", scheduler).stdout
        assert (
            f"preemption: node {ns}-node (the only candidate, of 1 candidate node(s)), victims: "
            f"{ns}/guarded (priority 20, breaks PDB {ns}/budget), {ns}/low (priority 10), "
            "1 PDB violation(s)"
        ) in text
        assert f"nominations of lower priority to that node cleared: {ns}/mid" in text
        assert f"nominatedNodeName cleared ({ns}-node) by the apiserver" in text
        assert text.rstrip().endswith(f"now: bound to {ns}-node")


async def test_kemuctl_why_counts_each_node_once_and_tells_the_creation_first(
    cluster: Cluster,
) -> None:
    """Issue #58 item 5: high (1000, 2 cpu) preempts low on node x and is nominated there;
    x is cordoned, node y comes, low goes, and high's next attempt tries x alone first
    (PreferNominatedNode), then every node, and binds to y. The nodes evaluated are
    upstream's (feasible + rejected: each node once), never more than the cluster's ("5 of
    4 nodes evaluated" counted x twice). With the scheduler's clock 5 s behind the
    apiserver's (a virtual clock's follower lags so), its attempts are dated before the pod's
    creation: the story still starts with it."""
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "recount")
        for name, value in [("low", 10), ("high", 1000)]:
            await c.create(make_priority_class(f"{ns}-{name}", value).obj())
        group = {"group": ns}

        async def node(name: str) -> None:
            await c.create(
                make_node(f"{ns}-{name}").labels(group).capacity(cpu="2", pods="10").obj()
            )

        def pod(name: str) -> Any:
            return (
                make_pod(name)
                .namespace(ns)
                .req(cpu="2")
                .priority_class(f"{ns}-{name}")
                .node_selector(group)
                .obj()
            )

        await node("x")
        await c.create(pod("low"))

        async def placed(name: str, node: str) -> bool:
            assert (await c.get(types_pb2.Pod, name, ns)).spec.node_name == node
            return True

        await eventually(lambda: placed("low", f"{ns}-x"), timeout=30)
        cluster.skew_clock("scheduler", -5.0)
        try:
            await anyio.sleep(1.5)  # (the skew file is read within a second)
            await c.create(pod("high"))

            async def nominated() -> bool:
                pod = await c.get(types_pb2.Pod, "high", ns)
                assert pod.status.nominated_node_name == f"{ns}-x", pod.status
                # (its failed cycle over: node y's arrival then requeues it)
                condition = get_pod_condition(pod.status, "PodScheduled")
                assert condition is not None and condition.status == "False", pod.status
                return True

            await eventually(nominated, timeout=30)
            # x cordoned, y added, then low gone (no kubelet finishes it): the preemptor is
            # held at PreEnqueue until its last victim's deletion is seen, and then tries x
            # alone first, in vain.
            await c.patch(types_pb2.Node, f"{ns}-x", {"spec": {"unschedulable": True}})
            await node("y")
            await c.delete(types_pb2.Pod, "low", ns, grace_period_seconds=0)
            await eventually(lambda: placed("high", f"{ns}-y"), timeout=30)
            scheduler = f"http://127.0.0.1:{cluster.component('scheduler').metrics_port}"
            done = await anyio.to_thread.run_sync(
                lambda: kemuctl(cluster, "why", "pod/high", "-n", ns, "--scheduler", scheduler)
            )
        finally:
            cluster.skew_clock("scheduler", 0.0)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].split()[1] == "created", done.stdout
    (line,) = [x for x in lines if f"scheduled on {ns}-y" in x]
    evaluated, of = (int(w) for w in re.findall(r"\((\d+) of (\d+) nodes evaluated", line)[0])
    assert 2 <= evaluated <= of, line

    # The scheduler's events as upstream's events.k8s.io/v1 recorder writes them: no
    # deprecatedSource, reportingInstance "default-scheduler-<host>"; kubectl describe's From is
    # the component alone, `get events -o wide`'s SOURCE component and instance.
    def described() -> str:
        text = kemuctl(cluster, "describe", "pod", "high", "-n", ns).stdout
        assert re.search(r"Normal\s+Scheduled\s+\S+\s+default-scheduler\s+Successfully", text), text
        return text

    await eventually(lambda: anyio.to_thread.run_sync(described), timeout=30)
    wide = kemuctl(cluster, "get", "events", "-n", ns, "-o", "wide").stdout
    assert f"default-scheduler, default-scheduler-{socket.gethostname()}" in wide, wide


async def test_kemuctl_why_tells_a_gang_members_hold_and_its_groups_cycle(
    cluster: Cluster,
) -> None:
    """Issue #55: a member of an incomplete gang is held at PreEnqueue (why says by whom and
    why); once the gang is complete, its attempt is one of the group's cycle."""
    async with Client(cluster.server, timeout=30.0) as c:
        ns = await create_namespace(c, "gang")
        await c.create(make_node(f"{ns}-node").capacity(cpu="4", memory="4Gi", pods="10").obj())
        await c.create(make_gang_pod_group("trainer", 3, ns))

        def member(name: str) -> types_pb2.Pod:
            pod = make_pod(name).namespace(ns).req(cpu="100m").pod_group("trainer").obj()
            return pod

        for name in ("a", "b"):
            await c.create(member(name))
        scheduler = f"http://127.0.0.1:{cluster.component('scheduler').metrics_port}"

        def why(*args: str) -> Any:
            return kemuctl(cluster, "why", "pod/a", "-n", ns, "--scheduler", scheduler, *args)

        async def held() -> dict[str, Any]:
            done = await anyio.to_thread.run_sync(lambda: why("-o", "json"))
            assert done.returncode == 0, done.stderr
            story: dict[str, Any] = json.loads(done.stdout)
            assert story["gated"] is not None, story
            return story

        story = await eventually(held, timeout=30)
        assert story["gated"]["plugin"] == "GangScheduling"
        assert "waiting for minCount pods from a gang" in story["gated"]["message"]
        assert story["attempts"] == []
        await c.create(member("c"))

        async def tried() -> dict[str, Any]:
            done = await anyio.to_thread.run_sync(lambda: why("-o", "json"))
            story: dict[str, Any] = json.loads(done.stdout)
            assert story["attempts"] and story["attempts"][-1].get("bound") is True, story
            return story

        story = await eventually(tried, timeout=30)
        last = story["attempts"][-1]
        assert story["gated"] is None
        # (on any node of the module's cluster: the other tests' nodes are there too)
        assert (last["cycle"], last["node"]) == ("pod-group", story["node"])
        assert last["podGroup"] == {
            "group": f"{ns}/trainer",
            "members": 3,
            "result": "scheduled",
            "message": "",
        }
        text = (await anyio.to_thread.run_sync(why)).stdout
        assert (
            f"one of 3 members tried together in the pod-group cycle of {ns}/trainer: "
            "the group scheduled"
        ) in text


def test_kemuctl_why_without_a_record_warns_and_tells_what_the_api_knows(
    cluster: Cluster,
) -> None:
    nowhere = "http://127.0.0.1:1"  # nothing listens there
    done = kemuctl(cluster, "why", "node/none-such", "--autoscaler", nowhere)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Node none-such (deleted)", "  nothing recorded"]
    assert done.stderr.startswith(f"warning: the autoscaler at {nowhere} does not answer")
    bad = kemuctl(cluster, "why", "deployment/x")
    assert (bad.returncode, bad.stderr.strip()) == (
        1,
        "error: why: only pods and nodes have a story, not deployments",
    )

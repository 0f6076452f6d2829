"""The apiserver on a real etcd: storage semantics, admission, subresources, bad input.

One etcd + apiserver is shared by the module (default gates, emulated 1.37); each test uses
its own namespace or names. Tests that need other gates start their own apiserver.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import grpc
import pytest

from kemu.api.v1 import api_pb2, api_pb2_grpc, types_pb2
from kemu.client.client import Client
from kemu.component.featuregate import (
    CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING,
    IN_PLACE_POD_VERTICAL_SCALING,
    NOMINATED_NODE_NAME_FOR_EXPECTATION,
    SCHEDULER_ASYNC_PREEMPTION,
)
from kemu.machinery import convert, kinds
from kemu.machinery.errors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Invalid,
    NotFound,
    TooManyRequests,
)
from kemu.testing import Cluster, make_node, make_pdb, make_pod, make_priority_class
from kemu.testing.names import unique_name
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("apiserver")) as c:
        c.start_etcd()
        c.start_apiserver()
        yield c


def _client(cluster: Cluster) -> Client:
    return Client(cluster.server, timeout=10.0)


# ---------------------------------------------------------------- storage semantics


async def test_concurrent_updates_with_the_same_resource_version_one_conflicts(cluster):
    async with _client(cluster) as c:
        ns = await create_namespace(c, "cas")
        pod = await c.create(make_pod("p").namespace(ns).req(cpu="100m").obj())
        a, b = types_pb2.Pod(), types_pb2.Pod()
        a.CopyFrom(pod)
        b.CopyFrom(pod)
        a.metadata.labels["writer"] = "a"
        b.metadata.labels["writer"] = "b"
        results: list[object] = []

        async def update(p: types_pb2.Pod) -> None:
            try:
                results.append(await c.update(p))
            except Conflict as e:
                results.append(e)

        async with anyio.create_task_group() as tg:
            tg.start_soon(update, a)
            tg.start_soon(update, b)
        conflicts = [r for r in results if isinstance(r, Conflict)]
        winners = [r for r in results if isinstance(r, types_pb2.Pod)]
        assert len(conflicts) == 1 and len(winners) == 1
        stored = await c.get(types_pb2.Pod, "p", ns)
        assert stored.metadata.labels["writer"] == winners[0].metadata.labels["writer"]
        assert int(stored.metadata.resource_version) > int(pod.metadata.resource_version)


async def test_create_twice_is_already_exists_and_get_missing_is_not_found(cluster):
    async with _client(cluster) as c:
        ns = await create_namespace(c, "dup")
        await c.create(make_pod("p").namespace(ns).obj())
        with pytest.raises(AlreadyExists):
            await c.create(make_pod("p").namespace(ns).obj())
        with pytest.raises(NotFound):
            await c.get(types_pb2.Pod, "missing", ns)


async def test_watch_resumes_from_last_resource_version_exactly_once_in_order(cluster):
    async with _client(cluster) as c:
        ns = await create_namespace(c, "watch")
        first = await c.create(make_pod("p0").namespace(ns).obj())
        seen: list[tuple[str, str, str]] = []
        last_rv = first.metadata.resource_version
        async with c.watch(types_pb2.Pod, ns, resource_version=last_rv) as events:
            await c.create(make_pod("p1").namespace(ns).obj())
            with anyio.fail_after(5):
                ev = await anext(events)
            seen.append((ev.type, ev.object.metadata.name, ev.object.metadata.resource_version))
            last_rv = ev.object.metadata.resource_version
        # Disconnected: changes happen while nobody watches.
        expected = []
        for i in range(2, 7):
            p = await c.create(make_pod(f"p{i}").namespace(ns).obj())
            expected.append(("ADDED", f"p{i}", p.metadata.resource_version))
        p3 = await c.get(types_pb2.Pod, "p3", ns)
        p3.metadata.labels["touched"] = "yes"
        p3 = await c.update(p3)
        expected.append(("MODIFIED", "p3", p3.metadata.resource_version))
        deleted = await c.delete(types_pb2.Pod, "p4", ns)
        # marked (grace 0: it is not bound) one revision before it is removed
        marked_rv = str(int(deleted.metadata.resource_version) - 1)
        expected.append(("MODIFIED", "p4", marked_rv))
        expected.append(("DELETED", "p4", deleted.metadata.resource_version))
        got: list[tuple[str, str, str]] = []
        async with c.watch(types_pb2.Pod, ns, resource_version=last_rv) as events:
            with anyio.fail_after(5):
                while len(got) < len(expected):
                    ev = await anext(events)
                    got.append(
                        (ev.type, ev.object.metadata.name, ev.object.metadata.resource_version)
                    )
        assert seen == [("ADDED", "p1", seen[0][2])]
        assert got == expected
        revisions = [int(rv) for _, _, rv in got]
        assert revisions == sorted(revisions)


async def test_watch_with_selectors_turns_leaving_objects_into_deleted(cluster):
    async with _client(cluster) as c:
        ns = await create_namespace(c, "sel")
        await c.create(make_pod("p").namespace(ns).labels(app="web").obj())
        async with c.watch(types_pb2.Pod, ns, label_selector="app=web") as events:
            with anyio.fail_after(5):
                ev = await anext(events)
            assert (ev.type, ev.object.metadata.name) == ("ADDED", "p")
            await c.patch(types_pb2.Pod, "p", {"metadata": {"labels": {"app": "db"}}}, ns)
            with anyio.fail_after(5):
                ev = await anext(events)
            assert ev.type == "DELETED"
            assert ev.object.metadata.labels["app"] == "db"


async def test_list_with_field_selector_spec_node_name(cluster):
    async with _client(cluster) as c:
        ns = await create_namespace(c, "fs")
        await c.create(make_pod("a").namespace(ns).obj())
        await c.create(make_pod("b").namespace(ns).obj())
        await c.bind(ns, "a", "node-x")
        on_x = await c.list(types_pb2.Pod, ns, field_selector="spec.nodeName=node-x")
        unbound = await c.list(types_pb2.Pod, ns, field_selector="spec.nodeName=")
        assert [p.metadata.name for p in on_x.items] == ["a"]
        assert [p.metadata.name for p in unbound.items] == ["b"]
        with pytest.raises(BadRequest, match="spec.foo"):
            await c.list(types_pb2.Pod, ns, field_selector="spec.foo=bar")


async def test_list_pages_with_limit_and_continue(cluster):
    async with _client(cluster) as c:
        ns = await create_namespace(c, "page")
        for i in range(7):
            await c.create(make_pod(f"p{i}").namespace(ns).obj())
        first = await c.list(types_pb2.Pod, ns, limit=3)
        assert len(first.items) == 3 and first.continue_
        everything = await c.list_all(types_pb2.Pod, ns)
        assert sorted(p.metadata.name for p in everything.items) == [f"p{i}" for i in range(7)]


# ---------------------------------------------------------------- admission


async def test_s_pre_7_system_priority_classes_and_unknown_class(cluster):
    async with _client(cluster) as c:
        ns = await create_namespace(c, "prio")
        node_critical = await c.create(
            make_pod("nc").namespace(ns).priority_class("system-node-critical").obj()
        )
        cluster_critical = await c.create(
            make_pod("cc").namespace(ns).priority_class("system-cluster-critical").obj()
        )
        assert node_critical.spec.priority == 2000001000
        assert cluster_critical.spec.priority == 2000000000
        with pytest.raises(Invalid, match="no PriorityClass with name foo was found") as err:
            await c.create(make_pod("foo").namespace(ns).priority_class("foo").obj())
        assert err.value.causes[0].field == "spec.priorityClassName"
        with pytest.raises(NotFound):
            await c.get(types_pb2.Pod, "foo", ns)


async def test_priority_admission_resolves_class_value_and_preemption_policy(cluster):
    name = unique_name("never")
    async with _client(cluster) as c:
        ns = await create_namespace(c, "prio")
        await c.create(make_priority_class(name, 1000).preemption_policy("Never").obj())
        pod = await c.create(make_pod("p").namespace(ns).priority_class(name).obj())
        assert pod.spec.priority == 1000
        assert pod.spec.preemption_policy == "Never"
        plain = await c.create(make_pod("q").namespace(ns).obj())
        assert plain.spec.priority == 0
        assert plain.spec.preemption_policy == "PreemptLowerPriority"
        assert plain.spec.termination_grace_period_seconds == 30
        assert plain.spec.scheduler_name == "default-scheduler"
        assert plain.status.phase == "Pending"
        with pytest.raises(Invalid, match="spec.priority"):
            await c.create(make_pod("r").namespace(ns).priority_class(name).priority(5).obj())


# ---------------------------------------------------------------- deletion, eviction


async def test_graceful_deletion_of_bound_pod_and_immediate_deletion_of_unbound(cluster):
    async with _client(cluster) as c:
        ns = await create_namespace(c, "del")
        await c.create(make_pod("unbound").namespace(ns).obj())
        gone = await c.delete(types_pb2.Pod, "unbound", ns)
        # every pod delete is graceful upstream: its last state is marked with grace 0
        assert gone.metadata.deletion_grace_period_seconds == 0
        with pytest.raises(NotFound):
            await c.get(types_pb2.Pod, "unbound", ns)

        await c.create(make_pod("bound").namespace(ns).grace(20).obj())
        await c.bind(ns, "bound", "node-1")
        terminating = await c.delete(types_pb2.Pod, "bound", ns)
        assert terminating.metadata.HasField("deletion_timestamp")
        assert terminating.metadata.deletion_grace_period_seconds == 20
        still = await c.get(types_pb2.Pod, "bound", ns)
        assert still.metadata.HasField("deletion_timestamp")
        # A shorter grace period replaces the deadline; a longer one does not.
        shorter = await c.delete(types_pb2.Pod, "bound", ns, grace_period_seconds=5)
        assert shorter.metadata.deletion_grace_period_seconds == 5
        longer = await c.delete(types_pb2.Pod, "bound", ns, grace_period_seconds=60)
        assert longer.metadata.deletion_grace_period_seconds == 5
        # The kubelet finishes it with grace 0 and a uid precondition.
        with pytest.raises(Conflict, match="UID"):
            await c.delete(types_pb2.Pod, "bound", ns, grace_period_seconds=0, uid="other")
        await c.delete(types_pb2.Pod, "bound", ns, grace_period_seconds=0, uid=still.metadata.uid)
        with pytest.raises(NotFound):
            await c.get(types_pb2.Pod, "bound", ns)


async def test_eviction_is_refused_while_the_pdb_allows_no_disruption(cluster):
    async with _client(cluster) as c:
        ns = await create_namespace(c, "evict")
        for name in ("a", "b"):
            await c.create(make_pod(name).namespace(ns).labels(app="x").obj())
            await c.bind(ns, name, "node-1")
            ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
            await c.patch(types_pb2.Pod, name, {"status": ready}, ns, subresource="status")
        pdb = await c.create(make_pdb("pdb").namespace(ns).selector(app="x").min_available(2).obj())
        # Written by hand here; the disruption controller's own test checks it keeps it true.
        pdb.status.observed_generation = pdb.metadata.generation
        pdb.status.current_healthy, pdb.status.desired_healthy = 2, 2
        pdb.status.expected_pods, pdb.status.disruptions_allowed = 2, 0
        pdb = await c.update_status(pdb)
        with pytest.raises(TooManyRequests, match="disruption budget"):
            await c.evict(ns, "a")
        assert not (await c.get(types_pb2.Pod, "a", ns)).metadata.HasField("deletion_timestamp")

        pdb.status.disruptions_allowed = 1
        await c.update_status(pdb)
        await c.evict(ns, "a")
        evicted = await c.get(types_pb2.Pod, "a", ns)
        assert evicted.metadata.HasField("deletion_timestamp")
        after = await c.get(types_pb2.PodDisruptionBudget, "pdb", ns)
        assert after.status.disruptions_allowed == 0
        assert "a" in after.status.disrupted_pods


# ---------------------------------------------------------------- binding


async def test_s_clr_1_bind_clears_nominated_node_name_and_rebinding_conflicts(cluster):
    async with _client(cluster) as c:
        ns = await create_namespace(c, "bind")
        await c.create(make_node(unique_name("node")).capacity(cpu="4").obj())
        await c.create(make_pod("pod").namespace(ns).priority(0).req(cpu="4").obj())
        await c.patch(
            types_pb2.Pod,
            "pod",
            {"status": {"nominatedNodeName": "node"}},
            ns,
            subresource="status",
        )
        assert (await c.get(types_pb2.Pod, "pod", ns)).status.nominated_node_name == "node"
        await c.bind(ns, "pod", "node")
        bound = await c.get(types_pb2.Pod, "pod", ns)
        assert bound.spec.node_name == "node"
        assert bound.status.nominated_node_name == ""
        scheduled = [x for x in bound.status.conditions if x.type == "PodScheduled"]
        assert [(x.status) for x in scheduled] == ["True"]
        with pytest.raises(Conflict, match="already assigned"):
            await c.bind(ns, "pod", "other")


@pytest.mark.parametrize(
    ("version", "gated"),
    [("1.37", True), ("1.27", True), ("1.26", False)],
)
async def test_a_gated_pod_is_created_scheduling_gated_as_pod_scheduling_readiness(
    kemu_cluster_factory, version, gated
):
    """upstream's pod strategy PrepareForCreate: PodScheduled=False reason SchedulingGated on
    a new pod with scheduling gates (PodSchedulingReadiness: beta and on from 1.27, GA 1.30);
    while the gate is off (1.26) the field is dropped, so nothing is gated."""
    cl = kemu_cluster_factory()
    cl.start_etcd()
    cl.start_apiserver(emulated_version=version)
    async with Client(cl.server, timeout=10.0) as c:
        pod = await c.create(make_pod("p").gate("example.com/wait").obj())
        plain = await c.create(make_pod("plain").obj())
    conditions = [(x.type, x.status, x.reason, x.message) for x in pod.status.conditions]
    if gated:
        assert [g.name for g in pod.spec.scheduling_gates] == ["example.com/wait"]
        assert conditions == [
            (
                "PodScheduled",
                "False",
                "SchedulingGated",
                "Scheduling is blocked due to non-empty scheduling gates",
            )
        ]
        assert pod.status.conditions[0].HasField("last_transition_time")
    else:
        assert not pod.spec.scheduling_gates and conditions == []
    assert not plain.status.conditions


async def test_bind_refuses_gated_and_terminating_pods(cluster):
    async with _client(cluster) as c:
        ns = await create_namespace(c, "bind")
        await c.create(make_pod("gated").namespace(ns).gate("example.com/wait").obj())
        with pytest.raises(Conflict, match="schedulingGates"):
            await c.bind(ns, "gated", "n1")


@pytest.mark.parametrize(
    ("version", "gates", "cleared"),
    [
        ("1.37", {CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING: False}, False),
        ("1.33", {}, False),
        ("1.34", {}, False),
        ("1.34", {CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING: True}, True),
        ("1.35", {}, True),
    ],
)
async def test_s_clr_1_clearing_follows_the_apiserver_gate_and_version(
    kemu_cluster_factory, version, gates, cleared
):
    cl = kemu_cluster_factory()
    cl.start_etcd()
    cl.start_apiserver(emulated_version=version, feature_gates=gates)
    async with Client(cl.server, timeout=10.0) as c:
        await c.create(make_pod("pod").obj())
        await c.patch(
            types_pb2.Pod, "pod", {"status": {"nominatedNodeName": "node"}}, subresource="status"
        )
        await c.bind("default", "pod", "node")
        bound = await c.get(types_pb2.Pod, "pod")
        assert bound.spec.node_name == "node"
        assert bound.status.nominated_node_name == ("" if cleared else "node")


# ---------------------------------------------------------------- resize


async def test_resize_changes_only_container_resources_and_bumps_generation(cluster):
    async with _client(cluster) as c:
        ns = await create_namespace(c, "resize")
        pod = await c.create(make_pod("p").namespace(ns).req(cpu="500m", memory="256Mi").obj())
        pod.spec.containers[0].resources.requests["cpu"] = "1"
        resized = await c.resize(pod)
        assert resized.spec.containers[0].resources.requests["cpu"] == "1"
        assert resized.metadata.generation == pod.metadata.generation + 1
        # As upstream's dropNonResizeUpdates: other spec changes in a resize are dropped.
        resized.spec.node_selector["x"] = "y"
        resized.spec.containers[0].resources.requests["memory"] = "300Mi"
        again = await c.resize(resized)
        assert dict(again.spec.node_selector) == {}
        assert again.spec.containers[0].resources.requests["memory"] == "300Mi"
        fresh = await c.get(types_pb2.Pod, "p", ns)
        fresh.spec.containers[0].resources.limits["cpu"] = "1"
        fresh.spec.containers[0].resources.limits["memory"] = "300Mi"
        with pytest.raises(Invalid, match="QOS"):
            await c.resize(fresh)
        bad = await c.get(types_pb2.Pod, "p", ns)
        bad.spec.containers[0].resources.requests["cpu"] = "lots"
        with pytest.raises(Invalid, match=r"spec.containers\[0\].resources.requests"):
            await c.resize(bad)
        with pytest.raises(NotFound):
            ghost = make_pod("ghost").namespace(ns).obj()
            await c.resize(ghost)
        assert (await c.get(types_pb2.Pod, "p", ns)).spec.containers[0].resources.requests[
            "cpu"
        ] == "1"


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("manifest", "field"),
    [
        (
            {"metadata": {"name": "Bad_Name"}, "spec": {"containers": [{"name": "c"}]}},
            "metadata.name",
        ),
        (
            {
                "metadata": {"name": "q"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "abc"}}}]},
            },
            "spec.containers[0].resources.requests",
        ),
        (
            {
                "metadata": {"name": "l", "labels": {"bad key!": "v"}},
                "spec": {"containers": [{"name": "c"}]},
            },
            "metadata.labels",
        ),
        (
            {
                "metadata": {"name": "g"},
                "spec": {"terminationGracePeriodSeconds": -1, "containers": [{"name": "c"}]},
            },
            "spec.terminationGracePeriodSeconds",
        ),
        ({"metadata": {"name": "e"}, "spec": {"containers": []}}, "spec.containers"),
    ],
)
async def test_invalid_objects_are_refused_naming_the_field_and_nothing_is_written(
    cluster, manifest, field
):
    async with _client(cluster) as c:
        ns = await create_namespace(c, "bad")
        manifest = json.loads(json.dumps(manifest))
        manifest["metadata"]["namespace"] = ns
        pod = convert.from_dict(kinds.BY_KIND["Pod"], manifest)
        with pytest.raises(Invalid) as err:
            await c.create(pod)
        assert any(cause.field.startswith(field) for cause in err.value.causes), err.value.causes
        assert (await c.list(types_pb2.Pod, ns)).items == []


async def test_objects_over_the_size_limit_are_refused(cluster):
    async with _client(cluster) as c:
        ns = await create_namespace(c, "big")
        pod = make_pod("big").namespace(ns).obj()
        pod.metadata.annotations["blob"] = "x" * (200 * 1024)
        for i in range(8):
            pod.spec.containers[0].command.append("y" * (200 * 1024) + str(i))
        with pytest.raises(Invalid, match="too large"):
            await c.create(pod)
        assert (await c.list(types_pb2.Pod, ns)).items == []


async def test_patches_that_do_not_parse_or_do_not_fit_are_refused(cluster):
    async with _client(cluster) as c:
        ns = await create_namespace(c, "patch")
        before = await c.create(make_pod("p").namespace(ns).obj())
        with pytest.raises(BadRequest):
            await c.patch(types_pb2.Pod, "p", "{not json", ns)
        with pytest.raises(Invalid, match="spec.nope"):
            await c.patch(types_pb2.Pod, "p", {"spec": {"nope": 1}}, ns)
        with pytest.raises(Invalid, match="metadata.labels"):
            await c.patch(types_pb2.Pod, "p", {"metadata": {"labels": {"a": 5.5}}}, ns)
        with pytest.raises(Conflict):
            await c.patch(
                types_pb2.Pod, "p", {"metadata": {"resourceVersion": "1", "labels": {"a": "b"}}}, ns
            )
        after = await c.get(types_pb2.Pod, "p", ns)
        assert after.metadata.resource_version == before.metadata.resource_version


async def test_a_negative_grace_period_means_one_second_and_an_unknown_kind_is_refused(cluster):
    async with _client(cluster) as c:
        ns = await create_namespace(c, "neg")
        await c.create(make_pod("p").namespace(ns).obj())
        await c.bind(ns, "p", "node-1")
        marked = await c.delete(types_pb2.Pod, "p", ns, grace_period_seconds=-1)
        assert marked.metadata.deletion_grace_period_seconds == 1
    async with grpc.aio.insecure_channel(cluster.server) as ch:
        stub = api_pb2_grpc.ApiStub(ch)  # type: ignore[no-untyped-call]
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.Get(api_pb2.GetRequest(resource="widgets", name="x"), timeout=5)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "widgets" in (err.value.details() or "")


async def test_a_grace_period_past_the_latest_timestamp_is_invalid_and_changes_nothing(cluster):
    """gracePeriodSeconds 2^63-1 on a bound pod: upstream's Go arithmetic overflows; kemu's
    deletion time could not be written (past 9999-12-31T23:59:59Z), so INVALID_ARGUMENT names
    the field instead of an INTERNAL error, and the pod stays as it was."""
    async with _client(cluster) as c:
        ns = await create_namespace(c, "huge-grace")
        await c.create(make_pod("p").namespace(ns).obj())
        await c.bind(ns, "p", "node-1")
        before = await c.get(types_pb2.Pod, "p", ns)
    async with grpc.aio.insecure_channel(cluster.server) as ch:
        stub = api_pb2_grpc.ApiStub(ch)  # type: ignore[no-untyped-call]
        request = api_pb2.DeleteRequest(
            resource="pods", namespace=ns, name="p", grace_period_seconds=2**63 - 1
        )
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.Delete(request, timeout=5)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "gracePeriodSeconds: Invalid value: 9223372036854775807" in (
            err.value.details() or ""
        )
    async with _client(cluster) as c:
        after = await c.get(types_pb2.Pod, "p", ns)
        assert after.metadata.resource_version == before.metadata.resource_version


# ---------------------------------------------------------------- version


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("1.33", {IN_PLACE_POD_VERTICAL_SCALING: True, SCHEDULER_ASYNC_PREEMPTION: True}),
        (
            "1.35",
            {
                NOMINATED_NODE_NAME_FOR_EXPECTATION: True,
                CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING: True,
                IN_PLACE_POD_VERTICAL_SCALING: True,
            },
        ),
        (
            "1.37",
            {
                "InPlacePodVerticalScalingSchedulerPreemption": False,
                CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING: True,
            },
        ),
    ],
)
async def test_version_reports_the_gates_of_the_emulated_version(
    kemu_cluster_factory, version, expected
):
    cl = kemu_cluster_factory()
    cl.start_etcd()
    cl.start_apiserver(emulated_version=version)
    async with Client(cl.server, timeout=10.0) as c:
        info = await c.version()
    assert info.server.emulated_version == version
    gates = {g.name: g.enabled for g in info.server.feature_gates}
    for name, enabled in expected.items():
        assert gates[name] is enabled
    if version == "1.33":
        assert NOMINATED_NODE_NAME_FOR_EXPECTATION not in gates
        assert CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING not in gates


async def test_a_resize_that_changes_nothing_keeps_the_generation(cluster):
    async with _client(cluster) as c:
        ns = await create_namespace(c, "noop")
        pod = make_pod("p").namespace(ns).req(cpu="500m").obj()
        sidecar = pod.spec.init_containers.add(name="side", image="i", restart_policy="Always")
        sidecar.resources.requests["cpu"] = "100m"
        pod.spec.containers.add(name="bare", image="i")  # no resources at all
        created = await c.create(pod)
        same = await c.resize(created)
        assert same.metadata.generation == created.metadata.generation
        assert not same.spec.containers[1].HasField("resources")

"""Upstream apiserver behaviour on real processes: graceful deletion arithmetic (rest.BeforeDelete
and podStrategy.CheckGracefulDelete), pods/status (podStatusStrategy), pods/eviction
(EvictionREST) and the watch (the cacher's bookmarks, initial events, Expired, future
resourceVersions).

One etcd + apiserver is shared by the module; each test has its own namespace.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.interface import WatchEvent
from kemu.ctl.main import run
from kemu.machinery.errors import (
    Conflict,
    Expired,
    InternalError,
    Invalid,
    Timeout,
    TooManyRequests,
)
from kemu.machinery.kinds import INITIAL_EVENTS_END_ANNOTATION
from kemu.testing import Cluster, make_node, make_pdb, make_pod
from kemu.testing.eventually import eventually
from kemu.testing.names import unique_name
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

Pod = types_pb2.Pod
Pdb = types_pb2.PodDisruptionBudget


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("fidelity")) as c:
        c.start_etcd()
        c.start_apiserver(extra_args=["--watch-bookmark-frequency", "0.5"])
        yield c


def _client(cluster: Cluster) -> Client:
    return Client(cluster.server, timeout=10.0)


async def _next(events: Any) -> WatchEvent[Pod]:
    with anyio.fail_after(5):
        ev: WatchEvent[Pod] = await anext(events)
        return ev


async def _bound(c: Client, ns: str, name: str, **labels: str) -> Pod:
    await c.create(make_pod(name).namespace(ns).labels(**labels).grace(30).obj())
    await c.bind(ns, name, "node-1")
    return await c.get(Pod, name, ns)


async def _running(c: Client, ns: str, name: str, *, ready: bool, **labels: str) -> Pod:
    await _bound(c, ns, name, **labels)
    status: dict[str, Any] = {"phase": "Running"}
    status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return await c.patch(Pod, name, {"status": status}, ns, subresource="status")


# ---------------------------------------------------------------- graceful deletion


async def test_a_grace_0_delete_of_a_bound_pod_is_seen_modified_with_its_mark_then_deleted(
    cluster: Cluster,
) -> None:
    async with _client(cluster) as c:
        ns = await create_namespace(c, "grace0")
        pod = await _bound(c, ns, "p")
        async with c.watch(Pod, ns, resource_version=pod.metadata.resource_version) as events:
            await c.delete(Pod, "p", ns, grace_period_seconds=0)
            marked, gone = await _next(events), await _next(events)
        assert (marked.type, gone.type) == ("MODIFIED", "DELETED")
        assert marked.object.metadata.HasField("deletion_timestamp")
        assert marked.object.metadata.deletion_grace_period_seconds == 0
        assert marked.object.metadata.generation == pod.metadata.generation + 1


async def test_a_shorter_second_delete_counts_from_when_the_deletion_began(
    cluster: Cluster,
) -> None:
    async with _client(cluster) as c:
        ns = await create_namespace(c, "shorter")
        await _bound(c, ns, "p")
        first = await c.delete(Pod, "p", ns, grace_period_seconds=60)
        start = first.metadata.deletion_timestamp.seconds - 60
        await anyio.sleep(1.1)  # a later DELETE: its grace still counts from the start
        shorter = await c.delete(Pod, "p", ns, grace_period_seconds=10)
        assert shorter.metadata.deletion_grace_period_seconds == 10
        assert shorter.metadata.deletion_timestamp.seconds == start + 10


async def test_a_delete_without_grace_leaves_a_terminating_pod_as_it_is(cluster: Cluster) -> None:
    async with _client(cluster) as c:
        ns = await create_namespace(c, "pending")
        await _bound(c, ns, "p")  # its own grace is 30 s
        marked = await c.delete(Pod, "p", ns, grace_period_seconds=60)
        again = await c.delete(Pod, "p", ns)  # 30 s would be sooner: upstream ignores it
        assert again.metadata.deletion_timestamp == marked.metadata.deletion_timestamp
        assert again.metadata.deletion_grace_period_seconds == 60
        assert again.metadata.resource_version == marked.metadata.resource_version


# ---------------------------------------------------------------- pods/status and updates


async def test_pods_status_changes_labels_and_annotations_but_never_spec_deletion_or_owners(
    cluster: Cluster,
) -> None:
    async with _client(cluster) as c:
        ns = await create_namespace(c, "status")
        await _bound(c, ns, "p")
        await c.delete(Pod, "p", ns)  # terminating: the deletionTimestamp must stay
        pod = await c.get(Pod, "p", ns)
        sent = Pod()
        sent.CopyFrom(pod)
        sent.metadata.labels["l"] = "1"
        sent.metadata.annotations["a"] = "2"
        sent.metadata.owner_references.add(api_version="v1", kind="Node", name="n", uid="u")
        sent.metadata.ClearField("deletion_timestamp")
        sent.spec.node_name = "elsewhere"
        sent.spec.containers[0].image = "other"
        sent.status.phase = "Running"
        got = await c.update_status(sent)
        assert (got.metadata.labels["l"], got.metadata.annotations["a"]) == ("1", "2")
        assert got.status.phase == "Running"
        assert got.spec == pod.spec
        assert got.metadata.deletion_timestamp == pod.metadata.deletion_timestamp
        assert list(got.metadata.owner_references) == []


async def test_a_status_patch_keeps_the_times_it_does_not_touch_to_the_nanosecond(
    cluster: Cluster,
) -> None:
    """A merge patch of a pod's status is applied to the stored object as JSON: a time it
    does not name must come back as it was (a hollow kubelet's startTime has nanoseconds:
    cut to microseconds by a preemption's DisruptionTarget patch, it broke the tie of
    preemption's latestStartTime between two victims started at one instant, and a random
    determinism scenario chose its node by which write came last)."""
    async with _client(cluster) as c:
        ns = await create_namespace(c, "nanos")
        pod = await _bound(c, ns, "p")
        pod.status.start_time.FromNanoseconds(1893456005_632178432)
        pod = await c.update_status(pod)
        assert pod.status.start_time.nanos == 632178432
        patched = await c.patch(
            Pod,
            "p",
            {"status": {"conditions": [{"type": "DisruptionTarget", "status": "True"}]}},
            ns,
            subresource="status",
        )
        assert [cond.type for cond in patched.status.conditions] == ["DisruptionTarget"]
        assert patched.status.start_time == pod.status.start_time
        assert (await c.get(Pod, "p", ns)).status.start_time == pod.status.start_time


async def test_pods_status_backfills_an_empty_qos_class_and_refuses_a_change(
    cluster: Cluster,
) -> None:
    async with _client(cluster) as c:
        ns = await create_namespace(c, "qos")
        pod = await c.create(make_pod("p").namespace(ns).obj())
        assert pod.status.qos_class == "BestEffort"
        pod.status.qos_class = ""
        pod.status.phase = "Running"
        got = await c.update_status(pod)
        assert got.status.qos_class == "BestEffort"
        got.status.qos_class = "Guaranteed"
        with pytest.raises(Invalid, match="status.qosClass"):
            await c.update_status(got)


async def test_an_update_carrying_another_objects_uid_is_a_conflict(cluster: Cluster) -> None:
    async with _client(cluster) as c:
        ns = await create_namespace(c, "uid")
        pod = await c.create(make_pod("p").namespace(ns).obj())
        pod.metadata.uid = "someone-else"
        for update in (c.update, c.update_status):
            with pytest.raises(Conflict, match="Precondition failed: UID in precondition"):
                await update(pod)


# ---------------------------------------------------------------- pods/eviction


async def _pdb(c: Client, ns: str, *, allowed: int, healthy: int, desired: int, **spec: Any) -> Pdb:
    """A PDB over app=x whose status is written by hand (no disruption controller runs)."""
    b = make_pdb("pdb").namespace(ns).selector(app="x").min_available(desired)
    pdb = b.obj()
    if "policy" in spec:
        pdb.spec.unhealthy_pod_eviction_policy = spec["policy"]
    pdb = await c.create(pdb)
    pdb.status.observed_generation = pdb.metadata.generation
    pdb.status.current_healthy, pdb.status.desired_healthy = healthy, desired
    pdb.status.disruptions_allowed = allowed
    return await c.update_status(pdb)


async def test_eviction_marks_the_pod_disruption_target_before_deleting_it(
    cluster: Cluster,
) -> None:
    async with _client(cluster) as c:
        ns = await create_namespace(c, "evict")
        pod = await _running(c, ns, "p", ready=True, app="x")
        await _pdb(c, ns, allowed=1, healthy=2, desired=1)
        async with c.watch(Pod, ns, resource_version=pod.metadata.resource_version) as events:
            await c.evict(ns, "p", grace_period_seconds=7)
            conditioned, marked = await _next(events), await _next(events)
        (target,) = [
            t for t in conditioned.object.status.conditions if t.type == "DisruptionTarget"
        ]
        assert (target.status, target.reason, target.message) == (
            "True",
            "EvictionByEvictionAPI",
            "Eviction API: evicting",
        )
        assert not conditioned.object.metadata.HasField("deletion_timestamp")
        assert marked.object.metadata.deletion_grace_period_seconds == 7
        pdb = await c.get(Pdb, "pdb", ns)
        assert pdb.status.disruptions_allowed == 0 and "p" in pdb.status.disrupted_pods
        (allowed,) = [t for t in pdb.status.conditions if t.type == "DisruptionAllowed"]
        assert (allowed.status, allowed.reason) == ("False", "InsufficientPods")


async def test_eviction_of_unready_pods_follows_unhealthy_pod_eviction_policy(
    cluster: Cluster,
) -> None:
    async with _client(cluster) as c:
        # IfHealthyBudget (the default): an unready pod goes only while the budget is met
        ns = await create_namespace(c, "unready")
        await _running(c, ns, "p", ready=False, app="x")
        await _pdb(c, ns, allowed=0, healthy=1, desired=2)
        with pytest.raises(TooManyRequests, match="violate the pod's disruption budget"):
            await c.evict(ns, "p")
        pdb = await c.get(Pdb, "pdb", ns)
        pdb.status.current_healthy = 2
        await c.update_status(pdb)
        await c.evict(ns, "p")  # healthy enough: it goes without taking a disruption
        assert (await c.get(Pod, "p", ns)).metadata.HasField("deletion_timestamp")
        assert (await c.get(Pdb, "pdb", ns)).status.disruptions_allowed == 0

        ns = await create_namespace(c, "always")
        await _running(c, ns, "p", ready=False, app="x")
        await _pdb(c, ns, allowed=0, healthy=0, desired=2, policy="AlwaysAllow")
        await c.evict(ns, "p")
        assert (await c.get(Pod, "p", ns)).metadata.HasField("deletion_timestamp")


async def test_a_pod_under_two_pdbs_is_an_internal_error_and_a_terminal_pod_ignores_pdbs(
    cluster: Cluster,
) -> None:
    async with _client(cluster) as c:
        ns = await create_namespace(c, "twopdb")
        await _running(c, ns, "p", ready=True, app="x")
        await _pdb(c, ns, allowed=1, healthy=1, desired=1)
        await c.create(make_pdb("other").namespace(ns).selector(app="x").min_available(1).obj())
        with pytest.raises(InternalError) as err:
            await c.evict(ns, "p")
        assert err.value.message == (
            "This pod has more than one PodDisruptionBudget, which the eviction subresource "
            "does not support."
        )
        await c.patch(Pod, "p", {"status": {"phase": "Succeeded"}}, ns, subresource="status")
        await c.evict(ns, "p")  # ended: no budget is consulted
        assert (await c.get(Pdb, "pdb", ns)).status.disruptions_allowed == 1


async def test_eviction_takes_delete_options_and_a_dry_run_writes_nothing(
    cluster: Cluster,
) -> None:
    async with _client(cluster) as c:
        ns = await create_namespace(c, "evopts")
        pod = await _running(c, ns, "p", ready=True, app="x")
        await _pdb(c, ns, allowed=2, healthy=3, desired=1)
        await c.evict(ns, "p", dry_run=True)
        assert (
            await c.get(Pod, "p", ns)
        ).metadata.resource_version == pod.metadata.resource_version
        assert (await c.get(Pdb, "pdb", ns)).status.disruptions_allowed == 2
        # as upstream, the budget is taken before the pod's preconditions are checked
        with pytest.raises(Conflict, match="UID in the precondition"):
            await c.evict(ns, "p", uid="other")
        await c.evict(ns, "p", uid=pod.metadata.uid, propagation_policy="Foreground")
        got = await c.get(Pod, "p", ns)
        assert list(got.metadata.finalizers) == ["foregroundDeletion"]


# ---------------------------------------------------------------- watch


async def test_an_idle_watch_that_allows_bookmarks_gets_them_with_the_latest_revision(
    cluster: Cluster,
) -> None:
    async with _client(cluster) as c:
        ns = await create_namespace(c, "bookmark")
        pod = await c.create(make_pod("p").namespace(ns).obj())
        start = pod.metadata.resource_version
        async with c.watch(Pod, ns, resource_version=start, allow_watch_bookmarks=True) as events:
            other = await create_namespace(c, "elsewhere")  # moves the revision, not our pods
            await c.create(make_pod("q").namespace(other).obj())
            mark = await _next(events)
        assert mark.type == "BOOKMARK"
        assert int(mark.object.metadata.resource_version) > int(start)
        async with c.watch(Pod, ns, resource_version=start) as events:
            await c.create(make_pod("r").namespace(ns).obj())
            assert (await _next(events)).type == "ADDED"  # no bookmark unless asked for


async def test_send_initial_events_ends_the_initial_state_with_an_annotated_bookmark(
    cluster: Cluster,
) -> None:
    async with _client(cluster) as c:
        ns = await create_namespace(c, "watchlist")
        for name in ("a", "b"):
            await c.create(make_pod(name).namespace(ns).obj())
        async with c.watch(
            Pod,
            ns,
            allow_watch_bookmarks=True,
            send_initial_events=True,
            resource_version_match="NotOlderThan",
        ) as events:
            got = [await _next(events) for _ in range(3)]
            await c.create(make_pod("c").namespace(ns).obj())
            after = await _next(events)
        assert [(e.type, e.object.metadata.name) for e in got[:2]] == [
            ("ADDED", "a"),
            ("ADDED", "b"),
        ]
        end = got[2]
        assert end.type == "BOOKMARK"
        assert end.object.metadata.annotations[INITIAL_EVENTS_END_ANNOTATION] == "true"
        assert (after.type, after.object.metadata.name) == ("ADDED", "c")
        with pytest.raises(Invalid, match="resourceVersionMatch to NotOlderThan"):
            async with c.watch(Pod, ns, allow_watch_bookmarks=True, send_initial_events=True) as s:
                await _next(s)


async def test_a_future_resource_version_is_too_large_for_list_and_watch(cluster: Cluster) -> None:
    async with _client(cluster) as c:
        ns = await create_namespace(c, "future")
        now = int((await c.list(Pod, ns)).resource_version)
        future = str(now + 1_000_000)
        with pytest.raises(Timeout, match=f"Too large resource version: {future}, current: "):
            await c.list(Pod, ns, resource_version=future)
        with pytest.raises(Timeout, match="Too large resource version"):
            async with c.watch(Pod, ns, resource_version=future) as events:
                await _next(events)


async def test_a_quiet_resource_serves_a_revision_etcd_has_reached(cluster: Cluster) -> None:
    """A revision other kinds moved etcd to is not "too large" for a kind that has not changed
    since (its cache is brought to etcd's revision by a progress notification, as upstream's
    cacher): a list not older than it is served, a watch from it starts and sees what comes
    next. An informer resuming a quiet kind's watch depends on this."""
    async with _client(cluster) as c:
        ns = await create_namespace(c, "quiet")
        await c.create(types_pb2.ConfigMap(metadata=types_pb2.ObjectMeta(name="a", namespace=ns)))
        pod = await c.create(make_pod("p").namespace(ns).obj())  # only pods move on
        rv = pod.metadata.resource_version
        listed = await c.list(types_pb2.ConfigMap, ns, resource_version=rv)
        assert [m.metadata.name for m in listed.items] == ["a"]
        assert int(listed.resource_version) >= int(rv)
        async with c.watch(types_pb2.ConfigMap, ns, resource_version=rv) as events:
            await c.create(
                types_pb2.ConfigMap(metadata=types_pb2.ObjectMeta(name="b", namespace=ns))
            )
            ev = await _next(events)
            assert (ev.type, ev.object.metadata.name) == ("ADDED", "b")


async def test_a_watch_from_a_compacted_revision_is_expired(cluster: Cluster) -> None:
    compacting = cluster.start_apiserver(
        name="apiserver-compacting", extra_args=["--etcd-compaction-interval", "0.5"]
    )
    async with Client(f"127.0.0.1:{compacting.port}", timeout=10.0) as c:
        ns = await create_namespace(c, "expired")
        first = await c.create(make_pod("p").namespace(ns).obj())
        old = first.metadata.resource_version
        moves = iter(range(1000))

        async def expired() -> bool:
            await c.create(make_pod(f"q{next(moves)}").namespace(ns).obj())  # move on
            try:
                async with c.watch(Pod, ns, resource_version=old) as events:
                    with anyio.move_on_after(0.2):
                        await anext(events)
            except Expired as e:
                assert e.message.startswith(f"too old resource version: {old} (")
                return True
            return False

        await eventually(expired, timeout=15)


# ---------------------------------------------------------------- kemuctl drain


async def test_cordon_and_uncordon_set_the_node_unschedulable_as_kubectl(cluster: Cluster) -> None:
    async with _client(cluster) as c:
        node = unique_name("cordoned")
        await c.create(make_node(node).obj())

        async def ctl(*argv: str) -> tuple[int, str, str]:
            out, err = io.StringIO(), io.StringIO()
            rc = await run([*argv, "--server", cluster.server], out=out, err=err, environ={})
            return rc, out.getvalue(), err.getvalue()

        assert await ctl("cordon", node) == (0, f"node/{node} cordoned\n", "")
        assert (await c.get(types_pb2.Node, node)).spec.unschedulable
        assert await ctl("cordon", node) == (0, f"node/{node} already cordoned\n", "")
        assert await ctl("uncordon", node) == (0, f"node/{node} uncordoned\n", "")
        assert not (await c.get(types_pb2.Node, node)).spec.unschedulable
        rc, out, err = await ctl("uncordon")
        assert rc != 0 and out == "" and len(err.splitlines()) == 1, (rc, out, err)
        assert "uncordon NODE" in err


async def test_drain_cordons_and_evicts_retrying_while_a_pdb_allows_no_disruption(
    cluster: Cluster,
) -> None:
    async with _client(cluster) as c:
        ns = await create_namespace(c, "drain")
        node = unique_name("drained")
        await c.create(make_node(node).obj())
        for name in ("a", "b"):
            pod = make_pod(name).namespace(ns).labels(app="x").obj()
            pod.metadata.owner_references.add(
                api_version="apps/v1", kind="ReplicaSet", name="rs", uid="u", controller=True
            )
            await c.create(pod)
            await c.bind(ns, name, node)
            ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
            await c.patch(Pod, name, {"status": ready}, ns, subresource="status")
        pdb = await _pdb(c, ns, allowed=0, healthy=2, desired=2)
        out, err = io.StringIO(), io.StringIO()
        result: list[int] = []

        async def drain() -> None:
            argv = ["drain", node, "--grace-period", "0", "--server", cluster.server]
            result.append(await run(argv, out=out, err=err, environ={}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(drain)
            await eventually(lambda: "will retry after 5s" in err.getvalue(), timeout=10)
            assert not result
            pdb.status.disruptions_allowed = 2
            pdb = await c.update_status(pdb)
            await eventually(lambda: bool(result), timeout=20)
        assert result == [0], err.getvalue()
        assert (
            'error when evicting pods/"a" -n "' in err.getvalue()
            or 'error when evicting pods/"b" -n "' in err.getvalue()
        )
        assert "Cannot evict pod as it would violate the pod's disruption budget." in err.getvalue()
        lines = out.getvalue().splitlines()
        assert lines[0] == f"node/{node} cordoned" and lines[-1] == f"node/{node} drained"
        assert {"pod/a evicted", "pod/b evicted", f"evicting pod {ns}/a"} <= set(lines)
        assert (await c.get(types_pb2.Node, node)).spec.unschedulable
        assert (await c.list(Pod, ns)).items == []

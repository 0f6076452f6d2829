"""API Priority and Fairness on real processes (issue #58 item 3): an apiserver whose server
total is 6 seats (--max-requests-inflight 4, --max-mutating-requests-inflight 2) and a
FlowSchema of the test's own (the anonymous user and bob, ByUser) at a level of 1 seat, one
queue per flow (handSize 1) of 10. A flood of anonymous Lists that each hold their seat ~3 s
(they wait for a resourceVersion etcd has not reached) fills the flow's queue; then:

- the scheduler's Lease renewals are served at once (leader-election level);
- another flow of the same level (bob) is served within the flood (fair queuing), not after
  it;
- the flood's next requests are refused: REST 429 with Retry-After and a Status, gRPC
  RESOURCE_EXHAUSTED with the retry-after;
- the apiserver_flowcontrol_* metrics say so, with upstream's labels.

A level that may borrow (lendablePercent 0, no borrowingLimitPercent), flooded while the others
are idle, gets more than its 1 nominal seat at the next re-division (every 10 s), and gives
seats back when global-default gets a flood too (`long`: two periods of 10 s).

A watch is classified and holds a seat until its initial events are sent: it waits in its
flow's queue behind a List holding its level's seat, releases the seat once initialised while
it stays open, and is refused (RESOURCE_EXHAUSTED) when its queue is full.

And each kubelet is its node's user (system:node:<name>): with the level of a schema of the
test's own for system:nodes (ByUser) held busy, two kubelets' requests wait in two flows, as
/debug/api_priority_and_fairness/dump_requests shows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import aiohttp
import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.errors import AlreadyExists, NotFound, TooManyRequests
from kemu.machinery.user import AUTHENTICATED, UserInfo, node_user
from kemu.testing import eventually
from kemu.testing.builders import make_pod
from kemu.testing.cluster import Cluster

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

_FAR_FUTURE_RV = str(2**62)  # a List from it waits ~3 s for the cache ("Too large rv")
LEVEL = "test-level"
SCHEMA = "test-flood"
FLOOD = 30


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("apf")) as c:
        c.start_etcd()
        c.start_apiserver(
            rest=True,
            extra_args=["--max-requests-inflight", "4", "--max-mutating-requests-inflight", "2"],
        )
        yield c


def _samples(cluster: Cluster) -> list[tuple[str, dict[str, str], float]]:
    text = cluster.component("apiserver").scrape()
    return [
        (s.name, dict(s.labels), float(s.value))
        for f in text_string_to_metric_families(text)
        for s in f.samples
    ]


async def _metric(cluster: Cluster, name: str, **labels: str) -> float:
    samples = await anyio.to_thread.run_sync(_samples, cluster)
    return sum(
        v for n, ls, v in samples if n == name and all(ls.get(k) == x for k, x in labels.items())
    )


def _level(name: str = LEVEL, *, borrows: bool = False) -> types_pb2.PriorityLevelConfiguration:
    """A level of 1 nominal seat that lends nothing and, unless it `borrows`, borrows
    nothing: it stays at 1 seat."""
    pl = types_pb2.PriorityLevelConfiguration()
    pl.metadata.name = name
    pl.spec.type = "Limited"
    pl.spec.limited.nominal_concurrency_shares = 10  # ceil(6 * 10 / 255) = 1 seat
    pl.spec.limited.lendable_percent = 0
    if not borrows:
        pl.spec.limited.borrowing_limit_percent = 0
    response = pl.spec.limited.limit_response
    response.type = "Queue"
    response.queuing.queues, response.queuing.hand_size = 64, 1
    response.queuing.queue_length_limit = 10
    return pl


def _schema(
    name: str = SCHEMA,
    groups: tuple[str, ...] = ("system:unauthenticated",),
    user: str = "bob",
    level: str = LEVEL,
) -> types_pb2.FlowSchema:
    fs = types_pb2.FlowSchema()
    fs.metadata.name = name
    fs.spec.priority_level_configuration.name = level
    fs.spec.matching_precedence = 50
    fs.spec.distinguisher_method.type = "ByUser"
    rules = fs.spec.rules.add()
    for group in groups:
        rules.subjects.add(kind="Group", group=types_pb2.GroupSubject(name=group))
    if user:
        rules.subjects.add(kind="User", user=types_pb2.UserSubject(name=user))
    rules.resource_rules.add(
        verbs=["*"], api_groups=["*"], resources=["*"], namespaces=["*"], cluster_scope=True
    )
    return fs


async def test_a_flood_of_one_flow_starves_neither_leases_nor_another_flow_and_is_refused(
    cluster: Cluster,
) -> None:
    ours = {"priority_level": LEVEL, "flow_schema": SCHEMA}
    async with (
        Client(cluster.server, timeout=20.0) as client,
        Client(cluster.server, timeout=20.0, user_agent="kube-scheduler") as scheduler,
        aiohttp.ClientSession(cluster.rest_url, connector=aiohttp.TCPConnector(limit=0)) as http,
    ):
        lease = types_pb2.Lease(
            metadata=types_pb2.ObjectMeta(name="kube-scheduler", namespace="kube-system")
        )
        lease.spec.holder_identity = "a"
        lease = await scheduler.create(lease)
        for obj in (_level(), _schema()):
            try:
                await client.create(obj)
            except AlreadyExists:
                pass

        async def configured() -> bool:
            await client.version()  # (a request: the filter reads the configuration)
            return await _metric(cluster, "apiserver_flowcontrol_nominal_limit_seats",
                                 priority_level=LEVEL) == 1  # fmt: skip

        await eventually(configured, timeout=10, interval=0.1)

        statuses: list[int] = []

        async def rest_get(path: str, **headers: str) -> tuple[int, str, Any]:
            async with http.get(path, headers=headers) as resp:
                text = await resp.text()
                body = json.loads(text) if resp.content_type == "application/json" else text
                return resp.status, resp.headers.get("Retry-After", ""), body

        async def flood_one() -> None:
            status, _, _ = await rest_get(f"/api/v1/pods?resourceVersion={_FAR_FUTURE_RV}")
            statuses.append(status)

        async with anyio.create_task_group() as tg:
            for _ in range(FLOOD):
                tg.start_soon(flood_one)

            async def queued() -> bool:
                inqueue = "apiserver_flowcontrol_current_inqueue_requests"
                return await _metric(cluster, inqueue, **ours) == 10

            await eventually(queued, timeout=5, interval=0.05)
            assert await _metric(cluster, "apiserver_flowcontrol_current_executing_requests",
                                 **ours) == 1  # fmt: skip

            # the flood's flow is refused at once: REST 429 + Retry-After + Status
            status, retry_after, body = await rest_get("/api/v1/namespaces/default/pods/any")
            assert (status, body["reason"], body["code"]) == (429, "TooManyRequests", 429), body
            assert int(retry_after) >= 1
            assert body["details"]["retryAfterSeconds"] == int(retry_after)
            # gRPC: RESOURCE_EXHAUSTED with the retry-after (one attempt: no waiting it out)
            with pytest.raises(TooManyRequests) as refused:
                await client.one_attempt(0.5).get(types_pb2.Pod, "any", "default")
            assert refused.value.retry_after_seconds >= 1

            # the scheduler's renewals: the leader-election level, served at once
            for holder in ("b", "a", "b", "a", "b"):
                with anyio.fail_after(1.0):
                    lease.spec.holder_identity = holder
                    lease = await scheduler.update(lease)

            # bob, another flow of the flooded level (queue 25 of 64, the flood's 59: shuffle
            # sharding's hand of 1 for each), served when the running List ends
            # (~3 s), ahead of the flood's queued ten (~30 s)
            with anyio.fail_after(8.0):
                status, _, body = await rest_get(
                    "/api/v1/namespaces/default/pods/any", **{"Impersonate-User": "bob"}
                )
            assert status == 404, body
            tg.cancel_scope.cancel()

    assert statuses.count(429) >= FLOOD - 11, statuses
    assert await _metric(cluster, "apiserver_flowcontrol_rejected_requests_total",
                         **ours, reason="queue-full") >= FLOOD - 11  # fmt: skip
    leader = {"priority_level": "leader-election", "flow_schema": "system-leader-election"}
    assert await _metric(cluster, "apiserver_flowcontrol_dispatched_requests_total", **leader) >= 5
    waited = "apiserver_flowcontrol_request_wait_duration_seconds_count"
    assert await _metric(cluster, waited, **ours, execute="true") >= 2
    assert await _metric(cluster, "apiserver_flowcontrol_nominal_limit_seats",
                         priority_level="global-default") == 1  # fmt: skip


@pytest.mark.parametrize(
    "hollow",
    [False, pytest.param(True, marks=pytest.mark.long)],  # (hollow: ~10 s)
    ids=["one-node-processes", "hollow"],
)
async def test_each_kubelet_is_its_nodes_user_in_a_flow_of_its_own(
    cluster: Cluster, hollow: bool
) -> None:
    """The system-nodes schemas' ByUser distinguisher sees one user per kubelet: with the
    test's schema for system:nodes at the 1-seat level held by another node user's slow
    Lists, the two kubelets' registrations wait, each in its own flow: two kubelet
    processes, or one hollow process's two nodes (their heartbeat clients)."""
    nodes_schema = "test-nodes"
    holder_user = node_user("holder")
    async with (
        Client(cluster.server, timeout=20.0) as client,
        Client(cluster.server, timeout=20.0, user=holder_user) as holder,
    ):
        for obj in (_level(), _schema(nodes_schema, ("system:nodes",), "")):
            try:
                await client.create(obj)
            except AlreadyExists:
                pass

        async def configured() -> bool:
            await holder.list(types_pb2.Namespace)
            dispatched = "apiserver_flowcontrol_dispatched_requests_total"
            return await _metric(cluster, dispatched, flow_schema=nodes_schema) >= 1

        await eventually(configured, timeout=10, interval=0.1)

        async def hold() -> None:
            while True:  # each List holds the level's one seat ~3 s
                try:
                    await holder.list(types_pb2.Pod, resource_version=_FAR_FUTURE_RV)
                except Exception:  # (its outcome is not the point)
                    await anyio.lowlevel.checkpoint()

        def flows(subresource: str | None = None) -> set[str]:
            rows = cluster.component("apiserver").debug(
                "api_priority_and_fairness/dump_requests", {"includeRequestDetails": "1"}
            )
            return {
                r["FlowDistingsher"]
                for r in rows
                if r["FlowSchemaName"] == nodes_schema
                and r["UserName"] == r["FlowDistingsher"]
                and subresource in (None, r["SubResource"])
            }

        names = ["apfh-0", "apfh-1"] if hollow else ["apf-a", "apf-b"]
        processes = ["kubelet-apfh"] if hollow else [f"kubelet-{n}" for n in names]
        want = {f"system:node:{n}" for n in names}
        try:
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(hold)
                if hollow:
                    args = ["--server", cluster.server, "--nodes", "2"]
                    args += ["--node-name-prefix", "apfh"]
                    args += ["--root-dir", str(cluster.root / "kubelet-apfh")]
                    cluster.start_component("kubelet", "kubelet-apfh", args, wait=False)
                else:
                    for node in names:
                        cluster.start_kubelet(node, wait=False)

                async def both_wait() -> bool:
                    return want <= await anyio.to_thread.run_sync(flows)

                await eventually(both_wait, timeout=30, interval=0.1)
                # and their pods' status writes (a hollow node's too)
                for node in names:
                    pod = make_pod(f"apf-pod-{node}").node(node).obj()
                    await client.create(pod)

                # (a write is seen only while it waits: one of the two is enough)
                seen: set[str] = set()

                async def a_status_waits() -> bool:
                    seen.update(await anyio.to_thread.run_sync(flows, "status"))
                    return bool(seen & want)

                await eventually(a_status_waits, timeout=45, interval=0.05)
                assert seen <= want, seen  # (none as the process's shared user)
                tg.cancel_scope.cancel()
        finally:
            try:
                await client.delete(types_pb2.FlowSchema, nodes_schema)
            except NotFound:
                pass
            for process in processes:
                cluster.terminate(process)
            for node in names:
                try:
                    await client.delete(types_pb2.Pod, f"apf-pod-{node}", "default")
                except NotFound:
                    pass


@pytest.mark.long
async def test_a_busy_level_borrows_idle_seats_and_gives_them_back(cluster: Cluster) -> None:
    """Levels' nominal seats of this server (6 in all): 1 each but workload-low's 3; the idle
    ones keep their lower bounds (1 for those that lend less than half a seat). Flooded, the
    borrowing level gets what the others' lower bounds leave (5 or 6 seats, as the module's
    other tests' levels exist); with global-default flooded alike, it gives some back."""
    level, schema = "borrow-level", "test-borrow"
    carol = UserInfo("carol", (AUTHENTICATED,))
    erin = UserInfo("erin", (AUTHENTICATED,))
    async with (
        Client(cluster.server, timeout=20.0) as client,
        Client(cluster.server, timeout=20.0, user=carol) as borrower,
        Client(cluster.server, timeout=20.0, user=erin) as other,
    ):
        for obj in (_level(level, borrows=True), _schema(schema, (), "carol", level)):
            try:
                await client.create(obj)
            except AlreadyExists:
                pass

        async def configured() -> bool:
            await borrower.list(types_pb2.Namespace)
            dispatched = "apiserver_flowcontrol_dispatched_requests_total"
            return await _metric(cluster, dispatched, flow_schema=schema) >= 1

        await eventually(configured, timeout=10, interval=0.1)
        assert await _metric(cluster, "apiserver_flowcontrol_nominal_limit_seats",
                             priority_level=level) == 1  # fmt: skip

        async def hold(c: Client) -> None:
            while True:  # each List holds a seat ~3 s
                try:
                    await c.list(types_pb2.Pod, resource_version=_FAR_FUTURE_RV)
                except Exception:  # (its outcome is not the point)
                    await anyio.lowlevel.checkpoint()

        async def limit(name: str) -> float:
            return await _metric(cluster, "apiserver_flowcontrol_current_limit_seats",
                                 priority_level=name)  # fmt: skip

        try:
            async with anyio.create_task_group() as tg:
                for _ in range(8):
                    tg.start_soon(hold, borrower)

                async def borrowed() -> bool:
                    executing = await _metric(
                        cluster, "apiserver_flowcontrol_current_executing_requests",
                        priority_level=level,
                    )  # fmt: skip
                    # (after a re-division that saw the flood's demand)
                    demand = await _metric(
                        cluster, "apiserver_flowcontrol_demand_seats_smoothed",
                        priority_level=level,
                    )  # fmt: skip
                    return demand > 1 and await limit(level) > 1 and executing > 1

                await eventually(borrowed, timeout=25, interval=0.2)
                high = await limit(level)
                for _ in range(8):
                    tg.start_soon(hold, other)

                async def given_back() -> bool:
                    return await limit(level) < high and await limit("global-default") > 1

                await eventually(given_back, timeout=25, interval=0.2)
                tg.cancel_scope.cancel()
        finally:
            await client.delete(types_pb2.FlowSchema, schema)


async def test_a_watch_holds_its_seat_until_initialised_and_can_be_refused(
    cluster: Cluster,
) -> None:
    schema = "test-watch"
    wendy = UserInfo("wendy", (AUTHENTICATED,))
    ours = {"priority_level": LEVEL, "flow_schema": schema}
    async with (
        Client(cluster.server, timeout=20.0) as client,
        Client(cluster.server, timeout=20.0, user=wendy) as watcher,
    ):
        for obj in (_level(), _schema(schema, (), "wendy")):
            try:
                await client.create(obj)
            except AlreadyExists:
                pass

        async def configured() -> bool:
            await watcher.list(types_pb2.Namespace)
            dispatched = "apiserver_flowcontrol_dispatched_requests_total"
            return await _metric(cluster, dispatched, **ours) >= 1

        await eventually(configured, timeout=10, interval=0.1)
        executing = "apiserver_flowcontrol_current_executing_requests"
        inqueue = "apiserver_flowcontrol_current_inqueue_requests"

        async def slow_list() -> None:
            try:  # holds the level's one seat ~3 s
                await watcher.one_attempt(10.0).list(types_pb2.Pod, resource_version=_FAR_FUTURE_RV)
            except Exception:  # (its outcome is not the point)
                await anyio.lowlevel.checkpoint()

        try:
            async with anyio.create_task_group() as tg:
                before = await _metric(cluster, "apiserver_flowcontrol_dispatched_requests_total",
                                       **ours)  # fmt: skip
                # a watch is dispatched, then releases its seat once initialised
                async with watcher.watch(types_pb2.Namespace) as events:
                    first = await anext(aiter(events))
                    assert first.type == "ADDED"

                    async def released() -> bool:
                        dispatched = await _metric(
                            cluster, "apiserver_flowcontrol_dispatched_requests_total", **ours
                        )
                        return (
                            dispatched == before + 1
                            and await _metric(cluster, executing, **ours) == 0
                        )

                    await eventually(released, timeout=5, interval=0.05)

                # behind a List holding the seat, a watch waits in the queue
                tg.start_soon(slow_list)
                await eventually(
                    lambda: _metric(cluster, executing, **ours), timeout=5, interval=0.05
                )
                waited = anyio.Event()

                async def second_watch() -> None:
                    async with watcher.watch(types_pb2.Namespace) as events:
                        await anext(aiter(events))
                        waited.set()

                tg.start_soon(second_watch)

                async def queued() -> bool:
                    return await _metric(cluster, inqueue, **ours) == 1

                await eventually(queued, timeout=5, interval=0.05)
                assert not waited.is_set()
                with anyio.fail_after(8):
                    await waited.wait()  # (served when the List ended)

                # a full queue (10) refuses a watch
                tg.start_soon(slow_list)
                await eventually(
                    lambda: _metric(cluster, executing, **ours), timeout=5, interval=0.05
                )
                for _ in range(10):
                    tg.start_soon(slow_list)

                async def full() -> bool:
                    return await _metric(cluster, inqueue, **ours) == 10

                await eventually(full, timeout=5, interval=0.05)
                with pytest.raises(TooManyRequests):
                    async with watcher.watch(types_pb2.Namespace) as events:
                        await anext(aiter(events))
                tg.cancel_scope.cancel()
        finally:
            await client.delete(types_pb2.FlowSchema, schema)

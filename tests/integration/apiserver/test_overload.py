"""The apiserver's in-flight limit on real processes (with --enable-priority-and-fairness=false,
upstream's fallback to the max-in-flight filter): an apiserver allowed one request of each
kind at a time refuses the others with 429 and Retry-After on both edges, keeps answering its
health probes and the Lease renewals of leader election and node heartbeats, and a kemu Client
under a flood completes every call (nothing lost). Priority and fairness, on by default:
test_priority_and_fairness.py."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import aiohttp
import anyio
import anyio.to_thread
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery import convert
from kemu.machinery.errors import ApiError, NotFound, Timeout, TooManyRequests
from kemu.testing import eventually, make_pod
from kemu.testing.cluster import Cluster
from kemu.testing.namespaces import create_namespace
from kemu.testing.processes import run_python_module

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

_FAR_FUTURE_RV = str(2**62)  # a List from it waits ~3 s for the cache ("Too large rv")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("overload")) as c:
        c.start_etcd()
        c.start_apiserver(
            rest=True,
            extra_args=[
                "--enable-priority-and-fairness=false",
                "--max-requests-inflight", "1",
                "--max-mutating-requests-inflight", "1",
            ],
        )  # fmt: skip
        yield c


async def _metric(cluster: Cluster, name: str, kind: str) -> float:
    text = await anyio.to_thread.run_sync(cluster.component("apiserver").scrape)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels.get("request_kind") == kind:
                return float(sample.value)
    raise AssertionError(f"the apiserver exports no {name}{{request_kind={kind!r}}}")


def _refused(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The methods kemu's client retried after a 429 (it logs each retry at DEBUG)."""
    return [
        str(r.args[0])
        for r in caplog.records
        if r.name == "kemu.client.client"
        and r.msg == "%s: too many requests, retrying in %.2fs"
        and isinstance(r.args, tuple)
    ]


def _lease(name: str, namespace: str, holder: str) -> types_pb2.Lease:
    lease = types_pb2.Lease(metadata=types_pb2.ObjectMeta(name=name, namespace=namespace))
    lease.spec.holder_identity = holder
    lease.spec.lease_duration_seconds = 15
    return lease


async def test_past_the_limit_both_edges_answer_429_and_probes_and_leases_are_served(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="kemu.client.client")
    lease_path = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler"
    async with (
        Client(cluster.server, timeout=10.0) as client,
        aiohttp.ClientSession(cluster.rest_url) as http,
    ):
        await client.create(_lease("kube-scheduler", "kube-system", "a"))

        async def rest_get(path: str) -> tuple[int, str, Any]:
            """Status, Retry-After and the body (JSON decoded when it is JSON)."""
            async with http.get(path) as resp:
                text = await resp.text()
                body = json.loads(text) if resp.content_type == "application/json" else text
                return resp.status, resp.headers.get("Retry-After", ""), body

        async def slot_taken() -> bool:
            inflight = "apiserver_current_inflight_requests"
            return await _metric(cluster, inflight, "readOnly") == 1

        async def refused_while_held() -> bool:
            """While one List holds the only read-only slot (~3 s: it waits for a
            resourceVersion etcd has not reached), both edges refuse other reads and still
            serve the probes and the Lease reads. False if the hold ended before the last
            check (a slow machine): the caller tries again."""

            async def held_list() -> None:
                with pytest.raises(Timeout):
                    await client.list(types_pb2.Pod, resource_version=_FAR_FUTURE_RV)

            async with anyio.create_task_group() as tg:
                tg.start_soon(held_list)
                await eventually(slot_taken, timeout=2.5, interval=0.02)
                # gRPC: RESOURCE_EXHAUSTED with reason TooManyRequests and a retry-after of
                # 1 s (a one-attempt view gives up rather than wait past its 0.5 s).
                try:
                    await client.one_attempt(0.5).get(types_pb2.Pod, "any")
                except TooManyRequests as e:
                    assert e.retry_after_seconds == 1
                except NotFound:
                    return False  # served: the hold was over
                for probe in ("/healthz", "/livez", "/readyz"):
                    assert (await rest_get(probe))[0] == 200, probe
                # Lease reads and renewals (leader election, node heartbeats) are not counted:
                # served at the first attempt (no retry after a 429).
                got = await client.get(types_pb2.Lease, "kube-scheduler", "kube-system")
                got.spec.holder_identity = "b" if got.spec.holder_identity == "a" else "a"
                assert (await client.update(got)).spec.holder_identity == got.spec.holder_identity
                assert _refused(caplog) == []
                status, _, lease = await rest_get(lease_path)
                assert status == 200 and lease["spec"]["holderIdentity"] == got.spec.holder_identity
                # REST, last: 429, Retry-After: 1, a Status body; the slot was held throughout.
                status, retry_after, body = await rest_get("/api/v1/namespaces/default/pods/any")
                if status == 404:
                    return False
                assert (status, retry_after) == (429, "1")
                assert (body["kind"], body["reason"], body["code"]) == (
                    "Status",
                    "TooManyRequests",
                    429,
                )
                assert body["details"]["retryAfterSeconds"] == 1
            return True

        await eventually(refused_while_held, timeout=40, interval=0)
        assert await _metric(cluster, "apiserver_dropped_requests_total", "readOnly") >= 2


async def test_with_priority_and_fairness_off_the_max_in_flight_filter_serves(
    cluster: Cluster,
) -> None:
    """--enable-priority-and-fairness=false (upstream's fallback): the max-in-flight filter's
    metrics, none of priority and fairness's."""
    text = await anyio.to_thread.run_sync(cluster.component("apiserver").scrape)
    names = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    assert "apiserver_current_inflight_requests" in names
    assert not {n for n in names if n.startswith("apiserver_flowcontrol_")}


async def test_under_a_flood_a_client_completes_every_call_and_leases_renew_first_time(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="kemu.client.client")
    async with Client(cluster.server, timeout=30.0) as client:
        ns = await create_namespace(client, "flood")
        node_lease = await client.create(_lease("n1", "kube-node-lease", "n1"))
        dropped_before = await _metric(cluster, "apiserver_dropped_requests_total", "mutating")
        renewals = 0
        created: list[str] = []

        async def renew(done: anyio.Event) -> None:
            nonlocal renewals, node_lease
            while not done.is_set():
                node_lease.spec.lease_duration_seconds += 1
                node_lease = await client.update(node_lease)
                renewals += 1
                await anyio.sleep(0.05)

        async def create(name: str) -> None:
            await client.create(make_pod(name).namespace(ns).req(cpu="10m").obj())
            assert (await client.get(types_pb2.Pod, name, ns)).metadata.name == name
            created.append(name)

        async def flood(burst: int) -> bool:
            """150 creates (then gets) at once; True once the limit has refused some."""
            done = anyio.Event()
            async with anyio.create_task_group() as tg:
                tg.start_soon(renew, done)
                async with anyio.create_task_group() as creates:
                    for i in range(150):
                        creates.start_soon(create, f"p-{burst}-{i}")
                done.set()
            dropped = await _metric(cluster, "apiserver_dropped_requests_total", "mutating")
            return dropped > dropped_before

        burst = 0
        while not await flood(burst):  # a burst that never met the limit of 1: flood again
            burst += 1
            assert burst < 5, "five floods of 150 creates never met a limit of 1"

        listed = await client.list_all(types_pb2.Pod, ns)
        assert sorted(p.metadata.name for p in listed.items) == sorted(created)
        assert len(created) == 150 * (burst + 1) and renewals >= burst + 1
        refused = set(_refused(caplog))
        assert "Create" in refused and "Update" not in refused  # renewals: first attempt

        # The REST edge under the same flood: created, or refused with Retry-After.
        statuses: list[int] = []
        async with aiohttp.ClientSession(cluster.rest_url) as http:

            async def rest_create(i: int) -> None:
                body = convert.to_dict(make_pod(f"r-{i}").namespace(ns).req(cpu="10m").obj())
                async with http.post(f"/api/v1/namespaces/{ns}/pods", json=body) as resp:
                    statuses.append(resp.status)
                    if resp.status == 429:
                        assert resp.headers["Retry-After"] == "1"

            async with anyio.create_task_group() as tg:
                for i in range(60):
                    tg.start_soon(rest_create, i)
        assert set(statuses) <= {201, 429} and 201 in statuses, statuses


@pytest.mark.parametrize("flag", ["--max-requests-inflight", "--max-mutating-requests-inflight"])
def test_a_negative_limit_stops_start_up_naming_the_flag(flag: str) -> None:
    done = run_python_module("apiserver", [flag, "-1", "--metrics-port", "0"], timeout=30)
    assert done.returncode == 1
    assert done.stderr.strip() == f"apiserver: error: {flag}: -1 must be >= 0"


# ---------------------------------------------------------------- a burst past gRPC's backlog

# More calls at once than gRPC core's pending-request backlog holds (1000 soft, 3000 hard,
# grpc.server.max_pending_requests): with it, the server refused the excess with CANCELLED.
_BURST = 3000


@pytest.fixture(scope="module")
def default_limits(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """etcd and an apiserver with the default in-flight limits (400 / 200) and the max-in-flight
    filter (these tests are about the transport's shedding); each test starts what else it
    needs."""
    with Cluster(tmp_path_factory.mktemp("burst")) as c:
        c.start_etcd()
        c.start_apiserver(extra_args=["--enable-priority-and-fairness=false"])
        yield c


async def _create_pods(client: Client, ns: str, count: int) -> None:
    """`count` pending pods p-0..p-<count-1> of 10m cpu, 100 creates in flight."""
    limit = anyio.Semaphore(100)

    async def create(i: int) -> None:
        async with limit:
            await client.create(make_pod(f"p-{i}").namespace(ns).req(cpu="10m").obj())

    async with anyio.create_task_group() as tg:
        for i in range(count):
            tg.start_soon(create, i)


@pytest.mark.long  # a load test (3000 pods): make test-long
async def test_a_burst_of_calls_is_served_or_told_to_retry_never_refused_by_the_transport(
    default_limits: Cluster,
) -> None:
    """Upstream's apiserver sheds load only in its max-in-flight filter (429 with Retry-After,
    which client-go retries; k8s.io/apiserver/pkg/server/filters/maxinflight.go): its HTTP/2
    server hands every stream to a handler. So 3000 binds sent at once by one client all
    succeed, past the in-flight limit (retried) and past gRPC's pending-request backlog."""
    async with Client(default_limits.server, timeout=60.0) as client:
        ns = await create_namespace(client, "bind-burst")
        await client.create(types_pb2.Node(metadata=types_pb2.ObjectMeta(name="burst-node")))
        await _create_pods(client, ns, _BURST)
        failures: list[str] = []

        async def bind(i: int) -> None:
            try:
                await client.bind(ns, f"p-{i}", "burst-node")
            except ApiError as e:
                failures.append(f"{type(e).__name__}: {e}")

        async with anyio.create_task_group() as tg:
            for i in range(_BURST):
                tg.start_soon(bind, i)
        assert not failures, f"{len(failures)} of {_BURST} binds failed: {set(failures)}"
        listed = await client.list_all(types_pb2.Pod, ns)
        assert all(p.spec.node_name == "burst-node" for p in listed.items)
        assert len(listed.items) == _BURST


@pytest.mark.long  # a load test (3000 pods): make test-long
async def test_the_scheduler_binds_a_burst_of_pods_without_an_error(
    default_limits: Cluster,
) -> None:
    """PreemptionAsync/5000Nodes' scheduling errors, reduced: a scheduler that finds 3000
    pending pods at start-up binds them in a burst of concurrent binding cycles, and no
    attempt ends with result="error" (each Bind either succeeds or is retried after a 429 by
    the client), as upstream's scheduler against its apiserver."""
    async with Client(default_limits.server, timeout=60.0) as client:
        ns = await create_namespace(client, "sched-burst")
        for i in range(20):
            node = types_pb2.Node(metadata=types_pb2.ObjectMeta(name=f"sched-burst-{i}"))
            node.status.capacity.update({"cpu": "1000", "memory": "1000Gi", "pods": "1000"})
            node.status.allocatable.update(node.status.capacity)
            await client.create(node)
        await _create_pods(client, ns, _BURST)
        await anyio.to_thread.run_sync(lambda: default_limits.start_scheduler())

        async def all_bound() -> bool:
            listed = await client.list_all(types_pb2.Pod, ns)
            unbound = [p.metadata.name for p in listed.items if not p.spec.node_name]
            assert not unbound, f"{len(unbound)} pods unbound"
            return True

        await eventually(all_bound, timeout=120, interval=1.0)

        # A pod is bound in the API when the apiserver commits its Binding; the scheduler counts
        # the attempt (upstream's bindingCycle, metrics.PodScheduled) when the Bind call has
        # returned to it, which under load can be seconds later for the last of 3000.
        async def attempts() -> dict[str, float]:
            text = await anyio.to_thread.run_sync(default_limits.component("scheduler").scrape)
            results = {
                s.labels["result"]: s.value
                for family in text_string_to_metric_families(text)
                for s in family.samples
                if s.name == "scheduler_schedule_attempts_total"
            }
            assert results.get("scheduled", 0) >= _BURST, results
            return results

        results = await eventually(attempts, timeout=60, interval=1.0)
        assert results.get("error", 0) == 0, results

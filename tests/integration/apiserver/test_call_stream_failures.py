"""What a caller sees when its call goes wrong, the same on both transports (issue #59 item 1,
docs/research/streams.md): an apiserver killed while calls are under way (held there by a
paused etcd), a call's deadline running out while the apiserver waits on etcd
(`--etcd-latency`), a caller cancelled meanwhile. Each test runs once per Transport: unary is
the reference the stream must match."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client, Transport
from kemu.machinery.errors import ApiError, Timeout, Unavailable
from kemu.testing import Cluster, eventually, make_node, make_pod
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

TRANSPORTS = pytest.mark.parametrize("transport", [Transport.UNARY, Transport.STREAM], ids=str)

ETCD_LATENCY = 0.2
"""Each etcd round trip of a request waits this long (--etcd-latency): a create is under way
on the apiserver for at least this long. (The apiserver's start-up waits it too, twice per
kind its watch cache lists: a larger one makes a slow start.)"""


@pytest.fixture(scope="module")
def slow_etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(Path(tmp_path_factory.mktemp("slow-etcd")), startup_timeout=120) as c:
        c.start_etcd()
        # (without the RBAC kinds: their bootstrap policy, a hundred objects written one by one
        # at start, took a minute through the slow etcd; these tests are about calls)
        c.start_apiserver(
            runtime_config={"rbac.authorization.k8s.io/v1": "false"},
            extra_args=["--etcd-latency", f"{ETCD_LATENCY * 1000:g}ms"],
        )
        yield c


async def _namespace(cluster: Cluster, prefix: str) -> str:
    """A new namespace; on a new apiserver, made once the APF bootstrap configuration is
    written, each object a round trip to the slow etcd (it may take a minute)."""
    async with Client(cluster.server, timeout=120.0) as client:
        return await create_namespace(client, prefix)


async def _pods(client: Client, ns: str) -> list[str]:
    return sorted(p.metadata.name for p in (await client.list_all(types_pb2.Pod, ns)).items)


@TRANSPORTS
async def test_calls_under_way_when_the_apiserver_is_killed_fail_unavailable_and_the_client_carries_on(
    kemu_cluster_factory: Callable[[], Cluster], transport: Transport
) -> None:
    """The apiserver is SIGKILLed while creates wait on etcd (paused): each fails Unavailable
    (a write is not retried: it may have been made), as a unary call on a broken connection
    does. A read made meanwhile is retried until the restarted apiserver answers it, the
    client's next calls are served there, and a scheduler on the default transport binds a pod
    made after the restart."""
    cluster = kemu_cluster_factory()
    cluster.start_etcd()
    cluster.start_apiserver()
    cluster.start_scheduler()
    async with Client(cluster.server, timeout=30.0, transport=transport) as client:
        ns = await create_namespace(client, "killed")
        outcomes: dict[str, object] = {}
        answered = anyio.Event()

        async def create(name: str) -> None:
            try:
                outcomes[name] = await client.create(make_pod(name).namespace(ns).obj())
            except ApiError as e:
                outcomes[name] = e
            if len(outcomes) == len(names):
                answered.set()

        async def read() -> None:
            outcomes["read"] = await client.get(types_pb2.Namespace, ns)

        names = [f"under-way-{i}" for i in range(6)]
        async with anyio.create_task_group() as tg:
            for name in names:
                tg.start_soon(create, name)

            cluster.pause("etcd")
            try:
                with anyio.fail_after(10):
                    while client.requests_in_flight < len(names):
                        await anyio.lowlevel.checkpoint()
                    # Made after the creates on the same connection (stream): once it is
                    # answered (without etcd), the apiserver has them all.
                    await client.version()
                cluster.kill("apiserver")
            finally:
                cluster.resume("etcd")
            with anyio.fail_after(10):
                await answered.wait()
            tg.start_soon(read)  # (the apiserver is down: retried until it is back)
            await anyio.to_thread.run_sync(cluster.restart, "apiserver")
        kinds = {n: type(outcomes[n]).__name__ for n in names}
        if transport is Transport.STREAM:
            # (every frame was written before the version call's, which was answered)
            assert kinds == dict.fromkeys(names, Unavailable.__name__)
        else:
            # A unary create that gRPC had not sent yet when the apiserver died is sent again
            # on the new connection (the version call's answer does not say the others had
            # left the client): made once, or failed Unavailable, never anything else.
            assert set(kinds.values()) <= {Unavailable.__name__, "Pod"}, kinds
            listed = await client.list(types_pb2.Pod, ns)
            assert {p.metadata.name for p in listed.items} >= {
                n for n, kind in kinds.items() if kind == "Pod"
            }
        assert isinstance(outcomes["read"], types_pb2.Namespace)
        # The client carries on against the restarted apiserver.
        created = await client.create(make_pod("after").namespace(ns).req(cpu="10m").obj())
        assert created.metadata.name == "after"
        await client.create(
            make_node("n1").capacity(cpu="4", memory="8Gi", pods="110").ready().obj()
        )

        async def bound() -> str:
            pod = await client.get(types_pb2.Pod, "after", ns)
            assert pod.spec.node_name, "not bound yet"
            return pod.spec.node_name

        # (the scheduler's own calls were broken too: it reconnected and carries on)
        assert await eventually(bound, timeout=30, interval=0.3) == "n1"
    assert cluster.processes["scheduler"].starts == 1


@TRANSPORTS
async def test_a_call_past_its_deadline_under_etcd_latency_is_deadline_exceeded_and_not_written_twice(
    slow_etcd: Cluster, transport: Transport
) -> None:
    """A create whose timeout runs out while the apiserver waits on etcd: Timeout
    (DEADLINE_EXCEEDED) at its deadline, not when etcd answers; the pod is there once or not at
    all, and the next call is served."""
    cluster = slow_etcd
    ns = await _namespace(cluster, "deadline")
    timeout = ETCD_LATENCY / 4
    async with Client(cluster.server, timeout=timeout, transport=transport) as client:
        start = anyio.current_time()
        with pytest.raises(Timeout):
            await client.create(make_pod("late").namespace(ns).obj())
        assert anyio.current_time() - start < ETCD_LATENCY * 0.9
    async with Client(cluster.server, timeout=30.0, transport=transport) as client:
        # (after one more round trip of its own, made after the late create's)
        await client.create(make_pod("next").namespace(ns).obj())
        pods = await _pods(client, ns)
    assert pods.count("late") <= 1
    assert "next" in pods


@TRANSPORTS
async def test_a_cancelled_caller_cancels_its_call_on_the_apiserver(
    slow_etcd: Cluster, transport: Transport
) -> None:
    """A caller cancelled while its create waits on etcd: the apiserver stops serving it (gRPC
    cancels a cancelled unary call's handler; the stream sends a cancel frame), so the pod is
    never written, and the client's next call is served."""
    cluster = slow_etcd
    ns = await _namespace(cluster, "cancelled")
    async with Client(cluster.server, timeout=30.0, transport=transport) as client:
        with anyio.move_on_after(ETCD_LATENCY / 4) as scope:
            await client.create(make_pod("cancelled").namespace(ns).obj())
        assert scope.cancelled_caught
        # Made after the cancelled create, it waits on etcd at least as long: had the
        # cancelled one gone on, it would be written before this one.
        await client.create(make_pod("next").namespace(ns).obj())
        assert await _pods(client, ns) == ["next"]


BURST = 240
IN_FLIGHT = 16


@TRANSPORTS
async def test_creates_made_after_the_apiserver_was_killed_mid_burst_are_made_once_on_the_new_one(
    kemu_cluster_factory: Callable[[], Cluster], transport: Transport
) -> None:
    """A burst of creates, 16 in flight, across an apiserver SIGKILLed and restarted while the
    client's event loop is blocked (the synchronous kill and restart of the chaos tests): gRPC
    sees the connection end in its own threads before the client does. A create under way at
    the kill fails Unavailable (it may have been made: a create is not retried) or was made;
    every create answered is stored, none twice.

    Unary: a create made after the kill never reached the dead apiserver and is made on the
    new one (gRPC's transparent retry starts it on a new connection). The stream: a create
    written onto the dead stream before its reader saw the end may have been taken by the
    connection (the write succeeded), so it fails Unavailable as one under way, as client-go
    fails a write on an HTTP/2 connection that was lost (rest/request.go: "We are not
    automatically retrying "write" operations"); each of the 16 creators loses at most that
    one beside its call under way, since its next create goes on a new stream."""
    cluster = kemu_cluster_factory()
    cluster.start_etcd()
    cluster.start_apiserver()
    async with Client(cluster.server, timeout=30.0, transport=transport) as client:
        ns = await create_namespace(client, "burst")
        names = iter(f"burst-{i}" for i in range(BURST))
        outcomes: dict[str, str] = {}
        after_kill: set[str] = set()
        killed = False
        some_answered = anyio.Event()

        async def creator() -> None:
            for name in names:
                if killed:
                    after_kill.add(name)
                try:
                    await client.create(make_pod(name).namespace(ns).obj())
                    outcomes[name] = "Pod"
                except Unavailable:
                    outcomes[name] = "Unavailable"
                if len(outcomes) >= BURST // 6:
                    some_answered.set()

        async with anyio.create_task_group() as tg:
            for _ in range(IN_FLIGHT):
                tg.start_soon(creator)
            with anyio.fail_after(30):
                await some_answered.wait()
            cluster.kill("apiserver")  # (blocking the loop, with the restart)
            cluster.restart("apiserver")
            killed = True
        assert len(outcomes) == BURST
        failed = {n for n, kind in outcomes.items() if kind != "Pod"}
        if transport is Transport.UNARY:
            assert not failed & after_kill, sorted(failed & after_kill)
            assert len(failed) <= IN_FLIGHT, sorted(failed)
        else:
            assert len(failed) <= 2 * IN_FLIGHT, sorted(failed)
            assert len(failed & after_kill) <= IN_FLIGHT, sorted(failed & after_kill)
        assert len(after_kill) >= BURST // 2  # (the kill was mid-burst)
        stored = set(await _pods(client, ns))
        assert {n for n, kind in outcomes.items() if kind == "Pod"} <= stored <= set(outcomes)

"""The cluster clock in virtual time (`--clock virtual`, issue #30's first part): the apiserver
keeps it in etcd, every component follows it, `kemuctl clock` shows it and sets its rate.
Timestamps, grace periods and holds are checked on the API's objects."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kemu.api.v1 import clock_pb2, types_pb2
from kemu.client.client import Client
from kemu.machinery.convert import parse_time
from kemu.machinery.errors import NotFound
from kemu.machinery.virtual_time import BOOT_TOKEN_ENV, ClockMode
from kemu.testing import Cluster, make_pod
from kemu.testing.eventually import eventually
from kemu.testing.names import unique_name
from kemu.testing.namespaces import create_namespace
from kemu.testing.processes import ProcessStartError, python_env, run_python_module
from tests.integration.autoscaler.autoscaler_env import open_clients, sample

SHUTDOWN = "kubelet.kemu.io/shutdown-duration"

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

START = "2031-01-02T03:04:05Z"
START_AT = parse_time(START, "start").seconds


async def _running(client: Client, name: str, ns: str) -> bool:
    pod = await client.get(types_pb2.Pod, name, ns)
    assert pod.status.phase == "Running", pod.status.phase
    return True


async def _gone(client: Client, name: str, ns: str) -> bool:
    try:
        await client.get(types_pb2.Pod, name, ns)
    except NotFound:
        return True
    raise AssertionError("still there")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("virtual"), clock=ClockMode.VIRTUAL) as c:
        c.start_etcd()
        c.start_apiserver(extra_args=["--clock-start", START])
        c.start_kubelet("n1")
        c.start_scheduler()
        c.start_controllermanager()
        yield c


def kemuctl(cluster: Cluster, *args: str) -> tuple[int, str, str]:
    done = run_python_module("kemu.ctl", args, env=python_env({"KEMU_SERVER": cluster.server}))
    return done.returncode, done.stdout, done.stderr


async def test_kemuctl_clock_shows_the_virtual_clock_and_the_components_timers(
    cluster: Cluster,
) -> None:
    async with Client(cluster.server) as client:
        await client.set_clock_rate(1)

        async def three_sessions() -> clock_pb2.ClockStatus:
            status = await client.clock_status()
            names = sorted(r.component for r in status.sessions)
            assert names == ["kube-controller-manager", "kube-scheduler", "kubelet"], names
            assert all(r.timers > 0 for r in status.sessions), status.sessions
            return status

        await eventually(three_sessions, timeout=20)
    rc, out, err = kemuctl(cluster, "clock", "-o", "json")
    assert rc == 0, err
    shown = json.loads(out)
    assert set(shown) == {"mode", "now", "rate", "timers"}
    assert shown["mode"] == "virtual" and shown["rate"] == 1 and shown["timers"] > 0
    # the clock started at --clock-start, not at the host's time
    assert START_AT <= parse_time(shown["now"], "now").seconds < START_AT + 3600


async def test_at_rate_10_a_pods_30s_grace_period_passes_in_virtual_time(
    cluster: Cluster,
) -> None:
    async with Client(cluster.server) as client:
        await client.set_clock_rate(10)
        ns = await create_namespace(client, "grace")
        name = unique_name("p")
        # (its container ignores SIGTERM: it lingers through the whole grace period)
        await client.create(make_pod(name).namespace(ns).annotation(SHUTDOWN, "never").obj())

        await eventually(lambda: _running(client, name, ns), timeout=20)
        asked = (await client.clock_status()).now
        deleting = await client.delete(types_pb2.Pod, name, ns)
        deadline = deleting.metadata.deletion_timestamp.ToNanoseconds() / 1e9
        assert deadline == pytest.approx(asked + 30, abs=2.0)  # virtual seconds

        # 30 s of grace at 10x: within this deadline only if the kubelet waits virtual time
        await eventually(lambda: _gone(client, name, ns), timeout=20)
        # (the clock's float holds 1e9 s to ~0.2 us: a microsecond's tolerance)
        assert (await client.clock_status()).now >= deadline - 1e-6
        await client.set_clock_rate(1)


async def test_a_held_clock_stands_still_while_writes_and_scheduling_go_on(
    cluster: Cluster,
) -> None:
    async with Client(cluster.server) as client:
        held = await client.set_clock_rate(0)
        now = held.segment.base_virtual
        ns = await create_namespace(client, "held")
        name = unique_name("p")
        created = await client.create(make_pod(name).namespace(ns).obj())
        assert created.metadata.creation_timestamp.ToNanoseconds() / 1e9 == pytest.approx(
            now, abs=0.001
        )

        async def bound() -> types_pb2.Pod:
            pod = await client.get(types_pb2.Pod, name, ns)
            assert pod.spec.node_name == "n1", "not bound yet"
            return pod

        pod = await eventually(bound, timeout=20)
        scheduled = [c for c in pod.status.conditions if c.type == "PodScheduled"]
        assert scheduled and scheduled[0].last_transition_time.ToNanoseconds() / 1e9 == (
            pytest.approx(now, abs=0.001)
        )
        assert (await client.clock_status()).now == now
        await client.set_clock_rate(1)


async def test_the_clock_outlives_an_apiserver_restart(
    kemu_cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = kemu_cluster_factory(clock=ClockMode.VIRTUAL)
    cluster.start_etcd()
    apiserver = cluster.start_apiserver(extra_args=["--clock-start", START])
    async with Client(cluster.server) as client:
        held_at = (await client.set_clock_rate(0)).segment.base_virtual
    assert START_AT <= held_at < START_AT + 60
    apiserver.kill()
    apiserver.start()
    apiserver.wait_ready()
    async with Client(cluster.server) as client:
        status = await client.clock_status()
    assert status.mode == "virtual"
    assert (status.now, status.segment.rate) == (held_at, 0.0)  # neither reset nor moved


async def test_at_rate_max_the_clock_moves_on_after_an_apiserver_restart(
    kemu_cluster_factory: Callable[..., Cluster],
) -> None:
    """The components in session made calls to the apiserver that is gone and received its
    watch events: the restarted one counts what reaches it only (the calls from the first
    one it receives, the events of its own incarnation). It held the clock for ever."""
    cluster = kemu_cluster_factory(clock=ClockMode.VIRTUAL)
    cluster.start_etcd()
    apiserver = cluster.start_apiserver()
    cluster.start_kubelet("n1")
    cluster.start_scheduler()
    cluster.start_controllermanager()
    async with Client(cluster.server) as client:
        await client.set_clock_rate(0)
        before = (await client.clock_status()).now
        assert (await client.advance_clock(30, timeout=30)).now == pytest.approx(before + 30)
    apiserver.kill()
    apiserver.start()
    apiserver.wait_ready()
    async with Client(cluster.server) as client:
        before = (await client.clock_status()).now
        assert (await client.advance_clock(30, timeout=30)).now == pytest.approx(before + 30)
        await client.set_clock_rate(math.inf)
        ns = await create_namespace(client, "restarted")
        await client.create(make_pod("p").namespace(ns).obj())

        async def bound() -> bool:
            pod = await client.get(types_pb2.Pod, "p", ns)
            assert pod.spec.node_name == "n1", "not bound yet"
            return True

        await eventually(bound, timeout=20)
        await client.set_clock_rate(1)


async def test_a_virtual_time_component_refuses_a_real_time_apiserver(
    kemu_cluster_factory: Callable[..., Cluster], tmp_path: Path
) -> None:
    cluster = kemu_cluster_factory(check_exits=False)
    cluster.start_etcd()
    cluster.start_apiserver()
    rc, out, err = kemuctl(cluster, "clock", "-o", "json")
    assert rc == 0, err
    assert set(json.loads(out)) == {"mode", "now"} and json.loads(out)["mode"] == "real"
    rc, out, err = kemuctl(cluster, "clock", "rate", "5")
    assert rc == 1 and "the cluster clock is real time" in err
    scheduler = cluster.start_scheduler(extra_args=["--clock", "virtual"], wait=False)

    def exited() -> bool:
        assert not scheduler.running, "still running"
        return True

    await eventually(exited)
    assert scheduler.returncode not in (0, None)
    assert "--clock virtual: the cluster clock is real time" in scheduler.logs()


CLOUD = """
nodeGroups:
- name: pool-a
  maxSize: 2
  template:
    capacity: {cpu: "2", memory: 4Gi, pods: "20"}
"""


async def test_the_clouds_instances_follow_the_cluster_clock(
    kemu_cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = kemu_cluster_factory(clock=ClockMode.VIRTUAL)
    cluster.start_etcd()
    cluster.start_apiserver(extra_args=["--clock-start", START])
    cluster.start_cloud(CLOUD)
    async with open_clients(cluster) as (api, provider):
        await provider.increase_size("pool-a", 1)

        async def instance_kubelet_in_session() -> clock_pb2.ClockStatus:
            status = await api.clock_status()
            names = sorted(r.component for r in status.sessions)
            assert names == ["cloud", "kubelet"], names
            return status

        await eventually(instance_kubelet_in_session, timeout=30)

        async def registered() -> types_pb2.Node | None:
            # (the kubelet joins the clock's session before it registers its node)
            nodes = (await api.list_all(types_pb2.Node)).items
            return nodes[0] if nodes else None

        node = await eventually(registered, timeout=30)
        assert node is not None
        created = node.metadata.creation_timestamp.seconds
        assert START_AT <= created < START_AT + 3600  # written on the virtual clock


async def test_at_rate_max_time_jumps_to_each_timer_and_a_grace_period_passes(
    cluster: Cluster,
) -> None:
    async with Client(cluster.server) as client:
        await client.set_clock_rate(math.inf)
        shown = json.loads(kemuctl(cluster, "clock", "-o", "json")[1])
        assert shown["rate"] == "max"
        ns = await create_namespace(client, "max")
        name = unique_name("p")
        # (its container ignores SIGTERM: it lingers through the whole grace period)
        await client.create(make_pod(name).namespace(ns).annotation(SHUTDOWN, "never").obj())

        await eventually(lambda: _running(client, name, ns), timeout=20)
        deleting = await client.delete(types_pb2.Pod, name, ns)
        deadline = deleting.metadata.deletion_timestamp.ToNanoseconds() / 1e9

        await eventually(lambda: _gone(client, name, ns), timeout=20)
        # (the clock's float holds 1e9 s to ~0.2 us: a microsecond's tolerance)
        assert (await client.clock_status()).now >= deadline - 1e-6
        await client.set_clock_rate(1)


async def test_advance_runs_the_cluster_for_the_duration_then_holds(cluster: Cluster) -> None:
    async with Client(cluster.server) as client:
        await client.set_clock_rate(0)
        before = (await client.clock_status()).now
        rc, out, err = kemuctl(cluster, "clock", "advance", "3m", "-o", "json")
        assert rc == 0, err
        shown = json.loads(out)
        assert shown["rate"] == 0
        held = (await client.clock_status()).now
        assert held == pytest.approx(before + 180, abs=0.001)
        # the kubelet ran all along: its node lease renewed within its 10 s period of the end,
        # and the node monitor (50 s grace, passed three times over) never saw it silent
        lease = await client.get(types_pb2.Lease, "n1", "kube-node-lease")
        assert lease.spec.renew_time.ToNanoseconds() / 1e9 >= held - 11
        node = await client.get(types_pb2.Node, "n1")
        ready = [c for c in node.status.conditions if c.type == "Ready"]
        assert ready and ready[0].status == "True"
        await client.set_clock_rate(1)


async def test_time_goes_on_while_a_component_is_frozen(cluster: Cluster) -> None:
    """A SIGSTOPped scheduler cannot answer the clock's probes: the event-driven clock goes
    on without it (as time does for a paused process), and counts it again once resumed."""
    scheduler = cluster.processes["scheduler"]
    async with Client(cluster.server) as client:
        await client.set_clock_rate(0)
        before = (await client.clock_status()).now
        scheduler.pause()
        try:
            done = await client.advance_clock(60, timeout=60)
        finally:
            scheduler.resume()
        assert done.now == pytest.approx(before + 60, abs=0.001)

        # resumed, it schedules again with the clock at rate max
        await client.set_clock_rate(math.inf)
        ns = await create_namespace(client, "frozen")
        name = unique_name("p")
        await client.create(make_pod(name).namespace(ns).obj())

        async def bound() -> bool:
            pod = await client.get(types_pb2.Pod, name, ns)
            assert pod.spec.node_name == "n1", "not bound yet"
            return True

        await eventually(bound, timeout=20)
        await client.set_clock_rate(1)


async def test_at_rate_max_the_clock_does_not_jump_past_a_booting_kubelet(
    cluster: Cluster,
) -> None:
    """The harness announces a component it starts (Clock.ExpectClockSession): until the new
    kubelet's session answers idle and ready, its boot is pending work, and the clock at rate
    max, which would otherwise serve n1's lease and the node monitor's timers meanwhile,
    holds; once it is ready, the clock runs again."""
    async with Client(cluster.server) as client:
        await client.set_clock_rate(0)
        try:
            # (announced while the clock holds, so that no jump comes before it)
            cluster.start_kubelet("n2", wait=False)
            await client.set_clock_rate(math.inf)
            held = (await client.clock_status()).now

            async def registered() -> types_pb2.Node:
                try:
                    return await client.get(types_pb2.Node, "n2")
                except NotFound:
                    raise AssertionError("n2 is not registered yet") from None

            node = await eventually(registered, timeout=30)
            created = node.metadata.creation_timestamp.seconds  # (whole seconds, as upstream)
            assert created <= held < created + 1, (held, created)
            cluster.processes["kubelet-n2"].wait_ready(timeout=30)

            async def running_again() -> bool:
                assert (await client.clock_status()).now > held + 1, "the clock holds"
                return True

            await eventually(running_again, timeout=10)
        finally:
            await client.set_clock_rate(1)
            cluster.terminate("kubelet-n2")
            await client.delete(types_pb2.Node, "n2")


async def test_a_kubelet_frozen_before_its_boot_was_seen_does_not_hold_the_clock(
    cluster: Cluster,
) -> None:
    """A component announced as booting holds the clock until its session answers a probe
    idle; one frozen (SIGSTOP) before any probe saw it (started while the clock ran at rate
    1, where nothing probes) is left out as every frozen one is, its announcement with it,
    rather than holding the clock for the announcement's ttl (here ten minutes)."""
    async with Client(cluster.server) as client:
        await client.set_clock_rate(1)
        kubelet = cluster.start_kubelet("n3")
        try:
            kubelet.pause()
            token = (kubelet.env or {})[BOOT_TOKEN_ENV]
            await client.expect_clock_session(token, 600)
            await client.set_clock_rate(0)
            before = (await client.clock_status()).now
            done = await client.advance_clock(60, timeout=60)
            assert done.now == pytest.approx(before + 60, abs=0.001)
        finally:
            kubelet.resume()
            await client.set_clock_rate(1)
            cluster.terminate("kubelet-n3")
            await client.delete(types_pb2.Node, "n3")


def _node_watchers(cluster: Cluster) -> float:
    return sample(cluster, "apiserver", "apiserver_registered_watchers", {"resource": "nodes"})


async def test_time_goes_on_while_a_frozen_kubelets_watch_waits_to_be_read(
    cluster: Cluster,
) -> None:
    """A frozen kubelet reads none of its watches: once gRPC's flow control windows and the
    sockets' buffers are full (6 MB of changes to its Node), the apiserver's frames for it
    wait in its watcher's buffer. They are no work of the cluster's: time goes on without
    it (the frames wait for it, and its watch is still there when it is resumed), rather
    than holding the clock until the watch is ended."""
    kubelet = cluster.processes["kubelet-n1"]
    async with Client(cluster.server) as client:
        await client.set_clock_rate(0)
        watching = _node_watchers(cluster)
        kubelet.pause()
        try:
            for i in range(300):
                big = {"kemu.test/big": str(i % 10) * 20_000}
                await client.patch(types_pb2.Node, "n1", {"metadata": {"annotations": big}})
            before = (await client.clock_status()).now
            done = await client.advance_clock(60, timeout=60)
            assert done.now == pytest.approx(before + 60, abs=0.001)
            assert _node_watchers(cluster) == watching, "a watch of the frozen kubelet ended"
        finally:
            kubelet.resume()
            await client.set_clock_rate(1)
            removed = {"metadata": {"annotations": {"kemu.test/big": None}}}
            await client.patch(types_pb2.Node, "n1", removed)


async def test_a_component_that_fails_to_start_does_not_hold_the_clock(cluster: Cluster) -> None:
    """The harness withdraws the announcement of a component whose start failed: the clock
    does not wait out the announcement's ttl (the harness's 30 s startup timeout)."""
    async with Client(cluster.server) as client:
        await client.set_clock_rate(0)
        with pytest.raises(ProcessStartError):
            cluster.start_component(
                "scheduler", "bad-scheduler", ["--server", cluster.server, "--no-such-flag"]
            )
        before = (await client.clock_status()).now
        done = await client.advance_clock(30, timeout=15)
        assert done.now == pytest.approx(before + 30, abs=0.001)
        await client.set_clock_rate(1)


async def test_rate_max_is_refused_while_a_second_apiserver_serves_the_cluster(
    cluster: Cluster,
) -> None:
    """The event-driven clock counts the work of its apiserver's sessions only: with another
    apiserver serving the cluster, rate max and advance are refused (a scaled rate is not),
    and once that apiserver is gone they work again."""
    second = cluster.start_apiserver(name="apiserver-2")
    try:
        async with Client(cluster.server) as client:

            async def refused() -> str:
                rc, _, err = kemuctl(cluster, "clock", "rate", "max")
                assert rc != 0, "rate max accepted"
                return err

            err = await eventually(refused, timeout=15)
            assert "needs a cluster served by one apiserver: 1 other" in err, err
            assert len(err.strip().splitlines()) == 1, err
            rc, _, err = kemuctl(cluster, "clock", "rate", "5")
            assert rc == 0, err
            await client.set_clock_rate(1)
    finally:
        cluster.terminate(second.name)
    rc, _, err = kemuctl(cluster, "clock", "advance", "1s")
    assert rc == 0, err
    async with Client(cluster.server) as client:
        await client.set_clock_rate(1)

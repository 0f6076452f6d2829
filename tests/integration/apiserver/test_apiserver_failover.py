"""Two apiservers on one etcd, and a scheduler and kubelets given both addresses
(--server a,b): while one apiserver is SIGKILLed and restarted, then the other, the components
fail over and keep binding and running pods."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.errors import AlreadyExists, Unavailable
from kemu.testing import eventually, make_pod
from kemu.testing.cluster import Cluster
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


async def _all_running(client: Client, ns: str, names: list[str], timeout: float) -> dict[str, str]:  # noqa: ASYNC109
    """The node of every pod of `names`, once each is bound and Running."""

    async def running() -> dict[str, str]:
        pods = {p.metadata.name: p for p in (await client.list_all(types_pb2.Pod, ns)).items}
        waiting = [
            n
            for n in names
            if n not in pods or not pods[n].spec.node_name or pods[n].status.phase != "Running"
        ]
        assert not waiting, f"not bound and running yet: {waiting}"
        return {n: p.spec.node_name for n, p in pods.items()}

    return await eventually(running, timeout=timeout, interval=0.3)


async def test_components_given_both_apiservers_keep_working_while_one_is_killed(
    kemu_cluster_factory: Callable[[], Cluster],
) -> None:
    cluster = kemu_cluster_factory()
    cluster.start_etcd()
    cluster.start_apiserver(name="apiserver-a")
    cluster.start_apiserver(name="apiserver-b")
    cluster.component_server = cluster.servers
    assert cluster.servers.count(",") == 1
    cluster.start_scheduler()
    for node in ("n1", "n2"):
        cluster.start_kubelet(node)
    argv = cluster.processes["scheduler"].argv
    assert argv[argv.index("--server") + 1] == cluster.servers
    async with Client(cluster.servers, timeout=10.0) as client:
        ns = await create_namespace(client, "failover")
        created: list[str] = []

        async def wave(prefix: str, count: int) -> None:
            for i in range(count):
                name = f"{prefix}-{i}"
                pod = make_pod(name).namespace(ns).req(cpu="10m").obj()

                async def create(pod: types_pb2.Pod = pod) -> bool:
                    # A write in flight when its apiserver dies fails Unavailable (the client
                    # retries only reads); a user retries it, as here.
                    try:
                        await client.create(pod)
                    except AlreadyExists:
                        pass  # the first attempt went through
                    except Unavailable as e:
                        raise AssertionError(f"create {pod.metadata.name}: {e}") from None
                    return True

                await eventually(create, timeout=15, interval=0.2)
                created.append(name)

        await wave("before", 4)
        first_nodes = await _all_running(client, ns, created, timeout=30)
        for victim in ("apiserver-a", "apiserver-b"):
            cluster.kill(victim)
            # Only the other apiserver serves: the components must have failed over to it.
            await wave(f"without-{victim}", 6)
            first_nodes |= await _all_running(client, ns, created, timeout=30)
            await anyio.to_thread.run_sync(cluster.restart, victim)
        await wave("after", 4)
        nodes = await _all_running(client, ns, created, timeout=30)
        # Nothing was re-bound: every pod kept its first node.
        assert len(nodes) == len(created) == 20
        assert {n: nodes[n] for n in first_nodes} == first_nodes
    for name in ("scheduler", "kubelet-n1", "kubelet-n2"):
        assert cluster.processes[name].running, f"{name} died"
        assert cluster.processes[name].starts == 1

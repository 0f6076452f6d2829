"""A watch whose client stops reading (a frozen process: SIGSTOP) and then goes away: the
apiserver's writes to it wait on the transport until the client's connection ends, and the
watch then ends in its own call, its watcher gone from apiserver_registered_watchers and
nothing left for the event loop to close later (the failure this guards against printed
"Task exception was never retrieved ... created in a different Context" in the apiserver's
log, when the event loop's finalizer closed the watch's generator in a task of its own)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kemu.client.client import Client
from kemu.testing import Cluster, eventually, make_pod
from kemu.testing.namespaces import create_namespace
from tests.integration.autoscaler.autoscaler_env import sample

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

PODS = 300
ANNOTATION_BYTES = 20_000
"""PODS such pods (6 MB) fill what the kubelet's pod watch can hold unread (gRPC's flow
control windows and the sockets' buffers): the apiserver's write waits on the client."""


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with Cluster(tmp_path) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_kubelet("n1")
        yield c


def _pod_watchers(cluster: Cluster) -> float:
    return sample(cluster, "apiserver", "apiserver_registered_watchers", {"resource": "pods"})


async def test_a_watch_whose_frozen_client_goes_away_ends_in_its_own_call(
    cluster: Cluster,
) -> None:
    watching = _pod_watchers(cluster)
    assert watching >= 1, "the kubelet watches its pods"
    async with Client(cluster.server) as client:
        ns = await create_namespace(client, "unread")
        cluster.pause("kubelet-n1")
        big = "x" * ANNOTATION_BYTES
        for i in range(PODS):
            pod = make_pod(f"p{i}").namespace(ns).node("n1").annotation("big", big).obj()
            await client.create(pod)
    cluster.kill("kubelet-n1")  # (SIGKILL reaches a stopped process: its sockets close)

    def watch_ended() -> bool:
        assert _pod_watchers(cluster) < watching
        return True

    await eventually(watch_ended, timeout=30, interval=0.2)
    log = cluster.component("apiserver").logs()
    assert "never retrieved" not in log, log[-4000:]
    assert "different Context" not in log, log[-4000:]

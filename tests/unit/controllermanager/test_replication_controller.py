"""The replicationcontroller controller: the ReplicaSet controller run on
ReplicationControllers (S-API-RC-*)."""

from __future__ import annotations

import anyio
import pytest

from controllermanager.replicaset import ReplicaSetController
from controllermanager.replication_controller import (
    REPLICATION_CONTROLLERS,
    to_replica_set,
    with_status,
)
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.machinery.defaults import set_defaults
from kemu.machinery.owners import controller_of
from kemu.machinery.printers import TABLES
from kemu.testing.eventually import eventually
from kemu.testing.fake_time import wait_until

pytestmark = pytest.mark.anyio


def rc(name: str = "web", replicas: int = 3) -> types_pb2.ReplicationController:
    obj = types_pb2.ReplicationController()
    obj.metadata.name, obj.metadata.namespace, obj.metadata.uid = name, "default", f"uid-{name}"
    obj.spec.replicas = replicas
    obj.spec.template.metadata.labels["app"] = name
    obj.spec.template.spec.containers.add(name="c", image="nginx")
    set_defaults(obj)
    return obj


def pods(fake: FakeClient) -> list[types_pb2.Pod]:
    return [
        o
        for (resource, _, _), o in fake._objects.items()
        if resource == "pods"
        and isinstance(o, types_pb2.Pod)
        and not o.metadata.HasField("deletion_timestamp")
    ]


def test_s_api_rc_1_defaults_selector_and_labels_from_the_template() -> None:
    obj = types_pb2.ReplicationController()
    obj.spec.template.metadata.labels["app"] = "x"
    set_defaults(obj)
    assert dict(obj.spec.selector) == {"app": "x"}
    assert dict(obj.metadata.labels) == {"app": "x"}
    assert obj.spec.replicas == 1


def test_s_api_rc_2_conversion_round_trips_the_status() -> None:
    obj = rc()
    rs = to_replica_set(obj)
    assert dict(rs.spec.selector.match_labels) == {"app": "web"}
    status = types_pb2.ReplicaSetStatus(replicas=2, ready_replicas=1, observed_generation=4)
    back = with_status(obj, status)
    assert isinstance(back, types_pb2.ReplicationController)
    assert (back.status.replicas, back.status.ready_replicas) == (2, 1)
    row = TABLES["ReplicationController"].row(back, 0.0, True)
    assert row[:4] == ["web", "3", "2", "1"] and row[-1] == "app=web"


async def test_s_api_rc_3_controller_creates_pods_owned_by_the_rc_and_scales_down() -> None:
    clock = FakeClock()
    fake = FakeClient(rc(), clock=clock)
    informers = InformerFactory(fake, clock=clock)
    ctrl = ReplicaSetController(fake, informers, clock, kind=REPLICATION_CONTROLLERS)
    assert ctrl.name == "replicationcontroller"
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(ctrl.run)
        await wait_until(lambda: len(pods(fake)) == 3)
        for p in pods(fake):
            ref = controller_of(p)
            assert ref is not None
            assert (ref.kind, ref.api_version, ref.name) == ("ReplicationController", "v1", "web")
            assert p.metadata.generate_name == "web-"

        async def status_replicas() -> bool:
            got = await fake.get(types_pb2.ReplicationController, "web", "default")
            return got.status.replicas == 3

        await eventually(status_replicas, timeout=2, interval=0.01)
        await fake.patch(
            types_pb2.ReplicationController, "web", {"spec": {"replicas": 1}}, "default"
        )
        await wait_until(lambda: len(pods(fake)) == 1)
        tg.cancel_scope.cancel()

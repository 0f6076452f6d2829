"""The status ConfigMap kube-system/cluster-autoscaler-status: the document built from a loop's
state (upstream's clusterstate GetStatus shape) and its writer on the fake client."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from autoscaler.backoff import Backoff
from autoscaler.clusterstate import GroupState
from autoscaler.scaledown.scale_down import ScaleDownSummary, UnneededNode
from autoscaler.status import (
    LAST_UPDATED_ANNOTATION,
    STATUS_CONFIGMAP,
    STATUS_KEY,
    StatusWriter,
    build_status,
    go_time,
)
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.component.clock import FakeClock
from kemu.machinery.errors import Conflict, Unavailable
from kemu.testing.builders import make_node
from tests.unit.autoscaler.fakes import FakeGroup, template
from tests.unit.autoscaler.test_static_autoscaler import Env, unschedulable

pytestmark = pytest.mark.anyio

NOW = 1_700_000_000.0


def node(name: str, *, ready: bool = True, age: float = 3600.0) -> types_pb2.Node:
    b = make_node(name).capacity(cpu="2", memory="4Gi", pods=20)
    n = (b.ready() if ready else b).obj()
    n.metadata.creation_timestamp.seconds = int(NOW - age)
    return n


def backoff() -> Backoff:
    return Backoff(initial=300, maximum=1800, reset_timeout=10800)


def test_go_time_is_upstreams_last_update_format() -> None:
    assert go_time(NOW) == "2023-11-14 22:13:20 +0000 UTC"
    assert go_time(NOW + 0.25) == "2023-11-14 22:13:20.25 +0000 UTC"


def test_status_counts_nodes_per_group_and_shows_a_scale_up_in_progress() -> None:
    a1, a2 = node("a-1"), node("a-2", ready=False, age=30)
    static = node("static", ready=False)
    groups = {
        "pool-a": GroupState("pool-a", 0, 5, target=3, nodes=[a1, a2]),
        "pool-b": GroupState("pool-b", 1, 2, target=1, nodes=[]),
    }
    doc: Any = build_status(groups, [a1, a2, static], backoff(), now=NOW, monotonic=0)
    assert doc["autoscalerStatus"] == "Running"
    assert doc["time"] == go_time(NOW)
    wide = doc["clusterWide"]
    assert wide["health"]["status"] == "Healthy"
    assert wide["health"]["nodeCounts"] == {
        "registered": {
            "total": 3,
            "ready": 1,
            "notStarted": 1,  # a-2: not Ready, registered 30 s ago
            "unready": {"total": 1, "resourceUnready": 0},  # static: not Ready for an hour
        },
        "longUnregistered": 0,
        "unregistered": 2,  # one upcoming in each group
    }
    assert wide["scaleUp"]["status"] == "InProgress"
    assert wide["scaleDown"] == {"status": "NoCandidates"}  # scale-down never probed
    a, b = doc["nodeGroups"]
    assert a["name"] == "pool-a"
    assert (a["health"]["cloudProviderTarget"], a["health"]["minSize"], a["health"]["maxSize"]) == (
        3,
        0,
        5,
    )
    assert a["health"]["nodeCounts"]["registered"]["total"] == 2
    assert a["health"]["nodeCounts"]["unregistered"] == 1
    assert a["scaleUp"]["status"] == "InProgress"
    assert a["scaleUp"]["lastProbeTime"] == "2023-11-14T22:13:20Z"
    assert b["scaleUp"]["status"] == "InProgress"


def test_a_backed_off_group_shows_the_error_code_and_message() -> None:
    bo = backoff()
    bo.backoff("stuck", "OUT_OF_CAPACITY: no room", now=10, code="OUT_OF_CAPACITY")
    groups = {"stuck": GroupState("stuck", 0, 2, target=0)}
    doc: Any = build_status(groups, [], bo, now=NOW, monotonic=20)
    (g,) = doc["nodeGroups"]
    assert g["scaleUp"]["status"] == "Backoff"
    assert g["scaleUp"]["backoffInfo"] == {
        "errorCode": "OUT_OF_CAPACITY",
        "errorMessage": "OUT_OF_CAPACITY: no room",
    }
    assert doc["clusterWide"]["scaleUp"]["status"] == "NoActivity"
    # Once the back-off is over: no activity.
    doc = build_status(groups, [], bo, now=NOW, monotonic=10 + 301)
    assert doc["nodeGroups"][0]["scaleUp"]["status"] == "NoActivity"


def test_scale_down_summary_gives_candidates_per_group_and_being_deleted() -> None:
    a1, a2, a3 = node("a-1"), node("a-2"), node("a-3")
    groups = {"pool-a": GroupState("pool-a", 0, 5, target=3, nodes=[a1, a2, a3])}
    summary = ScaleDownSummary(
        unneeded=(
            UnneededNode("a-1", "pool-a", NOW - 60, 0.1, False),
            UnneededNode("a-2", "pool-a", NOW - 5, 0.0, True),
            UnneededNode("elsewhere", "pool-b", NOW, 0.2, False),
        ),
        deleting=("a-3",),
        last_scale_down_time=NOW - 600,
        probe_time=NOW - 1,
    )
    doc: Any = build_status(
        groups, [a1, a2, a3], backoff(), now=NOW, monotonic=0, scale_down=summary
    )
    assert doc["clusterWide"]["scaleDown"] == {
        "status": "CandidatesPresent",
        "candidates": 3,
        "lastProbeTime": "2023-11-14T22:13:19Z",
        "lastTransitionTime": "2023-11-14T22:13:19Z",
    }
    (g,) = doc["nodeGroups"]
    assert g["scaleDown"]["candidates"] == 2
    registered = g["health"]["nodeCounts"]["registered"]
    assert (registered["ready"], registered["beingDeleted"]) == (2, 1)


def test_unready_nodes_above_upstreams_thresholds_make_the_cluster_unhealthy() -> None:
    nodes = [node(f"n{i}", ready=False) for i in range(4)] + [node("ok")]
    groups = {"g": GroupState("g", 0, 9, target=5, nodes=nodes)}
    doc: Any = build_status(groups, nodes, backoff(), now=NOW, monotonic=0)
    assert doc["clusterWide"]["health"]["status"] == "Unhealthy"
    assert doc["nodeGroups"][0]["health"]["status"] == "Unhealthy"
    assert doc["nodeGroups"][0]["scaleUp"]["status"] == "Unhealthy"


def test_last_transition_time_is_kept_while_the_status_holds() -> None:
    groups = {"g": GroupState("g", 0, 3, target=1)}
    first: Any = build_status(groups, [], backoff(), now=NOW, monotonic=0)
    second: Any = build_status(groups, [], backoff(), now=NOW + 60, monotonic=0, previous=first)
    up = second["nodeGroups"][0]["scaleUp"]
    assert up["status"] == "InProgress"
    assert up["lastProbeTime"] == "2023-11-14T22:14:20Z"
    assert up["lastTransitionTime"] == "2023-11-14T22:13:20Z"
    done = {"g": GroupState("g", 0, 3, target=1, nodes=[node("g-0")])}
    third: Any = build_status(done, [], backoff(), now=NOW + 90, monotonic=0, previous=second)
    up = third["nodeGroups"][0]["scaleUp"]
    assert up["status"] == "NoActivity"
    assert up["lastTransitionTime"] == "2023-11-14T22:14:50Z"
    assert third["clusterWide"]["health"]["lastTransitionTime"] == "2023-11-14T22:13:20Z"


async def read(client: FakeClient) -> tuple[types_pb2.ConfigMap, dict[str, Any]]:
    cm = await client.get(types_pb2.ConfigMap, STATUS_CONFIGMAP, "kube-system")
    return cm, yaml.safe_load(cm.data[STATUS_KEY])


async def test_writer_creates_then_updates_the_configmap_with_the_annotation() -> None:
    clock = FakeClock(now=NOW)
    client = FakeClient(clock=clock)
    writer = StatusWriter(client, clock, lambda: [])
    await writer.initializing()
    cm, doc = await read(client)
    assert (cm.metadata.namespace, cm.metadata.name) == ("kube-system", STATUS_CONFIGMAP)
    assert doc == {"time": go_time(NOW), "autoscalerStatus": "Initializing"}
    assert cm.metadata.annotations[LAST_UPDATED_ANNOTATION] == go_time(NOW)
    clock.advance(10)
    await writer.write({"g": GroupState("g", 0, 3, target=0)}, backoff())
    cm, doc = await read(client)
    assert doc["autoscalerStatus"] == "Running"
    assert list(doc) == ["time", "autoscalerStatus", "clusterWide", "nodeGroups"]
    assert cm.metadata.annotations[LAST_UPDATED_ANNOTATION] == go_time(NOW + 10)
    assert client.verbs("configmaps").count("create") == 1


async def test_writer_retries_a_conflict_and_survives_an_outage() -> None:
    clock = FakeClock(now=NOW)
    client = FakeClient(clock=clock)
    writer = StatusWriter(client, clock, lambda: [])
    await writer.initializing()
    client.fail("update", Conflict("the object has been modified"), times=1)
    await writer.write({}, backoff())
    assert (await read(client))[1]["autoscalerStatus"] == "Running"
    assert writer.last is not None
    client.fail("update", Unavailable("apiserver down"), resource="configmaps")
    clock.advance(5)
    await writer.write({}, backoff())  # logged, not raised: the next loop writes again
    assert (await read(client))[1]["time"] == go_time(NOW)
    client.heal()
    await writer.write({}, backoff())
    assert (await read(client))[1]["time"] == go_time(NOW + 5)


async def test_the_loop_writes_the_status_after_a_scale_up() -> None:
    clock = FakeClock(now=NOW)
    client = FakeClient(clock=clock)
    env = Env(
        FakeGroup("pool-a", 0, 3, template("pool-a")),
        pods=[unschedulable("p").obj()],
        status_client=client,
    )
    await env.loop()
    _, doc = await read(client)
    (g,) = doc["nodeGroups"]
    assert g["health"]["cloudProviderTarget"] == 1
    assert g["scaleUp"]["status"] == "InProgress"
    env.nodes = env.cloud.register("pool-a")
    await env.loop()
    _, doc = await read(client)
    assert doc["nodeGroups"][0]["scaleUp"]["status"] == "NoActivity"
    assert doc["clusterWide"]["health"]["nodeCounts"]["registered"]["ready"] == 1

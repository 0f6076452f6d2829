"""kemu.client.pod_status: a condition write keeps what others wrote meanwhile."""

from __future__ import annotations

from typing import Any

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.pod_status import condition_change, patch_pod_status
from kemu.machinery.convert import message_to_dict
from kemu.testing.builders import make_pod

pytestmark = pytest.mark.anyio


def _add(condition_type: str) -> Any:
    def change(current: types_pb2.Pod) -> dict[str, Any] | None:
        if any(c.type == condition_type for c in current.status.conditions):
            return None
        conditions = [message_to_dict(c) for c in current.status.conditions]
        conditions.append({"type": condition_type, "status": "False"})
        return {"conditions": conditions}

    return change


async def test_a_stale_copy_is_reread_and_the_other_writers_condition_kept() -> None:
    async with FakeClient() as c:
        stale = await c.create(make_pod("p").obj())
        other = await c.get(types_pb2.Pod, "p", "default")
        other.status.conditions.add(type="Ready", status="False")
        await c.update_status(other)
        assert await patch_pod_status(c, stale, _add("PodScheduled"))
        got = await c.get(types_pb2.Pod, "p", "default")
        assert [x.type for x in got.status.conditions] == ["Ready", "PodScheduled"]


async def test_a_pod_replaced_by_a_namesake_is_left_alone() -> None:
    async with FakeClient() as c:
        old = await c.create(make_pod("p").obj())
        await c.delete(types_pb2.Pod, "p", "default")
        await c.create(make_pod("p").obj())
        assert not await patch_pod_status(c, old, _add("PodScheduled"))
        got = await c.get(types_pb2.Pod, "p", "default")
        assert not got.status.conditions


def test_condition_change_writes_the_conditions_whole_and_the_nomination_only_when_it_changes() -> (
    None
):
    pod = make_pod("p").obj()
    pod.metadata.generation = 3
    pod.status.conditions.add(type="Ready", status="True")
    change = condition_change(
        "PodScheduled", "False", "Unschedulable", "no room", now=100.0, tracking=True,
        nominated_node_name="n1",
    )  # fmt: skip
    out: Any = change(pod)
    assert out is not None
    assert [c["type"] for c in out["conditions"]] == ["Ready", "PodScheduled"]
    assert out["conditions"][1]["observedGeneration"] == 3
    assert out["nominatedNodeName"] == "n1"
    # Written: the same change again asks nothing; a new nomination alone is sent alone.
    pod.status.conditions.add().CopyFrom(types_pb2.PodCondition(
        type="PodScheduled", status="False", reason="Unschedulable", message="no room",
        observed_generation=3,
    ))  # fmt: skip
    pod.status.nominated_node_name = "n1"
    assert change(pod) is None
    moved = condition_change(
        "PodScheduled", "False", "Unschedulable", "no room", now=200.0, tracking=True,
        nominated_node_name="",
    )(pod)  # fmt: skip
    assert moved is not None and moved["nominatedNodeName"] is None  # "" clears it
    # Without a nomination to write, only the condition decides.
    target: Any = condition_change(
        "DisruptionTarget", "True", "PreemptionByScheduler", "m", now=1.0, tracking=False
    )(pod)
    assert target is not None and "nominatedNodeName" not in target
    assert [c["type"] for c in target["conditions"]] == [
        "Ready",
        "PodScheduled",
        "DisruptionTarget",
    ]
    assert target["conditions"][2]["lastTransitionTime"] == "1970-01-01T00:00:01Z"
    assert "observedGeneration" not in target["conditions"][2]  # tracking off, none before

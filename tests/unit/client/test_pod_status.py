"""kemu.client.pod_status: a condition write keeps what others wrote meanwhile."""

from __future__ import annotations

from typing import Any

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.pod_status import patch_pod_status
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

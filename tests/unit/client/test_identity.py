from __future__ import annotations

import json

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.identity import RENEW_JITTER, run_identity_heartbeat
from kemu.component.clock import FakeClock
from kemu.machinery.errors import Unavailable
from kemu.testing.fake_time import advance, settle, wait_until

GATES = [
    ("InPlacePodVerticalScaling", True, "GA", True),
    ("SchedulerAsyncPreemption", False, "BETA", False),
]


@pytest.mark.anyio
async def test_the_identity_lease_is_created_and_renewed() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: run_identity_heartbeat(
                fake, "kube-scheduler", "host-1", "1.36", "1.37", GATES, clock=clock
            )
        )
        await wait_until(lambda: "create" in fake.verbs())
        lease = await fake.get(types_pb2.Lease, "kube-scheduler-host-1", "kube-system")
        assert lease.metadata.labels["kemu.io/component"] == "kube-scheduler"
        assert lease.metadata.annotations["kemu.io/emulated-version"] == "1.36"
        assert lease.metadata.annotations["kemu.io/binary-version"] == "1.37"
        assert json.loads(lease.metadata.annotations["kemu.io/feature-gates"]) == [
            {"name": "InPlacePodVerticalScaling", "enabled": True, "stage": "GA", "locked": True},
            {
                "name": "SchedulerAsyncPreemption",
                "enabled": False,
                "stage": "BETA",
                "locked": False,
            },
        ]
        assert lease.spec.holder_identity == "host-1"
        assert lease.spec.lease_duration_seconds == 30
        first = lease.spec.renew_time.seconds

        # every 10 s, each wait up to 4% longer (upstream's lease controller's JitterUntil)
        await advance(clock, 10 * (1 + RENEW_JITTER))
        renewed = await fake.get(types_pb2.Lease, "kube-scheduler-host-1", "kube-system")
        assert renewed.spec.renew_time.seconds == first + 10
        assert fake.verbs("leases").count("update") == 1
        tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_the_heartbeat_survives_a_server_that_is_down() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    fake.fail("get", Unavailable("connection refused"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: run_identity_heartbeat(fake, "kubelet", "n1", "1.37", "1.37", [], clock=clock)
        )
        await advance(clock, 30)
        assert fake.verbs().count("get") > 3
        assert "create" not in fake.verbs()
        fake.heal()
        await advance(clock, 10)
        await wait_until(lambda: "create" in fake.verbs())
        await settle()
        lease = await fake.get(types_pb2.Lease, "kubelet-n1", "kube-system")
        assert lease.spec.holder_identity == "n1"
        tg.cancel_scope.cancel()

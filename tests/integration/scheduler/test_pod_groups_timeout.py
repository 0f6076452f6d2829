"""S-PG-5 (docs/scheduler.md "Pod groups"): a gang's Permit timeout on the virtual clock.

One etcd, one apiserver and a 1.35 scheduler with GenericWorkload and GangScheduling, every
process on the cluster's virtual clock (held by the test, moved with AdvanceClock), so that
GangScheduling's 5 minutes pass at once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from kemu.component.featuregate import GANG_SCHEDULING, GENERIC_WORKLOAD
from kemu.machinery.virtual_time import ClockMode
from kemu.testing import Cluster
from kemu.testing.builders import make_gang_workload
from kemu.testing.invariants import record_pods
from kemu.testing.scenarios import Scenario

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

PROFILE: Final = "gang-1-35-scheduler"
# The wait is what is left of the group's shared deadline: 5m0s for the first member, a little
# less for the next (Go's Duration.String, e.g. "4m59.98s").
TIMEOUT_MESSAGE: Final = re.compile(
    r"rejected due to timeout after waiting (5m0s|4m59(\.\d+)?s) at plugin GangScheduling"
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("pod-groups-timeout")
    config = Path(root) / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        f"profiles:\n- schedulerName: {PROFILE}\n"
    )
    with Cluster(root, clock=ClockMode.VIRTUAL) as c:
        c.start_etcd()
        # 1.35's spec.workloadRef is served by a 1.35 apiserver only.
        c.start_apiserver(
            emulated_version="1.35",
            feature_gates={GENERIC_WORKLOAD: True},
            runtime_config={"scheduling.k8s.io/v1alpha1": "true"},
        )
        c.start_scheduler(
            config=str(config),
            emulated_version="1.35",
            feature_gates={GENERIC_WORKLOAD: True, GANG_SCHEDULING: True},
        )
        yield c


async def test_s_pg_5_permit_timeout_releases_every_member(cluster: Cluster) -> None:
    """Two of three members wait at Permit (nominated) for a third that does not fit; when
    the group's 5 minutes pass each waiting member is rejected at Permit ("rejected due to
    timeout after waiting 5m0s at plugin GangScheduling"), its reservation undone and its
    nominatedNodeName cleared; nothing was bound."""
    async with Scenario.open(cluster, "s-pg-5") as s, record_pods(s.client, s.ns) as history:
        await s.client.set_clock_rate(1)
        await s.bare_node("n1", cpu="500m", memory="1Gi", pods="32")
        await s.client.create(make_gang_workload("w", {"g": 3}, s.ns))
        for name in ("a", "b", "c"):
            pod = s.pod(name, cpu="200m", memory="10").scheduler_name(PROFILE)
            await s.create(pod.workload_ref("w", "g"))

        async def two_nominated() -> set[str]:
            pods = await s.pods()
            waiting = {n for n, p in pods.items() if p.status.nominated_node_name}
            return waiting if len(waiting) == 2 else set()

        waiting = await s.eventually(two_nominated)
        await s.client.set_clock_rate(0)
        await s.client.advance_clock(310)

        async def rejected_at_timeout() -> bool:
            rejected = {
                e.involved_object.name
                for e in await s.events("FailedScheduling")
                if TIMEOUT_MESSAGE.fullmatch(e.message)
            }
            return waiting <= rejected

        await s.eventually(rejected_at_timeout)

        def cleared_after_set(name: str) -> bool:
            """A version with the nomination, then one without (the timeout's failure
            handler); a new attempt of the gang may nominate it again afterwards."""
            seen = False
            for uid in history.uids_of(name, s.ns):
                for v in history.versions[uid]:
                    if v.pod.status.nominated_node_name:
                        seen = True
                    elif seen:
                        return True
            return False

        await s.eventually(lambda: all(cleared_after_set(n) for n in waiting))
        assert all(
            not v.pod.spec.node_name for versions in history.versions.values() for v in versions
        ), "a member of the incomplete gang was bound"

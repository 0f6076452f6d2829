"""The Deployment controller's arithmetic (deployment_util) and the controller on the fake
client, where ReplicaSet statuses are written by the test (no ReplicaSet controller runs)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from controllermanager import deployment_util as util
from controllermanager.deployment.deployment_controller import DeploymentController
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.machinery import apps
from kemu.machinery.convert import timestamp
from kemu.machinery.errors import Conflict
from kemu.testing.builders import make_deployment, make_replica_set
from kemu.testing.fake_time import wait_until

NOW = 1_700_000_000.0


def _rs(
    name: str, replicas: int, available: int | None = None, created: float = 0
) -> types_pb2.ReplicaSet:
    rs = make_replica_set(name).replicas(replicas).obj()
    rs.metadata.uid = name
    rs.metadata.creation_timestamp.CopyFrom(timestamp(NOW - 1000 + created))
    rs.status.replicas = replicas
    rs.status.available_replicas = replicas if available is None else available
    return rs


def test_new_rs_new_replicas_is_bounded_by_the_surge() -> None:
    d = make_deployment("d").replicas(10).rolling_update(3, 2).obj()
    old, new = _rs("old", 10), _rs("new", 0)
    assert util.new_rs_new_replicas(d, [old, new], new) == 3
    old.spec.replicas = 8
    new.spec.replicas = 3
    assert util.new_rs_new_replicas(d, [old, new], new) == 5
    old.spec.replicas = 1
    new.spec.replicas = 9
    assert util.new_rs_new_replicas(d, [old, new], new) == 10  # never above replicas
    assert (
        util.new_rs_new_replicas(make_deployment("d").replicas(4).recreate().obj(), [new], new) == 4
    )


def test_max_scaled_down_keeps_the_minimum_available() -> None:
    d = make_deployment("d").replicas(10).rolling_update(3, 2).obj()
    old, new = _rs("old", 10), _rs("new", 3, available=0)
    # 13 replicas, 8 must stay available, 3 new ones are not available yet.
    assert util.max_scaled_down(d, [old, new], new) == 2
    new.status.available_replicas = 3
    assert util.max_scaled_down(d, [old, new], new) == 5


def test_proportional_scaling_spreads_a_resize_by_the_max_replicas_annotation() -> None:
    d = make_deployment("d").replicas(20).rolling_update(3, 2).obj()  # was 10: max 13, now 23
    old, new = _rs("old", 8, created=0), _rs("new", 5, created=10)
    for rs in (old, new):
        util.set_replicas_annotations(rs, 10, 13)
    sizes, op = util.proportional_sizes(d, [old, new])
    assert op == "up"
    by_name = {rs.metadata.name: size for rs, size in sizes}
    assert sum(by_name.values()) == 23
    assert by_name == {"old": 14, "new": 9}  # 8*23/13 = 14.2, 5*23/13 = 8.8
    d0 = make_deployment("d").replicas(0).obj()
    sizes, op = util.proportional_sizes(d0, [old, new])
    assert op == "down" and {s for _, s in sizes} == {0}


def test_new_rs_annotations_keep_revision_history_on_rollback() -> None:
    d = make_deployment("d").obj()
    d.metadata.annotations["team"] = "a"
    d.metadata.annotations[apps.REVISION_ANNOTATION] = "3"
    rs = _rs("back", 0)
    rs.metadata.annotations[apps.REVISION_ANNOTATION] = "1"
    assert util.set_new_replica_set_annotations(d, rs, 4, exists=True)
    ann = rs.metadata.annotations
    assert (ann[apps.REVISION_ANNOTATION], ann[apps.REVISION_HISTORY_ANNOTATION]) == ("4", "1")
    assert ann["team"] == "a"
    assert not util.set_new_replica_set_annotations(d, rs, 4, exists=True)  # idempotent
    assert not util.set_new_replica_set_annotations(d, rs, 2, exists=True)  # never lowered


def test_status_and_conditions() -> None:
    d = make_deployment("d").replicas(4).rolling_update(1, 1).obj()
    d.metadata.generation = 2
    new, old = _rs("new", 4, available=2), _rs("old", 1, available=1)
    st = util.rollout_status([old, new], new, d, NOW)
    assert (st.replicas, st.updated_replicas, st.available_replicas, st.unavailable_replicas) == (
        5,
        4,
        3,
        2,
    )
    assert st.observed_generation == 2
    conds = {c.type: (c.status, c.reason) for c in st.conditions}
    assert conds["Available"] == ("True", "MinimumReplicasAvailable")  # 3 >= 4 - 1
    assert conds["Progressing"] == ("True", "ReplicaSetUpdated")
    d.status.CopyFrom(st)
    old.spec.replicas = old.status.replicas = old.status.available_replicas = 0
    new.status.available_replicas = 4
    st = util.rollout_status([old, new], new, d, NOW + 1)
    conds = {c.type: (c.status, c.reason) for c in st.conditions}
    assert conds["Progressing"] == ("True", "NewReplicaSetAvailable")
    progressing = util.get_condition(st, "Progressing")
    assert (
        progressing is not None
        and progressing.message == 'ReplicaSet "new" has successfully progressed.'
    )


def test_a_stuck_rollout_times_out() -> None:
    d = make_deployment("d").replicas(2).progress_deadline_seconds(60).obj()
    d.status.conditions.append(
        util.new_condition("Progressing", "True", "ReplicaSetUpdated", "", NOW - 100)
    )
    new = _rs("new", 2, available=0)
    d.status.updated_replicas = 2
    d.status.replicas = 2
    st = util.rollout_status([new], new, d, NOW)
    cond = util.get_condition(st, "Progressing")
    assert cond is not None and (cond.status, cond.reason) == ("False", "ProgressDeadlineExceeded")


@asynccontextmanager
async def running(fake: FakeClient, clock: FakeClock) -> AsyncIterator[DeploymentController]:
    informers = InformerFactory(fake, clock=clock)
    dc = DeploymentController(fake, informers, clock)
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(dc.run)
        yield dc
        tg.cancel_scope.cancel()


def replica_sets(fake: FakeClient) -> dict[str, types_pb2.ReplicaSet]:
    out = {}
    for (resource, _, name), obj in fake._objects.items():
        if resource == "replicasets":
            assert isinstance(obj, types_pb2.ReplicaSet)
            out[name] = obj
    return out


async def settle_replica_sets(fake: FakeClient) -> None:
    """Plays the ReplicaSet controller: every ReplicaSet's pods exist and are available. A
    ReplicaSet the deployment controller changed meanwhile (a Conflict) is read again, as the
    ReplicaSet controller's next sync would."""
    stale = True
    while stale:
        stale = False
        for rs in replica_sets(fake).values():
            if (rs.status.replicas, rs.status.available_replicas) != (rs.spec.replicas,) * 2 or (
                rs.status.observed_generation != rs.metadata.generation
            ):
                st = types_pb2.ReplicaSet()
                st.CopyFrom(rs)
                st.status.replicas = st.status.ready_replicas = rs.spec.replicas
                st.status.available_replicas = rs.spec.replicas
                st.status.observed_generation = rs.metadata.generation
                try:
                    await fake.update_status(st)
                except Conflict:
                    stale = True


@pytest.mark.anyio
async def test_a_rolling_update_steps_within_surge_and_cleans_up_history() -> None:
    clock = FakeClock(now=NOW)
    fake = FakeClient(
        make_deployment("web").replicas(4).rolling_update(1, 1).revision_history_limit(1).obj(),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(lambda: len(replica_sets(fake)) == 1)
        (first,) = replica_sets(fake).values()
        pod_hash = first.spec.template.metadata.labels[apps.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY]
        assert first.metadata.name == f"web-{pod_hash}"
        assert (
            first.spec.selector.match_labels[apps.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY] == pod_hash
        )
        assert first.spec.replicas == 4
        await settle_replica_sets(fake)

        async def complete(image: str) -> bool:
            d = await fake.get(types_pb2.Deployment, "web")
            conds = {c.type: c.reason for c in d.status.conditions}
            return (
                d.status.updated_replicas == d.status.available_replicas == 4
                and d.status.replicas == 4
                and conds.get("Progressing") == "NewReplicaSetAvailable"
                and d.spec.template.spec.containers[0].image == image
            )

        await wait_until(lambda: complete("registry.k8s.io/pause:3.10"))
        for image in ("v2", "v3"):
            await fake.patch(
                types_pb2.Deployment,
                "web",
                {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}},
            )
            for _ in range(40):
                await anyio.sleep(0.01)
                total = sum(rs.spec.replicas for rs in replica_sets(fake).values())
                assert total <= 5  # replicas + maxSurge, at every step
                await settle_replica_sets(fake)
            await wait_until(functools.partial(complete, image))
        d = await fake.get(types_pb2.Deployment, "web")
        assert d.metadata.annotations[apps.REVISION_ANNOTATION] == "3"
        # revisionHistoryLimit 1: the first ReplicaSet was deleted, the second kept at 0.
        await wait_until(lambda: len(replica_sets(fake)) == 2)
        revisions = sorted(apps.revision_of(rs.metadata) for rs in replica_sets(fake).values())
        assert revisions == [2, 3]

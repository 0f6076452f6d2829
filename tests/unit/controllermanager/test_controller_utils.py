"""The shared controller machinery: expectations, deletion ranking, claiming, slow start."""

from __future__ import annotations

from typing import Any

import pytest

from controllermanager.controller_utils import (
    ControllerExpectations,
    ControllerRefManager,
    pod_name_prefix,
    pods_to_delete,
    recheck_owner,
    run_slow_start,
)
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.component.clock import FakeClock
from kemu.machinery.convert import timestamp
from kemu.machinery.errors import Invalid, TooManyRequests
from kemu.machinery.labels import selector_of
from kemu.machinery.owners import controller_of
from kemu.testing.builders import make_pod, make_replica_set

NOW = 1_700_000_000.0


def test_expectations_block_until_observed_and_expire() -> None:
    clock = FakeClock()
    exp = ControllerExpectations(clock, timeout=300)
    assert exp.satisfied("ns/rs")  # none: a new owner or a restarted controller
    exp.expect_creations("ns/rs", 2)
    assert not exp.satisfied("ns/rs")
    exp.creation_observed("ns/rs")
    assert not exp.satisfied("ns/rs")
    exp.creation_observed("ns/rs")
    assert exp.satisfied("ns/rs")
    exp.expect_deletions("ns/rs", ["ns/a", "ns/b"])
    exp.deletion_observed("ns/rs", "ns/a")
    exp.deletion_observed("ns/rs", "ns/a")  # marked for deletion, then gone: counts once
    exp.deletion_observed("ns/rs", "ns/other")  # not one it asked for
    assert exp.pending("ns/rs") == (0, 1)
    assert not exp.satisfied("ns/rs")
    clock.advance(301)
    assert exp.satisfied("ns/rs")  # expired
    exp.delete("ns/rs")
    assert exp.pending("ns/rs") == (0, 0)


def _pod(name: str, **kw: Any) -> types_pb2.Pod:
    b = make_pod(name)
    pod = b.obj()
    pod.metadata.uid = name
    pod.metadata.creation_timestamp.CopyFrom(timestamp(float(kw.get("created", NOW - 3600))))
    pod.spec.node_name = str(kw.get("node", "n1"))
    pod.status.phase = str(kw.get("phase", "Running"))
    if kw.get("ready", True):
        c = pod.status.conditions.add(type="Ready", status="True")
        c.last_transition_time.CopyFrom(timestamp(float(kw.get("ready_at", NOW - 3000))))
    if "restarts" in kw:
        pod.status.container_statuses.add(name="c", restart_count=int(kw["restarts"]))
    if "cost" in kw:
        pod.metadata.annotations["controller.kubernetes.io/pod-deletion-cost"] = str(kw["cost"])
    return pod


def _order(pods: list[types_pb2.Pod], related: list[types_pb2.Pod] | None = None) -> list[str]:
    return [p.metadata.name for p in pods_to_delete(pods, related or pods, len(pods) - 1, NOW)]


def test_deletion_ranking_follows_upstream_order() -> None:
    # 1. unassigned first; 2. Pending < Running; 3. not ready first.
    assert _order([_pod("run"), _pod("unassigned", node="", phase="Pending", ready=False)]) == [
        "unassigned"
    ]
    assert _order([_pod("run"), _pod("pending", phase="Pending", ready=False)]) == ["pending"]
    assert _order([_pod("ready"), _pod("unready", ready=False)]) == ["unready"]
    # 4. lower deletion cost first.
    assert _order([_pod("costly", cost=10), _pod("cheap", cost=-5)]) == ["cheap"]
    # 5. doubled up on a node first (related pods of sibling ReplicaSets count).
    crowded, alone = _pod("crowded", node="n1"), _pod("alone", node="n2")
    sibling = _pod("sibling", node="n1")
    assert _order([alone, crowded], [alone, crowded, sibling]) == ["crowded"]
    # 6. ready for less time first, on a log2 scale (same bucket: by uid).
    assert _order([_pod("old", ready_at=NOW - 10_000), _pod("young", ready_at=NOW - 10)]) == [
        "young"
    ]
    # 7. more restarts first; 8. newer first.
    assert _order([_pod("calm", restarts=0), _pod("flappy", restarts=3)]) == ["flappy"]
    assert _order([_pod("aged", created=NOW - 100_000), _pod("fresh", created=NOW - 5)]) == [
        "fresh"
    ]


def test_pods_to_delete_takes_the_first_diff() -> None:
    pods = [_pod(f"p{i}", ready=i % 2 == 0) for i in range(5)]
    victims = pods_to_delete(pods, pods, 2, NOW)
    assert sorted(p.metadata.name for p in victims) == ["p1", "p3"]  # the unready ones


def test_pod_name_prefix() -> None:
    assert pod_name_prefix("web-abc") == "web-abc-"


@pytest.mark.anyio
async def test_claim_adopts_orphans_keeps_owned_and_releases_non_matching() -> None:
    fake = FakeClient()
    rs = await fake.create(make_replica_set("web").obj())
    ref = types_pb2.OwnerReference(
        api_version="apps/v1", kind="ReplicaSet", name="web", uid=rs.metadata.uid, controller=True
    )
    orphan = await fake.create(make_pod("orphan").labels(app="web").obj())
    owned = make_pod("owned").labels(app="web").obj()
    owned.metadata.owner_references.append(ref)
    owned = await fake.create(owned)
    strayed = make_pod("strayed").labels(app="other").obj()
    strayed.metadata.owner_references.append(ref)
    strayed = await fake.create(strayed)
    foreign = make_pod("foreign").labels(app="web").obj()
    foreign.metadata.owner_references.add(kind="ReplicaSet", name="x", uid="x", controller=True)
    foreign = await fake.create(foreign)
    manager: ControllerRefManager[types_pb2.Pod] = ControllerRefManager(
        fake, rs, selector_of(rs.spec, "selector"), recheck_owner(fake, rs)
    )
    claimed = await manager.claim([orphan, owned, strayed, foreign])
    assert sorted(p.metadata.name for p in claimed) == ["orphan", "owned"]
    adopted = await fake.get(types_pb2.Pod, "orphan")
    got = controller_of(adopted)
    assert got is not None and (got.uid, got.block_owner_deletion) == (rs.metadata.uid, True)
    assert controller_of(await fake.get(types_pb2.Pod, "strayed")) is None  # released


@pytest.mark.anyio
async def test_no_adoption_by_an_owner_being_deleted_or_replaced() -> None:
    fake = FakeClient()
    rs = await fake.create(make_replica_set("web").obj())
    orphan = await fake.create(make_pod("orphan").labels(app="web").obj())
    stale = types_pb2.ReplicaSet()
    stale.CopyFrom(rs)
    stale.metadata.uid = "an-older-uid"
    manager: ControllerRefManager[types_pb2.Pod] = ControllerRefManager(
        fake, stale, selector_of(rs.spec, "selector"), recheck_owner(fake, stale)
    )
    with pytest.raises(Invalid):
        await manager.claim([orphan])
    assert controller_of(await fake.get(types_pb2.Pod, "orphan")) is None


@pytest.mark.anyio
async def test_slow_start_batches_double_and_stop_at_the_first_failing_batch() -> None:
    calls: list[int] = []

    async def ok() -> None:
        calls.append(1)

    assert await run_slow_start(10, ok) == (10, None)
    assert len(calls) == 10
    count = [0]

    async def fails_after_three() -> None:
        count[0] += 1
        if count[0] > 3:
            raise TooManyRequests("quota")

    created, error = await run_slow_start(10, fails_after_three)
    # batches 1, 2 succeed (3 calls); the batch of 4 fails: 7 calls, 3 successes.
    assert (created, count[0]) == (3, 7)
    assert isinstance(error, TooManyRequests)

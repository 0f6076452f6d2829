"""The StatefulSet controller against the fake client: ordered and parallel creation, claims
from the templates, scale-down from the highest ordinal, the retention policy's owner
references, RollingUpdate with partition, OnDelete and the status."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from controllermanager import stateful_set_utils as ssu
from controllermanager.stateful_set import StatefulSetController
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.component.featuregate import FeatureGates
from kemu.component.version import Version
from kemu.machinery import convert, kinds
from kemu.testing.fake_time import settle, wait_until

pytestmark = pytest.mark.anyio

READY: dict[str, Any] = {
    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
}


def make_set(
    name: str = "web",
    *,
    replicas: int = 3,
    policy: str = "",
    claims: tuple[str, ...] = ("www",),
    strategy: dict[str, Any] | None = None,
    retention: dict[str, str] | None = None,
    image: str = "v1",
) -> types_pb2.StatefulSet:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "serviceName": name,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": image}]},
        },
        "volumeClaimTemplates": [
            {
                "metadata": {"name": c},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
            for c in claims
        ],
    }
    if policy:
        spec["podManagementPolicy"] = policy
    if strategy is not None:
        spec["updateStrategy"] = strategy
    if retention is not None:
        spec["persistentVolumeClaimRetentionPolicy"] = retention
    obj = convert.from_dict(
        kinds.BY_KIND["StatefulSet"],
        {"metadata": {"name": name, "namespace": "default"}, "spec": spec},
    )
    assert isinstance(obj, types_pb2.StatefulSet)
    return obj


@asynccontextmanager
async def running(
    fake: FakeClient, clock: FakeClock, options: ssu.StatefulSetOptions | None = None
) -> AsyncIterator[StatefulSetController]:
    informers = InformerFactory(fake, clock=clock)
    ssc = StatefulSetController(fake, informers, clock, options=options)
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(ssc.run)
        yield ssc
        tg.cancel_scope.cancel()


def pods(fake: FakeClient) -> dict[str, types_pb2.Pod]:
    return {
        name: obj
        for (resource, _, name), obj in fake._objects.items()
        if resource == "pods" and isinstance(obj, types_pb2.Pod)
    }


def claims(fake: FakeClient) -> dict[str, types_pb2.PersistentVolumeClaim]:
    return {
        name: obj
        for (resource, _, name), obj in fake._objects.items()
        if resource == "persistentvolumeclaims" and isinstance(obj, types_pb2.PersistentVolumeClaim)
    }


def stored_set(fake: FakeClient, name: str = "web") -> types_pb2.StatefulSet:
    obj = fake._objects[("statefulsets", "default", name)]
    assert isinstance(obj, types_pb2.StatefulSet)
    return obj


async def make_ready(fake: FakeClient, name: str) -> None:
    await fake.patch(types_pb2.Pod, name, READY, "default", subresource="status")


def created_names(fake: FakeClient) -> list[tuple[str, str]]:
    return [(a.resource, a.name or _name(a.object)) for a in fake.actions if a.verb == "create"]


def _name(obj: Any) -> str:
    return str(obj.metadata.name) if obj is not None else ""


# ---------------------------------------------------------------- pure helpers


def test_ordinals_names_and_claim_names_follow_upstream() -> None:
    s = make_set()
    assert ssu.parent_and_ordinal(types_pb2.Pod(metadata={"name": "web-12"})) == ("web", 12)
    assert ssu.parent_and_ordinal(types_pb2.Pod(metadata={"name": "my-web-0"})) == ("my-web", 0)
    assert ssu.parent_and_ordinal(types_pb2.Pod(metadata={"name": "web"})) == ("", -1)
    assert ssu.claim_name(s, s.spec.volume_claim_templates[0], 2) == "www-web-2"
    claim = ssu.claims_for(s, 1)["www"]
    assert claim.metadata.name == "www-web-1" and dict(claim.metadata.labels) == {"app": "web"}


def test_start_ordinal_only_with_its_gate() -> None:
    s = make_set()
    s.spec.ordinals.start = 5
    on = ssu.StatefulSetOptions.from_gates(FeatureGates.for_version(Version(1, 27)))
    off = ssu.StatefulSetOptions.from_gates(FeatureGates.for_version(Version(1, 26)))
    assert (ssu.start_ordinal(s, on), ssu.end_ordinal(s, on)) == (5, 7)
    assert (ssu.start_ordinal(s, off), ssu.end_ordinal(s, off)) == (0, 2)
    assert not off.pod_index_label and not off.retention_policy


@pytest.mark.parametrize(
    ("when_deleted", "when_scaled", "scaled_down", "owners"),
    [
        ("Retain", "Retain", False, []),
        ("Retain", "Retain", True, []),
        ("Delete", "Retain", False, ["StatefulSet"]),
        ("Delete", "Retain", True, ["StatefulSet"]),
        ("Retain", "Delete", False, []),
        ("Retain", "Delete", True, ["Pod"]),
        ("Delete", "Delete", False, ["StatefulSet"]),
        ("Delete", "Delete", True, ["Pod"]),
    ],
)
def test_retention_policy_decides_the_claims_owners(
    when_deleted: str, when_scaled: str, scaled_down: bool, owners: list[str]
) -> None:
    opts = ssu.StatefulSetOptions()
    s = make_set(
        replicas=1 if scaled_down else 3,
        retention={"whenDeleted": when_deleted, "whenScaled": when_scaled},
    )
    s.metadata.uid = "set-uid"
    pod = types_pb2.Pod(metadata={"name": "web-2", "namespace": "default", "uid": "pod-uid"})
    claim = ssu.claims_for(s, 2)["www"]
    refs = ssu.updated_claim_owner_refs(claim, s, pod, opts)
    assert sorted(r.kind for r in refs) == owners
    assert all(r.controller for r in refs)
    claim.metadata.owner_references.extend(refs)
    assert ssu.is_claim_owner_up_to_date(claim, s, pod, opts)
    # A claim referenced by another controller is left alone.
    other = ssu.claims_for(s, 2)["www"]
    other.metadata.owner_references.add(kind="Foo", name="x", uid="u", controller=True)
    assert ssu.is_claim_owner_up_to_date(other, s, pod, opts)
    assert [r.kind for r in ssu.updated_claim_owner_refs(other, s, pod, opts)] == ["Foo"]


# ---------------------------------------------------------------- ordering


async def test_ordered_ready_creates_each_ordinal_after_the_previous_is_running_and_ready() -> None:
    clock = FakeClock()
    fake = FakeClient(make_set(), clock=clock)
    async with running(fake, clock):
        await wait_until(lambda: "web-0" in pods(fake))
        await settle()
        assert sorted(pods(fake)) == ["web-0"]
        # The claim before the pod.
        assert created_names(fake)[:2] == [
            ("persistentvolumeclaims", "www-web-0"),
            ("pods", "web-0"),
        ]
        pod = pods(fake)["web-0"]
        assert pod.metadata.labels[ssu.POD_NAME_LABEL] == "web-0"
        assert pod.metadata.labels[ssu.POD_INDEX_LABEL_KEY] == "0"
        assert pod.metadata.labels[ssu.REVISION_LABEL].startswith("web-")
        assert (pod.spec.hostname, pod.spec.subdomain) == ("web-0", "web")
        (volume,) = pod.spec.volumes
        assert (volume.name, volume.persistent_volume_claim.claim_name) == ("www", "www-web-0")
        # Running but not Ready: still one pod.
        await fake.patch(
            types_pb2.Pod,
            "web-0",
            {"status": {"phase": "Running"}},
            "default",
            subresource="status",
        )
        await settle()
        assert sorted(pods(fake)) == ["web-0"]
        await make_ready(fake, "web-0")
        await wait_until(lambda: "web-1" in pods(fake))
        await settle()
        assert "web-2" not in pods(fake)
        await make_ready(fake, "web-1")
        await wait_until(lambda: "web-2" in pods(fake))
        await make_ready(fake, "web-2")
        await wait_until(lambda: stored_set(fake).status.ready_replicas == 3)
        status = stored_set(fake).status
        assert (status.replicas, status.current_replicas, status.updated_replicas) == (3, 3, 3)
        assert status.available_replicas == 3
        assert status.current_revision == status.update_revision != ""
        assert status.observed_generation == 1
        assert sorted(claims(fake)) == ["www-web-0", "www-web-1", "www-web-2"]


async def test_parallel_creates_every_pod_without_waiting() -> None:
    clock = FakeClock()
    fake = FakeClient(make_set(policy="Parallel"), clock=clock)
    async with running(fake, clock):
        await wait_until(lambda: sorted(pods(fake)) == ["web-0", "web-1", "web-2"])
        assert sorted(claims(fake)) == ["www-web-0", "www-web-1", "www-web-2"]
        await fake.patch(types_pb2.StatefulSet, "web", {"spec": {"replicas": 0}}, "default")
        await wait_until(lambda: pods(fake) == {})
        # The claims stay (Retain).
        assert sorted(claims(fake)) == ["www-web-0", "www-web-1", "www-web-2"]


async def test_scale_down_removes_the_highest_ordinal_first_one_at_a_time() -> None:
    clock = FakeClock()
    fake = FakeClient(make_set(), clock=clock)
    async with running(fake, clock):
        await _three_ready(fake)
        # Bound pods terminate gracefully: the next deletion waits for the first to go.
        for name in ("web-1", "web-2"):
            await fake.patch(types_pb2.Pod, name, {"spec": {"nodeName": "n1"}}, "default")
        fake.clear_actions()
        await fake.patch(types_pb2.StatefulSet, "web", {"spec": {"replicas": 1}}, "default")
        await wait_until(lambda: pods(fake)["web-2"].metadata.HasField("deletion_timestamp"))
        await settle()
        assert not pods(fake)["web-1"].metadata.HasField("deletion_timestamp")
        await fake.delete(types_pb2.Pod, "web-2", "default", grace_period_seconds=0)
        await wait_until(lambda: pods(fake)["web-1"].metadata.HasField("deletion_timestamp"))
        deleted = [a.name for a in fake.actions if a.verb == "delete" and a.resource == "pods"]
        assert deleted[:1] == ["web-2"] and "web-1" in deleted
        assert deleted.index("web-2") < deleted.index("web-1")


async def test_a_deleted_pod_is_recreated_with_its_claim_and_a_failed_one_replaced() -> None:
    clock = FakeClock()
    fake = FakeClient(make_set(replicas=1), clock=clock)
    async with running(fake, clock):
        await wait_until(lambda: "web-0" in pods(fake))
        first = pods(fake)["web-0"].metadata.uid
        claim_uid = claims(fake)["www-web-0"].metadata.uid
        await fake.delete(types_pb2.Pod, "web-0", "default")
        await wait_until(
            lambda: pods(fake).get("web-0", types_pb2.Pod()).metadata.uid not in ("", first)
        )
        assert claims(fake)["www-web-0"].metadata.uid == claim_uid
        second = pods(fake)["web-0"].metadata.uid
        await fake.patch(
            types_pb2.Pod, "web-0", {"status": {"phase": "Failed"}}, "default", subresource="status"
        )
        await wait_until(
            lambda: pods(fake).get("web-0", types_pb2.Pod()).metadata.uid not in ("", second)
        )
        assert claims(fake)["www-web-0"].metadata.uid == claim_uid


# ---------------------------------------------------------------- retention policy


async def test_when_deleted_delete_makes_the_set_own_its_claims() -> None:
    clock = FakeClock()
    s = make_set(replicas=1, retention={"whenDeleted": "Delete", "whenScaled": "Retain"})
    fake = FakeClient(s, clock=clock)
    async with running(fake, clock):
        await wait_until(
            lambda: bool(
                claims(fake)
                .get("www-web-0", types_pb2.PersistentVolumeClaim())
                .metadata.owner_references
            )
        )
        (ref,) = claims(fake)["www-web-0"].metadata.owner_references
        assert (ref.kind, ref.name, ref.uid) == (
            "StatefulSet",
            "web",
            stored_set(fake).metadata.uid,
        )
        assert ref.controller


async def test_when_scaled_delete_hands_a_condemned_pods_claims_to_the_pod() -> None:
    clock = FakeClock()
    s = make_set(
        replicas=2, policy="Parallel", retention={"whenDeleted": "Retain", "whenScaled": "Delete"}
    )
    fake = FakeClient(s, clock=clock)
    async with running(fake, clock):
        await wait_until(lambda: sorted(pods(fake)) == ["web-0", "web-1"])
        await settle()
        assert all(not c.metadata.owner_references for c in claims(fake).values())
        for name in ("web-0", "web-1"):
            await make_ready(fake, name)
            # bound: the deletion is graceful, so the claim's owner change is seen first
            await fake.patch(types_pb2.Pod, name, {"spec": {"nodeName": "n1"}}, "default")
        pod_uid = pods(fake)["web-1"].metadata.uid
        await fake.patch(types_pb2.StatefulSet, "web", {"spec": {"replicas": 1}}, "default")
        await wait_until(
            lambda: (
                [r.uid for r in claims(fake)["www-web-1"].metadata.owner_references] == [pod_uid]
            )
        )
        await wait_until(lambda: pods(fake)["web-1"].metadata.HasField("deletion_timestamp"))
        assert not claims(fake)["www-web-0"].metadata.owner_references


async def test_a_stale_claim_blocks_its_ordinal_until_it_is_gone() -> None:
    # whenScaled Delete: scaled down, web-1's claim belongs to the deleted pod (the garbage
    # collector's to delete). Scaled up again before that, web-1 waits for the claim to go.
    clock = FakeClock()
    s = make_set(
        replicas=2, policy="Parallel", retention={"whenDeleted": "Retain", "whenScaled": "Delete"}
    )
    fake = FakeClient(s, clock=clock)
    async with running(fake, clock):
        await wait_until(lambda: sorted(pods(fake)) == ["web-0", "web-1"])
        old_uid = pods(fake)["web-1"].metadata.uid
        await fake.patch(types_pb2.StatefulSet, "web", {"spec": {"replicas": 1}}, "default")
        await wait_until(lambda: "web-1" not in pods(fake))
        await wait_until(
            lambda: (
                [r.uid for r in claims(fake)["www-web-1"].metadata.owner_references] == [old_uid]
            )
        )
        await fake.patch(types_pb2.StatefulSet, "web", {"spec": {"replicas": 2}}, "default")
        await settle()
        assert "web-1" not in pods(fake)
        await fake.delete(types_pb2.PersistentVolumeClaim, "www-web-1", "default")
        await wait_until(lambda: "web-1" in pods(fake) and "www-web-1" in claims(fake))
        assert not claims(fake)["www-web-1"].metadata.owner_references


async def test_the_retention_policy_is_ignored_without_its_gate() -> None:
    clock = FakeClock()
    s = make_set(replicas=1, retention={"whenDeleted": "Delete", "whenScaled": "Delete"})
    fake = FakeClient(s, clock=clock)
    off = ssu.StatefulSetOptions(retention_policy=False)
    async with running(fake, clock, off):
        await wait_until(lambda: "web-0" in pods(fake))
        await settle()
        assert not claims(fake)["www-web-0"].metadata.owner_references


# ---------------------------------------------------------------- updates


async def _three_ready(fake: FakeClient) -> None:
    for name in ("web-0", "web-1", "web-2"):
        await wait_until(lambda: name in pods(fake))  # noqa: B023 (awaited at once)
        await make_ready(fake, name)
    await wait_until(lambda: stored_set(fake).status.ready_replicas == 3)


def revisions(fake: FakeClient) -> dict[str, str]:
    return {n: p.metadata.labels[ssu.REVISION_LABEL] for n, p in sorted(pods(fake).items())}


async def test_rolling_update_goes_from_the_highest_ordinal_down_to_the_partition() -> None:
    clock = FakeClock()
    s = make_set(strategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 1}})
    fake = FakeClient(s, clock=clock)
    async with running(fake, clock):
        await _three_ready(fake)
        old = stored_set(fake).status.current_revision
        await fake.patch(
            types_pb2.StatefulSet,
            "web",
            {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "v2"}]}}}},
            "default",
        )
        await wait_until(lambda: stored_set(fake).status.update_revision != old)
        new = stored_set(fake).status.update_revision
        # web-2 first, recreated at the new revision; web-1 waits until it is ready.
        await wait_until(lambda: revisions(fake).get("web-2") == new)
        await settle()
        assert revisions(fake)["web-1"] == old
        assert pods(fake)["web-2"].spec.containers[0].image == "v2"
        await make_ready(fake, "web-2")
        await wait_until(lambda: revisions(fake).get("web-1") == new)
        await make_ready(fake, "web-1")
        await wait_until(lambda: stored_set(fake).status.updated_replicas == 2)
        await settle()
        # web-0 is below the partition: untouched, and recreated at the old revision.
        assert revisions(fake)["web-0"] == old
        status = stored_set(fake).status
        assert (status.current_replicas, status.current_revision) == (1, old)
        await fake.delete(types_pb2.Pod, "web-0", "default")
        await wait_until(
            lambda: revisions(fake).get("web-0") == old and pods(fake)["web-0"].metadata.uid != ""
        )
        assert pods(fake)["web-0"].spec.containers[0].image == "v1"
        # Partition 0 finishes the rollout; the update revision becomes the current one.
        await make_ready(fake, "web-0")
        await fake.patch(
            types_pb2.StatefulSet,
            "web",
            {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}},
            "default",
        )
        await wait_until(lambda: revisions(fake).get("web-0") == new)
        await make_ready(fake, "web-0")
        await wait_until(lambda: stored_set(fake).status.current_revision == new)
        assert stored_set(fake).status.current_replicas == 3


V2 = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "v2"}]}}}}


def deleted_pods(fake: FakeClient) -> list[str]:
    return [a.name for a in fake.actions if a.verb == "delete" and a.resource == "pods"]


async def update_revision(fake: FakeClient, old: str) -> str:
    """The set's update revision once its status names one other than `old`: the controller
    deletes a pod for the update before it writes the status (updateStatefulSet, then
    updateStatefulSetStatus), so a deletion seen does not mean the status is written yet."""
    await wait_until(lambda: stored_set(fake).status.update_revision != old)
    return stored_set(fake).status.update_revision


async def test_max_unavailable_replaces_that_many_pods_at_once() -> None:
    clock = FakeClock()
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}
    fake = FakeClient(make_set(strategy=strategy), clock=clock)
    async with running(fake, clock):
        await _three_ready(fake)
        old = stored_set(fake).status.current_revision
        fake.clear_actions()
        await fake.patch(types_pb2.StatefulSet, "web", V2, "default")
        await wait_until(lambda: sorted(deleted_pods(fake)) == ["web-1", "web-2"])
        await settle()
        # Two are unavailable: web-0 waits for them.
        assert deleted_pods(fake) == ["web-2", "web-1"]
        new = await update_revision(fake, old)
        await wait_until(lambda: revisions(fake).get("web-1") == new)
        await make_ready(fake, "web-1")
        await wait_until(lambda: revisions(fake).get("web-2") == new)
        await settle()
        assert "web-0" not in deleted_pods(fake)
        await make_ready(fake, "web-2")
        await wait_until(lambda: revisions(fake).get("web-0") == new)


async def test_without_max_unavailable_stateful_set_one_pod_at_a_time() -> None:
    clock = FakeClock()
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}
    fake = FakeClient(make_set(strategy=strategy), clock=clock)
    before_1_35 = ssu.StatefulSetOptions(max_unavailable=False)
    async with running(fake, clock, before_1_35):
        await _three_ready(fake)
        old = stored_set(fake).status.current_revision
        fake.clear_actions()
        await fake.patch(types_pb2.StatefulSet, "web", V2, "default")
        await wait_until(lambda: deleted_pods(fake) == ["web-2"])
        new = await update_revision(fake, old)
        await wait_until(lambda: revisions(fake).get("web-2") == new)
        await settle()
        assert deleted_pods(fake) == ["web-2"]
        await make_ready(fake, "web-2")
        await wait_until(lambda: deleted_pods(fake) == ["web-2", "web-1"])


async def test_on_delete_waits_for_the_user_to_delete_pods() -> None:
    clock = FakeClock()
    fake = FakeClient(make_set(strategy={"type": "OnDelete"}), clock=clock)
    async with running(fake, clock):
        await _three_ready(fake)
        old = stored_set(fake).status.current_revision
        await fake.patch(
            types_pb2.StatefulSet,
            "web",
            {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "v2"}]}}}},
            "default",
        )
        await wait_until(lambda: stored_set(fake).status.update_revision != old)
        await settle()
        assert set(revisions(fake).values()) == {old}
        new = stored_set(fake).status.update_revision
        await fake.delete(types_pb2.Pod, "web-1", "default")
        await wait_until(lambda: revisions(fake).get("web-1") == new)
        assert revisions(fake)["web-0"] == revisions(fake)["web-2"] == old
        await make_ready(fake, "web-1")
        await wait_until(lambda: stored_set(fake).status.updated_replicas == 1)
        assert stored_set(fake).status.current_replicas == 2

"""StatefulSets and CronJobs on real processes (issue #34): etcd, an apiserver, the scheduler,
two kubelets and the controller-manager's statefulset, cronjob, job, garbage collector and pod
GC controllers, on the virtual clock at rate max (timers fire as soon as the cluster is idle).

The claims are of a `kemu.io/simulated` class that binds at the first consumer: the scheduler
selects each pod's node, the simulated CSI provisioner provisions the volume there after its
provisionDelay (virtual seconds), the PersistentVolume controller binds it, and VolumeBinding's
PreBind lets the pod bind. Every pod and Job version is recorded by a watch, and the orders are
checked on the recorded history."""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.interface import ADDED, DELETED
from kemu.machinery import convert, kinds
from kemu.machinery.errors import AlreadyExists
from kemu.machinery.virtual_time import ClockMode
from kemu.testing import Cluster, eventually
from kemu.testing.cluster_time import advance_to
from kemu.testing.invariants import PodHistory, record_pods
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

STARTUP = 3.0
"""The kubelets' --pod-startup-delay (virtual seconds): a pod is Ready this long after it is
bound, so that ordered creation shows in the times."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("stateful"), clock=ClockMode.VIRTUAL) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_scheduler()
        for node in ("st-a", "st-b"):
            c.start_kubelet(
                node,
                capacity={"cpu": "8", "memory": "16Gi", "pods": "110"},
                extra_args=["--pod-startup-delay", f"{STARTUP:g}s"],
            )
        c.start_controllermanager(
            extra_args=[
                "--controllers",
                "statefulset,cronjob,job,garbagecollector,podgc,persistentvolume-binder,"
                "simulated-csi-provisioner,pvc-protection,pv-protection",
            ]
        )
        yield c


STORAGE_CLASS = "simulated-wffc"
PROVISION_DELAY = "2s"


@pytest.fixture
async def api(cluster: Cluster, rate_max: None) -> AsyncIterator[Client]:
    async with Client(cluster.server, timeout=10.0) as client:
        sc = types_pb2.StorageClass(
            provisioner="kemu.io/simulated", volume_binding_mode="WaitForFirstConsumer"
        )
        sc.metadata.name = STORAGE_CLASS
        sc.parameters["provisionDelay"] = PROVISION_DELAY
        with contextlib.suppress(AlreadyExists):  # one class for the module's tests
            await client.create(sc)
        yield client


def _seconds(ts: Any) -> float:
    return float(ts.seconds + ts.nanos / 1e9)


def _ready_since(pod: types_pb2.Pod) -> float | None:
    for c in pod.status.conditions:
        if c.type == "Ready" and c.status == "True":
            return _seconds(c.last_transition_time)
    return None


def _versions_of(history: PodHistory, name: str) -> list[types_pb2.Pod]:
    return [v.pod for uid in history.uids_of(name) for v in history.versions[uid]]


def _stateful_set(
    namespace: str, replicas: int, retention: dict[str, str] | None = None
) -> types_pb2.StatefulSet:
    obj = convert.from_dict(
        kinds.BY_KIND["StatefulSet"],
        {
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {
                "replicas": replicas,
                "persistentVolumeClaimRetentionPolicy": retention or {},
                "serviceName": "web",
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "c",
                                "image": "nginx",
                                "resources": {"requests": {"cpu": "100m"}},
                            }
                        ]
                    },
                },
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "www"},
                        "spec": {
                            "storageClassName": STORAGE_CLASS,
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "1Gi"}},
                        },
                    }
                ],
            },
        },
    )
    assert isinstance(obj, types_pb2.StatefulSet)
    return obj


async def test_a_statefulset_comes_up_pod_by_pod_in_order_and_scales_down_from_the_top(
    api: Client,
) -> None:
    ns = await create_namespace(api, "sts")
    async with record_pods(api, ns) as history:
        await api.create(_stateful_set(ns, 3))

        async def all_ready() -> bool:
            s = await api.get(types_pb2.StatefulSet, "web", ns)
            assert s.status.ready_replicas == 3, s.status
            return True

        await eventually(all_ready, timeout=60)
        # Each ordinal was created only once the previous one was Running and Ready.
        created: list[float] = []
        ready: list[float] = []
        for i in range(3):
            versions = _versions_of(history, f"web-{i}")
            assert versions, f"web-{i} not recorded"
            created.append(_seconds(versions[0].metadata.creation_timestamp))
            since = next((t for p in versions if (t := _ready_since(p)) is not None), None)
            assert since is not None
            ready.append(since)
        assert created == sorted(created)
        for i in (1, 2):
            assert created[i] >= ready[i - 1], (created, ready)
            assert ready[i] - created[i] >= STARTUP - 0.5
        # The claims, one per ordinal, created before their pods, labelled by the selector.
        claims = {
            c.metadata.name: c for c in (await api.list(types_pb2.PersistentVolumeClaim, ns)).items
        }
        assert sorted(claims) == ["www-web-0", "www-web-1", "www-web-2"]
        for i in range(3):
            claim = claims[f"www-web-{i}"]
            assert dict(claim.metadata.labels) == {"app": "web"}
            assert _seconds(claim.metadata.creation_timestamp) <= created[i]
            pod = _versions_of(history, f"web-{i}")[-1]
            (volume,) = pod.spec.volumes
            assert volume.persistent_volume_claim.claim_name == f"www-web-{i}"
            assert pod.metadata.labels["statefulset.kubernetes.io/pod-name"] == f"web-{i}"
            assert pod.metadata.labels["apps.kubernetes.io/pod-index"] == str(i)
        status = (await api.get(types_pb2.StatefulSet, "web", ns)).status
        assert (status.replicas, status.current_replicas, status.updated_replicas) == (3, 3, 3)
        assert status.current_revision == status.update_revision

        # Scale down to 1: web-2 goes first, and web-1 is deleted only once web-2 is gone.
        await api.patch(types_pb2.StatefulSet, "web", {"spec": {"replicas": 1}}, ns)

        async def scaled_down() -> bool:
            names = {p.metadata.name for p in (await api.list(types_pb2.Pod, ns)).items}
            assert names == {"web-0"}, names
            return True

        await eventually(scaled_down, timeout=60)
        # (the list saw web-1 gone: the history's watch may not have delivered its deletion yet)
        await history.sync(api)
    order: list[tuple[int, str, str]] = []  # (seq, what, pod)
    for name in ("web-1", "web-2"):
        for uid in history.uids_of(name):
            for v in history.versions[uid]:
                if v.type == DELETED:
                    order.append((v.seq, "gone", name))
                elif v.pod.metadata.HasField("deletion_timestamp"):
                    order.append((v.seq, "deleting", name))
    firsts: dict[tuple[str, str], int] = {}
    for seq, what, name in sorted(order):
        firsts.setdefault((what, name), seq)
    assert firsts[("deleting", "web-2")] < firsts[("gone", "web-2")] < firsts[("deleting", "web-1")]
    # The claims stay (the retention policy's default, Retain).
    claims_after = [
        c.metadata.name for c in (await api.list(types_pb2.PersistentVolumeClaim, ns)).items
    ]
    assert sorted(claims_after) == ["www-web-0", "www-web-1", "www-web-2"]


async def test_the_garbage_collector_deletes_the_claims_a_deleted_statefulset_owns(
    api: Client,
) -> None:
    # whenDeleted Delete: the claims carry the set's controller reference; the set deleted in
    # the background, the garbage collector deletes its pods and its claims.
    ns = await create_namespace(api, "sts-gc")
    await api.create(_stateful_set(ns, 2, {"whenDeleted": "Delete", "whenScaled": "Retain"}))

    async def owned_claims() -> bool:
        claims = (await api.list(types_pb2.PersistentVolumeClaim, ns)).items
        owners = {c.metadata.name: [r.kind for r in c.metadata.owner_references] for c in claims}
        assert owners == {"www-web-0": ["StatefulSet"], "www-web-1": ["StatefulSet"]}, owners
        return True

    await eventually(owned_claims, timeout=60)
    await api.delete(types_pb2.StatefulSet, "web", ns, propagation_policy="Background")

    async def all_gone() -> bool:
        pods = (await api.list(types_pb2.Pod, ns)).items
        claims = (await api.list(types_pb2.PersistentVolumeClaim, ns)).items
        assert (pods, claims) == ([], []), ([p.metadata.name for p in pods], len(claims))
        return True

    await eventually(all_gone, timeout=60)


EVERY = 2
"""The CronJob's period in minutes (`*/2`): eight periods of the cluster's time elapse, each
stop of the virtual clock (leases, node statuses, controller syncs) a few ms of wall time."""


def _cronjob(namespace: str) -> types_pb2.CronJob:
    obj = convert.from_dict(
        kinds.BY_KIND["CronJob"],
        {
            "metadata": {"name": "tick", "namespace": namespace},
            "spec": {
                "schedule": f"*/{EVERY} * * * *",
                "successfulJobsHistoryLimit": 2,
                "jobTemplate": {
                    "spec": {
                        "template": {
                            "metadata": {"annotations": {"kubelet.kemu.io/run-duration": "60s"}},
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [{"name": "c", "image": "busybox"}],
                            },
                        }
                    }
                },
            },
        },
    )
    assert isinstance(obj, types_pb2.CronJob)
    return obj


async def test_a_cronjob_runs_its_jobs_at_their_virtual_times_and_keeps_the_history_limit(
    api: Client,
) -> None:
    ns = await create_namespace(api, "cron")
    jobs: dict[str, float] = {}  # name -> creation time (the cluster's)
    deleted: list[str] = []

    async def watch_jobs(task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        listed = await api.list(types_pb2.Job, ns)
        async with api.watch(types_pb2.Job, ns, resource_version=listed.resource_version) as events:
            task_status.started()
            async for event in events:
                job = event.object
                if event.type == ADDED:
                    jobs[job.metadata.name] = _seconds(job.metadata.creation_timestamp)
                elif event.type == DELETED:
                    deleted.append(job.metadata.name)

    try:
        async with anyio.create_task_group() as tg:
            await tg.start(watch_jobs)
            created = await api.create(_cronjob(ns))
            # The schedule starts after the CronJob's creation (upstream cronjob/utils.go
            # mostRecentScheduleTime: earliestTime is its creationTimestamp), not at a reading
            # of the clock before the create: at rate max the clock runs on between the two.
            start = _seconds(created.metadata.creation_timestamp)
            # Held half a minute past a schedule time (none is due then), the work due done:
            # the Jobs, their deletions and the status checked are those of one instant.
            end = (int(start // 60) + 1 + 8 * EVERY) * 60 + 30.0
            await advance_to(api, end)
            await _history_caught_up(api, ns, jobs, deleted)
            tg.cancel_scope.cancel()
        await _assert_history(api, ns, start, end, jobs, deleted)
    finally:
        await api.set_clock_rate(math.inf)  # the module's rate (rate_max)


async def _history_caught_up(
    api: Client, ns: str, jobs: dict[str, float], deleted: list[str]
) -> None:
    """Returns once the watch has seen every Job the held clock's list holds, and the
    deletion of every other one it saw (the watch may lag the clock)."""

    async def caught_up() -> bool:
        listed = {j.metadata.name for j in (await api.list(types_pb2.Job, ns)).items}
        assert listed <= jobs.keys() and set(jobs) - listed == set(deleted), (listed, jobs, deleted)
        return True

    await eventually(caught_up, timeout=30)


async def _assert_history(
    api: Client, ns: str, start: float, end: float, jobs: dict[str, float], deleted: list[str]
) -> None:
    """The Jobs the watch saw, their deletions and the CronJob's status, the clock held at
    `end`."""
    # A Job at every EVERY minutes of the hour after the creation, named by its scheduled
    # minute, created within a second of it (the controller's sync is 100 ms after the time).
    expected = [m for m in range(int(start // 60) + 1, int(end // 60) + 1) if m % EVERY == 0]
    assert len(expected) >= 6
    assert sorted(jobs) == [f"tick-{m}" for m in expected]
    for m in expected:
        assert m * 60 <= jobs[f"tick-{m}"] < m * 60 + 1.0, (m, jobs[f"tick-{m}"])
    # The history limit: the finished Jobs beyond the two latest were deleted, oldest first
    # (the latest may still run: three at most remain).
    names = [f"tick-{m}" for m in expected]
    remaining = sorted(j.metadata.name for j in (await api.list(types_pb2.Job, ns)).items)
    assert deleted == names[: len(deleted)]
    assert len(deleted) >= len(names) - 3
    assert remaining == names[len(deleted) :]
    cj = await api.get(types_pb2.CronJob, "tick", ns)
    assert _seconds(cj.status.last_schedule_time) == expected[-1] * 60
    assert _seconds(cj.status.last_successful_time) > 0

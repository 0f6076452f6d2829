"""kemuctl get/scale/rollout for Deployments and ReplicaSets against the fake client."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.ctl.rollout import status_message
from kemu.machinery import apps
from kemu.testing.builders import make_deployment, make_replica_set
from tests.unit.ctl.helpers import ctl, fake

pytestmark = pytest.mark.anyio


def _deployment(**status: int) -> types_pb2.Deployment:
    d = make_deployment("web").replicas(10).obj()
    d.metadata.generation = 2
    d.status.observed_generation = status.pop("observed", 2)
    for k, v in status.items():
        setattr(d.status, k, v)
    return d


def test_rollout_status_messages_are_kubectls() -> None:
    assert status_message(_deployment(observed=1)) == (
        "Waiting for deployment spec update to be observed...",
        False,
    )
    assert status_message(_deployment(updated_replicas=3)) == (
        'Waiting for deployment "web" rollout to finish: 3 out of 10 new replicas have been '
        "updated...",
        False,
    )
    assert status_message(_deployment(updated_replicas=10, replicas=12)) == (
        'Waiting for deployment "web" rollout to finish: 2 old replicas are pending termination...',
        False,
    )
    assert status_message(_deployment(updated_replicas=10, replicas=10, available_replicas=3)) == (
        'Waiting for deployment "web" rollout to finish: 3 of 10 updated replicas are available...',
        False,
    )
    assert status_message(_deployment(updated_replicas=10, replicas=10, available_replicas=10)) == (
        'deployment "web" successfully rolled out',
        True,
    )


async def test_get_tables_for_deployments_and_replica_sets() -> None:
    d = _deployment(updated_replicas=10, replicas=10, available_replicas=9, ready_replicas=9)
    rs = make_replica_set("web-abc").replicas(3).obj()
    rs.status.replicas, rs.status.ready_replicas = 3, 2
    client = fake(d, rs)
    result = await ctl(client, "get", "deploy", "-o", "wide")
    header, row = result.out.splitlines()
    assert header.split() == [
        "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR",
    ]  # fmt: skip
    assert row.split()[:4] == ["web", "9/10", "10", "9"]
    assert row.split()[5:] == ["c", "registry.k8s.io/pause:3.10", "app=web"]
    result = await ctl(client, "get", "rs")
    header, row = result.out.splitlines()
    assert header.split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert row.split()[:4] == ["web-abc", "3", "3", "2"]


async def test_scale_patches_replicas() -> None:
    client = fake(make_deployment("web").replicas(2).obj(), make_replica_set("r").obj())
    result = await ctl(client, "scale", "deployment/web", "--replicas=5")
    assert (result.rc, result.out) == (0, "deployment.apps/web scaled\n")
    assert (await client.get(types_pb2.Deployment, "web")).spec.replicas == 5
    result = await ctl(client, "scale", "rs", "r", "--replicas", "0")
    assert (result.rc, result.out) == (0, "replicaset.apps/r scaled\n")
    result = await ctl(client, "scale", "deploy/web", "--replicas=1", "--current-replicas=3")
    assert (result.rc, result.err) == (1, "error: Expected replicas to be 3, was 5\n")
    result = await ctl(client, "scale", "pod/x", "--replicas=1")
    assert result.rc == 1 and result.err.startswith("error: cannot scale pods")


async def _with_history() -> tuple[object, types_pb2.Deployment]:
    client = fake()
    d = await client.create(make_deployment("web").image("v2").obj())
    for rev, image in ((1, "v1"), (2, "v2")):
        rs = make_replica_set(f"web-{rev}").image(image).obj()
        rs.spec.template.metadata.labels[apps.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY] = str(rev)
        rs.metadata.labels.update(rs.spec.template.metadata.labels)
        rs.metadata.labels["app"] = "web"
        rs.metadata.annotations[apps.REVISION_ANNOTATION] = str(rev)
        rs.metadata.owner_references.add(
            kind="Deployment", name="web", uid=d.metadata.uid, controller=True
        )
        await client.create(rs)
    return client, d


async def test_rollout_history_and_undo_copy_the_old_template_back() -> None:
    client, _ = await _with_history()
    result = await ctl(client, "rollout", "history", "deployment/web")  # type: ignore[arg-type]
    assert result.out.splitlines() == [
        "deployment.apps/web ",
        "REVISION  CHANGE-CAUSE",
        "1         <none>",
        "2         <none>",
        "",
    ]
    result = await ctl(client, "rollout", "undo", "deployment/web")  # type: ignore[arg-type]
    assert (result.rc, result.out) == (0, "deployment.apps/web rolled back\n")
    d = await client.get(types_pb2.Deployment, "web")  # type: ignore[attr-defined]
    assert d.spec.template.spec.containers[0].image == "v1"
    assert apps.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY not in d.spec.template.metadata.labels
    result = await ctl(client, "rollout", "undo", "deployment/web", "--to-revision=1")  # type: ignore[arg-type]
    assert result.out == (
        "deployment.apps/web skipped rollback (current template already matches revision 1)\n"
    )
    result = await ctl(client, "rollout", "undo", "deployment/web", "--to-revision=7")  # type: ignore[arg-type]
    assert (result.rc, result.err) == (1, "error: unable to find specified revision 7 in history\n")


async def test_rollout_restart_pause_resume() -> None:
    client = fake(make_deployment("web").obj())
    result = await ctl(client, "rollout", "restart", "deployment/web")
    assert (result.rc, result.out) == (0, "deployment.apps/web restarted\n")
    d = await client.get(types_pb2.Deployment, "web")
    assert (
        d.spec.template.metadata.annotations[apps.RESTARTED_AT_ANNOTATION] == "2023-11-14T22:13:20Z"
    )
    assert (
        await ctl(client, "rollout", "pause", "deploy/web")
    ).out == "deployment.apps/web paused\n"
    result = await ctl(client, "rollout", "restart", "deployment/web")
    assert result.rc == 1 and "can't restart paused deployment" in result.err
    result = await ctl(client, "rollout", "undo", "deployment/web")
    assert result.rc == 1 and "cannot rollback a paused deployment" in result.err
    assert (
        await ctl(client, "rollout", "resume", "deploy/web")
    ).out == "deployment.apps/web resumed\n"
    result = await ctl(client, "rollout", "status", "rs/x")
    assert result.rc == 1 and "only" in result.err


async def test_rollout_status_times_out_with_kubectls_message() -> None:
    client = fake(_deployment(updated_replicas=3))
    result = await ctl(client, "rollout", "status", "deployment/web", "--timeout=20ms")
    assert result.rc == 1
    assert result.err == "error: timed out waiting for the condition\n"
    client = fake(_deployment(updated_replicas=10, replicas=10, available_replicas=10))
    result = await ctl(client, "rollout", "status", "deployment/web")
    assert (result.rc, result.out) == (0, 'deployment "web" successfully rolled out\n')

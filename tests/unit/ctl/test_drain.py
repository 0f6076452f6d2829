"""kemuctl cordon, uncordon and drain against the FakeClient: kubectl's filters and messages."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.ctl.drain import Filters, pods_for_deletion
from kemu.testing import make_node, make_pod
from tests.unit.ctl.helpers import ctl, fake

pytestmark = pytest.mark.anyio


def _pod(name: str, *, controller: str = "ReplicaSet", empty_dir: bool = False) -> types_pb2.Pod:
    pod = make_pod(name).node("n1").obj()
    pod.metadata.namespace = "default"
    if controller:
        pod.metadata.owner_references.add(
            api_version="apps/v1", kind=controller, name="owner", uid="u", controller=True
        )
    if empty_dir:
        v = pod.spec.volumes.add(name="scratch")
        v.empty_dir.SetInParent()
    return pod


async def test_cordon_and_uncordon_print_kubectls_lines() -> None:
    client = fake(make_node("n1").obj())
    assert (await ctl(client, "cordon", "n1")).out == "node/n1 cordoned\n"
    assert (await client.get(types_pb2.Node, "n1")).spec.unschedulable
    assert (await ctl(client, "cordon", "n1")).out == "node/n1 already cordoned\n"
    assert (await ctl(client, "uncordon", "n1")).out == "node/n1 uncordoned\n"
    assert (await ctl(client, "uncordon", "n1")).out == "node/n1 already uncordoned\n"
    dry = await ctl(client, "cordon", "n1", "--dry-run=client")
    assert dry.out == "node/n1 cordoned (dry run)\n"
    assert not (await client.get(types_pb2.Node, "n1")).spec.unschedulable


def test_the_filters_refuse_or_warn_as_kubectl() -> None:
    pods = [
        _pod("rs"),
        _pod("bare", controller=""),
        _pod("ds", controller="DaemonSet"),
        _pod("scratch", empty_dir=True),
    ]
    strict = pods_for_deletion(pods, Filters())
    assert [p.metadata.name for p in strict.pods] == ["rs"]
    assert strict.error_text() == (
        "[cannot delete Pods that declare no controller (use --force to override): default/bare, "
        "DaemonSet-managed Pods (use --ignore-daemonsets to ignore): default/ds, "
        "cannot delete Pods with local storage (use --delete-emptydir-data to override): "
        "default/scratch]"
    )
    lenient = pods_for_deletion(pods, Filters(True, True, True))
    assert [p.metadata.name for p in lenient.pods] == ["rs", "bare", "scratch"]
    assert lenient.warning_text() == (
        "deleting Pods that declare no controller: default/bare; ignoring DaemonSet-managed "
        "Pods: default/ds; deleting Pods with local storage: default/scratch"
    )


async def test_drain_refuses_a_pod_without_a_controller_and_says_which_nodes_remain() -> None:
    client = fake(make_node("n1").obj(), _pod("bare", controller=""))
    r = await ctl(client, "drain", "n1")
    assert r.rc == 1
    assert r.out == "node/n1 cordoned\n"
    assert r.err == (
        'error: unable to drain node "n1" due to error: cannot delete Pods that declare no '
        "controller (use --force to override): default/bare, continuing command...\n"
        "There are pending nodes to be drained:\n n1\n"
        "error: cannot delete Pods that declare no controller (use --force to override): "
        "default/bare\n"
    )
    assert await client.get(types_pb2.Pod, "bare", "default")


async def test_drain_evicts_every_pod_and_reports_each() -> None:
    client = fake(
        make_node("n1").obj(),
        _pod("a"),
        _pod("bare", controller=""),
        _pod("ds", controller="DaemonSet"),
        make_pod("elsewhere").node("n2").obj(),
    )
    r = await ctl(client, "drain", "n1", "--force", "--ignore-daemonsets", "--grace-period", "0")
    assert r.rc == 0, r.err
    assert r.err == (
        "Warning: deleting Pods that declare no controller: default/bare; ignoring "
        "DaemonSet-managed Pods: default/ds\n"
    )
    lines = r.out.splitlines()
    assert lines[0] == "node/n1 cordoned" and lines[-1] == "node/n1 drained"
    assert sorted(lines[1:-1]) == [
        "evicting pod default/a",
        "evicting pod default/bare",
        "pod/a evicted",
        "pod/bare evicted",
    ]
    left = {p.metadata.name for p in (await client.list(types_pb2.Pod)).items}
    assert left == {"ds", "elsewhere"}
    evictions = [a for a in client.actions if a.verb == "evict"]
    assert {a.name for a in evictions} == {"a", "bare"}

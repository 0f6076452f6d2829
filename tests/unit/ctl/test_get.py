"""get: tables per kind, outputs, errors and watch."""

from __future__ import annotations

import io
import json

import anyio
import pytest
import yaml

from kemu.api.v1 import types_pb2
from kemu.ctl.main import run
from kemu.testing.builders import make_node, make_pdb, make_pod, make_priority_class
from kemu.testing.eventually import eventually

from .helpers import NOW, ctl, fake


def _event(name: str, obj: str, reason: str, message: str, at: float) -> types_pb2.Event:
    e = types_pb2.Event(
        metadata=types_pb2.ObjectMeta(name=name, namespace="default"),
        involved_object=types_pb2.ObjectReference(kind="Pod", name=obj, namespace="default"),
        reason=reason,
        message=message,
        type="Normal",
        count=1,
    )
    e.last_timestamp.seconds = int(at)
    return e


@pytest.mark.anyio
async def test_get_pods_prints_kubectls_table_and_wide_adds_the_nominated_node() -> None:
    client = fake(
        make_pod("bound").node("n1").phase("Running").obj(),
        make_pod("waiting").nominated("n2").phase("Pending").obj(),
    )
    result = await ctl(client, "get", "pods")
    assert result.rc == 0
    assert result.out.splitlines() == [
        "NAME      READY   STATUS    RESTARTS   AGE",
        "bound     0/1     Running   0          0s",
        "waiting   0/1     Pending   0          0s",
    ]
    wide = await ctl(client, "get", "po", "-o", "wide")
    assert wide.out.splitlines() == [
        "NAME      READY   STATUS    RESTARTS   AGE   IP       NODE     NOMINATED NODE   READINESS GATES",
        "bound     0/1     Running   0          0s    <none>   n1       <none>           <none>",
        "waiting   0/1     Pending   0          0s    <none>   <none>   n2               <none>",
    ]


@pytest.mark.anyio
async def test_ages_follow_the_clock_and_all_namespaces_adds_a_column() -> None:
    client = fake(make_pod("a").namespace("x").obj(), make_pod("b").obj())
    client.clock.advance(3 * 3600 + 120)  # type: ignore[attr-defined]
    result = await ctl(client, "get", "pods", "-A")
    assert result.out.splitlines() == [
        "NAMESPACE   NAME   READY   STATUS    RESTARTS   AGE",
        "default     b      0/1     Pending   0          3h2m",
        "x           a      0/1     Pending   0          3h2m",
    ]


@pytest.mark.anyio
async def test_tables_of_the_other_kinds() -> None:
    node = make_node("n1").capacity(cpu="4", memory="8Gi", pods="110").ready().obj()
    node.status.node_info.kubelet_version = "v1.37.0-kemu"
    node.status.addresses.add(type="InternalIP", address="172.18.0.2")
    node.status.addresses.add(type="Hostname", address="n1")
    lease = types_pb2.Lease(
        metadata=types_pb2.ObjectMeta(name="kube-scheduler", namespace="default")
    )
    lease.spec.holder_identity = "sched-1"
    client = fake(
        node,
        make_priority_class("high", 1000).preemption_policy("Never").global_default().obj(),
        make_pdb("budget").min_available(2).selector(app="web").obj(),
        lease,
        _event("e1", "web", "Scheduled", "assigned default/web to n1", NOW),
    )
    nodes = await ctl(client, "get", "nodes", "-o", "wide")
    assert nodes.out.splitlines() == [
        "NAME   STATUS   ROLES    AGE   VERSION        INTERNAL-IP   EXTERNAL-IP   OS-IMAGE    KERNEL-VERSION   CONTAINER-RUNTIME",
        "n1     Ready    <none>   0s    v1.37.0-kemu   172.18.0.2    <none>        <unknown>   <unknown>        <unknown>",
    ]
    pcs = await ctl(client, "get", "pc")
    assert pcs.out.splitlines() == [
        "NAME   VALUE   GLOBAL-DEFAULT   AGE   PREEMPTIONPOLICY",
        "high   1000    true             0s    Never",
    ]
    pdbs = await ctl(client, "get", "pdb")
    assert pdbs.out.splitlines() == [
        "NAME     MIN AVAILABLE   MAX UNAVAILABLE   ALLOWED DISRUPTIONS   AGE",
        "budget   2               N/A               0                     0s",
    ]
    leases = await ctl(client, "get", "lease")
    assert leases.out.splitlines() == [
        "NAME             HOLDER    AGE",
        "kube-scheduler   sched-1   0s",
    ]
    events = await ctl(client, "get", "events")
    assert events.out.splitlines() == [
        "LAST SEEN   TYPE     REASON      OBJECT    MESSAGE",
        "0s          Normal   Scheduled   pod/web   assigned default/web to n1",
    ]


@pytest.mark.anyio
async def test_json_of_one_named_object_is_the_object_and_of_several_a_list() -> None:
    client = fake(make_pod("a").obj(), make_pod("b").obj())
    one = json.loads((await ctl(client, "get", "pod", "a", "-o", "json")).out)
    assert one["kind"] == "Pod" and one["metadata"]["name"] == "a"
    several = json.loads((await ctl(client, "get", "pod", "a", "b", "-o", "json")).out)
    assert several["apiVersion"] == "v1" and several["kind"] == "List"
    assert [i["metadata"]["name"] for i in several["items"]] == ["a", "b"]
    listed = yaml.safe_load((await ctl(client, "get", "pods", "-o", "yaml")).out)
    assert [i["kind"] for i in listed["items"]] == ["Pod", "Pod"]
    names = await ctl(client, "get", "pods", "-o", "name")
    assert names.out.splitlines() == ["pod/a", "pod/b"]
    path = await ctl(client, "get", "pod/a", "-o", "jsonpath={.metadata.namespace}")
    assert path.out == "default\n"


@pytest.mark.anyio
async def test_selectors_are_passed_to_the_list() -> None:
    client = fake(make_pod("a").label("app", "x").obj(), make_pod("b").node("n1").obj())
    labelled = await ctl(client, "get", "pods", "-l", "app=x", "-o", "name")
    assert labelled.out == "pod/a\n"
    fields = await ctl(client, "get", "pods", "--field-selector", "spec.nodeName=n1", "-o", "name")
    assert fields.out == "pod/b\n"


@pytest.mark.anyio
async def test_missing_objects_and_unknown_kinds_are_errors() -> None:
    client = fake(make_pod("a").obj())
    result = await ctl(client, "get", "pod", "a", "nope")
    assert result.rc == 1
    assert result.out.splitlines()[1].startswith("a ")
    assert result.err == 'error: pods "nope" not found\n'
    unknown = await ctl(client, "get", "podtemplates")
    assert (unknown.rc, unknown.err) == (
        1,
        'error: the server doesn\'t have a resource type "podtemplates"\n',
    )
    empty = await ctl(client, "get", "pods", "-n", "other")
    assert (empty.rc, empty.out, empty.err) == (0, "", "No resources found in other namespace.\n")
    bad_output = await ctl(client, "get", "pods", "-o", "xml")
    assert bad_output.rc == 1 and "output format" in bad_output.err


@pytest.mark.anyio
async def test_watch_prints_the_table_then_a_row_per_change() -> None:
    client = fake(make_pod("a").obj())
    out, err = io.StringIO(), io.StringIO()
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: run(["get", "pods", "-w"], client=client, out=out, err=err, environ={})
        )

        async def lines(n: int) -> list[str]:
            got = out.getvalue().splitlines()
            assert len(got) >= n, got
            return got

        await eventually(lambda: lines(2), timeout=5)
        assert client.verbs("pods") == ["list", "watch"]
        # The watch starts from the list's resourceVersion: nothing is missed or repeated.
        assert client.actions[-1].resource_version == client.resource_version == "1"
        await client.create(make_pod("b").obj())
        await client.patch(
            types_pb2.Pod, "a", {"spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}
        )
        got = await eventually(lambda: lines(4), timeout=5)
        tg.cancel_scope.cancel()
    assert got[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert got[1].split()[0] == "a"
    assert got[2].split()[0] == "b"
    assert got[3].split()[:3] == ["a", "0/1", "Pending"]  # spec patch: status is not patched
    assert err.getvalue() == ""


@pytest.mark.anyio
async def test_several_kinds_separated_by_commas_print_a_table_each_with_kind_names() -> None:
    client = fake(
        make_pod("web").node("n1").phase("Running").obj(),
        make_pdb("web").min_available(1).obj(),
    )
    result = await ctl(client, "get", "po,pdb")
    assert result.rc == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].split()[:2] == ["NAME", "READY"]
    assert lines[1].split()[0] == "pod/web"
    assert lines[2] == ""
    assert lines[3].split()[0] == "NAME"
    assert lines[4].split()[0] == "poddisruptionbudget.policy/web"
    named = await ctl(client, "get", "po,pdb", "web", "-o", "name")
    assert named.out.splitlines() == ["pod/web", "poddisruptionbudget.policy/web"]
    one = await ctl(client, "get", "pods")
    assert one.out.splitlines()[1].split()[0] == "web"  # one kind: plain names
    bad = await ctl(client, "get", "po,nothing")
    assert bad.rc != 0 and 'the server doesn\'t have a resource type "nothing"' in bad.err


@pytest.mark.anyio
async def test_get_the_storage_kinds_by_short_name() -> None:
    """Issue #34: kemuctl serves the new kinds by name and short name (pvc, pv, sc, sts, sa,
    cj) with kubectl's columns."""
    pvc = types_pb2.PersistentVolumeClaim(
        metadata=types_pb2.ObjectMeta(name="data", namespace="default"),
        spec=types_pb2.PersistentVolumeClaimSpec(
            access_modes=["ReadWriteOnce"], volume_name="pv1", storage_class_name="fast"
        ),
        status=types_pb2.PersistentVolumeClaimStatus(
            phase="Bound", access_modes=["ReadWriteOnce"], capacity={"storage": "1Gi"}
        ),
    )
    pv = types_pb2.PersistentVolume(
        metadata=types_pb2.ObjectMeta(name="pv1"),
        spec=types_pb2.PersistentVolumeSpec(
            capacity={"storage": "1Gi"},
            access_modes=["ReadWriteOnce"],
            persistent_volume_reclaim_policy="Delete",
            claim_ref=types_pb2.ObjectReference(namespace="default", name="data"),
        ),
        status=types_pb2.PersistentVolumeStatus(phase="Bound"),
    )
    sts = types_pb2.StatefulSet(
        metadata=types_pb2.ObjectMeta(name="db", namespace="default"),
        spec=types_pb2.StatefulSetSpec(replicas=3),
        status=types_pb2.StatefulSetStatus(ready_replicas=2),
    )
    client = fake(pvc, pv, sts)
    claims = (await ctl(client, "get", "pvc")).out.splitlines()
    assert claims[0].split() == [
        "NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES", "STORAGECLASS",
        "VOLUMEATTRIBUTESCLASS", "AGE",
    ]  # fmt: skip
    assert claims[1].split()[:6] == ["data", "Bound", "pv1", "1Gi", "RWO", "fast"]
    volumes = (await ctl(client, "get", "pv")).out.splitlines()
    assert volumes[1].split()[:6] == ["pv1", "1Gi", "RWO", "Delete", "Bound", "default/data"]
    sets = (await ctl(client, "get", "sts")).out.splitlines()
    assert sets[1].split()[:2] == ["db", "2/3"]
    for name in ("sc", "sa", "cj", "secrets", "csinodes"):
        result = await ctl(client, "get", name, "-A")
        assert result.rc == 0 and not result.err.startswith("error"), (name, result.err)


@pytest.mark.anyio
async def test_managed_fields_are_hidden_unless_show_managed_fields() -> None:
    """kubectl's printers omit metadata.managedFields; --show-managed-fields keeps them."""
    pod = make_pod("p").obj()
    entry = pod.metadata.managed_fields.add(manager="kubectl", operation="Apply")
    entry.fields_v1.raw = '{"f:spec":{}}'
    client = fake(pod)
    hidden = await ctl(client, "get", "pod", "p", "-o", "json")
    assert "managedFields" not in json.loads(hidden.out)["metadata"]
    listed = await ctl(client, "get", "pods", "-o", "yaml")
    assert "managedFields" not in listed.out
    shown = await ctl(client, "get", "pod", "p", "-o", "json", "--show-managed-fields")
    assert json.loads(shown.out)["metadata"]["managedFields"][0]["manager"] == "kubectl"

# mypy: disable-error-code="union-attr,no-untyped-call,index,arg-type"
# (the kubernetes client types every field Optional and leaves its watch untyped)
"""The official `kubernetes` Python client against kemu's REST edge (real etcd and apiserver),
and a REST watch next to a gRPC watch of the same changes."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import pytest
import urllib3
from kubernetes import client as k8s
from kubernetes import config, watch

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.testing.cluster import Cluster
from kemu.testing.eventually import eventually_sync
from kemu.testing.names import unique_name
from kemu.testing.ports import free_port

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("rest-py")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(rest=True)
        c.write_kubeconfig()
        yield c


@pytest.fixture
def core(cluster: Cluster) -> k8s.CoreV1Api:
    api_client = config.new_client_from_config(str(cluster.root / "kubeconfig"))
    return k8s.CoreV1Api(api_client)


def _namespace(core: k8s.CoreV1Api, prefix: str) -> str:
    ns = unique_name(prefix)
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=ns)))
    return ns


def _pod(name: str) -> k8s.V1Pod:
    return k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name=name, labels={"app": name}),
        spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="c", image="nginx")]),
    )


def test_python_client_create_list_patch_binding_eviction(core: k8s.CoreV1Api) -> None:
    ns = _namespace(core, "py")
    created = core.create_namespaced_pod(ns, _pod("a"))
    assert created.metadata.uid and created.status.phase == "Pending"
    core.create_namespaced_pod(ns, _pod("b"))
    pods = core.list_namespaced_pod(ns, label_selector="app=a")
    assert [p.metadata.name for p in pods.items] == ["a"]
    page = core.list_namespaced_pod(ns, limit=1)
    assert len(page.items) == 1 and page.metadata._continue
    rest = core.list_namespaced_pod(ns, limit=1, _continue=page.metadata._continue)
    assert {page.items[0].metadata.name, rest.items[0].metadata.name} == {"a", "b"}

    patched = core.patch_namespaced_pod("a", ns, {"metadata": {"labels": {"x": "1"}}})
    assert patched.metadata.labels == {"app": "a", "x": "1"}
    patched = core.patch_namespaced_pod(
        "a", ns, [{"op": "replace", "path": "/metadata/labels/x", "value": "2"}]
    )
    assert patched.metadata.labels["x"] == "2"

    core.create_namespaced_pod_binding(
        "a",
        ns,
        k8s.V1Binding(
            metadata=k8s.V1ObjectMeta(name="a"),
            target=k8s.V1ObjectReference(kind="Node", name="n1"),
        ),
        _preload_content=False,  # the answer is a Status, which V1Binding cannot read
    )
    assert core.read_namespaced_pod("a", ns).spec.node_name == "n1"

    core.create_namespaced_pod_eviction(
        "b", ns, k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name="b", namespace=ns))
    )
    with pytest.raises(k8s.ApiException) as err:
        core.read_namespaced_pod("b", ns)
    assert err.value.status == 404

    with pytest.raises(k8s.ApiException) as err:
        core.create_namespaced_pod(ns, _pod("a"))
    assert err.value.status == 409


def test_python_client_errors_are_upstream_status_bodies(core: k8s.CoreV1Api) -> None:
    ns = _namespace(core, "pye")
    pod = core.create_namespaced_pod(ns, _pod("p"))
    core.patch_namespaced_pod("p", ns, {"metadata": {"labels": {"v": "1"}}})
    with pytest.raises(k8s.ApiException) as err:  # a stale resourceVersion
        core.replace_namespaced_pod("p", ns, pod)
    assert err.value.status == 409
    assert json.loads(err.value.body)["reason"] == "Conflict"
    bad = _pod("q")
    bad.spec.containers[0].name = "Bad_Name"
    with pytest.raises(k8s.ApiException) as err:
        core.create_namespaced_pod(ns, bad)
    assert err.value.status == 422
    status = json.loads(err.value.body)
    assert status["kind"] == "Status" and status["reason"] == "Invalid"
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.containers[0].name"]


def test_python_client_watch_resumes_from_a_resource_version(core: k8s.CoreV1Api) -> None:
    ns = _namespace(core, "pyw")
    core.create_namespaced_pod(ns, _pod("first"))
    rv = core.list_namespaced_pod(ns).metadata.resource_version
    core.create_namespaced_pod(ns, _pod("second"))
    core.delete_namespaced_pod("first", ns, grace_period_seconds=0)
    seen = []
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_pod, ns, resource_version=rv, timeout_seconds=5):
        seen.append((event["type"], event["object"].metadata.name))
        if event["type"] == "DELETED":
            w.stop()
    assert seen[0] == ("ADDED", "second")  # nothing from before rv
    assert seen[-1] == ("DELETED", "first")


@pytest.mark.anyio
async def test_rest_and_grpc_watches_see_the_same_events_in_order(
    core: k8s.CoreV1Api, cluster: Cluster
) -> None:
    ns = _namespace(core, "same")
    rv = core.list_namespaced_pod(ns).metadata.resource_version
    for name in ("p1", "p2", "p3"):
        core.create_namespaced_pod(ns, _pod(name))
    core.patch_namespaced_pod("p2", ns, {"metadata": {"labels": {"v": "2"}}})
    core.delete_namespaced_pod("p1", ns, grace_period_seconds=0)
    core.create_namespaced_pod(ns, _pod("last"))

    rest_events = []
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_pod, ns, resource_version=rv, timeout_seconds=10):
        obj = event["object"]
        rest_events.append((event["type"], obj.metadata.name, obj.metadata.resource_version))
        if obj.metadata.name == "last":
            w.stop()

    grpc_events = []
    async with Client(cluster.server) as c:
        async with c.watch(types_pb2.Pod, ns, resource_version=rv) as stream:
            with anyio.fail_after(10):
                async for ev in stream:
                    meta = ev.object.metadata
                    grpc_events.append((ev.type, meta.name, meta.resource_version))
                    if meta.name == "last":
                        break
    assert rest_events == grpc_events
    assert [e[:2] for e in rest_events][:3] == [("ADDED", "p1"), ("ADDED", "p2"), ("ADDED", "p3")]


def test_python_client_dry_run_returns_the_would_be_object(core: k8s.CoreV1Api) -> None:
    ns = _namespace(core, "pydry")
    would_be = core.create_namespaced_pod(ns, _pod("d"), dry_run="All")
    assert would_be.metadata.uid and would_be.status.phase == "Pending"  # defaulted, admitted
    assert not would_be.metadata.resource_version  # as upstream: never stored
    with pytest.raises(k8s.ApiException) as err:
        core.read_namespaced_pod("d", ns)
    assert err.value.status == 404
    core.create_namespaced_pod(ns, _pod("d"))
    rv = core.read_namespaced_pod("d", ns).metadata.resource_version
    patched = core.patch_namespaced_pod(
        "d", ns, {"metadata": {"labels": {"x": "1"}}}, dry_run="All"
    )
    assert patched.metadata.labels["x"] == "1"
    core.delete_namespaced_pod("d", ns, dry_run="All")
    with pytest.raises(k8s.ApiException) as err:
        core.create_namespaced_pod(ns, _pod("d"), dry_run="All")
    assert err.value.status == 409  # the key exists: a dry run checks that too
    with pytest.raises(k8s.ApiException) as err:
        core.create_namespaced_pod(ns, _pod("e"), dry_run="Some")
    assert err.value.status == 422
    stored = core.read_namespaced_pod("d", ns)
    assert stored.metadata.resource_version == rv and stored.metadata.labels == {"app": "d"}
    assert stored.metadata.deletion_timestamp is None


def test_python_client_delete_collection_with_a_label_selector(core: k8s.CoreV1Api) -> None:
    ns = _namespace(core, "pydc")
    for name in ("a", "b", "c"):
        core.create_namespaced_pod(ns, _pod(name))
    core.delete_collection_namespaced_pod(ns, label_selector="app in (a,b)", dry_run="All")
    assert len(core.list_namespaced_pod(ns).items) == 3  # a dry run deletes nothing
    core.delete_collection_namespaced_pod(ns, label_selector="app in (a,b)", grace_period_seconds=0)
    assert [p.metadata.name for p in core.list_namespaced_pod(ns).items] == ["c"]


def test_python_client_sees_429_from_a_pdb_and_410_from_a_compacted_watch(
    core: k8s.CoreV1Api, cluster: Cluster
) -> None:
    ns = _namespace(core, "pycodes")
    core.create_namespaced_pod(ns, _pod("guarded"))
    # Running (no kubelet here): a Pending pod is evicted without asking its budget
    core.patch_namespaced_pod_status("guarded", ns, {"status": {"phase": "Running"}})
    policy = k8s.PolicyV1Api(core.api_client)
    policy.create_namespaced_pod_disruption_budget(
        ns,
        k8s.V1PodDisruptionBudget(
            metadata=k8s.V1ObjectMeta(name="pdb"),
            spec=k8s.V1PodDisruptionBudgetSpec(
                min_available=1, selector=k8s.V1LabelSelector(match_labels={"app": "guarded"})
            ),
        ),
    )
    with pytest.raises(k8s.ApiException) as err:
        core.create_namespaced_pod_eviction(
            "guarded", ns, k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name="guarded"))
        )
    assert err.value.status == 429
    assert json.loads(err.value.body)["reason"] == "TooManyRequests"

    rest_port = free_port()
    cluster.start_apiserver(
        name="apiserver-compacting-rest",
        extra_args=["--etcd-compaction-interval", "0.5", "--rest-port", str(rest_port)],
    )
    compacting = k8s.ApiClient(k8s.Configuration(host=f"http://127.0.0.1:{rest_port}"))
    api = k8s.CoreV1Api(compacting)

    def serving() -> bool:  # the harness waits for the gRPC port; REST may come a moment later
        try:
            return api.list_namespaced_pod(ns) is not None
        except urllib3.exceptions.MaxRetryError:
            return False

    eventually_sync(serving, timeout=15)
    old = api.list_namespaced_pod(ns).metadata.resource_version
    moves = iter(range(1000))

    def expired() -> bool:
        api.create_namespaced_pod(ns, _pod(f"q{next(moves)}"))  # history moves on
        try:
            for _ in watch.Watch().stream(
                api.list_namespaced_pod, ns, resource_version=old, timeout_seconds=1
            ):
                pass
        except k8s.ApiException as e:
            assert e.status == 410 and "too old resource version" in str(e.reason)
            return True
        return False

    eventually_sync(expired, timeout=15)


def test_python_client_scale_subresource_conflicts_on_a_stale_resource_version(
    core: k8s.CoreV1Api,
) -> None:
    ns = _namespace(core, "pyscale")
    apps = k8s.AppsV1Api(core.api_client)
    apps.create_namespaced_deployment(
        ns,
        k8s.V1Deployment(
            metadata=k8s.V1ObjectMeta(name="d"),
            spec=k8s.V1DeploymentSpec(
                selector=k8s.V1LabelSelector(match_labels={"app": "d"}),
                template=k8s.V1PodTemplateSpec(
                    metadata=k8s.V1ObjectMeta(labels={"app": "d"}),
                    spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="c", image="nginx")]),
                ),
            ),
        ),
    )
    scale = apps.read_namespaced_deployment_scale("d", ns)
    assert scale.spec.replicas == 1 and scale.status.selector == "app=d"
    apps.patch_namespaced_deployment_scale("d", ns, {"spec": {"replicas": 4}})
    assert apps.read_namespaced_deployment("d", ns).spec.replicas == 4
    with pytest.raises(k8s.ApiException) as err:  # the Scale read before the patch is stale
        apps.replace_namespaced_deployment_scale("d", ns, scale)
    assert err.value.status == 409

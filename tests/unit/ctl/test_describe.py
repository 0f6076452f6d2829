"""describe: pods (NNN, conditions, resources, events) and nodes (pods, allocation)."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.testing.builders import make_node, make_pod, make_priority_class

from .helpers import NOW, ctl, fake


def _event(
    name: str, kind: str, obj: str, reason: str, message: str, *, count: int = 1
) -> types_pb2.Event:
    e = types_pb2.Event(
        metadata=types_pb2.ObjectMeta(name=name, namespace="default"),
        involved_object=types_pb2.ObjectReference(kind=kind, name=obj, namespace="default"),
        reason=reason,
        message=message,
        type="Warning" if reason == "FailedScheduling" else "Normal",
        count=count,
        source=types_pb2.EventSource(component="default-scheduler"),
    )
    e.first_timestamp.seconds = int(NOW) - 600
    e.last_timestamp.seconds = int(NOW) - 60
    return e


def _resizing_pod() -> types_pb2.Pod:
    pod = (
        make_pod("web")
        .req(cpu="1", memory="1Gi")
        .lim(cpu="2")
        .priority(100)
        .priority_class("high")
        .nominated("n2")
        .toleration("dedicated", "batch", effect="NoSchedule")
        .phase("Running")
        .obj()
    )
    pod.spec.node_name = "n1"
    pod.status.conditions.add(
        type="PodResizePending",
        status="True",
        reason="Infeasible",
        message="Node didn't have enough capacity: cpu",
    )
    pod.status.conditions.add(
        type="DisruptionTarget",
        status="True",
        reason="PreemptionByScheduler",
        message="default-scheduler: preempting to accommodate a higher priority pod",
    )
    st = pod.status.container_statuses.add(name="c", ready=True)
    st.state.running.started_at.seconds = int(NOW)
    st.allocated_resources.update({"cpu": "500m", "memory": "1Gi"})
    st.resources.requests.update({"cpu": "500m", "memory": "1Gi"})
    return pod


@pytest.mark.anyio
async def test_describe_pod_shows_priority_nnn_conditions_resources_and_its_events() -> None:
    client = fake(
        _resizing_pod(),
        _event("e1", "Pod", "web", "FailedScheduling", "0/2 nodes are available", count=3),
        _event("e2", "Pod", "other", "Scheduled", "not about web"),
        _event("e3", "Node", "web", "Odd", "a node named web: not about the pod"),
    )
    result = await ctl(client, "describe", "pod", "web")
    assert result.rc == 0, result.err
    text = result.out
    lines = text.splitlines()
    assert lines[0].split() == ["Name:", "web"]
    assert "Priority:             100" in lines
    assert "Priority Class Name:  high" in lines
    assert "Node:                 n1" in lines
    assert "Nominated Node Name:  n2" in lines
    assert "Status:               Running" in lines
    # Conditions with reason and message.
    pending = next(li for li in lines if li.strip().startswith("PodResizePending"))
    assert pending.split(None, 3) == [
        "PodResizePending",
        "True",
        "Infeasible",
        "Node didn't have enough capacity: cpu",
    ]
    assert any(
        li.split()[:3] == ["DisruptionTarget", "True", "PreemptionByScheduler"] for li in lines
    )
    # Requests, limits, allocated and actual resources of the container.
    start = lines.index("Containers:")
    block = "\n".join(lines[start : start + 25])
    assert "    Requests:\n      cpu:     1\n      memory:  1Gi" in block
    assert "    Limits:\n      cpu:  2" in block
    assert "    Allocated Resources:\n      cpu:     500m\n      memory:  1Gi" in block
    assert "    Actual Requests:\n      cpu:     500m" in block
    assert any(li.split() == ["Tolerations:", "dedicated=batch:NoSchedule"] for li in lines)
    # Only the pod's own events.
    events = lines[lines.index("Events:") :]
    assert events[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert [c.strip() for c in events[3].split("  ") if c.strip()] == [
        "Warning",
        "FailedScheduling",
        "60s (x3 over 10m)",
        "default-scheduler",
        "0/2 nodes are available",
    ]
    assert len(events) == 4
    assert "not about" not in text


@pytest.mark.anyio
async def test_describe_pod_without_events_or_nomination() -> None:
    client = fake(make_pod("p").obj())
    result = await ctl(client, "describe", "pods/p")
    lines = result.out.splitlines()
    assert "Nominated Node Name:  <none>" in lines
    assert lines[-1].split() == ["Events:", "<none>"]


@pytest.mark.anyio
async def test_describe_node_lists_its_pods_the_allocated_sum_and_nominated_pods() -> None:
    node = make_node("n1").capacity(cpu="4", memory="8Gi", pods="110").ready().taint("k", "v").obj()
    client = fake(
        node,
        make_pod("a").req(cpu="1", memory="2Gi").node("n1").phase("Running").obj(),
        make_pod("b").req(cpu="500m").lim(cpu="1").node("n1").phase("Running").obj(),
        make_pod("done").req(cpu="3").node("n1").phase("Succeeded").obj(),
        make_pod("elsewhere").req(cpu="3").node("n2").obj(),
        make_pod("waiting").req(cpu="2").priority(10).nominated("n1").obj(),
        _event("e1", "Node", "n1", "NodeReady", "Node n1 status is now: NodeReady"),
    )
    result = await ctl(client, "describe", "node", "n1")
    assert result.rc == 0, result.err
    lines = result.out.splitlines()
    assert any(li.split() == ["Taints:", "k=v:NoSchedule"] for li in lines)
    assert any(
        li.split()[:2] == ["Non-terminated", "Pods:"] and "(2 in total)" in li for li in lines
    )
    rows = {li.split()[1]: li.split()[2:] for li in lines if li.startswith("  default ")}
    assert rows["a"][:6] == ["1", "(25%)", "0", "(0%)", "2Gi", "(25%)"]
    assert rows["b"][:4] == ["500m", "(12%)", "1", "(25%)"]
    assert "done" not in rows and "elsewhere" not in rows
    alloc = lines[lines.index("Allocated resources:") :]
    assert any(li.split() == ["cpu", "1500m", "(37%)", "1", "(25%)"] for li in alloc)
    assert any(li.split() == ["memory", "2Gi", "(25%)", "0", "(0%)"] for li in alloc)
    nominated = lines[next(i for i, li in enumerate(lines) if li.startswith("Nominated Pods:")) :]
    assert nominated[0].split()[-3:] == ["(1", "in", "total)"]
    assert nominated[3].split() == ["default", "waiting", "10", "2", "(50%)", "0", "(0%)"]
    assert "NodeReady" in lines[-1]


@pytest.mark.anyio
async def test_describe_node_counts_pod_level_resources_as_upstream_resource_helpers_do() -> None:
    """kubectl describe node sums component-helpers' PodRequests/PodLimits, which honour
    spec.resources (KEP-2837) for cpu, memory and hugepages."""
    node = make_node("n1").capacity(cpu="4", memory="8Gi", pods="110").ready().obj()
    pod = make_pod("a").req(cpu="1", memory="1Gi").pod_req(cpu="3").pod_lim(cpu="4")
    result = await ctl(fake(node, pod.node("n1").phase("Running").obj()), "describe", "node", "n1")
    assert result.rc == 0, result.err
    lines = result.out.splitlines()
    rows = {li.split()[1]: li.split()[2:] for li in lines if li.startswith("  default ")}
    assert rows["a"][:6] == ["3", "(75%)", "4", "(100%)", "1Gi", "(12%)"]


@pytest.mark.anyio
async def test_describe_node_counts_a_resized_pod_as_upstream_resource_helpers_do() -> None:
    # Behaviour change: an Infeasible resize's desired size is left out (spec 1 cpu, allocated
    # and actual 500m: 500m; describe used to show 1), and a pending one counts at its desired
    # size (upsized to 3: 3).
    node = make_node("n1").capacity(cpu="4", memory="8Gi", pods="110").ready().obj()
    infeasible = _resizing_pod()
    deferred = _resizing_pod()
    deferred.metadata.name = "deferred"
    deferred.status.conditions[0].reason = "Deferred"
    deferred.spec.containers[0].resources.requests["cpu"] = "3"
    deferred.spec.containers[0].resources.limits["cpu"] = "3"
    deferred.status.container_statuses[0].resources.limits["cpu"] = "2"
    result = await ctl(fake(node, infeasible, deferred), "describe", "node", "n1")
    assert result.rc == 0, result.err
    lines = result.out.splitlines()
    rows = {li.split()[1]: li.split()[2:] for li in lines if li.startswith("  default ")}
    assert rows["web"][:2] == ["500m", "(12%)"]
    assert rows["deferred"][:4] == ["3", "(75%)", "3", "(75%)"]


@pytest.mark.anyio
async def test_describe_other_kinds_generically_and_errors() -> None:
    client = fake(
        make_priority_class("high", 1000).preemption_policy("Never").description("for web").obj()
    )
    result = await ctl(client, "describe", "priorityclass", "high")
    lines = result.out.splitlines()
    assert lines[0].split() == ["Name:", "high"]
    assert any(li.split() == ["Value:", "1000"] for li in lines)
    # kubectl's describePriorityClass (test_describe_kinds.py compares the whole layout)
    assert any(li.split() == ["PreemptionPolicy:", "Never"] for li in lines)
    missing = await ctl(client, "describe", "pod", "nope")
    assert (missing.rc, missing.err) == (1, 'error: pods "nope" not found\n')


def test_describe_pod_shows_ports_command_env_probes_mounts_and_volumes() -> None:
    from kemu.ctl.describe import describe_pod
    from kemu.machinery import convert, kinds
    from kemu.machinery.pod_defaults import default_pod_spec
    from tests.unit.machinery.test_pod_spec import nginx_manifest

    pod = convert.from_dict(kinds.kind_of(types_pb2.Pod()), nginx_manifest())
    assert isinstance(pod, types_pb2.Pod)
    default_pod_spec(pod.spec)
    out = describe_pod(pod, [], NOW)
    lines = [line.strip() for line in out.splitlines()]
    assert any(line.startswith("Port:") and line.endswith(" 80/TCP (http)") for line in lines)
    assert any(
        line.startswith("Host Port:") and line.endswith(" 8080/TCP (http)") for line in lines
    )
    assert lines[lines.index("Command:") + 1] == "nginx"
    assert lines[lines.index("Args:") + 1 : lines.index("Args:") + 3] == ["-g", "daemon off;"]
    assert any(
        line.startswith("Readiness:")
        and line.endswith(
            "http-get http://:http/healthz delay=2s timeout=1s period=5s #success=1 #failure=3"
        )
        for line in lines
    )
    assert any(line.startswith("NGINX_PORT:") and line.endswith("80") for line in lines)
    assert any(
        line.startswith("POD_NAME:") and line.endswith("nginx (v1:metadata.name)") for line in lines
    )
    assert "/var/cache/nginx from cache (rw)" in lines
    assert lines[lines.index("Volumes:") + 1] == "cache:"
    assert any(line.startswith("SizeLimit:") and line.endswith("256Mi") for line in lines)


@pytest.mark.anyio
async def test_describe_node_shows_the_autoscalers_taints_and_annotations_as_kubectl() -> None:
    """kubectl's printTaintsMultiline (by effect then key, continuation lines aligned under the
    first) and printAnnotationsMultiline (`key: value` sorted, long values under the key)."""
    node = (
        make_node("pool-a-0")
        .ready()
        .taint("ToBeDeletedByClusterAutoscaler", "1700000000", effect="NoSchedule")
        .taint("DeletionCandidateOfClusterAutoscaler", "1699999000", effect="PreferNoSchedule")
        .taint("dedicated", "", effect="NoSchedule")
        .obj()
    )
    node.metadata.annotations["cluster-autoscaler.kubernetes.io/scale-down-disabled"] = "true"
    node.metadata.annotations["a.example/long"] = "x" * 150
    node.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
    result = await ctl(fake(node), "describe", "node", "pool-a-0")
    assert result.rc == 0, result.err
    lines = result.out.splitlines()
    start = next(i for i, li in enumerate(lines) if li.startswith("Annotations:"))
    column = lines[start].index("a.example/long:")
    assert lines[start][column:] == "a.example/long:"
    assert lines[start + 1] == " " * column + "  " + "x" * 138 + "..."
    assert (
        lines[start + 2]
        == " " * column + "cluster-autoscaler.kubernetes.io/scale-down-disabled: true"
    )
    assert not any("last-applied-configuration" in li for li in lines)
    start = next(i for i, li in enumerate(lines) if li.startswith("Taints:"))
    assert [li[column:] for li in lines[start : start + 3]] == [
        "ToBeDeletedByClusterAutoscaler=1700000000:NoSchedule",  # "T" sorts before "d"
        "dedicated:NoSchedule",
        "DeletionCandidateOfClusterAutoscaler=1699999000:PreferNoSchedule",
    ]
    assert all(li[:column].strip() == "" for li in lines[start + 1 : start + 3])


@pytest.mark.anyio
async def test_describe_shows_node_addresses_pod_cidrs_and_pod_ips_as_kubectl() -> None:
    node = make_node("n1").capacity(cpu="4").ready().obj()
    node.status.addresses.add(type="InternalIP", address="172.18.0.2")
    node.status.addresses.add(type="Hostname", address="n1")
    node.spec.pod_cidr = "10.244.1.0/24"
    node.spec.pod_cidrs.append("10.244.1.0/24")
    pod = make_pod("p").node("n1").phase("Running").obj()
    pod.status.pod_ip = "10.244.1.2"
    pod.status.pod_ips.add(ip="10.244.1.2")
    client = fake(node, pod, make_pod("q").obj())
    lines = (await ctl(client, "describe", "node", "n1")).out.splitlines()
    at = lines.index("Addresses:")
    assert [li.split() for li in lines[at + 1 : at + 3]] == [
        ["InternalIP:", "172.18.0.2"],
        ["Hostname:", "n1"],
    ]
    assert any(li.split() == ["PodCIDRs:", "10.244.1.0/24"] for li in lines)
    lines = (await ctl(client, "describe", "pod", "p")).out.splitlines()
    at = lines.index("IPs:")
    assert lines[at + 1].split() == ["IP:", "10.244.1.2"]
    lines = (await ctl(client, "describe", "pod", "q")).out.splitlines()
    assert any(li.split() == ["IPs:", "<none>"] for li in lines)


def _pod_group() -> types_pb2.PodGroup:
    pg = types_pb2.PodGroup(metadata=types_pb2.ObjectMeta(name="g", namespace="default"))
    pg.spec.workload_ref.workload_name, pg.spec.workload_ref.template_name = "w", "t"
    pg.spec.scheduling_policy.gang.min_count = 2
    return pg


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("emulated", "runtime", "target", "api_version", "reference"),
    [
        ("1.37", "api/all=true", "podgroup", "scheduling.k8s.io/v1beta1", "Workload Ref:"),
        ("1.37", "scheduling.k8s.io/v1alpha3=true", "podgroup", "scheduling.k8s.io/v1alpha3", None),
        (
            "1.36",
            "api/all=true",
            "podgroup",
            "scheduling.k8s.io/v1alpha2",
            "Pod Group Template Ref:",
        ),
        (
            "1.37",
            "api/all=true",
            "podgroups.v1alpha3.scheduling.k8s.io",
            "scheduling.k8s.io/v1alpha3",
            None,
        ),
    ],
)
async def test_describe_pod_group_as_the_version_served_or_asked_for(
    emulated: str, runtime: str, target: str, api_version: str, reference: str | None
) -> None:
    """kubectl describe shows a kind in the server's preferred group version (discovery's at
    its emulated version with its gates and runtime config), or in the one a fully qualified
    resource names."""
    client = fake(_pod_group())
    client.version_info.server.emulated_version = emulated
    client.version_info.server.feature_gates.add(name="GenericWorkload", enabled=True)
    client.version_info.server.runtime_config.append(runtime)
    result = await ctl(client, "describe", target, "g")
    assert result.rc == 0, result.err
    lines = result.out.splitlines()
    assert ["API", "Version:", api_version] in [li.split() for li in lines]
    if reference is not None:
        assert any(li.strip() == reference for li in lines)
    wrong = await ctl(client, "describe", "podgroups.v1alpha1.scheduling.k8s.io", "g")
    assert wrong.rc == 1


def test_describe_pod_shows_its_resource_claims() -> None:
    """S-DRA-API-18: the pod's claims (the generated one from status.resourceClaimStatuses)
    and each container's claims."""
    from kemu.ctl.describe import describe_pod

    pod = make_pod("p").obj()
    pod.spec.resource_claims.add(name="gpu", resource_claim_template_name="gpu-template")
    pod.spec.resource_claims.add(name="shared", resource_claim_name="shared-claim")
    pod.spec.containers[0].resources.claims.add(name="gpu", request="big")
    pod.spec.containers[0].resources.claims.add(name="shared")
    pod.status.resource_claim_statuses.add(name="gpu", resource_claim_name="p-gpu-x7k2q")
    lines = [" ".join(line.split()) for line in describe_pod(pod, [], NOW).splitlines()]
    block = lines[lines.index("Resource Claims:") :]
    assert block[1:6] == [
        "gpu:",
        "ResourceClaimTemplate: gpu-template",
        "Generated ResourceClaim: p-gpu-x7k2q",
        "shared:",
        "ResourceClaim: shared-claim",
    ]
    claims = lines[lines.index("Claims:") :][1:3]
    assert claims == ["gpu/big", "shared"]


# ---------------------------------------------------------------- kubectl's layouts (issue 57)


async def test_describe_configmap_in_kubectls_layout() -> None:
    cm = types_pb2.ConfigMap(
        metadata=types_pb2.ObjectMeta(name="cfg", namespace="default"),
        data={"b": "two", "a": "one"},
        binary_data={"bin": b"\x00\x01\x02"},
    )
    result = await ctl(fake(cm), "describe", "configmap", "cfg")
    assert result.out.splitlines() == [
        "Name:         cfg",
        "Namespace:    default",
        "Labels:       <none>",
        "Annotations:  <none>",
        "",
        "Data",
        "====",
        "a:",
        "----",
        "one",
        "",
        "b:",
        "----",
        "two",
        "",
        "",
        "BinaryData",
        "====",
        "bin: 3 bytes",
        "",
        "Events:  <none>",
    ]


async def test_describe_pv_and_pvc_in_kubectls_layout() -> None:
    pv = types_pb2.PersistentVolume(metadata=types_pb2.ObjectMeta(name="pv1"))
    pv.metadata.finalizers.append("kubernetes.io/pv-protection")
    pv.spec.capacity["storage"] = "10Gi"
    pv.spec.access_modes.extend(["ReadWriteOnce", "ReadWriteMany"])
    pv.spec.persistent_volume_reclaim_policy = "Retain"
    pv.spec.storage_class_name = "standard"
    pv.spec.claim_ref.namespace, pv.spec.claim_ref.name = "default", "data"
    pv.spec.host_path.path = "/mnt/data"
    term = pv.spec.node_affinity.required.node_selector_terms.add()
    term.match_expressions.add(key="kubernetes.io/hostname", operator="In", values=["n1"])
    pv.status.phase = "Bound"
    pvc = types_pb2.PersistentVolumeClaim(
        metadata=types_pb2.ObjectMeta(name="data", namespace="default")
    )
    pvc.spec.volume_name = "pv1"
    pvc.spec.storage_class_name = "standard"
    pvc.status.phase = "Bound"
    pvc.status.capacity["storage"] = "10Gi"
    pvc.status.access_modes.append("ReadWriteOnce")
    user = make_pod("app").obj()
    user.spec.volumes.add(name="d").persistent_volume_claim.claim_name = "data"
    client = fake(pv, pvc, user)

    out = (await ctl(client, "describe", "pv", "pv1")).out.splitlines()
    assert out == [
        "Name:              pv1",
        "Labels:            <none>",
        "Annotations:       <none>",
        "Finalizers:        [kubernetes.io/pv-protection]",
        "StorageClass:      standard",
        "Status:            Bound",
        "Claim:             default/data",
        "Reclaim Policy:    Retain",
        "Access Modes:      RWO,RWX",
        "Capacity:          10Gi",
        "Node Affinity:",
        "  Required Terms:",
        "    Term 0:        kubernetes.io/hostname in [n1]",
        "Message:",
        "Source:",
        "    Type:          HostPath (bare host directory volume)",
        "    Path:          /mnt/data",
        "    HostPathType:",
        "Events:            <none>",
    ]
    out = (await ctl(client, "describe", "pvc", "data")).out.splitlines()
    assert out[:10] == [
        "Name:          data",
        "Namespace:     default",
        "StorageClass:  standard",
        "Status:        Bound",
        "Volume:        pv1",
        "Labels:        <none>",
        "Annotations:   <none>",
        "Finalizers:    []",
        "Capacity:      10Gi",
        "Access Modes:  RWO",
    ]
    assert out[10:] == ["Used By:       app", "Events:        <none>"]


async def test_describe_service_in_kubectls_layout() -> None:
    svc = types_pb2.Service(metadata=types_pb2.ObjectMeta(name="web", namespace="default"))
    svc.spec.selector["app"] = "web"
    svc.spec.type = "ClusterIP"
    svc.spec.ip_family_policy = "SingleStack"
    svc.spec.ip_families.append("IPv4")
    svc.spec.cluster_ip = "10.96.0.10"
    svc.spec.cluster_ips.append("10.96.0.10")
    svc.spec.ports.add(protocol="TCP", port=80).target_port.int_val = 8080
    svc.spec.session_affinity = "None"
    svc.spec.internal_traffic_policy = "Cluster"
    # the endpoints are the Service's EndpointSlices' (kubectl's formatEndpointSlices)
    eps = types_pb2.EndpointSlice(address_type="IPv4")
    eps.metadata.name, eps.metadata.namespace = "web-x1", "default"
    eps.metadata.labels["kubernetes.io/service-name"] = "web"
    eps.ports.add(name="", port=8080, protocol="TCP")
    eps.endpoints.add(addresses=["10.244.0.5"]).conditions.ready = True
    eps.endpoints.add(addresses=["10.244.0.6"]).conditions.ready = False
    out = (await ctl(fake(svc, eps), "describe", "service", "web")).out.splitlines()
    assert out == [
        "Name:                     web",
        "Namespace:                default",
        "Labels:                   <none>",
        "Annotations:              <none>",
        "Selector:                 app=web",
        "Type:                     ClusterIP",
        "IP Family Policy:         SingleStack",
        "IP Families:              IPv4",
        "IP:                       10.96.0.10",
        "IPs:                      10.96.0.10",
        "Port:                     <unset>  80/TCP",
        "TargetPort:               8080/TCP",
        "Endpoints:                10.244.0.5:8080",
        "Session Affinity:         None",
        "Internal Traffic Policy:  Cluster",
        "Events:                   <none>",
    ]

"""The columns and cells of `get` tables per kind, as upstream's printers (pkg/printers/
internalversion) make them: kemuctl prints them and the apiserver's REST edge serves them as
meta.k8s.io Tables (one place for both), with ages as kubectl prints them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2
from kemu.machinery import convert, kinds, storage
from kemu.machinery.apiextensions import custom
from kemu.machinery.apiextensions.crd import Column
from kemu.machinery.dra import claim_state
from kemu.machinery.errors import Invalid
from kemu.machinery.jsonvalue import JSON, JSONObject
from kemu.machinery.keys import object_meta
from kemu.machinery.labels import selector_from_label_selector
from kemu.machinery.quantity import parse_quantity

NONE = "<none>"
UNKNOWN = "<unknown>"

# ---------------------------------------------------------------- times


def human_duration(seconds: float) -> str:
    """An age as kubectl prints it (apimachinery's duration.HumanDuration)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{hours // 24 // 365}y"


def seconds_of(ts: Timestamp) -> float:
    return ts.seconds + ts.nanos / 1e9


def age(ts: Timestamp, now: float, *, present: bool = True) -> str:
    """The time since `ts`, or <unknown> for an unset time."""
    if not present or (ts.seconds == 0 and ts.nanos == 0):
        return UNKNOWN
    return human_duration(now - seconds_of(ts))


def _created(obj: Message, now: float) -> str:
    m = object_meta(obj)
    return age(m.creation_timestamp, now, present=m.HasField("creation_timestamp"))


# ---------------------------------------------------------------- pods


def _is_sidecar(c: types_pb2.Container) -> bool:
    return c.HasField("restart_policy") and c.restart_policy == "Always"


def _exit_reason(prefix: str, t: types_pb2.ContainerStateTerminated) -> str:
    if t.reason:
        return prefix + t.reason
    return f"{prefix}ExitCode:{t.exit_code}"


def pod_status(pod: types_pb2.Pod) -> str:
    """The STATUS column of `get pods` (kubectl's printPod, for the states kemu models)."""
    reason = pod.status.reason or pod.status.phase or "Pending"
    for cond in pod.status.conditions:
        if cond.type == "PodScheduled" and cond.reason == "SchedulingGated":
            reason = "SchedulingGated"
    initializing = False
    init_statuses = {s.name: s for s in pod.status.init_container_statuses}
    regular_inits = [c for c in pod.spec.init_containers if not _is_sidecar(c)]
    for i, c in enumerate(pod.spec.init_containers):
        st = init_statuses.get(c.name)
        if st is None or _is_sidecar(c):
            continue
        state = st.state
        if state.HasField("terminated") and state.terminated.exit_code == 0:
            continue
        if state.HasField("terminated"):
            reason = _exit_reason("Init:", state.terminated)
        elif state.HasField("waiting") and state.waiting.reason not in ("", "PodInitializing"):
            reason = "Init:" + state.waiting.reason
        else:
            reason = f"Init:{i}/{len(regular_inits)}"
        initializing = True
        break
    if not initializing:
        has_running = False
        for st in reversed(pod.status.container_statuses):
            state = st.state
            if state.HasField("waiting") and state.waiting.reason:
                reason = state.waiting.reason
            elif state.HasField("terminated"):
                reason = _exit_reason("", state.terminated)
            elif state.HasField("running") and st.ready:
                has_running = True
        if reason == "Completed" and has_running:
            reason = "Running"
    if object_meta(pod).HasField("deletion_timestamp"):
        reason = "Unknown" if pod.status.reason == "NodeLost" else "Terminating"
    return reason


def pod_ready(pod: types_pb2.Pod) -> str:
    sidecars = {c.name for c in pod.spec.init_containers if _is_sidecar(c)}
    total = len(pod.spec.containers) + len(sidecars)
    ready = sum(1 for s in pod.status.container_statuses if s.ready)
    ready += sum(1 for s in pod.status.init_container_statuses if s.name in sidecars and s.ready)
    return f"{ready}/{total}"


def pod_restarts(pod: types_pb2.Pod) -> str:
    statuses = [*pod.status.container_statuses, *pod.status.init_container_statuses]
    return str(sum(s.restart_count for s in statuses))


def _pod_row(pod: types_pb2.Pod, now: float, wide: bool) -> list[str]:
    row = [
        object_meta(pod).name,
        pod_ready(pod),
        pod_status(pod),
        pod_restarts(pod),
        _created(pod, now),
    ]
    if wide:
        row += [
            pod.status.pod_ip or NONE,
            pod.spec.node_name or NONE,
            pod.status.nominated_node_name or NONE,
            readiness_gates(pod),
        ]
    return row


def readiness_gates(pod: types_pb2.Pod) -> str:
    """READINESS GATES of `get pods -o wide`: gates whose condition is True, of all."""
    gates = pod.spec.readiness_gates
    if not gates:
        return NONE
    true = {c.type for c in pod.status.conditions if c.status == "True"}
    return f"{sum(1 for g in gates if g.condition_type in true)}/{len(gates)}"


# ---------------------------------------------------------------- nodes


def node_status(node: types_pb2.Node) -> str:
    ready = next((c for c in node.status.conditions if c.type == "Ready"), None)
    if ready is None:
        parts = ["Unknown"]
    elif ready.status == "True":
        parts = ["Ready"]
    elif ready.status == "False":
        parts = ["NotReady"]
    else:
        parts = ["Unknown"]
    if node.spec.unschedulable:
        parts.append("SchedulingDisabled")
    return ",".join(parts)


def node_roles(node: types_pb2.Node) -> str:
    roles = set()
    for key, value in object_meta(node).labels.items():
        if key.startswith("node-role.kubernetes.io/"):
            role = key.removeprefix("node-role.kubernetes.io/")
            if role:
                roles.add(role)
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    return ",".join(sorted(roles)) or NONE


def _node_row(node: types_pb2.Node, now: float, wide: bool) -> list[str]:
    row = [
        object_meta(node).name,
        node_status(node),
        node_roles(node),
        _created(node, now),
        node.status.node_info.kubelet_version,
    ]
    if wide:
        # OS-IMAGE, KERNEL-VERSION, CONTAINER-RUNTIME: kemu's nodes report none of them
        # (nodeInfo has no such fields), shown as upstream shows empty ones.
        row += [node_address(node, "InternalIP"), node_address(node, "ExternalIP")]
        row += [UNKNOWN] * 3
    return row


def node_address(node: types_pb2.Node, address_type: str) -> str:
    """The node's first address of the type (INTERNAL-IP, EXTERNAL-IP of `get nodes -o
    wide`: upstream printers.go getNodeInternalIP / getNodeExternalIP)."""
    return next((a.address for a in node.status.addresses if a.type == address_type), NONE)


# ---------------------------------------------------------------- the others


def _int_or_string(value: types_pb2.IntOrString, present: bool) -> str:
    if not present:
        return "N/A"
    which = value.WhichOneof("value")
    if which == "int_val":
        return str(value.int_val)
    if which == "str_val":
        return value.str_val
    return "N/A"


def _priority_class_row(pc: types_pb2.PriorityClass, now: float, wide: bool) -> list[str]:
    return [
        object_meta(pc).name,
        str(pc.value),
        "true" if pc.global_default else "false",
        _created(pc, now),
        pc.preemption_policy if pc.HasField("preemption_policy") else NONE,
    ]


def _pdb_row(pdb: types_pb2.PodDisruptionBudget, now: float, wide: bool) -> list[str]:
    return [
        object_meta(pdb).name,
        _int_or_string(pdb.spec.min_available, pdb.spec.HasField("min_available")),
        _int_or_string(pdb.spec.max_unavailable, pdb.spec.HasField("max_unavailable")),
        str(pdb.status.disruptions_allowed),
        _created(pdb, now),
    ]


def _lease_row(lease: types_pb2.Lease, now: float, wide: bool) -> list[str]:
    return [object_meta(lease).name, lease.spec.holder_identity or NONE, _created(lease, now)]


def event_last_seen(event: types_pb2.Event) -> Timestamp:
    for ts in (event.last_timestamp, event.first_timestamp, object_meta(event).creation_timestamp):
        if ts.seconds or ts.nanos:
            return ts
    return event.last_timestamp


def event_object(event: types_pb2.Event) -> str:
    io = event.involved_object
    return f"{io.kind.lower()}/{io.name}"


def event_source(event: types_pb2.Event) -> str:
    component = event.source.component or event.reporting_component
    host = event.source.host or event.reporting_instance
    if component and host and host != component:
        return f"{component}, {host}"
    return component or host


def _event_row(event: types_pb2.Event, now: float, wide: bool) -> list[str]:
    last = event_last_seen(event)
    row = [
        age(last, now),
        event.type,
        event.reason,
        event_object(event),
    ]
    if wide:
        first = event.first_timestamp
        row += [event_source(event), event.message.strip(), age(first, now), str(event.count)]
        row.append(object_meta(event).name)
        return row
    row.append(event.message.strip())
    return row


def _namespace_row(ns: types_pb2.Namespace, now: float, wide: bool) -> list[str]:
    return [object_meta(ns).name, ns.status.phase, _created(ns, now)]


def service_external_ip(svc: types_pb2.Service) -> str:
    """The EXTERNAL-IP column (kubectl's getServiceExternalIP)."""
    spec = svc.spec
    if spec.type in ("ClusterIP", "NodePort"):
        return ",".join(spec.external_ips) or NONE
    if spec.type == "LoadBalancer":
        ips = [i.ip or i.hostname for i in svc.status.load_balancer.ingress]
        ips += list(spec.external_ips)
        return ",".join(ips) or "<pending>"
    if spec.type == "ExternalName":
        return spec.external_name
    return UNKNOWN


def service_ports(svc: types_pb2.Service) -> str:
    """The PORT(S) column: port[:nodePort]/protocol, comma-separated."""
    parts = []
    for p in svc.spec.ports:
        node = f":{p.node_port}" if p.node_port else ""
        parts.append(f"{p.port}{node}/{p.protocol}")
    return ",".join(parts) or NONE


def _service_row(svc: types_pb2.Service, now: float, wide: bool) -> list[str]:
    row = [
        object_meta(svc).name,
        svc.spec.type,
        svc.spec.cluster_ip or NONE,
        service_external_ip(svc),
        service_ports(svc),
        _created(svc, now),
    ]
    if wide:
        row.append(",".join(f"{k}={v}" for k, v in sorted(svc.spec.selector.items())) or NONE)
    return row


def _config_map_row(cm: types_pb2.ConfigMap, now: float, wide: bool) -> list[str]:
    return [object_meta(cm).name, str(len(cm.data) + len(cm.binary_data)), _created(cm, now)]


# ---------------------------------------------------------------- apps/v1


def _template_wide(
    template: types_pb2.PodTemplateSpec, selector: types_pb2.LabelSelector
) -> list[str]:
    """CONTAINERS, IMAGES and SELECTOR of `get deploy|rs -o wide`."""
    containers = template.spec.containers
    return [
        ",".join(c.name for c in containers) or NONE,
        ",".join(c.image for c in containers) or NONE,
        format_label_selector(selector),
    ]


def format_label_selector(selector: types_pb2.LabelSelector) -> str:
    """metav1.FormatLabelSelector: requirements sorted by key, <none> when empty."""
    try:
        text = str(selector_from_label_selector(selector))
    except Invalid:
        return "<error>"
    return text or NONE


def _deployment_row(d: types_pb2.Deployment, now: float, wide: bool) -> list[str]:
    st = d.status
    row = [
        object_meta(d).name,
        f"{st.ready_replicas}/{d.spec.replicas}",
        str(st.updated_replicas),
        str(st.available_replicas),
        _created(d, now),
    ]
    if wide:
        row += _template_wide(d.spec.template, d.spec.selector)
    return row


def _replica_set_row(rs: types_pb2.ReplicaSet, now: float, wide: bool) -> list[str]:
    row = [
        object_meta(rs).name,
        str(rs.spec.replicas),
        str(rs.status.replicas),
        str(rs.status.ready_replicas),
        _created(rs, now),
    ]
    if wide:
        row += _template_wide(rs.spec.template, rs.spec.selector)
    return row


def _ts_seconds(ts: Timestamp) -> float:
    return ts.seconds + ts.nanos / 1e9


def _job_status(job: types_pb2.Job) -> str:
    """kubectl's STATUS of a Job (printJob)."""
    for cond_type, text in (("Complete", "Complete"), ("Failed", "Failed")):
        if any(c.type == cond_type and c.status == "True" for c in job.status.conditions):
            return text
    if job.metadata.HasField("deletion_timestamp"):
        return "Terminating"
    for cond_type in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if any(c.type == cond_type and c.status == "True" for c in job.status.conditions):
            return cond_type
    return "Running"


def _job_row(job: types_pb2.Job, now: float, wide: bool) -> list[str]:
    spec, st = job.spec, job.status
    if spec.HasField("completions"):
        completions = f"{st.succeeded}/{spec.completions}"
    elif spec.HasField("parallelism") and spec.parallelism > 1:
        completions = f"{st.succeeded}/1 of {spec.parallelism}"
    else:
        completions = f"{st.succeeded}/1"
    duration = ""
    if st.HasField("start_time"):
        end = _ts_seconds(st.completion_time) if st.HasField("completion_time") else now
        duration = human_duration(end - _ts_seconds(st.start_time))
    row = [object_meta(job).name, _job_status(job), completions, duration, _created(job, now)]
    if wide:
        row += _template_wide(spec.template, spec.selector)
    return row


def _daemon_set_row(ds: types_pb2.DaemonSet, now: float, wide: bool) -> list[str]:
    st = ds.status
    node_selector = ds.spec.template.spec.node_selector
    row = [
        object_meta(ds).name,
        str(st.desired_number_scheduled),
        str(st.current_number_scheduled),
        str(st.number_ready),
        str(st.updated_number_scheduled),
        str(st.number_available),
        ",".join(f"{k}={node_selector[k]}" for k in sorted(node_selector)) or NONE,
        _created(ds, now),
    ]
    if wide:
        row += _template_wide(ds.spec.template, ds.spec.selector)
    return row


# ---------------------------------------------------------------- storage, apps/v1, batch/v1 (#34)

UNSET = "<unset>"


def _storage_quantity(capacity: Mapping[str, str]) -> str:
    """The storage entry of a capacity map as Quantity.String() prints it ("0" when absent)."""
    text = capacity.get(storage.STORAGE)
    if text is None:
        return "0"
    try:
        return str(parse_quantity(text))
    except Invalid:
        return text


def _persistent_volume_row(pv: types_pb2.PersistentVolume, now: float, wide: bool) -> list[str]:
    """printPersistentVolume."""
    spec = pv.spec
    claim = (
        f"{spec.claim_ref.namespace}/{spec.claim_ref.name}" if spec.HasField("claim_ref") else ""
    )
    phase = "Terminating" if pv.metadata.HasField("deletion_timestamp") else pv.status.phase
    row = [
        object_meta(pv).name,
        _storage_quantity(spec.capacity),
        storage.access_modes_string(list(spec.access_modes)),
        spec.persistent_volume_reclaim_policy,
        phase,
        claim,
        storage.volume_class(pv),
        spec.volume_attributes_class_name
        if spec.HasField("volume_attributes_class_name")
        else UNSET,
        pv.status.reason,
        _created(pv, now),
    ]
    if wide:
        row.append(spec.volume_mode if spec.HasField("volume_mode") else UNSET)
    return row


def _persistent_volume_claim_row(
    pvc: types_pb2.PersistentVolumeClaim, now: float, wide: bool
) -> list[str]:
    """printPersistentVolumeClaim: capacity and access modes from the status once bound."""
    spec = pvc.spec
    phase = "Terminating" if pvc.metadata.HasField("deletion_timestamp") else pvc.status.phase
    capacity = modes = ""
    if spec.volume_name:
        modes = storage.access_modes_string(list(pvc.status.access_modes))
        capacity = _storage_quantity(pvc.status.capacity)
    row = [
        object_meta(pvc).name,
        phase,
        spec.volume_name,
        capacity,
        modes,
        storage.claim_class(pvc),
        spec.volume_attributes_class_name
        if spec.HasField("volume_attributes_class_name")
        else UNSET,
        _created(pvc, now),
    ]
    if wide:
        row.append(spec.volume_mode if spec.HasField("volume_mode") else UNSET)
    return row


def _storage_class_row(sc: types_pb2.StorageClass, now: float, wide: bool) -> list[str]:
    """printStorageClass: "(default)" after the default class's name."""
    name = object_meta(sc).name + (" (default)" if storage.is_default_class(sc) else "")
    return [
        name,
        sc.provisioner,
        sc.reclaim_policy if sc.HasField("reclaim_policy") else storage.DELETE,
        sc.volume_binding_mode if sc.HasField("volume_binding_mode") else storage.IMMEDIATE,
        "true" if sc.HasField("allow_volume_expansion") and sc.allow_volume_expansion else "false",
        _created(sc, now),
    ]


def _csi_node_row(node: types_pb2.CSINode, now: float, wide: bool) -> list[str]:
    return [object_meta(node).name, str(len(node.spec.drivers)), _created(node, now)]


def _stateful_set_row(sts: types_pb2.StatefulSet, now: float, wide: bool) -> list[str]:
    """printStatefulSet: READY is ready/desired; -o wide adds containers and images."""
    row = [
        object_meta(sts).name,
        f"{sts.status.ready_replicas}/{sts.spec.replicas}",
        _created(sts, now),
    ]
    if wide:
        row += _template_wide(sts.spec.template, sts.spec.selector)[:2]
    return row


def _service_account_row(sa: types_pb2.ServiceAccount, now: float, wide: bool) -> list[str]:
    return [object_meta(sa).name, str(len(sa.secrets)), _created(sa, now)]


def _secret_row(secret: types_pb2.Secret, now: float, wide: bool) -> list[str]:
    return [object_meta(secret).name, secret.type, str(len(secret.data)), _created(secret, now)]


def _cron_job_row(cj: types_pb2.CronJob, now: float, wide: bool) -> list[str]:
    """printCronJob: TIMEZONE <none> when unset, SUSPEND True, False or <unset>."""
    spec, st = cj.spec, cj.status
    last = age(st.last_schedule_time, now) if st.HasField("last_schedule_time") else NONE
    row = [
        object_meta(cj).name,
        spec.schedule,
        spec.time_zone if spec.HasField("time_zone") else NONE,
        ("True" if spec.suspend else "False") if spec.HasField("suspend") else UNSET,
        str(len(st.active)),
        last,
        _created(cj, now),
    ]
    if wide:
        job = spec.job_template.spec
        row += _template_wide(job.template, job.selector)
    return row


# ---------------------------------------------------------------- pod groups

POD_GROUP_SCHEDULED_CONDITIONS: Final = ("PodGroupInitiallyScheduled", "PodGroupScheduled")
"""The scheduler's condition on a PodGroup: PodGroupScheduled at 1.36, renamed
PodGroupInitiallyScheduled at 1.37 (commit "Rename PodGroupScheduled condition to
PodGroupInitiallyScheduled in API")."""
DISRUPTION_TARGET: Final = "DisruptionTarget"


def _workload_row(w: types_pb2.Workload, now: float, wide: bool) -> list[str]:
    """printWorkload (pkg/printers/internalversion/printers.go): name and age."""
    return [object_meta(w).name, _created(w, now)]


def pod_group_policy(pg: types_pb2.PodGroup) -> str:
    return "Gang" if pg.spec.scheduling_policy.HasField("gang") else "Basic"


def pod_group_status(pg: types_pb2.PodGroup) -> str:
    """printPodGroup's Status: Pending; Scheduled or Unschedulable once the scheduler's
    condition exists; a DisruptionTarget condition's reason over both."""
    status = "Pending"
    for c in pg.status.conditions:
        if c.type in POD_GROUP_SCHEDULED_CONDITIONS:
            status = "Scheduled" if c.status == "True" else "Unschedulable"
    for c in pg.status.conditions:
        if c.type == DISRUPTION_TARGET:
            status = c.reason
    return status


def _pod_group_row(pg: types_pb2.PodGroup, now: float, wide: bool) -> list[str]:
    """printPodGroup: Name, Policy, Workload, Status, Age."""
    workload = pg.spec.workload_ref.workload_name if pg.spec.HasField("workload_ref") else ""
    return [
        object_meta(pg).name,
        pod_group_policy(pg),
        workload or NONE,
        pod_group_status(pg),
        _created(pg, now),
    ]


COMPOSITE_POD_GROUP_SCHEDULED: Final = "CompositePodGroupInitiallyScheduled"
"""The scheduler's condition on a CompositePodGroup (scheduling/v1alpha3, 1.37)."""


def composite_pod_group_status(cpg: types_pb2.CompositePodGroup) -> str:
    """The Status column of a CompositePodGroup, read as printPodGroup's is: Pending;
    Scheduled or Unschedulable once CompositePodGroupInitiallyScheduled exists; a
    DisruptionTarget condition's reason over both."""
    status = "Pending"
    for c in cpg.status.conditions:
        if c.type == COMPOSITE_POD_GROUP_SCHEDULED:
            status = "Scheduled" if c.status == "True" else "Unschedulable"
    for c in cpg.status.conditions:
        if c.type == DISRUPTION_TARGET:
            status = c.reason
    return status


def _composite_pod_group_row(cpg: types_pb2.CompositePodGroup, now: float, wide: bool) -> list[str]:
    """A CompositePodGroup's row: printPodGroup's columns (Name, Policy, Workload, Status,
    Age; upstream's printers.go handler of the kind was not at hand to read, so its columns
    follow its sibling's)."""
    workload = cpg.spec.workload_ref.workload_name if cpg.spec.HasField("workload_ref") else ""
    policy = "Gang" if cpg.spec.scheduling_policy.HasField("gang") else "Basic"
    return [
        object_meta(cpg).name,
        policy,
        workload or NONE,
        composite_pod_group_status(cpg),
        _created(cpg, now),
    ]


# ---------------------------------------------------------------- resource.k8s.io (DRA)


def _name_age_row(obj: Message, now: float, wide: bool) -> list[str]:
    """printDeviceClass, printResourceClaimTemplate (and DeviceTaintRule, which has no printer
    of its own: the default columns): name and age."""
    return [object_meta(obj).name, _created(obj, now)]


def _resource_claim_row(claim: types_pb2.ResourceClaim, now: float, wide: bool) -> list[str]:
    """printResourceClaim: Name, State ("pending", "allocated,reserved", "deleted,..."), Age."""
    return [object_meta(claim).name, claim_state(claim), _created(claim, now)]


def _resource_slice_row(rs: types_pb2.ResourceSlice, now: float, wide: bool) -> list[str]:
    """printResourceSlice: Name, Node (its nodeName, empty otherwise), Driver, Pool, Age."""
    return [
        object_meta(rs).name,
        rs.spec.node_name,
        rs.spec.driver,
        rs.spec.pool.name,
        _created(rs, now),
    ]


# ---------------------------------------------------------------- tables


# ---------------------------------------------------------------- kinds-b (issue #57)
# upstream pkg/printers/internalversion/printers.go: printReplicationController,
# printEndpoints (formatEndpoints), printEndpointSlice (formatDiscoveryPorts,
# formatDiscoveryEndpoints), printHorizontalPodAutoscaler (formatHPAMetrics).


def _replication_controller_row(
    rc: types_pb2.ReplicationController, now: float, wide: bool
) -> list[str]:
    row = [
        object_meta(rc).name,
        str(rc.spec.replicas),
        str(rc.status.replicas),
        str(rc.status.ready_replicas),
        _created(rc, now),
    ]
    if wide:
        containers = rc.spec.template.spec.containers
        row += [
            ",".join(c.name for c in containers) or NONE,
            ",".join(c.image for c in containers) or NONE,
            ",".join(f"{k}={v}" for k, v in sorted(rc.spec.selector.items())) or NONE,
        ]
    return row


_LIST_MAX: Final = 3


def _join_host_port(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def format_endpoints(ep: types_pb2.Endpoints) -> str:
    """formatEndpoints: the ready addresses with each port, at most three, then
    " + N more..."."""
    if not ep.subsets:
        return NONE
    items: list[str] = []
    count = 0
    more = False
    for ss in ep.subsets:
        if not ss.ports:
            count += len(ss.addresses)
            for a in ss.addresses:
                if len(items) == _LIST_MAX:
                    more = True
                    break
                items.append(a.ip)
            continue
        for port in ss.ports:
            count += len(ss.addresses)
            for a in ss.addresses:
                if len(items) == _LIST_MAX:
                    more = True
                    break
                items.append(_join_host_port(a.ip, port.port))
    text = ",".join(items)
    return f"{text} + {count - _LIST_MAX} more..." if more else text


def _list_with_more(items: list[str], count: int) -> str:
    """listWithMoreString."""
    text = ",".join(items)
    if count > _LIST_MAX:
        return f"{text} + {count - _LIST_MAX} more..."
    return text or "<unset>"


def format_discovery_ports(ports: list[types_pb2.EndpointSlicePort]) -> str:
    shown = [
        str(p.port) if p.HasField("port") else p.name if p.HasField("name") else "*"
        for p in ports[:_LIST_MAX]
    ]
    return _list_with_more(shown, len(ports))


def format_discovery_endpoints(endpoints: list[types_pb2.Endpoint]) -> str:
    addresses = [a for e in endpoints for a in e.addresses]
    return _list_with_more(addresses[:_LIST_MAX], len(addresses))


def _endpoints_row(ep: types_pb2.Endpoints, now: float, wide: bool) -> list[str]:
    return [object_meta(ep).name, format_endpoints(ep), _created(ep, now)]


def _endpoint_slice_row(eps: types_pb2.EndpointSlice, now: float, wide: bool) -> list[str]:
    return [
        object_meta(eps).name,
        eps.address_type,
        format_discovery_ports(list(eps.ports)),
        format_discovery_endpoints(list(eps.endpoints)),
        _created(eps, now),
    ]


def _metric_value(value: types_pb2.MetricValueStatus | None, field: str) -> str:
    if value is None or not value.HasField(field):
        return "<unknown>"
    if field == "average_utilization":
        return f"{value.average_utilization}%"
    return str(getattr(value, field))


def format_hpa_metrics(
    specs: list[types_pb2.MetricSpec], statuses: list[types_pb2.MetricStatus]
) -> str:
    """formatHPAMetrics: "<resource>: current/target" per metric, at most two, then
    " + N more..."; "<none>" without metrics."""
    if not specs:
        return NONE
    items: list[str] = []
    for i, spec in enumerate(specs):
        if len(items) == 2:
            return f"{', '.join(items)} + {len(specs) - 2} more..."
        status = statuses[i] if i < len(statuses) else None
        if spec.type in ("Resource", "ContainerResource"):
            src = spec.resource if spec.type == "Resource" else spec.container_resource
            cur = None
            if status is not None:
                st = status.resource if spec.type == "Resource" else status.container_resource
                if st.HasField("current"):
                    cur = st.current
            target = src.target
            if target.HasField("average_value"):
                items.append(
                    f"{src.name}: {_metric_value(cur, 'average_value')}/{target.average_value}"
                )
            else:
                want = (
                    f"{target.average_utilization}%"
                    if target.HasField("average_utilization")
                    else "<auto>"
                )
                items.append(f"{src.name}: {_metric_value(cur, 'average_utilization')}/{want}")
        elif spec.type == "Pods":
            cur = status.pods.current if status is not None and status.HasField("pods") else None
            items.append(f"{_metric_value(cur, 'average_value')}/{spec.pods.target.average_value}")
        elif spec.type in ("Object", "External"):
            obj = spec.object if spec.type == "Object" else spec.external
            st2 = None
            if status is not None:
                holder = status.object if spec.type == "Object" else status.external
                st2 = holder.current if holder.HasField("current") else None
            if obj.target.HasField("average_value"):
                items.append(
                    f"{_metric_value(st2, 'average_value')}/{obj.target.average_value} (avg)"
                )
            else:
                items.append(f"{_metric_value(st2, 'value')}/{obj.target.value}")
        else:
            items.append("<unknown type>")
    return ", ".join(items)


def _flow_schema_row(fs: types_pb2.FlowSchema, now: float, wide: bool) -> list[str]:
    """printFlowSchema (pkg/printers/internalversion/printers.go): MISSINGPL is the Dangling
    condition's status, "?" before the configuration controller wrote one."""
    spec = fs.spec
    method = spec.distinguisher_method.type if spec.HasField("distinguisher_method") else NONE
    dangling = next((c.status for c in fs.status.conditions if c.type == "Dangling"), "?")
    return [
        object_meta(fs).name,
        spec.priority_level_configuration.name,
        str(spec.matching_precedence),
        method,
        _created(fs, now),
        dangling,
    ]


def _priority_level_row(
    pl: types_pb2.PriorityLevelConfiguration, now: float, wide: bool
) -> list[str]:
    """printPriorityLevelConfiguration: the shares and queuing of a Limited level, <none> for
    an Exempt one and for a Limited one that rejects."""
    shares = queues = hand_size = length = NONE
    if pl.spec.HasField("limited"):
        limited = pl.spec.limited
        shares = str(limited.nominal_concurrency_shares)
        if limited.limit_response.HasField("queuing"):
            q = limited.limit_response.queuing
            queues, hand_size, length = str(q.queues), str(q.hand_size), str(q.queue_length_limit)
    return [
        object_meta(pl).name,
        pl.spec.type,
        shares,
        queues,
        hand_size,
        length,
        _created(pl, now),
    ]


def _hpa_row(hpa: types_pb2.HorizontalPodAutoscaler, now: float, wide: bool) -> list[str]:
    ref = hpa.spec.scale_target_ref
    return [
        object_meta(hpa).name,
        f"{ref.kind}/{ref.name}",
        format_hpa_metrics(list(hpa.spec.metrics), list(hpa.status.current_metrics)),
        str(hpa.spec.min_replicas) if hpa.spec.HasField("min_replicas") else "<unset>",
        str(hpa.spec.max_replicas),
        str(hpa.status.current_replicas),
        _created(hpa, now),
    ]


Row = Callable[[Any, float, bool], list[str]]
"""A kind's row: (its object, now, wide) -> cells. Each takes its own message type (TABLES is
looked up by kind), so the object is typed here only."""


@dataclass(frozen=True)
class TableSpec:
    headers: tuple[str, ...]
    wide_headers: tuple[str, ...]
    row: Row


TABLES: dict[str, TableSpec] = {
    "Pod": TableSpec(
        ("NAME", "READY", "STATUS", "RESTARTS", "AGE"),
        ("IP", "NODE", "NOMINATED NODE", "READINESS GATES"),
        _pod_row,
    ),
    "Node": TableSpec(
        ("NAME", "STATUS", "ROLES", "AGE", "VERSION"),
        ("INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"),
        _node_row,
    ),
    "PriorityClass": TableSpec(
        ("NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"), (), _priority_class_row
    ),
    "PodDisruptionBudget": TableSpec(
        ("NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"), (), _pdb_row
    ),
    "Lease": TableSpec(("NAME", "HOLDER", "AGE"), (), _lease_row),
    "Event": TableSpec(("LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"), (), _event_row),
    "Namespace": TableSpec(("NAME", "STATUS", "AGE"), (), _namespace_row),
    "Service": TableSpec(
        ("NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"), ("SELECTOR",), _service_row
    ),
    "ConfigMap": TableSpec(("NAME", "DATA", "AGE"), (), _config_map_row),
    "Deployment": TableSpec(
        ("NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"),
        ("CONTAINERS", "IMAGES", "SELECTOR"),
        _deployment_row,
    ),
    "ReplicaSet": TableSpec(
        ("NAME", "DESIRED", "CURRENT", "READY", "AGE"),
        ("CONTAINERS", "IMAGES", "SELECTOR"),
        _replica_set_row,
    ),
    "Job": TableSpec(
        ("NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"),
        ("CONTAINERS", "IMAGES", "SELECTOR"),
        _job_row,
    ),
    "DaemonSet": TableSpec(
        (
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "NODE SELECTOR",
            "AGE",
        ),
        ("CONTAINERS", "IMAGES", "SELECTOR"),
        _daemon_set_row,
    ),
    "PersistentVolume": TableSpec(
        (
            "NAME",
            "CAPACITY",
            "ACCESS MODES",
            "RECLAIM POLICY",
            "STATUS",
            "CLAIM",
            "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS",
            "REASON",
            "AGE",
        ),
        ("VOLUMEMODE",),
        _persistent_volume_row,
    ),
    "PersistentVolumeClaim": TableSpec(
        (
            "NAME",
            "STATUS",
            "VOLUME",
            "CAPACITY",
            "ACCESS MODES",
            "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS",
            "AGE",
        ),
        ("VOLUMEMODE",),
        _persistent_volume_claim_row,
    ),
    "StorageClass": TableSpec(
        (
            "NAME",
            "PROVISIONER",
            "RECLAIMPOLICY",
            "VOLUMEBINDINGMODE",
            "ALLOWVOLUMEEXPANSION",
            "AGE",
        ),
        (),
        _storage_class_row,
    ),
    "CSINode": TableSpec(("NAME", "DRIVERS", "AGE"), (), _csi_node_row),
    "StatefulSet": TableSpec(("NAME", "READY", "AGE"), ("CONTAINERS", "IMAGES"), _stateful_set_row),
    "ServiceAccount": TableSpec(("NAME", "SECRETS", "AGE"), (), _service_account_row),
    "Secret": TableSpec(("NAME", "TYPE", "DATA", "AGE"), (), _secret_row),
    "CronJob": TableSpec(
        ("NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"),
        ("CONTAINERS", "IMAGES", "SELECTOR"),
        _cron_job_row,
    ),
    "Workload": TableSpec(("NAME", "AGE"), (), _workload_row),
    "PodGroup": TableSpec(("NAME", "POLICY", "WORKLOAD", "STATUS", "AGE"), (), _pod_group_row),
    "CompositePodGroup": TableSpec(
        ("NAME", "POLICY", "WORKLOAD", "STATUS", "AGE"), (), _composite_pod_group_row
    ),
    "DeviceClass": TableSpec(("NAME", "AGE"), (), _name_age_row),
    "ResourceSlice": TableSpec(("NAME", "NODE", "DRIVER", "POOL", "AGE"), (), _resource_slice_row),
    "ResourceClaim": TableSpec(("NAME", "STATE", "AGE"), (), _resource_claim_row),
    "ResourceClaimTemplate": TableSpec(("NAME", "AGE"), (), _name_age_row),
    "DeviceTaintRule": TableSpec(("NAME", "AGE"), (), _name_age_row),
    # ---- kinds-b (issue #57)
    "ReplicationController": TableSpec(
        ("NAME", "DESIRED", "CURRENT", "READY", "AGE"),
        ("CONTAINERS", "IMAGES", "SELECTOR"),
        _replication_controller_row,
    ),
    "Endpoints": TableSpec(("NAME", "ENDPOINTS", "AGE"), (), _endpoints_row),
    "EndpointSlice": TableSpec(
        ("NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"), (), _endpoint_slice_row
    ),
    "HorizontalPodAutoscaler": TableSpec(
        ("NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"), (), _hpa_row
    ),
    "FlowSchema": TableSpec(
        (
            "NAME",
            "PRIORITYLEVEL",
            "MATCHINGPRECEDENCE",
            "DISTINGUISHERMETHOD",
            "AGE",
            "MISSINGPL",
        ),
        (),
        _flow_schema_row,
    ),
    "PriorityLevelConfiguration": TableSpec(
        (
            "NAME",
            "TYPE",
            "NOMINALCONCURRENCYSHARES",
            "QUEUES",
            "HANDSIZE",
            "QUEUELENGTHLIMIT",
            "AGE",
        ),
        (),
        _priority_level_row,
    ),
}
# `get events -o wide` reorders the tail, as kubectl does.
_EVENT_WIDE_HEADERS = ("LAST SEEN", "TYPE", "REASON", "OBJECT", "SOURCE", "MESSAGE")
_EVENT_WIDE_EXTRA = ("FIRST SEEN", "COUNT", "NAME")


# ---- apiextensions.k8s.io (issue #57 item 3)


def _crd_row(obj: types_pb2.CustomResourceDefinition, now: float, wide: bool) -> list[str]:
    """Upstream's CRD table: NAME and CREATED AT (an RFC 3339 time, not an age)."""
    meta = object_meta(obj)
    created = meta.creation_timestamp.ToDatetime().strftime("%Y-%m-%dT%H:%M:%SZ")
    return [meta.name, created]


TABLES["CustomResourceDefinition"] = TableSpec(("NAME", "CREATED AT"), (), _crd_row)


def _custom_table(kind: kinds.Kind) -> TableSpec:
    """A custom resource's table: NAME, its additionalPrinterColumns (priority 0; the
    others with -o wide), AGE last, as upstream's tableconvertor for CRDs."""
    definition = custom.definition_for(kind)
    columns = definition.storage.columns if definition is not None else ()
    narrow = [c for c in columns if c.priority == 0]
    extra = [c for c in columns if c.priority != 0]

    def row(obj: Message, now: float, wide: bool) -> list[str]:
        assert isinstance(obj, types_pb2.CustomObject)
        body = convert.custom_to_dict(obj)
        cells = [object_meta(obj).name]
        cells += [_column_cell(c, body, now) for c in narrow]
        cells.append(_created(obj, now))
        if wide:
            cells += [_column_cell(c, body, now) for c in extra]
        return cells

    return TableSpec(
        ("NAME", *(c.name.upper() for c in narrow), "AGE"),
        tuple(c.name.upper() for c in extra),
        row,
    )


def _column_cell(column: Column, body: JSONObject, now: float) -> str:
    value = json_path(body, column.json_path)
    if value is None:
        return "<none>"
    if column.type == "date" and isinstance(value, str):
        try:
            return age(convert.parse_time(value, column.json_path), now)
        except Invalid:
            return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


_PATH_STEP: Final = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


def json_path(body: JSON, path: str) -> JSON:
    """The value at a printer column's simple JSONPath (.spec.a.b[0].c), None when absent."""
    value: JSON = body
    for m in _PATH_STEP.finditer(path.strip("{}")):
        if m.group(1) is not None:
            value = value.get(m.group(1)) if isinstance(value, dict) else None
        else:
            i = int(m.group(2))
            value = value[i] if isinstance(value, list) and i < len(value) else None
        if value is None:
            return None
    return value


def _table(kind: kinds.Kind) -> TableSpec:
    return _custom_table(kind) if kind.custom else TABLES[kind.kind]


def headers(kind: kinds.Kind, *, wide: bool, with_namespace: bool) -> list[str]:
    spec = _table(kind)
    if kind.kind == "Event" and wide:
        cols = [*_EVENT_WIDE_HEADERS, *_EVENT_WIDE_EXTRA]
    else:
        cols = [*spec.headers, *(spec.wide_headers if wide else ())]
    return (["NAMESPACE"] if with_namespace else []) + cols


def row(
    kind: kinds.Kind, obj: Message, now: float, *, wide: bool, with_namespace: bool
) -> list[str]:
    """One table row (the cells of `headers`)."""
    cells = _table(kind).row(obj, now, wide)
    return ([object_meta(obj).namespace] if with_namespace else []) + cells


# ---------------------------------------------------------------- issue #57 kinds-a: RBAC,
# networking, certificates, apiregistration, LimitRange, ResourceQuota (upstream
# pkg/printers/internalversion/printers.go; APIService: kube-aggregator's
# pkg/registry/apiservice/etcd ConvertToTable)


def _created_at(obj: Message, now: float, wide: bool) -> list[str]:
    """Name and CREATED AT (convertToHumanReadableDateType: RFC 3339 in UTC)."""
    m = object_meta(obj)
    ts = m.creation_timestamp
    created = (
        ts.ToDatetime().strftime("%Y-%m-%dT%H:%M:%SZ") if m.HasField("creation_timestamp") else ""
    )
    return [m.name, created]


def _subjects(subjects: Any) -> tuple[str, str, str]:
    """rbac's SubjectsStrings: users, groups and service accounts (namespace/name)."""
    users, groups, sas = [], [], []
    for s in subjects:
        if s.kind == "User":
            users.append(s.name)
        elif s.kind == "Group":
            groups.append(s.name)
        elif s.kind == "ServiceAccount":
            sas.append(f"{s.namespace}/{s.name}")
    return ", ".join(users), ", ".join(groups), ", ".join(sas)


def _binding_row(rb: Any, now: float, wide: bool) -> list[str]:
    """printRoleBinding / printClusterRoleBinding: ROLE is Kind/name; -o wide the
    subjects."""
    row = [object_meta(rb).name, f"{rb.role_ref.kind}/{rb.role_ref.name}", _created(rb, now)]
    if wide:
        row += list(_subjects(rb.subjects))
    return row


def _ingress_hosts(ing: types_pb2.Ingress) -> str:
    """formatHosts: up to three, then `+ N more...`; `*` when no rule names one."""
    hosts = [r.host for r in ing.spec.rules if r.host]
    if not hosts:
        return "*"
    text = ",".join(hosts[:3])
    if len(hosts) > 3:
        text += f" + {len(hosts) - 3} more..."
    return text


def _ingress_row(ing: types_pb2.Ingress, now: float, wide: bool) -> list[str]:
    """printIngress: CLASS, HOSTS, ADDRESS (the load balancer's IPs or hostnames), PORTS
    (80, and 443 with TLS)."""
    spec = ing.spec
    addresses = [p.ip or p.hostname for p in ing.status.load_balancer.ingress if p.ip or p.hostname]
    return [
        object_meta(ing).name,
        spec.ingress_class_name if spec.HasField("ingress_class_name") else NONE,
        _ingress_hosts(ing),
        ",".join(addresses),
        "80, 443" if spec.tls else "80",
        _created(ing, now),
    ]


def _ingress_class_row(ic: types_pb2.IngressClass, now: float, wide: bool) -> list[str]:
    params = NONE
    if ic.spec.HasField("parameters"):
        p = ic.spec.parameters
        params = p.kind + (f".{p.api_group}" if p.HasField("api_group") else "") + f"/{p.name}"
    return [object_meta(ic).name, ic.spec.controller, params, _created(ic, now)]


def _network_policy_row(np: types_pb2.NetworkPolicy, now: float, wide: bool) -> list[str]:
    return [object_meta(np).name, format_label_selector(np.spec.pod_selector), _created(np, now)]


def csr_condition(csr: types_pb2.CertificateSigningRequest) -> str:
    """extractCSRStatus: Pending, Approved or Denied, with Failed and Issued appended."""
    types = {c.type for c in csr.status.conditions}
    parts: list[str] = [t for t in ("Approved", "Denied") if t in types] or ["Pending"]
    if "Failed" in types:
        parts.append("Failed")
    if csr.status.certificate:
        parts.append("Issued")
    return ",".join(parts)


def _csr_row(csr: types_pb2.CertificateSigningRequest, now: float, wide: bool) -> list[str]:
    spec = csr.spec
    duration = (
        human_duration(spec.expiration_seconds) if spec.HasField("expiration_seconds") else NONE
    )
    return [
        object_meta(csr).name,
        _created(csr, now),
        spec.signer_name,
        spec.username,
        duration,
        csr_condition(csr),
    ]


def api_service_available(svc: types_pb2.APIService) -> str:
    """True, or the status with its reason (False (MissingEndpoints)); Unknown without the
    condition."""
    cond = next((c for c in svc.status.conditions if c.type == "Available"), None)
    if cond is None:
        return "Unknown"
    if cond.status != "True" and cond.reason:
        return f"{cond.status} ({cond.reason})"
    return cond.status


def _api_service_row(svc: types_pb2.APIService, now: float, wide: bool) -> list[str]:
    ref = svc.spec.service
    service = f"{ref.namespace}/{ref.name}" if svc.spec.HasField("service") else "Local"
    return [object_meta(svc).name, service, api_service_available(svc), _created(svc, now)]


def _resource_quota_row(rq: types_pb2.ResourceQuota, now: float, wide: bool) -> list[str]:
    """printResourceQuota: `name: used/hard` per resource of status.hard, sorted; limits.*
    in LIMIT, the others in REQUEST."""
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(rq.status.hard):
        cell = f"{name}: {rq.status.used.get(name, '0')}/{rq.status.hard[name]}"
        (limits if name.split(".")[0] == "limits" and "." in name else requests).append(cell)
    return [object_meta(rq).name, _created(rq, now), ", ".join(requests), ", ".join(limits)]


TABLES.update(
    {
        "Role": TableSpec(("NAME", "CREATED AT"), (), _created_at),
        "ClusterRole": TableSpec(("NAME", "CREATED AT"), (), _created_at),
        "RoleBinding": TableSpec(
            ("NAME", "ROLE", "AGE"), ("USERS", "GROUPS", "SERVICEACCOUNTS"), _binding_row
        ),
        "ClusterRoleBinding": TableSpec(
            ("NAME", "ROLE", "AGE"), ("USERS", "GROUPS", "SERVICEACCOUNTS"), _binding_row
        ),
        "Ingress": TableSpec(
            ("NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"), (), _ingress_row
        ),
        "IngressClass": TableSpec(
            ("NAME", "CONTROLLER", "PARAMETERS", "AGE"), (), _ingress_class_row
        ),
        "NetworkPolicy": TableSpec(("NAME", "POD-SELECTOR", "AGE"), (), _network_policy_row),
        "CertificateSigningRequest": TableSpec(
            ("NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"),
            (),
            _csr_row,
        ),
        "APIService": TableSpec(("NAME", "SERVICE", "AVAILABLE", "AGE"), (), _api_service_row),
        "LimitRange": TableSpec(("NAME", "CREATED AT"), (), _created_at),
        "ResourceQuota": TableSpec(("NAME", "AGE", "REQUEST", "LIMIT"), (), _resource_quota_row),
    }
)

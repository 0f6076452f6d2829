"""`kemuctl describe KIND [NAME...]`: kubectl-like descriptions, aligned as kubectl aligns them.

Pods and nodes have their own describers (with what kemu is about: priority, the nominated
node, conditions such as DisruptionTarget and PodResizePending, allocated and actual
resources, the pods bound to and nominated for a node); the kinds kubectl has a describer for
get kubectl's layout, every other kind kubectl's generic describer (the block at the end).
Descriptions end with the events about the object where kubectl's do.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Protocol

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2
from kemu.ctl import printers
from kemu.ctl.common import (
    Context,
    CtlError,
    format_api_error,
    namespace_for,
    split_targets,
)
from kemu.ctl.tabwriter import align
from kemu.machinery import csr_request, kinds, podgroups, resources
from kemu.machinery import printers as kinds_printers
from kemu.machinery.apiextensions import crd as apiextensions
from kemu.machinery.errors import ApiError, BadRequest, Invalid
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.keys import object_meta
from kemu.machinery.quantity import format_resource, parse_quantity, to_int
from kemu.machinery.runtime_config import RuntimeConfig, RuntimeConfigError

NONE = "<none>"
_INDENT = "  "


class Writer:
    """Lines of tab-separated cells at an indentation level, aligned at the end (tabwriter
    with kubectl describe's settings: no minimum width, two spaces of padding)."""

    def __init__(self) -> None:
        self.lines: list[list[str]] = []

    def line(self, level: int, *cells: str) -> None:
        cells_ = list(cells) or [""]
        cells_[0] = _INDENT * level + cells_[0]
        self.lines.append(cells_)

    def multiline(self, level: int, title: str, values: list[str]) -> None:
        """`Title:  first` then the other values under the first (labels, taints, ...)."""
        if not values:
            self.line(level, f"{title}:", NONE)
            return
        self.line(level, f"{title}:", values[0])
        for v in values[1:]:
            self.line(level, "", v)

    def render(self) -> str:
        return "\n".join(align(self.lines, minwidth=0, padding=2))


def rfc1123(ts: Timestamp) -> str:
    return time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime(ts.seconds))


def _when(ts: Timestamp, present: bool = True) -> str:
    return rfc1123(ts) if present and (ts.seconds or ts.nanos) else NONE


def _pairs(mapping: Mapping[str, str]) -> list[str]:
    return [f"{k}={v}" for k, v in sorted(mapping.items())]


MAX_ANNOTATION_LEN: Final = 140
SKIP_ANNOTATIONS: Final = frozenset({"kubectl.kubernetes.io/last-applied-configuration"})


def _shorten(text: str, length: int) -> str:
    return text[:length] + "..." if len(text) > length else text


def annotation_lines(annotations: Mapping[str, str]) -> list[str]:
    """kubectl's printAnnotationsMultiline: `key: value` sorted by key, last-applied skipped;
    a value with a newline or longer than 140 characters (with its key) goes under `key:`, one
    line of it per line, indented by two spaces and shortened to 138 characters."""
    out: list[str] = []
    for key in sorted(k for k in annotations if k not in SKIP_ANNOTATIONS):
        value = annotations[key].removesuffix("\n")
        if len(value) + len(key) + 2 > MAX_ANNOTATION_LEN or "\n" in value:
            out.append(f"{key}:")
            out.extend(f"  {_shorten(s, MAX_ANNOTATION_LEN - 2)}" for s in value.split("\n"))
        else:
            out.append(f"{key}: {value}")
    return out


def _resource_block(w: Writer, level: int, title: str, resources: Mapping[str, str]) -> None:
    if not resources:
        return
    w.line(level, f"{title}:")
    for name, value in sorted(resources.items()):
        w.line(level + 1, f"{name}:", value)


# ---------------------------------------------------------------- events


def events_for(events: Iterable[types_pb2.Event], obj: Message) -> list[types_pb2.Event]:
    kind = kinds.kind_of(obj)
    m = object_meta(obj)
    out = []
    for e in events:
        io = e.involved_object
        if io.kind != kind.kind or io.name != m.name:
            continue
        if kind.namespaced and io.namespace and io.namespace != m.namespace:
            continue
        if io.uid and m.uid and io.uid != m.uid:
            continue
        out.append(e)
    return sorted(out, key=lambda e: printers.seconds_of(printers.event_last_seen(e)))


def describe_events(w: Writer, events: list[types_pb2.Event], now: float) -> None:
    if not events:
        w.line(0, "Events:", NONE)
        return
    w.line(0, "Events:")
    w.line(1, "Type", "Reason", "Age", "From", "Message")
    w.line(1, "----", "------", "----", "----", "-------")
    for e in events:
        last = printers.age(printers.event_last_seen(e), now)
        if e.count > 1:
            first = e.first_timestamp if e.first_timestamp.seconds else e.last_timestamp
            last = f"{last} (x{e.count} over {printers.age(first, now)})"
        w.line(
            1,
            e.type,
            e.reason,
            last,
            # (upstream describe.go DescribeEvents: the component alone, no host)
            e.source.component or e.reporting_component,
            " ".join(e.message.split()),
        )


# ---------------------------------------------------------------- pods


def _container_state(w: Writer, level: int, title: str, state: types_pb2.ContainerState) -> None:
    if state.HasField("running"):
        w.line(level, f"{title}:", "Running")
        w.line(level + 1, "Started:", _when(state.running.started_at))
    elif state.HasField("waiting"):
        w.line(level, f"{title}:", "Waiting")
        if state.waiting.reason:
            w.line(level + 1, "Reason:", state.waiting.reason)
    elif state.HasField("terminated"):
        t = state.terminated
        w.line(level, f"{title}:", "Terminated")
        if t.reason:
            w.line(level + 1, "Reason:", t.reason)
        if t.message:
            w.line(level + 1, "Message:", t.message)
        w.line(level + 1, "Exit Code:", str(t.exit_code))
        w.line(level + 1, "Started:", _when(t.started_at))
        w.line(level + 1, "Finished:", _when(t.finished_at))
    else:
        w.line(level, f"{title}:", "Waiting")


def _int_or_str(v: types_pb2.IntOrString) -> str:
    return v.str_val if v.WhichOneof("value") == "str_val" else str(v.int_val)


def _handler_text(h: types_pb2.Probe | types_pb2.LifecycleHandler) -> str:
    """A probe's or hook's action as kubectl describe prints it."""
    if h.HasField("exec"):
        return f"exec [{' '.join(h.exec.command)}]"
    if h.HasField("http_get"):
        g = h.http_get
        return f"http-get {g.scheme.lower() or 'http'}://{g.host}:{_int_or_str(g.port)}{g.path}"
    if h.HasField("tcp_socket"):
        return f"tcp-socket {h.tcp_socket.host}:{_int_or_str(h.tcp_socket.port)}"
    if isinstance(h, types_pb2.Probe) and h.HasField("grpc"):
        return f"grpc <pod>:{h.grpc.port} {h.grpc.service}".rstrip()
    if isinstance(h, types_pb2.LifecycleHandler) and h.HasField("sleep"):
        return f"sleep {h.sleep.seconds}s"
    return "unknown"


def _probe_text(p: types_pb2.Probe) -> str:
    return (
        f"{_handler_text(p)} delay={p.initial_delay_seconds}s timeout={p.timeout_seconds}s "
        f"period={p.period_seconds}s #success={p.success_threshold} "
        f"#failure={p.failure_threshold}"
    )


def _env_text(pod: types_pb2.Pod, e: types_pb2.EnvVar) -> str:
    if not e.HasField("value_from"):
        return e.value
    src = e.value_from
    if src.HasField("field_ref"):
        ref = src.field_ref
        known = {
            "metadata.name": pod.metadata.name,
            "metadata.namespace": pod.metadata.namespace,
            "metadata.uid": pod.metadata.uid,
            "spec.nodeName": pod.spec.node_name,
            "spec.serviceAccountName": pod.spec.service_account_name,
            "status.podIP": pod.status.pod_ip,
            "status.hostIP": pod.status.host_ip,
        }
        value = known.get(ref.field_path, "")
        return f"{value} ({ref.api_version}:{ref.field_path})".lstrip()
    if src.HasField("resource_field_ref"):
        ref_ = src.resource_field_ref
        return f"{ref_.resource} ({ref_.container_name or 'this container'})"
    if src.HasField("config_map_key_ref"):
        cm = src.config_map_key_ref
        return f"<set to the key '{cm.key}' of config map '{cm.name}'>"
    sk = src.secret_key_ref
    return f"<set to the key '{sk.key}' in secret '{sk.name}'>"


def _describe_container_spec(
    w: Writer, pod: types_pb2.Pod, c: types_pb2.Container, before_state: bool
) -> None:
    """The parts of a container kubectl prints around its state: ports and command before,
    probes, environment and mounts after (each only when the container has it, unlike
    kubectl's `Environment: <none>`, so that pods without them read as before)."""
    if before_state:
        for field, title in (("container_port", "Port"), ("host_port", "Host Port")):
            ports = [
                f"{getattr(p, field)}/{p.protocol or 'TCP'}" + (f" ({p.name})" if p.name else "")
                for p in c.ports
            ]
            if ports:  # kubectl's Ports/Host Ports when there are several
                w.line(2, f"{title}s:" if len(ports) > 1 else f"{title}:", ", ".join(ports))
        for values, title in ((c.command, "Command"), (c.args, "Args")):
            if values:
                w.line(2, f"{title}:")
                for v in values:
                    w.line(3, v)
        return
    for field, title in (
        ("liveness_probe", "Liveness"),
        ("readiness_probe", "Readiness"),
        ("startup_probe", "Startup"),
    ):
        if c.HasField(field):
            w.line(2, f"{title}:", _probe_text(getattr(c, field)))
    if c.HasField("lifecycle"):
        for field, title in (("post_start", "PostStart"), ("pre_stop", "PreStop")):
            if c.lifecycle.HasField(field):
                w.line(2, f"{title}:", _handler_text(getattr(c.lifecycle, field)))
    if c.env_from:
        w.line(2, "Environment Variables from:")
        for ef in c.env_from:
            kind, name = (
                ("ConfigMap", ef.config_map_ref.name)
                if ef.HasField("config_map_ref")
                else ("Secret", ef.secret_ref.name)
            )
            w.line(
                3,
                name,
                f"{kind}  Optional: false" + (f"  Prefix: {ef.prefix}" if ef.prefix else ""),
            )
    if c.env:
        w.line(2, "Environment:")
        for e in c.env:
            w.line(3, f"{e.name}:", _env_text(pod, e))
    if c.volume_mounts:
        w.line(2, "Mounts:")
        for m in c.volume_mounts:
            sub = f" (path={m.sub_path})" if m.sub_path else ""
            w.line(3, f"{m.mount_path} from {m.name} ({'ro' if m.read_only else 'rw'}){sub}")


def _describe_containers(
    w: Writer,
    pod: types_pb2.Pod,
    title: str,
    containers: Iterable[types_pb2.Container],
    statuses: Iterable[types_pb2.ContainerStatus],
) -> None:
    containers = list(containers)
    if not containers:
        return
    by_name = {s.name: s for s in statuses}
    w.line(0, f"{title}:")
    for c in containers:
        w.line(1, f"{c.name}:")
        w.line(2, "Image:", c.image or NONE)
        _describe_container_spec(w, pod, c, before_state=True)
        if c.HasField("restart_policy"):
            w.line(2, "Restart Policy:", c.restart_policy)
        st = by_name.get(c.name)
        if st is not None:
            _container_state(w, 2, "State", st.state)
            w.line(2, "Ready:", "True" if st.ready else "False")
            w.line(2, "Restart Count:", str(st.restart_count))
        _resource_block(w, 2, "Limits", c.resources.limits)
        _resource_block(w, 2, "Requests", c.resources.requests)
        if c.resources.claims:
            w.line(2, "Claims:")
            for claim in c.resources.claims:
                w.line(3, f"{claim.name}/{claim.request}" if claim.request else claim.name)
        if st is not None:
            _resource_block(w, 2, "Allocated Resources", st.allocated_resources)
            if st.HasField("resources"):
                _resource_block(w, 2, "Actual Limits", st.resources.limits)
                _resource_block(w, 2, "Actual Requests", st.resources.requests)
        if c.resize_policy:
            w.line(
                2,
                "Resize Policy:",
                ", ".join(f"{p.resource_name}={p.restart_policy}" for p in c.resize_policy),
            )
        _describe_container_spec(w, pod, c, before_state=False)


def _volume_lines(v: types_pb2.Volume) -> list[tuple[str, str]]:
    if v.HasField("empty_dir"):
        return [
            ("Type:", "EmptyDir (a temporary directory that shares a pod's lifetime)"),
            ("Medium:", v.empty_dir.medium),
            ("SizeLimit:", v.empty_dir.size_limit or "<unset>"),
        ]
    if v.HasField("host_path"):
        return [
            ("Type:", "HostPath (bare host directory volume)"),
            ("Path:", v.host_path.path),
            ("HostPathType:", v.host_path.type),
        ]
    if v.HasField("config_map"):
        return [
            ("Type:", "ConfigMap (a volume populated by a ConfigMap)"),
            ("Name:", v.config_map.name),
        ]
    if v.HasField("secret"):
        return [
            ("Type:", "Secret (a volume populated by a Secret)"),
            ("SecretName:", v.secret.secret_name),
        ]
    if v.HasField("persistent_volume_claim"):
        return [
            (
                "Type:",
                "PersistentVolumeClaim (a reference to a PersistentVolumeClaim in the same "
                "namespace)",
            ),
            ("ClaimName:", v.persistent_volume_claim.claim_name),
            ("ReadOnly:", str(v.persistent_volume_claim.read_only).lower()),
        ]
    if v.HasField("downward_api"):
        return [("Type:", "DownwardAPI (a volume populated by information about the pod)")]
    return [("Type:", "Projected (a volume that contains injected data from multiple sources)")]


def _describe_volumes(w: Writer, volumes: Iterable[types_pb2.Volume]) -> None:
    volumes = list(volumes)
    if not volumes:
        return
    w.line(0, "Volumes:")
    for v in volumes:
        w.line(1, f"{v.name}:")
        for key, value in _volume_lines(v):
            w.line(2, key, value)


def _describe_conditions(w: Writer, conditions: list[types_pb2.PodCondition]) -> None:
    """Conditions as a table; Reason and Message columns when any condition has one."""
    if not conditions:
        return
    w.line(0, "Conditions:")
    detailed = any(c.reason or c.message for c in conditions)
    if detailed:
        w.line(1, "Type", "Status", "Reason", "Message")
        w.line(1, "----", "------", "------", "-------")
        for c in conditions:
            w.line(1, c.type, c.status, c.reason or "", " ".join(c.message.split()))
    else:
        w.line(1, "Type", "Status")
        w.line(1, "----", "------")
        for c in conditions:
            w.line(1, c.type, c.status)


def toleration_text(t: types_pb2.Toleration) -> str:
    """As kubectl prints a toleration: key=value:effect op=Exists for 300s."""
    text = t.key
    if t.value:
        text += f"={t.value}"
    if t.effect:
        text += f":{t.effect}"
    if t.operator == "Exists" and not t.value:
        text += " op=Exists" if (t.key or t.effect) else "op=Exists"
    if t.HasField("toleration_seconds"):
        text += f" for {t.toleration_seconds}s"
    return text


def _describe_resource_claims(w: Writer, pod: types_pb2.Pod) -> None:
    """The pod's DRA claims: each entry's source and, for a template, the claim the
    resourceclaim controller generated (status.resourceClaimStatuses)."""
    if not pod.spec.resource_claims:
        return
    generated = {s.name: s for s in pod.status.resource_claim_statuses}
    w.line(0, "Resource Claims:")
    for c in pod.spec.resource_claims:
        w.line(1, f"{c.name}:")
        if c.HasField("resource_claim_name"):
            w.line(2, "ResourceClaim:", c.resource_claim_name)
        if c.HasField("resource_claim_template_name"):
            w.line(2, "ResourceClaimTemplate:", c.resource_claim_template_name)
            status = generated.get(c.name)
            name = status.resource_claim_name if status is not None else ""
            w.line(2, "Generated ResourceClaim:", name or NONE)


def describe_pod(pod: types_pb2.Pod, events: list[types_pb2.Event], now: float) -> str:
    w = Writer()
    m = pod.metadata
    w.line(0, "Name:", m.name)
    w.line(0, "Namespace:", m.namespace)
    w.line(0, "Priority:", str(pod.spec.priority) if pod.spec.HasField("priority") else NONE)
    w.line(0, "Priority Class Name:", pod.spec.priority_class_name or NONE)
    if pod.spec.HasField("preemption_policy"):
        w.line(0, "Preemption Policy:", pod.spec.preemption_policy)
    if pod.spec.scheduler_name:
        w.line(0, "Scheduler:", pod.spec.scheduler_name)
    node = pod.spec.node_name
    if node and pod.status.host_ip:
        node = f"{node}/{pod.status.host_ip}"
    w.line(0, "Node:", node or NONE)
    if pod.status.HasField("start_time"):
        w.line(0, "Start Time:", rfc1123(pod.status.start_time))
    w.multiline(0, "Labels", _pairs(m.labels))
    w.multiline(0, "Annotations", annotation_lines(m.annotations))
    if m.HasField("deletion_timestamp"):
        grace = m.deletion_grace_period_seconds
        lasts = printers.human_duration(printers.seconds_of(m.deletion_timestamp) - now)
        w.line(0, "Status:", f"Terminating (lasts {lasts})")
        w.line(0, "Termination Grace Period:", f"{grace}s")
    else:
        w.line(0, "Status:", pod.status.phase or "Pending")
    if pod.status.reason:
        w.line(0, "Reason:", pod.status.reason)
    if pod.status.message:
        w.line(0, "Message:", " ".join(pod.status.message.split()))
    w.line(0, "IP:", pod.status.pod_ip)  # (kubectl: empty until the pod has one)
    if pod.status.pod_ips:
        w.line(0, "IPs:")
        for ip in pod.status.pod_ips:
            w.line(1, "IP:", ip.ip)
    else:
        w.line(0, "IPs:", NONE)
    w.line(0, "Nominated Node Name:", pod.status.nominated_node_name or NONE)
    if pod.status.resize:
        w.line(0, "Resize:", pod.status.resize)
    if pod.metadata.owner_references:
        owner = pod.metadata.owner_references[0]
        w.line(0, "Controlled By:", f"{owner.kind}/{owner.name}")
    _describe_containers(
        w, pod, "Init Containers", pod.spec.init_containers, pod.status.init_container_statuses
    )
    _describe_containers(w, pod, "Containers", pod.spec.containers, pod.status.container_statuses)
    _describe_conditions(w, list(pod.status.conditions))
    _describe_volumes(w, pod.spec.volumes)
    _describe_resource_claims(w, pod)
    if pod.spec.HasField("resources"):
        _resource_block(w, 0, "Pod Limits", pod.spec.resources.limits)
        _resource_block(w, 0, "Pod Requests", pod.spec.resources.requests)
    if pod.spec.overhead:
        w.line(0, "Overhead:", ", ".join(_pairs(pod.spec.overhead)))
    w.line(0, "QoS Class:", pod.status.qos_class or NONE)
    w.multiline(0, "Node-Selectors", _pairs(pod.spec.node_selector))
    w.multiline(0, "Tolerations", [toleration_text(t) for t in pod.spec.tolerations])
    if pod.spec.scheduling_gates:
        w.multiline(0, "Scheduling Gates", [g.name for g in pod.spec.scheduling_gates])
    describe_events(w, events, now)
    return w.render()


# ---------------------------------------------------------------- resources of pods


def _ints(mapping: Mapping[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, text in mapping.items():
        try:
            out[name] = to_int(name, text)
        except Invalid:
            continue  # the apiserver validates; an odd value does not stop a description
    return out


def _add_into(target: dict[str, int], other: Mapping[str, int]) -> None:
    for name, value in other.items():
        target[name] = target.get(name, 0) + value


# kubectl counts client-side with the resource helpers vendored in its own release, whatever
# the cluster emulates; kemuctl is a 1.37 client, so it always takes the newest rule (the
# maximum of the summed desired, allocated and actual sizes), not the cluster's, and honours
# pod-level resources (component-helpers' PodResourcesOptions{}: SkipPodLevelResources false;
# an apiserver without the PodLevelResources gate has dropped spec.resources already).
_WITH_STATUS = resources.PodResourcesOptions(
    use_status_resources=True, pod_level_resources=True, per_container_max=False
)


def pod_requests_and_limits(pod: types_pb2.Pod) -> tuple[dict[str, int], dict[str, int]]:
    """What a pod holds on its node, as kubectl describe node shows it: upstream's
    resourcehelper.PodRequests and PodLimits with status resources (an in-place resize counts
    at the largest of its desired, allocated and actual sizes, unless it is Infeasible) and
    pod-level resources (spec.resources replaces the containers' sum for cpu, memory and
    hugepages)."""
    try:
        return (
            resources.pod_requests(pod, _WITH_STATUS),
            resources.pod_limits(pod, _WITH_STATUS),
        )
    except Invalid:
        return {}, {}  # the apiserver validates; an odd value does not stop a description


def _fraction(name: str, value: int, allocatable: Mapping[str, int]) -> str:
    total = allocatable.get(name, 0)
    percent = int(value * 100 / total) if total else 0
    return f"{format_resource(name, value)} ({percent}%)"


# ---------------------------------------------------------------- nodes


def taint_text(t: types_pb2.Taint) -> str:
    """corev1 Taint.ToString: key[=value]:effect (`key=value:` without an effect)."""
    if not t.effect:
        return f"{t.key}={t.value}:" if t.value else t.key
    return f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"


def taint_lines(taints: Iterable[types_pb2.Taint]) -> list[str]:
    """kubectl's printTaintsMultiline order: by effect, then key."""
    return [taint_text(t) for t in sorted(taints, key=lambda t: f"{t.effect},{t.key}")]


def describe_node(
    node: types_pb2.Node,
    pods: list[types_pb2.Pod],
    nominated: list[types_pb2.Pod],
    events: list[types_pb2.Event],
    now: float,
) -> str:
    w = Writer()
    m = node.metadata
    w.line(0, "Name:", m.name)
    w.line(0, "Roles:", printers.node_roles(node))
    w.multiline(0, "Labels", _pairs(m.labels))
    w.multiline(0, "Annotations", annotation_lines(m.annotations))
    w.line(0, "CreationTimestamp:", _when(m.creation_timestamp, m.HasField("creation_timestamp")))
    w.multiline(0, "Taints", taint_lines(node.spec.taints))
    w.line(0, "Unschedulable:", "true" if node.spec.unschedulable else "false")
    policy = node.spec.pod_preemption_policy.disable_resize_preemption
    if policy:
        w.line(0, "Resize Preemption Disabled For:", ", ".join(policy))
    conditions = list(node.status.conditions)
    if conditions:
        w.line(0, "Conditions:")
        w.line(1, "Type", "Status", "LastHeartbeatTime", "LastTransitionTime", "Reason", "Message")
        w.line(1, "----", "------", "-----------------", "------------------", "------", "-------")
        for c in conditions:
            w.line(
                1,
                c.type,
                c.status,
                _when(c.last_heartbeat_time),
                _when(c.last_transition_time),
                c.reason,
                " ".join(c.message.split()),
            )
    else:
        w.line(0, "Conditions:", NONE)
    if node.status.addresses:
        w.line(0, "Addresses:")
        for address in node.status.addresses:
            w.line(1, f"{address.type}:", address.address)
    _resource_block(w, 0, "Capacity", node.status.capacity)
    _resource_block(w, 0, "Allocatable", node.status.allocatable)
    info = node.status.node_info
    if info.kubelet_version or info.operating_system or info.architecture:
        w.line(0, "System Info:")
        if info.kubelet_version:
            w.line(1, "Kubelet Version:", info.kubelet_version)
        if info.operating_system:
            w.line(1, "Operating System:", info.operating_system)
        if info.architecture:
            w.line(1, "Architecture:", info.architecture)
    if node.spec.pod_cidr:
        w.line(0, "PodCIDR:", node.spec.pod_cidr)
        w.line(0, "PodCIDRs:", ",".join(node.spec.pod_cidrs or [node.spec.pod_cidr]))
    if node.spec.provider_id:
        w.line(0, "ProviderID:", node.spec.provider_id)

    allocatable = _ints(node.status.allocatable or node.status.capacity)
    w.line(0, "Non-terminated Pods:", f"({len(pods)} in total)")
    totals_req: dict[str, int] = {}
    totals_lim: dict[str, int] = {}
    if pods:
        w.line(
            1,
            "Namespace",
            "Name",
            "CPU Requests",
            "CPU Limits",
            "Memory Requests",
            "Memory Limits",
            "Age",
        )
        w.line(
            1,
            "---------",
            "----",
            "------------",
            "----------",
            "---------------",
            "-------------",
            "---",
        )
    for p in pods:
        req, lim = pod_requests_and_limits(p)
        _add_into(totals_req, req)
        _add_into(totals_lim, lim)
        created = p.metadata.creation_timestamp
        w.line(
            1,
            p.metadata.namespace,
            p.metadata.name,
            _fraction("cpu", req.get("cpu", 0), allocatable),
            _fraction("cpu", lim.get("cpu", 0), allocatable),
            _fraction("memory", req.get("memory", 0), allocatable),
            _fraction("memory", lim.get("memory", 0), allocatable),
            printers.age(created, now, present=p.metadata.HasField("creation_timestamp")),
        )
    w.line(0, "Allocated resources:")
    w.line(1, "(Total limits may be over 100 percent, i.e., overcommitted.)")
    w.line(1, "Resource", "Requests", "Limits")
    w.line(1, "--------", "--------", "------")
    names = ["cpu", "memory"]
    names += sorted((set(allocatable) | set(totals_req)) - {"cpu", "memory", "pods"})
    for name in names:
        w.line(
            1,
            name,
            _fraction(name, totals_req.get(name, 0), allocatable),
            _fraction(name, totals_lim.get(name, 0), allocatable),
        )
    if nominated:
        w.line(0, "Nominated Pods:", f"({len(nominated)} in total)")
        w.line(1, "Namespace", "Name", "Priority", "CPU Requests", "Memory Requests")
        w.line(1, "---------", "----", "--------", "------------", "---------------")
        for p in nominated:
            req, _ = pod_requests_and_limits(p)
            w.line(
                1,
                p.metadata.namespace,
                p.metadata.name,
                str(p.spec.priority) if p.spec.HasField("priority") else NONE,
                _fraction("cpu", req.get("cpu", 0), allocatable),
                _fraction("memory", req.get("memory", 0), allocatable),
            )
    describe_events(w, events, now)
    return w.render()


# ---------------------------------------------------------------- the command


async def _list_pods(ctx: Context, field: str, value: str) -> list[types_pb2.Pod]:
    """Pods whose `field` is `value`: by field selector, or filtered here when the server
    does not support that selector."""
    try:
        listed = await ctx.client.list_all(types_pb2.Pod, "", field_selector=f"{field}={value}")
        return list(listed.items)
    except BadRequest:
        listed = await ctx.client.list_all(types_pb2.Pod, "")
        if field == "spec.nodeName":
            return [p for p in listed.items if p.spec.node_name == value]
        return [p for p in listed.items if p.status.nominated_node_name == value]


_VERSION: Final = re.compile(r"v\d+(?:(?:alpha|beta)\d+)?")


def requested_version(target: str) -> tuple[str, str | None]:
    """`resource.version.group` (kubectl's fully qualified form, podgroups.v1alpha3.scheduling.k8s.io):
    the resource with its group, and the version asked for (None when not given)."""
    kind_part, sep, rest = target.partition("/")
    resource, _, tail = kind_part.partition(".")
    version, _, group = tail.partition(".")
    if group and _VERSION.fullmatch(version):
        return f"{resource}{sep}{rest}", f"{group}/{version}"
    return target, None


async def served_version(ctx: Context, kind: kinds.Kind, asked: str | None) -> str:
    """The group version kubectl describe shows a kind of several versions as: the one asked
    for, else the server's preferred at its emulated version with its gates and its runtime
    config (discovery's)."""
    if asked is not None or not kind.versions:
        return asked or kind.api_version
    info = await ctx.client.version()
    _, _, minor = info.server.emulated_version.partition(".")
    if not minor.isdigit():
        return kind.api_version
    enabled = {g.name for g in info.server.feature_gates if g.enabled}
    runtime = RuntimeConfig.parse(info.server.runtime_config)
    try:
        served = kinds.Served.at(int(minor), enabled.__contains__, runtime)
    except RuntimeConfigError:
        return kind.api_version
    return served.preferred(kind)


async def describe_object(ctx: Context, obj: Message, api_version: str = "") -> str:
    kind = kinds.kind_of(obj)
    now = ctx.clock.now()
    events: list[types_pb2.Event] = []
    if kind.kind != "Event":
        listed = await ctx.client.list_all(types_pb2.Event, object_meta(obj).namespace)
        events = events_for(listed.items, obj)
    if isinstance(obj, types_pb2.Pod):
        return describe_pod(obj, events, now)
    if isinstance(obj, types_pb2.Node):
        name = obj.metadata.name
        bound = [
            p
            for p in await _list_pods(ctx, "spec.nodeName", name)
            if p.status.phase not in ("Succeeded", "Failed")
        ]
        nominated = [
            p
            for p in await _list_pods(ctx, "status.nominatedNodeName", name)
            if p.spec.node_name != name
        ]
        return describe_node(obj, bound, nominated, events, now)
    if isinstance(obj, types_pb2.ConfigMap):
        return describe_config_map(obj, events, now)
    if isinstance(obj, types_pb2.PersistentVolume):
        return describe_persistent_volume(obj, events, now)
    if isinstance(obj, types_pb2.Service):
        slices = await ctx.client.list_all(
            types_pb2.EndpointSlice,
            obj.metadata.namespace,
            label_selector=f"kubernetes.io/service-name={obj.metadata.name}",
        )
        return describe_service(obj, list(slices.items), events, now)
    if isinstance(obj, types_pb2.PersistentVolumeClaim):
        pods = list((await ctx.client.list_all(types_pb2.Pod, obj.metadata.namespace)).items)
        return describe_persistent_volume_claim(obj, pods, events, now)
    described = await describe_more(ctx, obj, events, now)
    if described is not None:
        return described
    # kubectl's genericDescriber (an Event's own section is empty: no event is about one)
    return describe_unstructured(obj, events, now, api_version)


async def cmd_describe(ctx: Context, args: argparse.Namespace) -> int:
    asked: str | None = None
    given = list(args.targets)
    if given:
        given[0], asked = requested_version(given[0])
    try:
        targets = split_targets(given, require_name=False)
    except CtlError:
        # maybe a custom resource: learn the established CRDs' kinds (kubectl's discovery)
        await register_custom_kinds(ctx)
        targets = split_targets(given, require_name=False)
    if asked is not None:
        for kind, _ in targets:
            every = {gv for _, versions in kind.versions for gv in versions} or {kind.api_version}
            if asked not in every:
                raise CtlError(f'the server doesn\'t have a resource type "{args.targets[0]}"')
    versions: dict[str, str] = {}
    objs: list[Message] = []
    errors: list[str] = []
    for kind, name in targets:
        if name is None:
            ns = "" if args.all_namespaces else namespace_for(ctx, kind)
            if kind.custom:  # (custom resources: by resource; no label selector)
                items: list[Message] = list(
                    (await ctx.client.list_all_custom(kind.resource, ns)).items
                )
            else:
                selector = args.selector or ""
                items = list(
                    (await ctx.client.list_all(kind.message, ns, label_selector=selector)).items
                )
            if not items:
                ctx.warn(f"No resources found in {ns} namespace." if ns else "No resources found")
            objs.extend(items)
            continue
        try:
            ns = namespace_for(ctx, kind)
            if kind.custom:
                objs.append(await ctx.client.get_custom(kind.resource, name, ns))
            else:
                objs.append(await ctx.client.get(kind.message, name, ns))
        except ApiError as e:
            errors.append(format_api_error(e))
    for i, obj in enumerate(objs):
        if i:
            ctx.print()
            ctx.print()
        kind = kinds.kind_of(obj)
        if kind.kind not in versions:
            versions[kind.kind] = await served_version(ctx, kind, asked)
        ctx.print(await describe_object(ctx, obj, versions[kind.kind]))
    for message in errors:
        ctx.warn(f"error: {message}")
    return 1 if errors else 0


# ---------------------------------------------------------------- fidelity: more kinds
# kubectl's layouts (staging/src/k8s.io/kubectl/pkg/describe/describe.go) for the kinds whose
# generic dump differed most: ConfigMap, Service, PersistentVolume, PersistentVolumeClaim.

_ACCESS_MODES: Final = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)
_BETA_STORAGE_CLASS: Final = "volume.beta.kubernetes.io/storage-class"


def access_modes_text(modes: Iterable[str]) -> str:
    """storageutil.GetAccessModesAsString: RWO,ROX,RWX,RWOP in that order."""
    given = set(modes)
    return ",".join(short for mode, short in _ACCESS_MODES if mode in given)


def _go_list(items: Iterable[str]) -> str:
    """A []string as Go's %v prints it: [a b]."""
    return "[" + " ".join(items) + "]"


def _status_text(meta: types_pb2.ObjectMeta, phase: str, now: float) -> str:
    if meta.HasField("deletion_timestamp"):
        return f"Terminating (lasts {printers.age(meta.deletion_timestamp, now)})"
    return phase


def describe_config_map(cm: types_pb2.ConfigMap, events: list[types_pb2.Event], now: float) -> str:
    """kubectl's describeConfigMap: the data under `key:` and a `----` rule."""
    w = Writer()
    w.line(0, "Name:", cm.metadata.name)
    w.line(0, "Namespace:", cm.metadata.namespace)
    w.multiline(0, "Labels", _pairs(cm.metadata.labels))
    w.multiline(0, "Annotations", annotation_lines(cm.metadata.annotations))
    w.line(0, "")
    w.line(0, "Data")
    w.line(0, "====")
    for key in sorted(cm.data):
        w.line(0, f"{key}:")
        w.line(0, "----")
        for text in cm.data[key].split("\n"):
            w.line(0, text)
        w.line(0, "")
    w.line(0, "")
    w.line(0, "BinaryData")
    w.line(0, "====")
    for key in sorted(cm.binary_data):
        w.line(0, f"{key}: {len(cm.binary_data[key])} bytes")
    w.line(0, "")
    describe_events(w, events, now)
    return w.render()


def describe_service(
    svc: types_pb2.Service,
    slices: list[types_pb2.EndpointSlice],
    events: list[types_pb2.Event],
    now: float,
) -> str:
    """kubectl's describeService: each port's endpoints from the Service's EndpointSlices
    (formatEndpointSlices)."""
    spec = svc.spec
    w = Writer()
    w.line(0, "Name:", svc.metadata.name)
    w.line(0, "Namespace:", svc.metadata.namespace)
    w.multiline(0, "Labels", _pairs(svc.metadata.labels))
    w.multiline(0, "Annotations", annotation_lines(svc.metadata.annotations))
    w.line(0, "Selector:", ",".join(_pairs(spec.selector)) or NONE)
    w.line(0, "Type:", spec.type)
    if spec.HasField("ip_family_policy"):
        w.line(0, "IP Family Policy:", spec.ip_family_policy)
    w.line(0, "IP Families:", ",".join(spec.ip_families) or NONE)
    w.line(0, "IP:", spec.cluster_ip)
    w.line(0, "IPs:", ",".join(spec.cluster_ips) or NONE)
    if spec.external_ips:
        w.line(0, "External IPs:", ",".join(spec.external_ips))
    if spec.load_balancer_ip:
        w.line(0, "Desired LoadBalancer IP:", spec.load_balancer_ip)
    if spec.external_name:
        w.line(0, "External Name:", spec.external_name)
    ingress = [i.ip or i.hostname for i in svc.status.load_balancer.ingress]
    if ingress:
        w.line(0, "LoadBalancer Ingress:", ", ".join(ingress))
    for port in spec.ports:
        name = port.name or "<unset>"
        w.line(0, "Port:", name, f"{port.port}/{port.protocol}")
        tp = port.target_port
        target = tp.str_val if tp.str_val else str(tp.int_val)
        w.line(0, "TargetPort:", f"{target}/{port.protocol}")
        if port.HasField("app_protocol"):
            w.line(0, "AppProtocol:", port.app_protocol)
        if port.node_port:
            w.line(0, "NodePort:", name, f"{port.node_port}/{port.protocol}")
        w.line(0, "Endpoints:", format_endpoint_slices(slices, {port.name}))
    w.line(0, "Session Affinity:", spec.session_affinity)
    if spec.external_traffic_policy:
        w.line(0, "External Traffic Policy:", spec.external_traffic_policy)
    if spec.HasField("internal_traffic_policy"):
        w.line(0, "Internal Traffic Policy:", spec.internal_traffic_policy)
    describe_events(w, events, now)
    return w.render()


def _pv_class(pv: types_pb2.PersistentVolume) -> str:
    return pv.metadata.annotations.get(_BETA_STORAGE_CLASS, pv.spec.storage_class_name)


def _pvc_class(pvc: types_pb2.PersistentVolumeClaim) -> str:
    return pvc.metadata.annotations.get(_BETA_STORAGE_CLASS, pvc.spec.storage_class_name)


def _node_affinity(w: Writer, affinity: types_pb2.VolumeNodeAffinity, present: bool) -> None:
    """kubectl's printVolumeNodeAffinity."""
    if not present or not affinity.HasField("required"):
        w.line(0, "Node Affinity:", NONE)
        return
    w.line(0, "Node Affinity:", "")
    terms = affinity.required.node_selector_terms
    if not terms:
        w.line(1, "Required Terms:", NONE)
        return
    w.line(1, "Required Terms:", "")
    for i, term in enumerate(terms):
        exprs = []
        for r in term.match_expressions:
            text = f"{r.key} {r.operator.lower()}"
            if r.values:
                text += f" [{', '.join(r.values)}]"
            exprs.append(text)
        w.multiline(2, f"Term {i}", exprs)


def _pv_source(w: Writer, spec: types_pb2.PersistentVolumeSpec) -> None:
    w.line(0, "Source:")
    if spec.HasField("host_path"):
        w.line(2, "Type:", "HostPath (bare host directory volume)")
        w.line(2, "Path:", spec.host_path.path)
        w.line(2, "HostPathType:", spec.host_path.type)
    elif spec.HasField("local"):
        w.line(2, "Type:", "LocalVolume (a persistent volume backed by local storage on a node)")
        w.line(2, "Path:", spec.local.path)
    elif spec.HasField("csi"):
        csi = spec.csi
        w.line(2, "Type:", "CSI (a Container Storage Interface (CSI) volume source)")
        w.line(2, "Driver:", csi.driver)
        w.line(2, "FSType:", csi.fs_type)
        w.line(2, "VolumeHandle:", csi.volume_handle)
        w.line(2, "ReadOnly:", str(csi.read_only).lower())
        w.multiline(2, "VolumeAttributes", _pairs(csi.volume_attributes))
    elif spec.HasField("aws_elastic_block_store"):
        ebs = spec.aws_elastic_block_store
        w.line(2, "Type:", "AWSElasticBlockStore (a Persistent Disk resource in AWS)")
        w.line(2, "VolumeID:", ebs.volume_id)
        w.line(2, "FSType:", ebs.fs_type)
        w.line(2, "Partition:", str(ebs.partition))
        w.line(2, "ReadOnly:", str(ebs.read_only).lower())


def describe_persistent_volume(
    pv: types_pb2.PersistentVolume, events: list[types_pb2.Event], now: float
) -> str:
    """kubectl's describePersistentVolume."""
    spec = pv.spec
    w = Writer()
    w.line(0, "Name:", pv.metadata.name)
    w.multiline(0, "Labels", _pairs(pv.metadata.labels))
    w.multiline(0, "Annotations", annotation_lines(pv.metadata.annotations))
    w.line(0, "Finalizers:", _go_list(pv.metadata.finalizers))
    w.line(0, "StorageClass:", _pv_class(pv))
    w.line(0, "Status:", _status_text(pv.metadata, pv.status.phase, now))
    claim = ""
    if spec.HasField("claim_ref"):
        claim = f"{spec.claim_ref.namespace}/{spec.claim_ref.name}"
    w.line(0, "Claim:", claim)
    w.line(0, "Reclaim Policy:", spec.persistent_volume_reclaim_policy)
    w.line(0, "Access Modes:", access_modes_text(spec.access_modes))
    if spec.HasField("volume_mode"):
        w.line(0, "VolumeMode:", spec.volume_mode)
    w.line(0, "Capacity:", spec.capacity.get("storage", "0"))
    _node_affinity(w, spec.node_affinity, spec.HasField("node_affinity"))
    w.line(0, "Message:", pv.status.message)
    _pv_source(w, spec)
    describe_events(w, events, now)
    return w.render()


def _uses_claim(pod: types_pb2.Pod, claim: str) -> bool:
    return any(
        v.HasField("persistent_volume_claim") and v.persistent_volume_claim.claim_name == claim
        for v in pod.spec.volumes
    )


def describe_persistent_volume_claim(
    pvc: types_pb2.PersistentVolumeClaim,
    pods: list[types_pb2.Pod],
    events: list[types_pb2.Event],
    now: float,
) -> str:
    """kubectl's describePersistentVolumeClaim; `pods`: the namespace's (Used By)."""
    spec = pvc.spec
    w = Writer()
    w.line(0, "Name:", pvc.metadata.name)
    w.line(0, "Namespace:", pvc.metadata.namespace)
    w.line(0, "StorageClass:", _pvc_class(pvc))
    w.line(0, "Status:", _status_text(pvc.metadata, pvc.status.phase, now))
    w.line(0, "Volume:", spec.volume_name)
    w.multiline(0, "Labels", _pairs(pvc.metadata.labels))
    w.multiline(0, "Annotations", annotation_lines(pvc.metadata.annotations))
    w.line(0, "Finalizers:", _go_list(pvc.metadata.finalizers))
    capacity = modes = ""
    if spec.volume_name:
        modes = access_modes_text(pvc.status.access_modes)
        capacity = pvc.status.capacity.get("storage", "")
    w.line(0, "Capacity:", capacity)
    w.line(0, "Access Modes:", modes)
    if spec.HasField("volume_mode"):
        w.line(0, "VolumeMode:", spec.volume_mode)
    users = sorted(p.metadata.name for p in pods if _uses_claim(p, pvc.metadata.name))
    w.multiline(0, "Used By", users)
    if pvc.status.conditions:
        w.line(0, "Conditions:")
        w.line(1, "Type", "Status", "LastProbeTime", "LastTransitionTime", "Reason", "Message")
        w.line(1, "----", "------", "-----------------", "------------------", "------", "-------")
        for c in pvc.status.conditions:
            w.line(
                1,
                c.type,
                c.status,
                _when(c.last_probe_time),
                _when(c.last_transition_time),
                c.reason,
                c.message,
            )
    describe_events(w, events, now)
    return w.render()


# ---------------------------------------------------------------- issue #57 gcquota: the
# kubectl layouts (staging/src/k8s.io/kubectl/pkg/describe/describe.go) of the kinds that
# fell back to the field dump: RBAC's four, ServiceAccount, Ingress, IngressClass,
# NetworkPolicy, HorizontalPodAutoscaler, EndpointSlice, Endpoints, ResourceQuota, LimitRange,
# ReplicationController, CertificateSigningRequest, Secret, PriorityClass,
# PodDisruptionBudget, StorageClass; and kubectl's genericDescriber for every other kind
# (CRDs, custom resources, APIService, Lease, ...).


def _qty(text: str) -> str:
    """A quantity as Go's Quantity.String() prints it (canonical)."""
    try:
        return str(parse_quantity(text))
    except Invalid:
        return text


def _selector(selector: types_pb2.LabelSelector | None) -> str:
    """metav1.FormatLabelSelector (<none> for none or an empty one)."""
    if selector is None:
        return NONE
    return kinds_printers.format_label_selector(selector)


def _go_time(ts: Timestamp) -> str:
    """A metav1.Time printed with %s (Go's time.Time.String() in UTC)."""
    return time.strftime("%Y-%m-%d %H:%M:%S +0000 UTC", time.gmtime(ts.seconds))


def _raw_line(w: Writer, title: str, text: str) -> None:
    """`Title:\tText` as kubectl writes it: a newline in the text (kubectl apply's
    last-applied annotation ends with one) starts a line of its own, which ends the
    alignment block."""
    first, *rest = text.split("\n")
    w.line(0, title, first)
    for line in rest:
        w.line(0, line)


def _format_labels(mapping: Mapping[str, str]) -> str:
    """labels.FormatLabels: k=v sorted, joined by commas; <none> when empty."""
    return ",".join(_pairs(mapping)) or NONE


def _header(w: Writer, obj: Message, *, namespace: bool = True) -> None:
    m = object_meta(obj)
    w.line(0, "Name:", m.name)
    if namespace:
        w.line(0, "Namespace:", m.namespace)
    w.multiline(0, "Labels", _pairs(m.labels))
    w.multiline(0, "Annotations", annotation_lines(m.annotations))


# ------------------------------------------------ RBAC (rbac.BreakdownRule, CompactRules)


def _breakdown(rule: types_pb2.PolicyRule) -> list[types_pb2.PolicyRule]:
    out = []
    for group in rule.api_groups:
        for resource in rule.resources:
            for verb in rule.verbs:
                for name in rule.resource_names or [None]:
                    sub = types_pb2.PolicyRule(
                        api_groups=[group], resources=[resource], verbs=[verb]
                    )
                    if name is not None:
                        sub.resource_names.append(name)
                    out.append(sub)
    for url in rule.non_resource_urls:
        for verb in rule.verbs:
            out.append(types_pb2.PolicyRule(non_resource_urls=[url], verbs=[verb]))
    return out


def _compact(rules: list[types_pb2.PolicyRule]) -> list[types_pb2.PolicyRule]:
    """rbac.CompactRules: the verbs of rules of one group, one resource and at most one name
    merged (each rule from BreakdownRule is one of those unless it is a non-resource URL)."""
    compacted: list[types_pb2.PolicyRule] = []
    simple: dict[tuple[str, str, bool, str], types_pb2.PolicyRule] = {}
    for rule in rules:
        if rule.non_resource_urls or len(rule.api_groups) != 1 or len(rule.resources) != 1:
            compacted.append(rule)
            continue
        names = list(rule.resource_names)
        key = (rule.api_groups[0], rule.resources[0], bool(names), names[0] if names else "")
        if key in simple:
            simple[key].verbs.extend(rule.verbs)
        else:
            copy = types_pb2.PolicyRule()
            copy.CopyFrom(rule)
            simple[key] = copy
    return compacted + list(simple.values())


def _rule_string(r: types_pb2.PolicyRule) -> str:
    """PolicyRule.String() (the generated one), kubectl's sort key."""
    return (
        f"&PolicyRule{{Verbs:{_go_list(r.verbs)},APIGroups:{_go_list(r.api_groups)},"
        f"Resources:{_go_list(r.resources)},ResourceNames:{_go_list(r.resource_names)},"
        f"NonResourceURLs:{_go_list(r.non_resource_urls)},}}"
    )


def _combine_resource_group(resources: Iterable[str], groups: Iterable[str]) -> str:
    resources, groups = list(resources), list(groups)
    if not resources:
        return ""
    name, _, sub = resources[0].partition("/")
    if groups and groups[0]:
        name += "." + groups[0]
    return name + ("/" + sub if sub else "")


def describe_role(role: types_pb2.Role | types_pb2.ClusterRole) -> str:
    """RoleDescriber / ClusterRoleDescriber: the rules broken down, compacted and sorted."""
    rules = _compact([sub for rule in role.rules for sub in _breakdown(rule)])
    rules.sort(key=_rule_string)
    w = Writer()
    _header(w, role, namespace=False)
    w.line(0, "PolicyRule:")
    w.line(1, "Resources", "Non-Resource URLs", "Resource Names", "Verbs")
    w.line(1, "---------", "-----------------", "--------------", "-----")
    for r in rules:
        w.line(
            1,
            _combine_resource_group(r.resources, r.api_groups),
            _go_list(r.non_resource_urls),
            _go_list(r.resource_names),
            _go_list(r.verbs),
        )
    return w.render()


def describe_role_binding(b: types_pb2.RoleBinding | types_pb2.ClusterRoleBinding) -> str:
    w = Writer()
    _header(w, b, namespace=False)
    w.line(0, "Role:")
    w.line(1, "Kind:", b.role_ref.kind)
    w.line(1, "Name:", b.role_ref.name)
    w.line(0, "Subjects:")
    w.line(1, "Kind", "Name", "Namespace")
    w.line(1, "----", "----", "---------")
    for s in b.subjects:
        w.line(1, s.kind, s.name, s.namespace)
    return w.render()


# ------------------------------------------------ core/v1


def describe_service_account(
    sa: types_pb2.ServiceAccount, events: list[types_pb2.Event], now: float
) -> str:
    """describeServiceAccount (1.37's: image pull secrets only; kubectl up to 1.33 also
    listed mountable secrets and tokens)."""
    w = Writer()
    _header(w, sa)
    names = [s.name for s in sa.image_pull_secrets]
    w.multiline(0, "Image pull secrets", names)
    describe_events(w, events, now)
    return w.render()


def describe_secret(secret: types_pb2.Secret) -> str:
    w = Writer()
    _header(w, secret)
    w.line(0, "")
    w.line(0, "Type:", secret.type)
    w.line(0, "")
    w.line(0, "Data")
    w.line(0, "====")
    for key in sorted(secret.data):
        value = secret.data[key]
        if key == "token" and secret.type == "kubernetes.io/service-account-token":
            w.line(0, f"{key}:", value.decode(errors="replace"))
        else:
            w.line(0, f"{key}:", f"{len(value)} bytes")
    return w.render()


_SCOPE_HELP: Final = {
    "Terminating": "Matches all pods that have an active deadline. These pods have a limited "
    "lifespan on a node before being actively terminated by the system.",
    "NotTerminating": "Matches all pods that do not have an active deadline. These pods usually "
    "include long running pods whose container command is not expected to terminate.",
    "BestEffort": "Matches all pods that do not have resource requirements set. These pods "
    "have a best effort quality of service.",
    "NotBestEffort": "Matches all pods that have at least one resource requirement set. These "
    "pods have a burstable or guaranteed quality of service.",
}


def describe_resource_quota(rq: types_pb2.ResourceQuota) -> str:
    """describeQuota: the scopes with their help, then used/hard per resource."""
    w = Writer()
    w.line(0, "Name:", rq.metadata.name)
    w.line(0, "Namespace:", rq.metadata.namespace)
    if rq.spec.scopes:
        scopes = sorted(rq.spec.scopes)
        w.line(0, "Scopes:", ", ".join(scopes))
        for scope in scopes:
            if scope in _SCOPE_HELP:
                w.line(0, f" * {_SCOPE_HELP[scope]}")
    w.line(0, "Resource", "Used", "Hard")
    w.line(0, "--------", "----", "----")
    for name in sorted(rq.status.hard):
        used = rq.status.used.get(name, "0")
        w.line(0, name, _qty(used), _qty(rq.status.hard[name]))
    return w.render()


def describe_limit_range(lr: types_pb2.LimitRange) -> str:
    """describeLimitRange: one row per item and resource, `-` where the item sets nothing.
    (kubectl iterates a Go map: the resources' order is random there; here it is sorted.)"""
    w = Writer()
    w.line(0, "Name:", lr.metadata.name)
    w.line(0, "Namespace:", lr.metadata.namespace)
    columns = ("Type", "Resource", "Min", "Max", "Default Request", "Default Limit")
    w.line(0, *columns, "Max Limit/Request Ratio")
    w.line(0, *("-" * len(c) for c in columns), "-----------------------")
    for item in lr.spec.limits:
        fields = (
            item.min,
            item.max,
            item.default_request,
            item.default_limit,
            item.max_limit_request_ratio,
        )
        names = sorted({k for f in fields for k in f})
        for name in names:
            w.line(0, item.type, name, *(_qty(f[name]) if name in f else "-" for f in fields))
    return w.render()


def _pod_template(w: Writer, template: types_pb2.PodTemplateSpec) -> None:
    """DescribePodTemplate."""
    w.line(0, "Pod Template:")
    w.multiline(0, "  Labels", _pairs(template.metadata.labels))
    if template.metadata.annotations:
        w.multiline(0, "  Annotations", annotation_lines(template.metadata.annotations))
    spec = template.spec
    if spec.service_account_name:
        w.line(1, "Service Account:", spec.service_account_name)
    if spec.init_containers:
        _template_containers(w, "Init Containers", spec.init_containers)
    _template_containers(w, "Containers", spec.containers)
    volumes = list(spec.volumes)
    if not volumes:
        w.line(1, "Volumes:", NONE)
    else:
        w.line(1, "Volumes:")
        for v in volumes:
            w.line(1, f" {v.name}:")
            for key, value in _volume_lines(v):
                w.line(2, key, value)
    if spec.priority_class_name:
        w.line(1, "Priority Class Name:", spec.priority_class_name)
    w.multiline(0, "  Node-Selectors", _pairs(spec.node_selector))
    tolerations = sorted(spec.tolerations, key=lambda t: t.key)
    w.multiline(0, "  Tolerations", [toleration_text(t) for t in tolerations])


def _ports_text(ports: Iterable[types_pb2.ContainerPort], field: str) -> str:
    return ", ".join(
        f"{getattr(p, field)}/{p.protocol}" + (f" ({p.name})" if p.name else "") for p in ports
    )


def _template_containers(w: Writer, title: str, containers: Iterable[types_pb2.Container]) -> None:
    """describeContainers of a template (no statuses), with the template's indentation."""
    containers = list(containers)
    w.line(1, f"{title}:" + ("" if containers else f" {NONE}"))
    for c in containers:
        w.line(1, f" {c.name}:")
        w.line(2, "Image:", c.image)
        for field, title_one in (("container_port", "Port"), ("host_port", "Host Port")):
            text = _ports_text(c.ports, field)
            if "," in text:
                w.line(2, f"{title_one}s:", text)
            else:
                w.line(2, f"{title_one}:", text or NONE)
        for values, heading in ((c.command, "Command"), (c.args, "Args")):
            if values:
                w.line(2, f"{heading}:")
                for v in values:
                    for s in v.split("\n"):
                        w.line(3, s)
        _resource_block(w, 2, "Limits", {k: _qty(v) for k, v in c.resources.limits.items()})
        _resource_block(w, 2, "Requests", {k: _qty(v) for k, v in c.resources.requests.items()})
        for field, heading in (
            ("liveness_probe", "Liveness"),
            ("readiness_probe", "Readiness"),
            ("startup_probe", "Startup"),
        ):
            if c.HasField(field):
                w.line(2, f"{heading}:", _probe_text(getattr(c, field)))
        if c.env_from:
            w.line(2, "Environment Variables from:")
            for ef in c.env_from:
                if ef.HasField("config_map_ref"):
                    src, name = "ConfigMap", ef.config_map_ref.name
                    optional = ef.config_map_ref.optional
                else:
                    src, name, optional = "Secret", ef.secret_ref.name, ef.secret_ref.optional
                prefix = f" with prefix '{ef.prefix}'" if ef.prefix else ""
                w.line(3, name, f"{src}{prefix}", f"Optional: {str(optional).lower()}")
        if c.env:
            w.line(2, "Environment:")
            for e in c.env:
                if e.HasField("value_from"):
                    w.line(3, f"{e.name}:", _template_env_text(e))
                    continue
                for i, s in enumerate(e.value.split("\n")):
                    w.line(3, f"{e.name}:" if i == 0 else "", s)
        else:
            w.line(2, "Environment:", NONE)
        mounts = sorted(c.volume_mounts, key=lambda m: m.mount_path)
        if not mounts:
            w.line(2, "Mounts:", NONE)
        else:
            w.line(2, "Mounts:")
            for m in mounts:
                flags = ["ro" if m.read_only else "rw"]
                if m.sub_path:
                    flags.append(f'path="{m.sub_path}"')
                w.line(3, f"{m.mount_path} from {m.name} ({','.join(flags)})")


def _template_env_text(e: types_pb2.EnvVar) -> str:
    src = e.value_from
    if src.HasField("field_ref"):
        return f" ({src.field_ref.api_version}:{src.field_ref.field_path})"
    if src.HasField("resource_field_ref"):
        return f" ({src.resource_field_ref.resource})"
    if src.HasField("secret_key_ref"):
        sk = src.secret_key_ref
        return f"<set to the key '{sk.key}' in secret '{sk.name}'>  Optional: false"
    cm = src.config_map_key_ref
    return f"<set to the key '{cm.key}' of config map '{cm.name}'>  Optional: false"


def _pod_counts(pods: Iterable[types_pb2.Pod], uid: str) -> str:
    """getPodStatusForController: the pods the controller (by uid) owns, by phase."""
    counts = {"Running": 0, "Pending": 0, "Succeeded": 0, "Failed": 0}
    for p in pods:
        owner = next((r for r in p.metadata.owner_references if r.controller), None)
        if owner is None or owner.uid != uid:
            continue
        if p.status.phase in counts:
            counts[p.status.phase] += 1
    return (
        f"{counts['Running']} Running / {counts['Pending']} Waiting / "
        f"{counts['Succeeded']} Succeeded / {counts['Failed']} Failed"
    )


def describe_replication_controller(
    rc: types_pb2.ReplicationController,
    pods: list[types_pb2.Pod],
    events: list[types_pb2.Event],
    now: float,
) -> str:
    w = Writer()
    w.line(0, "Name:", rc.metadata.name)
    w.line(0, "Namespace:", rc.metadata.namespace)
    w.line(0, "Selector:", ",".join(_pairs(rc.spec.selector)))  # (FormatLabels: never empty)
    w.multiline(0, "Labels", _pairs(rc.metadata.labels))
    w.multiline(0, "Annotations", annotation_lines(rc.metadata.annotations))
    w.line(0, "Replicas:", f"{rc.status.replicas} current / {rc.spec.replicas} desired")
    w.line(0, "Pods Status:", _pod_counts(pods, rc.metadata.uid))
    _pod_template(w, rc.spec.template)
    _workload_conditions(w, rc.status.conditions)
    describe_events(w, events, now)
    return w.render()


class WorkloadCondition(Protocol):
    """What the Conditions table reads of a workload's condition."""

    @property
    def type(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def reason(self) -> str: ...


def _workload_conditions(w: Writer, conditions: Sequence[WorkloadCondition]) -> None:
    """A Deployment's, ReplicaSet's or ReplicationController's Conditions table (kubectl's
    Type/Status/Reason), none when there is no condition."""
    if not conditions:
        return
    w.line(0, "Conditions:")
    w.line(1, "Type", "Status", "Reason")
    w.line(1, "----", "------", "------")
    for c in conditions:
        w.line(1, f"{c.type} ", c.status, c.reason)


def describe_endpoints(ep: types_pb2.Endpoints, events: list[types_pb2.Event], now: float) -> str:
    w = Writer()
    _header(w, ep)
    w.line(0, "Subsets:")
    for s in ep.subsets:
        w.line(1, "Addresses:", ",".join(a.ip for a in s.addresses) or NONE)
        w.line(1, "NotReadyAddresses:", ",".join(a.ip for a in s.not_ready_addresses) or NONE)
        if s.ports:
            w.line(1, "Ports:")
            w.line(2, "Name", "Port", "Protocol")
            w.line(2, "----", "----", "--------")
            for p in s.ports:
                w.line(2, p.name or "<unset>", str(p.port), p.protocol)
        w.line(0, "")
    describe_events(w, events, now)
    return w.render()


# ------------------------------------------------ discovery, networking


def describe_endpoint_slice(
    eps: types_pb2.EndpointSlice, events: list[types_pb2.Event], now: float
) -> str:
    w = Writer()
    _header(w, eps)
    w.line(0, "AddressType:", eps.address_type)
    if not eps.ports:
        w.line(0, "Ports: <unset>")
    else:
        w.line(0, "Ports:")
        w.line(1, "Name", "Port", "Protocol")
        w.line(1, "----", "----", "--------")
        for p in eps.ports:
            w.line(
                1,
                p.name or "<unset>",
                str(p.port) if p.HasField("port") else "<unset>",
                p.protocol,
            )
    if not eps.endpoints:
        w.line(0, "Endpoints: <none>")
    else:
        w.line(0, "Endpoints:")
        for e in eps.endpoints:
            w.line(1, "- Addresses:", ", ".join(e.addresses) or NONE)
            w.line(2, "Conditions:")
            ready = e.conditions.HasField("ready")
            w.line(3, "Ready:", str(e.conditions.ready).lower() if ready else "<unset>")
            w.line(2, "Hostname:", e.hostname if e.HasField("hostname") else "<unset>")
            if e.HasField("target_ref"):
                w.line(2, "TargetRef:", f"{e.target_ref.kind}/{e.target_ref.name}")
            w.line(2, "NodeName:", e.node_name if e.HasField("node_name") else "<unset>")
            w.line(2, "Zone:", e.zone if e.HasField("zone") else "<unset>")
    describe_events(w, events, now)
    return w.render()


def format_endpoint_slices(
    slices: Iterable[types_pb2.EndpointSlice], ports: set[str] | None
) -> str:
    """formatEndpointSlices: the first three ready endpoints (host:port), then `+ N more...`;
    `ports` None: every port."""
    slices = list(slices)
    if not slices:
        return NONE
    shown: list[str] = []
    count = 0
    for s in slices:
        if not s.ports:
            for e in s.endpoints:
                if e.conditions.HasField("ready") and not e.conditions.ready:
                    continue
                if len(shown) < 3:
                    shown.append(e.addresses[0])
                count += 1
            continue
        for p in s.ports:
            if ports is not None and p.name not in ports:
                continue
            for e in s.endpoints:
                if e.conditions.HasField("ready") and not e.conditions.ready:
                    continue
                if len(shown) < 3:
                    addr = e.addresses[0]
                    host = f"[{addr}]" if ":" in addr else addr
                    shown.append(f"{host}:{p.port}")
                count += 1
    text = ",".join(shown)
    return f"{text} + {count - 3} more..." if count > 3 else text


def _service_backend(b: types_pb2.IngressServiceBackend) -> str:
    port = str(b.port.number) if b.port.number else b.port.name
    return f"{b.name}:{port}"


def _ingress_backend(
    ns: str,
    backend: types_pb2.IngressBackend,
    services: Mapping[str, types_pb2.Service],
    slices: Iterable[types_pb2.EndpointSlice],
) -> str:
    """describeBackendV1: a service backend with its endpoints (or the error getting the
    service), a resource backend by its group, kind and name."""
    if backend.HasField("service"):
        sb = _service_backend(backend.service)
        svc = services.get(backend.service.name)
        if svc is None:
            return f'{sb} (<error: services "{backend.service.name}" not found>)'
        name = ""
        for sp in svc.spec.ports:
            if backend.service.port.number and backend.service.port.number == sp.port:
                name = sp.name
            elif backend.service.port.name and backend.service.port.name == sp.name:
                name = sp.name
        mine = [
            s
            for s in slices
            if s.metadata.labels.get("kubernetes.io/service-name") == backend.service.name
        ]
        return f"{sb} ({format_endpoint_slices(mine, {name})})"
    if backend.HasField("resource"):
        r = backend.resource
        group = r.api_group if r.HasField("api_group") else NONE
        return f"APIGroup: {group}, Kind: {r.kind}, Name: {r.name}"
    return ""


def describe_ingress(
    ing: types_pb2.Ingress,
    services: Mapping[str, types_pb2.Service],
    slices: list[types_pb2.EndpointSlice],
    events: list[types_pb2.Event],
    now: float,
) -> str:
    w = Writer()
    ns = ing.metadata.namespace
    w.line(0, "Name:", ing.metadata.name)
    w.multiline(0, "Labels", _pairs(ing.metadata.labels))
    w.line(0, "Namespace:", ns)
    addresses = sorted({i.ip or i.hostname for i in ing.status.load_balancer.ingress} - {""})
    w.line(0, "Address:", ",".join(addresses))
    spec = ing.spec
    w.line(0, "Ingress Class:", spec.ingress_class_name or NONE)
    default = "<default>"
    if spec.HasField("default_backend"):
        default = _ingress_backend(ns, spec.default_backend, services, slices)
    w.line(0, "Default backend:", default)
    if spec.tls:
        w.line(0, "TLS:")
        for t in spec.tls:
            hosts = ",".join(t.hosts)
            if t.secret_name:
                w.line(1, f"{t.secret_name} terminates {hosts}")
            else:
                w.line(1, f"SNI routes {hosts}")
    w.line(0, "Rules:")
    w.line(1, "Host", "Path", "Backends")
    w.line(1, "----", "----", "--------")
    count = 0
    for rule in spec.rules:
        if not rule.HasField("http"):
            continue
        count += 1
        w.line(1, rule.host or "*", "")
        for path in rule.http.paths:
            w.line(2, "", f"{path.path} ", _ingress_backend(ns, path.backend, services, slices))
    if not count:
        w.line(1, "*", "*", default)
    w.multiline(0, "Annotations", annotation_lines(ing.metadata.annotations))
    describe_events(w, events, now)
    return w.render()


def describe_ingress_class(
    ic: types_pb2.IngressClass, events: list[types_pb2.Event], now: float
) -> str:
    w = Writer()
    _header(w, ic, namespace=False)
    w.line(0, "Controller:", ic.spec.controller)
    if ic.spec.HasField("parameters"):
        p = ic.spec.parameters
        w.line(0, "Parameters:")
        if p.HasField("api_group"):
            w.line(1, "APIGroup:", p.api_group)
        w.line(1, "Kind:", p.kind)
        w.line(1, "Name:", p.name)
    describe_events(w, events, now)
    return w.render()


def _np_port(port: types_pb2.NetworkPolicyPort) -> str:
    proto = port.protocol if port.HasField("protocol") else "TCP"
    value = _int_or_str(port.port) if port.HasField("port") else "<nil>"
    if port.HasField("end_port"):
        return f"To Port Range: {value}-{port.end_port}/{proto}"
    return f"To Port: {value}/{proto}"


def _np_peers(
    w: Writer, rules: list[tuple[list[types_pb2.NetworkPolicyPort], list[Message]]], way: str
) -> None:
    """printNetworkPolicySpecIngressFrom / EgressTo (`way`: From or To)."""
    indent = "    "
    if not rules:
        what = "ingress" if way == "From" else "egress"
        w.line(0, f"{indent}<none> (Selected pods are isolated for {what} connectivity)")
        return
    for i, (ports, peers) in enumerate(rules):
        if not ports:
            w.line(0, f"{indent}To Port: <any> (traffic allowed to all ports)")
        for port in ports:
            w.line(0, indent + _np_port(port))
        if not peers:
            what = "source" if way == "From" else "destination"
            w.line(0, f"{indent}{way}: <any> (traffic not restricted by {what})")
        for peer in peers:
            assert isinstance(peer, types_pb2.NetworkPolicyPeer)
            w.line(0, f"{indent}{way}:")
            pod, ns = peer.HasField("pod_selector"), peer.HasField("namespace_selector")
            if ns:
                w.line(1, f"{indent}NamespaceSelector: {_selector(peer.namespace_selector)}")
            if pod:
                w.line(1, f"{indent}PodSelector: {_selector(peer.pod_selector)}")
            if not pod and not ns and peer.HasField("ip_block"):
                w.line(1, f"{indent}IPBlock:")
                w.line(2, f"{indent}CIDR: {peer.ip_block.cidr}")
                w.line(2, f"{indent}Except: {', '.join(getattr(peer.ip_block, 'except'))}")
        if i != len(rules) - 1:
            w.line(0, f"{indent}----------")


def describe_network_policy(np: types_pb2.NetworkPolicy) -> str:
    w = Writer()
    w.line(0, "Name:", np.metadata.name)
    w.line(0, "Namespace:", np.metadata.namespace)
    w.line(0, "Created on:", _go_time(np.metadata.creation_timestamp))
    w.multiline(0, "Labels", _pairs(np.metadata.labels))
    w.multiline(0, "Annotations", annotation_lines(np.metadata.annotations))
    spec = np.spec
    w.line(0, "Spec:")
    sel = spec.pod_selector
    if not sel.match_labels and not sel.match_expressions:
        pods = "<none> (Allowing the specific traffic to all pods in this namespace)"
    else:
        pods = _selector(sel)
    w.line(1, "PodSelector: " + _INDENT * 2 + pods)
    types = list(spec.policy_types)
    if "Ingress" in types:
        w.line(1, "Allowing ingress traffic:")
        _np_peers(w, [(list(r.ports), list(getattr(r, "from"))) for r in spec.ingress], "From")
    else:
        w.line(1, "Not affecting ingress traffic")
    if "Egress" in types:
        w.line(1, "Allowing egress traffic:")
        _np_peers(w, [(list(r.ports), list(r.to)) for r in spec.egress], "To")
    else:
        w.line(1, "Not affecting egress traffic")
    w.line(1, f"Policy Types: {', '.join(types) or NONE}")
    return w.render()


# ------------------------------------------------ autoscaling, certificates, the rest


def _hpa_metric(
    w: Writer, i: int, m: types_pb2.MetricSpec, hpa: types_pb2.HorizontalPodAutoscaler
) -> None:
    cur = hpa.status.current_metrics
    st = cur[i] if len(cur) > i else None
    unknown = "<unknown>"
    if m.type == "Resource" or m.type == "ContainerResource":
        src = m.resource if m.type == "Resource" else m.container_resource
        status = None
        if st is not None:
            sfield = "resource" if m.type == "Resource" else "container_resource"
            status = getattr(st, sfield) if st.HasField(sfield) else None
        head = f"resource {src.name} on pods"
        if m.type == "ContainerResource":
            head = f'resource {src.name} of container "{m.container_resource.container}" on pods'
        t = src.target
        if t.HasField("average_value"):
            value = unknown
            if status is not None:
                value = _qty(status.current.average_value or "0")
            w.line(1, f"{head}:", f"{value} / {_qty(t.average_value)}")
            return
        value = unknown
        if status is not None and status.current.HasField("average_utilization"):
            avg = _qty(status.current.average_value or "0")
            value = f"{status.current.average_utilization}% ({avg})"
        target = f"{t.average_utilization}%" if t.HasField("average_utilization") else "<auto>"
        w.line(1, f"{head}  (as a percentage of request):", f"{value} / {target}")
        return
    if m.type == "Pods":
        value = unknown
        if st is not None and st.HasField("pods"):
            value = _qty(st.pods.current.average_value or "0")
        target = _qty(m.pods.target.average_value or "0")
        w.line(1, f'"{m.pods.metric.name}" on pods:', f"{value} / {target}")
        return
    if m.type == "Object":
        o = m.object
        head = f'"{o.metric.name}" on {o.described_object.kind}/{o.described_object.name} '
        if o.target.type == "AverageValue":
            value = unknown
            if st is not None and st.HasField("object"):
                value = _qty(st.object.current.average_value or "0")
            text = f"{value} / {_qty(o.target.average_value or '0')}"
            w.line(1, f"{head}(target average value):", text)
        else:
            value = unknown
            if st is not None and st.HasField("object"):
                value = _qty(st.object.current.value or "0")
            w.line(1, f"{head}(target value):", f"{value} / {_qty(o.target.value or '0')}")
        return
    if m.type == "External":
        e = m.external
        value = unknown
        if e.target.HasField("average_value"):
            if (
                st is not None
                and st.HasField("external")
                and st.external.current.HasField("average_value")
            ):
                value = _qty(st.external.current.average_value)
            text = f"{value} / {_qty(e.target.average_value)}"
            w.line(1, f'"{e.metric.name}" (target average value):', text)
        else:
            if st is not None and st.HasField("external"):
                value = _qty(st.external.current.value or "0")
            text = f"{value} / {_qty(e.target.value or '0')}"
            w.line(1, f'"{e.metric.name}" (target value):', text)
        return
    w.line(1, f'<unknown metric type "{m.type}">')


def describe_hpa(
    hpa: types_pb2.HorizontalPodAutoscaler, events: list[types_pb2.Event], now: float
) -> str:
    """describeHorizontalPodAutoscalerV2."""
    w = Writer()
    _header(w, hpa)
    w.line(0, "CreationTimestamp:", rfc1123(hpa.metadata.creation_timestamp))
    ref = hpa.spec.scale_target_ref
    w.line(0, "Reference:", f"{ref.kind}/{ref.name}")
    w.line(0, "Metrics:", "( current / target )")
    for i, m in enumerate(hpa.spec.metrics):
        _hpa_metric(w, i, m, hpa)
    spec = hpa.spec
    w.line(
        0, "Min replicas:", str(spec.min_replicas) if spec.HasField("min_replicas") else "<unset>"
    )
    w.line(0, "Max replicas:", str(spec.max_replicas))
    if spec.HasField("behavior"):
        w.line(0, "Behavior:")
        for field, title in (("scale_up", "Scale Up"), ("scale_down", "Scale Down")):
            if not spec.behavior.HasField(field):
                continue
            rules: types_pb2.HPAScalingRules = getattr(spec.behavior, field)
            w.line(1, f"{title}:")
            if rules.HasField("stabilization_window_seconds"):
                w.line(2, f"Stabilization Window: {rules.stabilization_window_seconds} seconds")
            if rules.policies:
                w.line(2, f"Select Policy: {rules.select_policy or 'Max'}")
                w.line(2, "Policies:")
                for p in rules.policies:
                    w.line(
                        3,
                        f"- Type: {p.type}",
                        f"Value: {p.value}",
                        f"Period: {p.period_seconds} seconds",
                    )
    w.line(
        0,
        f"{ref.kind} pods:",
        f"{hpa.status.current_replicas} current / {hpa.status.desired_replicas} desired",
    )
    if hpa.status.conditions:
        w.line(0, "Conditions:")
        w.line(1, "Type", "Status", "Reason", "Message")
        w.line(1, "----", "------", "------", "-------")
        for c in hpa.status.conditions:
            w.line(1, c.type, c.status, c.reason, c.message)
    describe_events(w, events, now)
    return w.render()


def _csr_status(csr: types_pb2.CertificateSigningRequest) -> str:
    """extractCSRStatus."""
    types = {c.type for c in csr.status.conditions}
    status = "Denied" if "Denied" in types else "Approved" if "Approved" in types else "Pending"
    if "Failed" in types:
        status += ",Failed"
    if csr.status.certificate:
        status += ",Issued"
    return status


def _human_duration(seconds: int) -> str:
    """duration.HumanDuration (for the requested duration of a CSR)."""
    if seconds < 0:
        return "<invalid>"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m{s}s" if s else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        m = (seconds % 3600) // 60
        return f"{hours}h{m}m" if m else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d{h}h" if h else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        d = (hours // 24) % 365
        return f"{hours // 24 // 365}y{d}d" if d else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def describe_csr(
    csr: types_pb2.CertificateSigningRequest, events: list[types_pb2.Event], now: float
) -> str:
    """CertificateSigningRequestDescriber: the request's subject and alternative names read
    from its PEM (kemu.machinery.csr_request)."""
    cr = csr_request.parse(bytes(csr.spec.request))
    w = Writer()
    m = csr.metadata
    w.line(0, "Name:", m.name)
    _raw_line(w, "Labels:", _format_labels(m.labels))
    _raw_line(w, "Annotations:", _format_labels(m.annotations))
    w.line(0, "CreationTimestamp:", rfc1123(m.creation_timestamp))
    w.line(0, "Requesting User:", csr.spec.username)
    if csr.spec.signer_name:
        w.line(0, "Signer:", csr.spec.signer_name)
    if csr.spec.HasField("expiration_seconds"):
        w.line(0, "Requested Duration:", _human_duration(csr.spec.expiration_seconds))
    w.line(0, "Status:", _csr_status(csr))

    def listed(name: str, values: list[str]) -> None:
        if values:
            w.line(0, "", f"{name}:", values[0])
            for v in values[1:]:
                w.line(0, "", "", v)

    subject = cr.subject
    w.line(0, "Subject:")
    w.line(0, "", "Common Name:", (subject.get("CN") or [""])[0])
    w.line(0, "", "Serial Number:", (subject.get("SERIALNUMBER") or [""])[0])
    for key, name in (
        ("O", "Organization"),
        ("OU", "Organizational Unit"),
        ("C", "Country"),
        ("L", "Locality"),
        ("ST", "Province"),
        ("STREET", "StreetAddress"),
        ("POSTALCODE", "PostalCode"),
    ):
        listed(name, subject.get(key, []))
    if cr.dns_names or cr.emails or cr.ips or cr.uris:
        w.line(0, "Subject Alternative Names:")
        listed("DNS Names", cr.dns_names)
        listed("Email Addresses", cr.emails)
        listed("URIs", cr.uris)
        listed("IP Addresses", cr.ips)
    describe_events(w, events, now)
    return w.render()


def describe_priority_class(
    pc: types_pb2.PriorityClass, events: list[types_pb2.Event], now: float
) -> str:
    w = Writer()
    w.line(0, "Name:", pc.metadata.name)
    w.line(0, "Value:", str(pc.value))
    w.line(0, "GlobalDefault:", str(pc.global_default).lower())
    w.line(0, "PreemptionPolicy:", pc.preemption_policy)
    w.line(0, "Description:", pc.description)
    _raw_line(w, "Annotations:", _format_labels(pc.metadata.annotations))
    describe_events(w, events, now)
    return w.render()


def describe_pdb(
    pdb: types_pb2.PodDisruptionBudget, events: list[types_pb2.Event], now: float
) -> str:
    w = Writer()
    w.line(0, "Name:", pdb.metadata.name)
    w.line(0, "Namespace:", pdb.metadata.namespace)
    if pdb.spec.HasField("min_available"):
        w.line(0, "Min available:", _int_or_str(pdb.spec.min_available))
    elif pdb.spec.HasField("max_unavailable"):
        w.line(0, "Max unavailable:", _int_or_str(pdb.spec.max_unavailable))
    selector = pdb.spec.selector if pdb.spec.HasField("selector") else None
    w.line(0, "Selector:", _selector(selector) if selector is not None else "<unset>")
    w.line(0, "Status:")
    st = pdb.status
    w.line(2, "Allowed disruptions:", str(st.disruptions_allowed))
    w.line(2, "Current:", str(st.current_healthy))
    w.line(2, "Desired:", str(st.desired_healthy))
    w.line(2, "Total:", str(st.expected_pods))
    describe_events(w, events, now)
    return w.render()


def describe_storage_class(
    sc: types_pb2.StorageClass, events: list[types_pb2.Event], now: float
) -> str:
    w = Writer()
    m = sc.metadata
    w.line(0, "Name:", m.name)
    default = any(
        m.annotations.get(k) == "true"
        for k in (
            "storageclass.kubernetes.io/is-default-class",
            "storageclass.beta.kubernetes.io/is-default-class",
        )
    )
    w.line(0, "IsDefaultClass:", "Yes" if default else "No")
    _raw_line(w, "Annotations:", _format_labels(m.annotations))
    w.line(0, "Provisioner:", sc.provisioner)
    _raw_line(w, "Parameters:", _format_labels(sc.parameters))
    expand = sc.HasField("allow_volume_expansion")
    w.line(
        0,
        "AllowVolumeExpansion:",
        str(sc.allow_volume_expansion) if expand else "<unset>",
    )
    if not sc.mount_options:
        w.line(0, "MountOptions:", NONE)
    else:
        w.line(0, "MountOptions:")
        for option in sc.mount_options:
            w.line(1, option)
    if sc.HasField("reclaim_policy"):
        w.line(0, "ReclaimPolicy:", sc.reclaim_policy)
    if sc.HasField("volume_binding_mode"):
        w.line(0, "VolumeBindingMode:", sc.volume_binding_mode)
    describe_events(w, events, now)
    return w.render()


# ------------------------------------------------ kubectl's genericDescriber


def smart_label(field: str) -> str:
    """smartLabelFor: camelCase words capitalized, API/URL/UID/GUID in capitals, a run of
    capitals kept with the next word; a field with other characters than letters and `-` as
    it is."""
    if any(not (ch.isalpha() or ch == "-") for ch in field):
        return field
    parts = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[^A-Za-z]+", field)
    merged: list[str] = []
    i = 0
    while i < len(parts):
        part = parts[i]
        nxt = parts[i + 1] if i + 1 < len(parts) else ""
        if len(part) >= 2 and part.isupper() and nxt[:1].isupper():
            merged.append(part + nxt)
            i += 2
            continue
        merged.append(part)
        i += 1
    out = []
    for part in merged:
        if part.upper() in ("API", "URL", "UID", "GUID"):
            part = part.upper()
        elif part.lower() == part:
            part = part[:1].upper() + part[1:]
        out.append(part)
    return " ".join(out)


def _go_value(value: object) -> str:
    """A JSON scalar as Go's %v prints the decoded value."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


_GENERIC_SKIP: Final = frozenset(
    {
        ".metadata.managedFields",
        ".metadata.name",
        ".metadata.namespace",
        ".metadata.labels",
        ".metadata.annotations",
    }
)


def _unstructured(w: Writer, level: int, content: JSONObject, prefix: str) -> None:
    """printUnstructuredContent: fields sorted, maps and lists as blocks."""
    for field in sorted(content):
        value = content[field]
        path = f"{prefix}.{field}"
        if path in _GENERIC_SKIP:
            continue
        if isinstance(value, dict):
            w.line(level, f"{smart_label(field)}:")
            _unstructured(w, level + 1, value, path)
        elif isinstance(value, list):
            w.line(level, f"{smart_label(field)}:")
            for child in value:
                if isinstance(child, dict):
                    _unstructured(w, level + 1, child, path)
                else:
                    w.line(level + 1, _go_value(child))
        else:
            w.line(level, f"{smart_label(field)}:", _go_value(value))


def describe_unstructured(
    obj: Message, events: list[types_pb2.Event], now: float, api_version: str = ""
) -> str:
    """genericDescriber: name, namespace, labels, annotations, the object's JSON
    (`api_version`: the group version it is served as), then its events."""
    data = podgroups.to_versioned(obj, api_version or kinds.kind_of(obj).api_version, wire=True)
    m = object_meta(obj)
    w = Writer()
    w.line(0, "Name:", m.name)
    w.line(0, "Namespace:", m.namespace)
    w.multiline(0, "Labels", _pairs(m.labels))
    w.multiline(0, "Annotations", annotation_lines(m.annotations))
    _unstructured(w, 0, data, "")
    describe_events(w, events, now)
    return w.render()


# ------------------------------------------------ workloads, namespaces (issue #57 gcquota)


def _selector_string(selector: types_pb2.LabelSelector) -> str:
    """metav1.LabelSelectorAsSelector(...).String(): "" for an empty selector."""
    text = kinds_printers.format_label_selector(selector)
    return "" if text == NONE else text


def _template_without_hash(template: types_pb2.PodTemplateSpec) -> bytes:
    t = types_pb2.PodTemplateSpec()
    t.CopyFrom(template)
    t.metadata.labels.pop("pod-template-hash", None)
    return t.SerializeToString(deterministic=True)


def _replica_sets_text(sets: list[types_pb2.ReplicaSet]) -> str:
    """printReplicaSetsByLabels."""
    text = ", ".join(
        f"{rs.metadata.name} ({rs.status.replicas}/{rs.spec.replicas} replicas created)"
        for rs in sets
    )
    return text or NONE


def describe_deployment(
    d: types_pb2.Deployment,
    replica_sets: list[types_pb2.ReplicaSet],
    events: list[types_pb2.Event],
    now: float,
) -> str:
    """describeDeployment; the new ReplicaSet is the owned one whose template is the
    deployment's (pod-template-hash aside), the others are old (deploymentutil)."""
    owned = sorted(
        (
            rs
            for rs in replica_sets
            if any(r.controller and r.uid == d.metadata.uid for r in rs.metadata.owner_references)
        ),
        key=lambda rs: rs.metadata.creation_timestamp.seconds,
    )
    mine = _template_without_hash(d.spec.template)
    new = next((rs for rs in owned if _template_without_hash(rs.spec.template) == mine), None)
    old = [rs for rs in owned if rs is not new]
    w = Writer()
    w.line(0, "Name:", d.metadata.name)
    w.line(0, "Namespace:", d.metadata.namespace)
    w.line(0, "CreationTimestamp:", rfc1123(d.metadata.creation_timestamp))
    w.multiline(0, "Labels", _pairs(d.metadata.labels))
    w.multiline(0, "Annotations", annotation_lines(d.metadata.annotations))
    w.line(0, "Selector:", _selector_string(d.spec.selector))
    st = d.status
    w.line(
        0,
        "Replicas:",
        f"{d.spec.replicas} desired | {st.updated_replicas} updated | {st.replicas} total | "
        f"{st.available_replicas} available | {st.unavailable_replicas} unavailable",
    )
    w.line(0, "StrategyType:", d.spec.strategy.type)
    w.line(0, "MinReadySeconds:", str(d.spec.min_ready_seconds))
    if d.spec.strategy.HasField("rolling_update"):
        ru = d.spec.strategy.rolling_update
        w.line(
            0,
            "RollingUpdateStrategy:",
            f"{_int_or_str(ru.max_unavailable)} max unavailable, "
            f"{_int_or_str(ru.max_surge)} max surge",
        )
    _pod_template(w, d.spec.template)
    _workload_conditions(w, st.conditions)
    if owned:
        w.line(0, "OldReplicaSets:", _replica_sets_text(old))
        w.line(0, "NewReplicaSet:", _replica_sets_text([new] if new is not None else []))
    describe_events(w, events, now)
    return w.render()


def _controller_of(meta: types_pb2.ObjectMeta) -> str:
    ref = next((r for r in meta.owner_references if r.controller), None)
    return f"{ref.kind}/{ref.name}" if ref is not None else ""


def describe_replica_set(
    rs: types_pb2.ReplicaSet,
    pods: list[types_pb2.Pod],
    events: list[types_pb2.Event],
    now: float,
) -> str:
    w = Writer()
    w.line(0, "Name:", rs.metadata.name)
    w.line(0, "Namespace:", rs.metadata.namespace)
    w.line(0, "Selector:", _selector(rs.spec.selector))
    w.multiline(0, "Labels", _pairs(rs.metadata.labels))
    w.multiline(0, "Annotations", annotation_lines(rs.metadata.annotations))
    if controlled := _controller_of(rs.metadata):
        w.line(0, "Controlled By:", controlled)
    w.line(0, "Replicas:", f"{rs.status.replicas} current / {rs.spec.replicas} desired")
    w.line(0, "Pods Status:", _pod_counts(pods, rs.metadata.uid))
    _pod_template(w, rs.spec.template)
    _workload_conditions(w, rs.status.conditions)
    describe_events(w, events, now)
    return w.render()


def describe_job(job: types_pb2.Job, events: list[types_pb2.Event], now: float) -> str:
    w = Writer()
    spec, st = job.spec, job.status
    w.line(0, "Name:", job.metadata.name)
    w.line(0, "Namespace:", job.metadata.namespace)
    w.line(0, "Selector:", _selector_string(spec.selector))
    w.multiline(0, "Labels", _pairs(job.metadata.labels))
    w.multiline(0, "Annotations", annotation_lines(job.metadata.annotations))
    if controlled := _controller_of(job.metadata):
        w.line(0, "Controlled By:", controlled)
    if spec.HasField("parallelism"):
        w.line(0, "Parallelism:", str(spec.parallelism))
    w.line(0, "Completions:", str(spec.completions) if spec.HasField("completions") else "<unset>")
    if spec.HasField("completion_mode"):
        w.line(0, "Completion Mode:", spec.completion_mode)
    if spec.HasField("suspend"):
        w.line(0, "Suspend:", str(spec.suspend).lower())
    if spec.HasField("backoff_limit"):
        w.line(0, "Backoff Limit:", str(spec.backoff_limit))
    if spec.HasField("ttl_seconds_after_finished"):
        w.line(0, "TTL Seconds After Finished:", str(spec.ttl_seconds_after_finished))
    if st.HasField("start_time"):
        w.line(0, "Start Time:", rfc1123(st.start_time))
    if st.HasField("completion_time"):
        w.line(0, "Completed At:", rfc1123(st.completion_time))
    if st.HasField("start_time") and st.HasField("completion_time"):
        took = st.completion_time.seconds - st.start_time.seconds
        w.line(0, "Duration:", _human_duration(took))
    if spec.HasField("active_deadline_seconds"):
        w.line(0, "Active Deadline Seconds:", f"{spec.active_deadline_seconds}s")
    if st.HasField("ready"):
        counts = f"{st.active} Active ({st.ready} Ready) / {st.succeeded} Succeeded / "
    else:
        counts = f"{st.active} Active / {st.succeeded} Succeeded / "
    w.line(0, "Pods Statuses:", counts + f"{st.failed} Failed")
    _pod_template(w, spec.template)
    describe_events(w, events, now)
    return w.render()


def _optional(message: Message, field: str, suffix: str = "") -> str:
    return f"{getattr(message, field)}{suffix}" if message.HasField(field) else "<unset>"


def describe_cron_job(cj: types_pb2.CronJob, events: list[types_pb2.Event], now: float) -> str:
    w = Writer()
    spec = cj.spec
    w.line(0, "Name:", cj.metadata.name)
    w.line(0, "Namespace:", cj.metadata.namespace)
    w.multiline(0, "Labels", _pairs(cj.metadata.labels))
    w.multiline(0, "Annotations", annotation_lines(cj.metadata.annotations))
    w.line(0, "Schedule:", spec.schedule)
    w.line(0, "Concurrency Policy:", spec.concurrency_policy)
    w.line(0, "Suspend:", str(spec.suspend) if spec.HasField("suspend") else "<unset>")
    w.line(0, "Time Zone:", _optional(spec, "time_zone"))
    w.line(0, "Successful Job History Limit:", _optional(spec, "successful_jobs_history_limit"))
    w.line(0, "Failed Job History Limit:", _optional(spec, "failed_jobs_history_limit"))
    w.line(0, "Starting Deadline Seconds:", _optional(spec, "starting_deadline_seconds", "s"))
    js = spec.job_template.spec
    sel = _selector_string(js.selector) if js.HasField("selector") else "<unset>"
    w.line(0, "Selector:", sel)
    w.line(0, "Parallelism:", _optional(js, "parallelism"))
    w.line(0, "Completions:", _optional(js, "completions"))
    if js.HasField("active_deadline_seconds"):
        w.line(0, "Active Deadline Seconds:", f"{js.active_deadline_seconds}s")
    _pod_template(w, js.template)
    last = cj.status.last_schedule_time
    w.line(
        0,
        "Last Schedule Time:",
        rfc1123(last) if cj.status.HasField("last_schedule_time") else "<unset>",
    )
    w.line(0, "Active Jobs:", ", ".join(j.name for j in cj.status.active) or NONE)
    describe_events(w, events, now)
    return w.render()


def describe_daemon_set(
    ds: types_pb2.DaemonSet,
    pods: list[types_pb2.Pod],
    events: list[types_pb2.Event],
    now: float,
) -> str:
    w = Writer()
    st = ds.status
    w.line(0, "Name:", ds.metadata.name)
    w.line(0, "Namespace:", ds.metadata.namespace)
    w.line(0, "Selector:", _selector_string(ds.spec.selector))
    w.line(0, "Node-Selector:", ",".join(_pairs(ds.spec.template.spec.node_selector)) or NONE)
    w.multiline(0, "Labels", _pairs(ds.metadata.labels))
    w.multiline(0, "Annotations", annotation_lines(ds.metadata.annotations))
    w.line(0, f"Desired Number of Nodes Scheduled: {st.desired_number_scheduled}")
    w.line(0, f"Current Number of Nodes Scheduled: {st.current_number_scheduled}")
    w.line(0, f"Number of Nodes Scheduled with Up-to-date Pods: {st.updated_number_scheduled}")
    w.line(0, f"Number of Nodes Scheduled with Available Pods: {st.number_available}")
    w.line(0, f"Number of Nodes Misscheduled: {st.number_misscheduled}")
    w.line(0, "Pods Status:", _pod_counts(pods, ds.metadata.uid))
    _pod_template(w, ds.spec.template)
    describe_events(w, events, now)
    return w.render()


def describe_stateful_set(
    ss: types_pb2.StatefulSet,
    pods: list[types_pb2.Pod],
    events: list[types_pb2.Event],
    now: float,
) -> str:
    w = Writer()
    w.line(0, "Name:", ss.metadata.name)
    w.line(0, "Namespace:", ss.metadata.namespace)
    w.line(0, "CreationTimestamp:", rfc1123(ss.metadata.creation_timestamp))
    w.line(0, "Selector:", _selector_string(ss.spec.selector))
    w.multiline(0, "Labels", _pairs(ss.metadata.labels))
    w.multiline(0, "Annotations", annotation_lines(ss.metadata.annotations))
    w.line(0, "Replicas:", f"{ss.spec.replicas} desired | {ss.status.replicas} total")
    w.line(0, "Update Strategy:", ss.spec.update_strategy.type)
    if ss.spec.update_strategy.HasField("rolling_update"):
        ru = ss.spec.update_strategy.rolling_update
        if ru.HasField("partition"):
            w.line(1, "Partition:", str(ru.partition))
            if ru.HasField("max_unavailable"):
                w.line(1, "MaxUnavailable:", _int_or_str(ru.max_unavailable))
    w.line(0, "Pods Status:", _pod_counts(pods, ss.metadata.uid))
    _pod_template(w, ss.spec.template)
    templates = list(ss.spec.volume_claim_templates)
    if not templates:
        w.line(0, "Volume Claims:", NONE)
    else:
        w.line(0, "Volume Claims:")
        for pvc in templates:
            w.line(1, "Name:", pvc.metadata.name)
            w.line(1, "StorageClass:", _pvc_class(pvc))
            w.multiline(0, "  Labels", _pairs(pvc.metadata.labels))
            w.multiline(0, "  Annotations", _pairs(pvc.metadata.annotations))
            storage_ = pvc.spec.resources.requests.get("storage")
            w.line(1, "Capacity:", _qty(storage_) if storage_ else "<default>")
            w.line(1, "Access Modes:", _go_list(pvc.spec.access_modes))
    describe_events(w, events, now)
    return w.render()


def describe_namespace(
    ns: types_pb2.Namespace,
    quotas: list[types_pb2.ResourceQuota],
    ranges: list[types_pb2.LimitRange],
) -> str:
    """describeNamespace: status, conditions, the namespace's quotas and limit ranges."""
    w = Writer()
    w.line(0, "Name:", ns.metadata.name)
    w.multiline(0, "Labels", _pairs(ns.metadata.labels))
    w.multiline(0, "Annotations", annotation_lines(ns.metadata.annotations))
    w.line(0, "Status:", ns.status.phase)
    if ns.status.conditions:
        w.line(0, "Conditions:")
        w.line(1, "Type", "Status", "LastTransitionTime", "Reason", "Message")
        w.line(1, "----", "------", "------------------", "------", "-------")
        for c in ns.status.conditions:
            when = rfc1123(c.last_transition_time)
            w.line(1, c.type, c.status, when, c.reason, c.message)
    w.line(0, "")
    if not quotas:
        w.line(0, "No resource quota.")
    else:
        w.line(0, "Resource Quotas")
        for q in sorted(quotas, key=lambda q: q.metadata.name):
            w.line(1, "Name:", q.metadata.name)
            if q.spec.scopes:
                scopes = sorted(q.spec.scopes)
                w.line(1, "Scopes:", ", ".join(scopes))
                for scope in scopes:
                    if scope in _SCOPE_HELP:
                        w.line(1, f"* {_SCOPE_HELP[scope]}")
            w.line(1, "Resource", "Used", "Hard")
            w.line(1, "--------", "---", "---")
            for name in sorted(q.status.hard):
                used = q.status.used.get(name, "0")
                w.line(1, name, _qty(used), _qty(q.status.hard[name]))
    w.line(0, "")
    if not ranges:
        w.line(0, "No LimitRange resource.")
    else:
        w.line(0, "Resource Limits")
        columns = ("Type", "Resource", "Min", "Max", "Default Request", "Default Limit")
        w.line(0, " " + columns[0], *columns[1:], "Max Limit/Request Ratio")
        w.line(0, " ----", *("-" * len(c) for c in columns[1:]), "-----------------------")
        for lr in ranges:
            for item in lr.spec.limits:
                fields = (
                    item.min,
                    item.max,
                    item.default_request,
                    item.default_limit,
                    item.max_limit_request_ratio,
                )
                for name in sorted({k for f in fields for k in f}):
                    values = (_qty(f[name]) if name in f else "-" for f in fields)
                    w.line(0, f" {item.type}", name, *values)
    return w.render()


def describe_csi_node(node: types_pb2.CSINode, events: list[types_pb2.Event], now: float) -> str:
    w = Writer()
    _header(w, node, namespace=False)
    w.line(0, "CreationTimestamp:", rfc1123(node.metadata.creation_timestamp))
    w.line(0, "Spec:")
    if node.spec.drivers:
        w.line(1, "Drivers:")
        for d in node.spec.drivers:
            w.line(2, f"{d.name}:")
            w.line(3, "Node ID:", d.node_id)
            if d.HasField("allocatable") and d.allocatable.HasField("count"):
                w.line(3, "Allocatables:")
                w.line(4, "Count:", str(d.allocatable.count))
            if d.topology_keys:
                w.line(3, "Topology Keys:", _go_list(d.topology_keys))
    describe_events(w, events, now)
    return w.render()


async def register_custom_kinds(ctx: Context) -> None:
    """Registers the kind of every established CRD's custom resources in this process."""
    crds = await ctx.client.list_all(types_pb2.CustomResourceDefinition)
    for crd in crds.items:
        if apiextensions.is_established(crd):
            kinds.register_custom(apiextensions.definition_of(crd).to_kind())


async def describe_more(
    ctx: Context, obj: Message, events: list[types_pb2.Event], now: float
) -> str | None:
    """The kubectl layout of `obj` when this block has one (None: not one of its kinds),
    with what it reads besides (a controller's pods, an ingress's services and slices)."""
    pods: list[types_pb2.Pod] = []
    services: dict[str, types_pb2.Service] = {}
    slices: list[types_pb2.EndpointSlice] = []
    ns = object_meta(obj).namespace
    if isinstance(obj, types_pb2.Namespace):
        name = obj.metadata.name
        quotas = list((await ctx.client.list_all(types_pb2.ResourceQuota, name)).items)
        ranges = list((await ctx.client.list_all(types_pb2.LimitRange, name)).items)
        return describe_namespace(obj, quotas, ranges)
    if isinstance(obj, types_pb2.Deployment):
        sets = list((await ctx.client.list_all(types_pb2.ReplicaSet, ns)).items)
        return describe_deployment(obj, sets, events, now)
    if isinstance(
        obj,
        types_pb2.ReplicationController
        | types_pb2.ReplicaSet
        | types_pb2.DaemonSet
        | types_pb2.StatefulSet,
    ):
        pods = list((await ctx.client.list_all(types_pb2.Pod, ns)).items)
    if isinstance(obj, types_pb2.Ingress):
        listed = (await ctx.client.list_all(types_pb2.Service, ns)).items
        services = {s.metadata.name: s for s in listed}
        slices = list((await ctx.client.list_all(types_pb2.EndpointSlice, ns)).items)
    return describe_known(obj, events, now, pods=pods, services=services, slices=slices)


def describe_known(
    obj: Message,
    events: list[types_pb2.Event],
    now: float,
    *,
    pods: list[types_pb2.Pod],
    services: Mapping[str, types_pb2.Service],
    slices: list[types_pb2.EndpointSlice],
) -> str | None:
    """kubectl's describer of `obj`'s kind in this block (None: not one of them)."""
    if isinstance(obj, types_pb2.Role | types_pb2.ClusterRole):
        return describe_role(obj)
    if isinstance(obj, types_pb2.RoleBinding | types_pb2.ClusterRoleBinding):
        return describe_role_binding(obj)
    if isinstance(obj, types_pb2.ServiceAccount):
        return describe_service_account(obj, events, now)
    if isinstance(obj, types_pb2.Secret):
        return describe_secret(obj)
    if isinstance(obj, types_pb2.ResourceQuota):
        return describe_resource_quota(obj)
    if isinstance(obj, types_pb2.LimitRange):
        return describe_limit_range(obj)
    if isinstance(obj, types_pb2.ReplicationController):
        return describe_replication_controller(obj, pods, events, now)
    if isinstance(obj, types_pb2.Endpoints):
        return describe_endpoints(obj, events, now)
    if isinstance(obj, types_pb2.EndpointSlice):
        return describe_endpoint_slice(obj, events, now)
    if isinstance(obj, types_pb2.Ingress):
        return describe_ingress(obj, services, slices, events, now)
    if isinstance(obj, types_pb2.IngressClass):
        return describe_ingress_class(obj, events, now)
    if isinstance(obj, types_pb2.NetworkPolicy):
        return describe_network_policy(obj)
    if isinstance(obj, types_pb2.HorizontalPodAutoscaler):
        return describe_hpa(obj, events, now)
    if isinstance(obj, types_pb2.CertificateSigningRequest):
        return describe_csr(obj, events, now)
    if isinstance(obj, types_pb2.PriorityClass):
        return describe_priority_class(obj, events, now)
    if isinstance(obj, types_pb2.PodDisruptionBudget):
        return describe_pdb(obj, events, now)
    if isinstance(obj, types_pb2.StorageClass):
        return describe_storage_class(obj, events, now)
    if isinstance(obj, types_pb2.ReplicaSet):
        return describe_replica_set(obj, pods, events, now)
    if isinstance(obj, types_pb2.DaemonSet):
        return describe_daemon_set(obj, pods, events, now)
    if isinstance(obj, types_pb2.StatefulSet):
        return describe_stateful_set(obj, pods, events, now)
    if isinstance(obj, types_pb2.Job):
        return describe_job(obj, events, now)
    if isinstance(obj, types_pb2.CronJob):
        return describe_cron_job(obj, events, now)
    if isinstance(obj, types_pb2.CSINode):
        return describe_csi_node(obj, events, now)
    return None

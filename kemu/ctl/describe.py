"""`kemuctl describe KIND [NAME...]`: kubectl-like descriptions, aligned as kubectl aligns them.

Pods and nodes have their own describers (with what kemu is about: priority, the nominated
node, conditions such as DisruptionTarget and PodResizePending, allocated and actual
resources, the pods bound to and nominated for a node); every other kind gets a generic one.
Every description ends with the events about the object.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Iterable, Mapping
from typing import Final

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2
from kemu.ctl import printers
from kemu.ctl.common import (
    Context,
    CtlError,
    format_api_error,
    namespace_for,
    plain,
    split_targets,
)
from kemu.ctl.tabwriter import align
from kemu.machinery import kinds, podgroups, resources
from kemu.machinery.errors import ApiError, BadRequest, Invalid
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.keys import object_meta
from kemu.machinery.quantity import format_resource, to_int
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
            printers.event_source(e),
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
            if ports:
                w.line(2, f"{title}:", ", ".join(ports))
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
    w.line(0, "IP:", pod.status.pod_ip or NONE)
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


# ---------------------------------------------------------------- every other kind


def _title(key: str) -> str:
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", key)
    return words[:1].upper() + words[1:]


def _generic(w: Writer, level: int, data: JSONObject) -> None:
    for key, value in data.items():
        title = f"{_title(key)}:"
        if isinstance(value, dict):
            if value and all(not isinstance(v, dict | list) for v in value.values()):
                if key in ("labels", "annotations", "matchLabels"):
                    w.multiline(level, _title(key), [f"{k}={v}" for k, v in value.items()])
                    continue
            w.line(level, title)
            _generic(w, level + 1, value)
        elif isinstance(value, list):
            if all(not isinstance(v, dict | list) for v in value):
                w.line(level, title, ", ".join(plain(v) for v in value))
                continue
            w.line(level, title)
            for item in value:
                if isinstance(item, dict):
                    _generic(w, level + 1, item)
                    w.line(level + 1, "")
                else:
                    w.line(level + 1, plain(item))
        else:
            w.line(level, title, plain(value))


def describe_generic(
    obj: Message, events: list[types_pb2.Event], now: float, api_version: str = ""
) -> str:
    """`api_version`: the group version to describe the object as (kubectl describe's: the
    one asked for, or the server's preferred); "" for the kind's own."""
    kind = kinds.kind_of(obj)
    api_version = api_version or kind.api_version
    data = podgroups.to_versioned(obj, api_version)
    m = object_meta(obj)
    w = Writer()
    w.line(0, "Name:", m.name)
    if kind.namespaced:
        w.line(0, "Namespace:", m.namespace)
    w.multiline(0, "Labels", _pairs(m.labels))
    w.multiline(0, "Annotations", annotation_lines(m.annotations))
    w.line(0, "API Version:", api_version)
    w.line(0, "Kind:", kind.kind)
    w.line(0, "Creation Timestamp:", _when(m.creation_timestamp, m.HasField("creation_timestamp")))
    rest = {k: v for k, v in data.items() if k not in ("apiVersion", "kind", "metadata")}
    _generic(w, 0, rest)
    if kind.kind != "Event":
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
    if isinstance(obj, types_pb2.Service | types_pb2.PersistentVolumeClaim):
        pods = list((await ctx.client.list_all(types_pb2.Pod, obj.metadata.namespace)).items)
        if isinstance(obj, types_pb2.Service):
            return describe_service(obj, pods, events, now)
        return describe_persistent_volume_claim(obj, pods, events, now)
    return describe_generic(obj, events, now, api_version)


async def cmd_describe(ctx: Context, args: argparse.Namespace) -> int:
    asked: str | None = None
    given = list(args.targets)
    if given:
        given[0], asked = requested_version(given[0])
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
            listed = await ctx.client.list_all(kind.message, ns, label_selector=args.selector or "")
            if not listed.items:
                ctx.warn(f"No resources found in {ns} namespace." if ns else "No resources found")
            objs.extend(listed.items)
            continue
        try:
            objs.append(await ctx.client.get(kind.message, name, namespace_for(ctx, kind)))
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


def _ready(pod: types_pb2.Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions)


def _target_port(pod: types_pb2.Pod, port: types_pb2.ServicePort) -> int:
    tp = port.target_port
    if tp.str_val:
        for c in pod.spec.containers:
            for cp in c.ports:
                if cp.name == tp.str_val:
                    return cp.container_port
        return 0
    return tp.int_val or port.port


def _endpoints_text(
    svc: types_pb2.Service, port: types_pb2.ServicePort, pods: list[types_pb2.Pod]
) -> str:
    """The ready endpoints of the port, as kubectl's formatEndpointSlices: the first three,
    then ` + N more...`; the endpoints are the ready pods the selector picks (what the
    endpointslice controller would publish)."""
    if not svc.spec.selector:
        return NONE
    found = []
    for p in sorted(pods, key=lambda p: p.status.pod_ip):
        labels = p.metadata.labels
        if not all(labels.get(k) == v for k, v in svc.spec.selector.items()):
            continue
        target = _target_port(p, port)
        if p.status.pod_ip and _ready(p) and target:
            found.append(f"{p.status.pod_ip}:{target}")
    if not found:
        return NONE
    more = len(found) - 3
    return ",".join(found[:3]) + (f" + {more} more..." if more > 0 else "")


def describe_service(
    svc: types_pb2.Service, pods: list[types_pb2.Pod], events: list[types_pb2.Event], now: float
) -> str:
    """kubectl's describeService."""
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
        w.line(0, "IP:", spec.load_balancer_ip)
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
        if port.node_port:
            w.line(0, "NodePort:", name, f"{port.node_port}/{port.protocol}")
        w.line(0, "Endpoints:", _endpoints_text(svc, port, pods))
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

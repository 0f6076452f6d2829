"""ResourceQuota's usage and admission, pure (upstream pkg/quota/v1: resources.go's
arithmetic, evaluator/core/pods.go, services.go, persistent_volume_claims.go and
generic's object counts; staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/
controller.go checkRequest and prettyPrint). The apiserver's ResourceQuota admission and the
controller-manager's resourcequota controller both count with it, so the two agree."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Forbidden
from kemu.machinery.kinds import Kind, kind_of
from kemu.machinery.qos import compute_qos_class
from kemu.machinery.quantity import Quantity, format_resource, parse_quantity
from kemu.machinery.resources import pod_limits, pod_requests

Usage = dict[str, Quantity]

PODS: Final = "pods"
SERVICES: Final = "services"
PVCS: Final = "persistentvolumeclaims"
_COMPUTE: Final = ("cpu", "memory", "ephemeral-storage")
_VALIDATION_SET: Final = frozenset(
    {"requests.cpu", "requests.memory", "limits.cpu", "limits.memory", "cpu", "memory"}
)
_LEGACY_COUNTS: Final = {
    "Pod": PODS,
    "Service": SERVICES,
    "PersistentVolumeClaim": PVCS,
    "ConfigMap": "configmaps",
    "Secret": "secrets",
    "ResourceQuota": "resourcequotas",
}
"""The kinds counted under their bare resource name as well as count/<resource>."""


def count_name(kind: Kind) -> str:
    """count/<resource>[.<group>] (generic's ObjectCountQuotaResourceNameFor)."""
    group = kind.api_version.rpartition("/")[0]
    # (a custom resource's `resource` is plural.group already)
    return f"count/{kind.path_resource}" + (f".{group}" if group else "")


def _one() -> Quantity:
    return Quantity.from_int(1)


def pod_counts(pod: types_pb2.Pod, now: float) -> bool:
    """QuotaV1Pod: a pod is charged until it has finished, or its graceful deletion is
    past its grace period."""
    if pod.status.phase in ("Succeeded", "Failed"):
        return False
    meta = pod.metadata
    if meta.HasField("deletion_timestamp") and meta.HasField("deletion_grace_period_seconds"):
        ends = meta.deletion_timestamp.seconds + meta.deletion_grace_period_seconds
        if now > ends:
            return False
    return True


def _base(name: str) -> str:
    return name.partition(".")[2] if name.startswith(("requests.", "limits.")) else name


def _q(resource: str, value: int) -> Quantity:
    return parse_quantity(format_resource(_base(resource), value))


def pod_usage(pod: types_pb2.Pod, now: float) -> Usage:
    """PodUsageFunc: pods and count/pods 1, then the requests and limits
    (podComputeUsageHelper)."""
    if not pod_counts(pod, now):
        return {}
    usage: Usage = {PODS: _one(), "count/pods": _one()}
    for name, value in pod_requests(pod).items():
        if name in _COMPUTE:
            usage[f"requests.{name}"] = _q(name, value)
            usage[name] = _q(name, value)
        elif name.startswith("hugepages-") or "/" in name:
            usage[f"requests.{name}"] = _q(name, value)
    for name, value in pod_limits(pod).items():
        if name in _COMPUTE:
            usage[f"limits.{name}"] = _q(name, value)
    return usage


def usage_of(obj: Message, now: float) -> Usage:
    """What one object charges (a kind without an evaluator of its own: its object count)."""
    kind = kind_of(obj)
    if isinstance(obj, types_pb2.Pod):
        return pod_usage(obj, now)
    usage: Usage = {count_name(kind): _one()}
    legacy = _LEGACY_COUNTS.get(kind.kind)
    if legacy is not None:
        usage[legacy] = _one()
    if isinstance(obj, types_pb2.Service):
        if obj.spec.type == "NodePort":
            usage["services.nodeports"] = Quantity.from_int(len(obj.spec.ports))
        elif obj.spec.type == "LoadBalancer":
            usage["services.loadbalancers"] = _one()
            usage["services.nodeports"] = Quantity.from_int(len(obj.spec.ports))
    elif isinstance(obj, types_pb2.PersistentVolumeClaim):
        storage = obj.spec.resources.requests.get("storage")
        if storage:
            usage["requests.storage"] = parse_quantity(storage)
        cls = obj.spec.storage_class_name if obj.spec.HasField("storage_class_name") else ""
        if cls:
            prefix = f"{cls}.storageclass.storage.k8s.io/"
            usage[prefix + PVCS] = _one()
            if storage:
                usage[prefix + "requests.storage"] = parse_quantity(storage)
    return usage


# ---------------------------------------------------------------- scopes


def _scope_matches(scope: str, operator: str, values: Iterable[str], pod: types_pb2.Pod) -> bool:
    """podMatchesScopeFunc for one selector requirement."""
    if scope == "Terminating":
        return (
            pod.spec.HasField("active_deadline_seconds") and pod.spec.active_deadline_seconds >= 0
        )
    if scope == "NotTerminating":
        return not (
            pod.spec.HasField("active_deadline_seconds") and pod.spec.active_deadline_seconds >= 0
        )
    if scope == "BestEffort":
        return compute_qos_class(pod) == "BestEffort"
    if scope == "NotBestEffort":
        return compute_qos_class(pod) != "BestEffort"
    if scope == "PriorityClass":
        name = pod.spec.priority_class_name
        vals = set(values)
        if operator == "Exists":
            return bool(name)
        if operator == "DoesNotExist":
            return not name
        if operator == "In":
            return name in vals
        return name not in vals
    if scope == "CrossNamespacePodAffinity":
        return False
    return False


def selectors_of(rq: types_pb2.ResourceQuota) -> list[tuple[str, str, list[str]]]:
    """getScopeSelectorsFromQuota: spec.scopes (Exists) and spec.scopeSelector."""
    out: list[tuple[str, str, list[str]]] = [(s, "Exists", []) for s in rq.spec.scopes]
    out += [
        (r.scope_name, r.operator, list(r.values)) for r in rq.spec.scope_selector.match_expressions
    ]
    return out


def matches(rq: types_pb2.ResourceQuota, obj: Message) -> bool:
    """Whether the quota's scopes select the object (a scoped quota only counts pods)."""
    selectors = selectors_of(rq)
    if not selectors:
        return True
    if not isinstance(obj, types_pb2.Pod):
        return False
    return all(_scope_matches(s, op, vals, obj) for s, op, vals in selectors)


# ---------------------------------------------------------------- arithmetic


def add(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> Usage:
    out = dict(a)
    for k, v in b.items():
        out[k] = out[k] + v if k in out else v
    return out


def parse_list(values: Mapping[str, str]) -> Usage:
    return {k: parse_quantity(v) for k, v in values.items()}


def pretty_print(usage: Mapping[str, Quantity]) -> str:
    """prettyPrint: name=value, sorted by name, joined by commas."""
    return ",".join(f"{k}={usage[k]}" for k in sorted(usage))


def to_strings(usage: Mapping[str, Quantity]) -> dict[str, str]:
    return {k: str(v) for k, v in usage.items()}


def compute_used(
    rq: types_pb2.ResourceQuota, objects: Iterable[Message], now: float
) -> dict[str, str]:
    """The resourcequota controller's syncResourceQuota: the namespace's usage of each
    resource the quota limits (zero where nothing is charged)."""
    hard = set(rq.spec.hard)
    total: Usage = {k: Quantity.from_int(0) for k in hard}
    for obj in objects:
        if not matches(rq, obj):
            continue
        for k, v in usage_of(obj, now).items():
            if k in hard:
                total[k] = total[k] + v
    return to_strings(total)


def _missing_constraints(pod: types_pb2.Pod, hard: Iterable[str]) -> str:
    """podEvaluator.Constraints: with cpu or memory quota'd, each container must request
    (and limit) them explicitly; "" when it does."""
    required = set(hard) & _VALIDATION_SET
    missing: dict[str, set[str]] = {}
    for c in [*pod.spec.containers, *pod.spec.init_containers]:
        for name in required:
            base = _base(name)
            source = c.resources.limits if name.startswith("limits.") else c.resources.requests
            if base not in source:
                missing.setdefault(name, set()).add(c.name)
    return "; ".join(f"{r} for: {','.join(sorted(missing[r]))}" for r in sorted(missing))


def handles_update(kind: Kind, subresource: str) -> bool:
    """Whether the ResourceQuota admission charges an update (the evaluators' Handles): a
    pod's resize (pods.go), any update of a Service (its type can change: services.go) or of
    a PersistentVolumeClaim (an expansion: persistent_volume_claims.go); the other kinds
    (object counts) are charged on create only."""
    if kind.kind == "Pod":
        return subresource == "resize"
    return kind.kind in ("Service", "PersistentVolumeClaim") and kind.group == ""


def _delta(usage: Mapping[str, Quantity], old: Mapping[str, Quantity]) -> Usage:
    """SubtractWithNonNegativeResult then RemoveZeros: what an update adds."""
    out: Usage = {}
    for k, v in usage.items():
        d = v - old[k] if k in old else v
        if d.sign() > 0:
            out[k] = d
    return out


def charge(
    obj: Message,
    resource: str,
    name: str,
    rq: types_pb2.ResourceQuota,
    now: float,
    old: Message | None = None,
) -> dict[str, str] | None:
    """The ResourceQuota admission plugin's checkRequest for one quota of the object's
    namespace: the quota's new status.used once the object is charged, None when the quota
    does not concern it; Forbidden as upstream when the usage over status.used would pass
    status.hard (or the quota has not been computed yet, or a container leaves out a
    quota'd cpu or memory). `old`: an update's stored object, whose usage is subtracted
    (only what the update adds is charged; none when it adds nothing)."""
    usage = usage_of(obj, now)
    if not usage or not matches(rq, obj):
        return None
    limited = set(rq.spec.hard)
    pod_constrained = isinstance(obj, types_pb2.Pod) and bool(limited & _VALIDATION_SET)
    if not limited & set(usage) and not pod_constrained:
        return None
    what = f'{resource} "{name}" is forbidden'
    qname = rq.metadata.name
    if isinstance(obj, types_pb2.Pod):
        missing = _missing_constraints(obj, limited)
        if missing:
            raise Forbidden(f"{what}: failed quota: {qname}: must specify {missing}")
    for res in sorted(limited & set(usage)):
        if res not in rq.status.hard:
            raise Forbidden(f"{what}: status unknown for quota: {qname}, resource: {res}")
    if old is not None:
        usage = _delta(usage, usage_of(old, now))
        if not usage:
            return None
    hard = parse_list(rq.status.hard)
    used = parse_list(rq.status.used)
    zero = Quantity.from_int(0)
    requested = {k: v for k, v in usage.items() if k in hard}
    if old is not None and not requested:
        return None
    exceeded = [k for k, v in requested.items() if hard[k] < used.get(k, zero) + v]
    if exceeded:
        raise Forbidden(
            f"{what}: exceeded quota: {qname}, "
            f"requested: {pretty_print({k: requested[k] for k in exceeded})}, "
            f"used: {pretty_print({k: used.get(k, zero) for k in exceeded})}, "
            f"limited: {pretty_print({k: hard[k] for k in exceeded})}"
        )
    return to_strings(add(used, requested))

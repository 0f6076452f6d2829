"""API validation, after k8s.io/kubernetes/pkg/apis/*/validation and apimachinery's util/validation.

Every check returns a list of `Cause`s: `field` is the upstream field path
(spec.containers[0].resources.requests[cpu]) and `message` is the body upstream's field.Error
prints after the path (`Invalid value: "-1": must be greater than or equal to 0`,
`Required value`, `Unsupported value: "X": supported values: "A", "B"`, `Duplicate value: "c"`,
`Forbidden: ...`). The apiserver turns a non-empty list into `Invalid.from_causes(...)`.

`validate_object(obj, old=...)` validates one object of any kind (with `old`, also the update
rules of the main resource). Subresources that change what a plain update may not (binding sets
spec.nodeName, resize changes container resources) validate the new object without `old` and
apply their own rules.

Defaulting is not done here: an object is valid with fields left empty that upstream defaults
(restartPolicy, preemptionPolicy). Namespaced kinds need metadata.namespace: the apiserver fills
it from the request before validating. A name may be empty when generateName is set: the
apiserver generates the name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause
from kemu.machinery.validation.core import (
    validate_config_map,
    validate_config_map_update,
    validate_event,
    validate_lease,
    validate_namespace,
    validate_namespace_update,
    validate_service,
    validate_service_update,
)
from kemu.machinery.validation.meta import validate_object_meta, validate_object_meta_update
from kemu.machinery.validation.node import validate_node, validate_node_update
from kemu.machinery.validation.pod import validate_pod, validate_pod_update
from kemu.machinery.validation.policy import (
    validate_pod_disruption_budget,
    validate_priority_class,
    validate_priority_class_update,
)
from kemu.machinery.validation.workloads import (
    validate_daemon_set,
    validate_deployment,
    validate_job,
    validate_job_update,
    validate_replica_set,
    validate_workload_update,
)


def _no_update_rules(new: Message, old: Message) -> list[Cause]:
    return []


def _object_meta_only(obj: Any) -> list[Cause]:
    """The kinds of issue #34 whose own validation comes with their kinds' work (the
    StatefulSet and CronJob controllers need them served): their ObjectMeta only."""
    meta: types_pb2.ObjectMeta = obj.metadata
    return validate_object_meta(meta, namespaced=True)


# Per kind: (validate, extra rules of an update). Validators take the concrete message type.
_VALIDATORS: Final[
    dict[str, tuple[Callable[[Any], list[Cause]], Callable[[Any, Any], list[Cause]]]]
] = {
    "kemu.api.v1.Pod": (validate_pod, validate_pod_update),
    "kemu.api.v1.Node": (validate_node, validate_node_update),
    "kemu.api.v1.PriorityClass": (validate_priority_class, validate_priority_class_update),
    "kemu.api.v1.PodDisruptionBudget": (validate_pod_disruption_budget, _no_update_rules),
    "kemu.api.v1.Lease": (validate_lease, _no_update_rules),
    "kemu.api.v1.Event": (validate_event, _no_update_rules),
    "kemu.api.v1.Namespace": (validate_namespace, validate_namespace_update),
    "kemu.api.v1.Service": (validate_service, validate_service_update),
    "kemu.api.v1.ConfigMap": (validate_config_map, validate_config_map_update),
    "kemu.api.v1.ReplicaSet": (validate_replica_set, validate_workload_update),
    "kemu.api.v1.Deployment": (validate_deployment, validate_workload_update),
    "kemu.api.v1.Job": (validate_job, validate_job_update),
    "kemu.api.v1.DaemonSet": (validate_daemon_set, validate_workload_update),
    "kemu.api.v1.StatefulSet": (_object_meta_only, _no_update_rules),
    "kemu.api.v1.CronJob": (_object_meta_only, _no_update_rules),
    "kemu.api.v1.PersistentVolumeClaim": (_object_meta_only, _no_update_rules),
}


def validate_object(obj: Message, *, old: Message | None = None) -> list[Cause]:
    """Validates an object of any kind; with `old`, also the rules of a main-resource update.

    Raises TypeError for a message that is not an API kind (a bug in the caller).
    """
    name = obj.DESCRIPTOR.full_name
    entry = _VALIDATORS.get(name)
    if entry is None:
        raise TypeError(f"validate_object: {name} is not an API kind")
    validate, validate_update = entry
    causes = validate(obj)
    if old is not None:
        if old.DESCRIPTOR.full_name != name:
            raise TypeError(f"validate_object: old is {old.DESCRIPTOR.full_name}, not {name}")
        causes.extend(
            validate_object_meta_update(
                obj.metadata,  # type: ignore[attr-defined]
                old.metadata,  # type: ignore[attr-defined]
            )
        )
        causes.extend(validate_update(obj, old))
    return causes

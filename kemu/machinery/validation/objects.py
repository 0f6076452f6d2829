"""`validate_object(obj, old=...)` validates one object of any kind (with `old`, also the update
rules of the main resource); `validate_status_update(obj, old)` a status subresource write,
with the kind's own status rules where it has them (a pod's spec is the stored one).
Subresources that change what a plain update may not (binding sets spec.nodeName, resize
changes container resources) validate the new object without `old` and apply their own rules.
The package's docstring says what a check returns and what is left to the apiserver.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from google.protobuf.message import Message

from kemu.machinery.apiextensions import crd, custom
from kemu.machinery.dra import DEFAULT_DRA_RULES, DraRules
from kemu.machinery.errors import Cause
from kemu.machinery.podgroups import DEFAULT_RULES, PodGroupRules
from kemu.machinery.validation import (
    apiregistration,
    certificates,
    flowcontrol,
    networking,
    quota,
    rbac,
    resource,
    scheduling,
)
from kemu.machinery.validation.controlled import (
    validate_endpoint_slice,
    validate_endpoint_slice_update,
    validate_endpoints,
    validate_horizontal_pod_autoscaler,
    validate_replication_controller,
    validate_replication_controller_update,
)
from kemu.machinery.validation.core import (
    validate_config_map,
    validate_config_map_update,
    validate_event,
    validate_lease,
    validate_namespace,
    validate_namespace_update,
    validate_secret,
    validate_secret_update,
    validate_service,
    validate_service_account,
    validate_service_update,
)
from kemu.machinery.validation.cronjobs import (
    validate_cron_job,
    validate_cron_job_create,
    validate_cron_job_update,
)
from kemu.machinery.validation.meta import validate_object_meta_update
from kemu.machinery.validation.node import validate_node, validate_node_update
from kemu.machinery.validation.pod import (
    validate_pod,
    validate_pod_status_update,
    validate_pod_update,
)
from kemu.machinery.validation.policy import (
    validate_pod_disruption_budget,
    validate_priority_class,
    validate_priority_class_update,
)
from kemu.machinery.validation.statefulsets import (
    validate_stateful_set,
    validate_stateful_set_update,
)
from kemu.machinery.validation.storage import (
    validate_csi_node,
    validate_csi_node_update,
    validate_persistent_volume,
    validate_persistent_volume_claim,
    validate_persistent_volume_claim_update,
    validate_persistent_volume_update,
    validate_storage_class,
    validate_storage_class_update,
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


# A kind's validators take its own message type (validate_pod(pod: Pod)); the tables below are
# looked up by the message's full name, so their argument is typed here only.
_Validate = Callable[[Any], list[Cause]]
_ValidateUpdate = Callable[[Any, Any], list[Cause]]

# ---- issue #57 kinds-a: RBAC, networking, certificates, apiregistration, quota
_KINDS_A_VALIDATORS: Final[dict[str, tuple[_Validate, _ValidateUpdate]]] = {
    "kemu.api.v1.Role": (rbac.validate_role, _no_update_rules),
    "kemu.api.v1.ClusterRole": (rbac.validate_cluster_role, _no_update_rules),
    "kemu.api.v1.RoleBinding": (rbac.validate_role_binding, rbac.validate_binding_update),
    "kemu.api.v1.ClusterRoleBinding": (
        rbac.validate_cluster_role_binding,
        rbac.validate_binding_update,
    ),
    "kemu.api.v1.Ingress": (networking.validate_ingress, _no_update_rules),
    "kemu.api.v1.IngressClass": (
        networking.validate_ingress_class,
        networking.validate_ingress_class_update,
    ),
    "kemu.api.v1.NetworkPolicy": (networking.validate_network_policy, _no_update_rules),
    "kemu.api.v1.CertificateSigningRequest": (
        certificates.validate_csr,
        certificates.validate_csr_update,
    ),
    "kemu.api.v1.APIService": (apiregistration.validate_api_service, _no_update_rules),
    "kemu.api.v1.LimitRange": (quota.validate_limit_range, _no_update_rules),
    "kemu.api.v1.ResourceQuota": (quota.validate_resource_quota, _no_update_rules),
    # flowcontrol.apiserver.k8s.io/v1 (issue #58 item 3)
    "kemu.api.v1.FlowSchema": (flowcontrol.validate_flow_schema, _no_update_rules),
    "kemu.api.v1.PriorityLevelConfiguration": (
        flowcontrol.validate_priority_level,
        _no_update_rules,
    ),
}


# Per kind: (validate, extra rules of an update).
_VALIDATORS: Final[dict[str, tuple[_Validate, _ValidateUpdate]]] = {
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
    "kemu.api.v1.PersistentVolume": (validate_persistent_volume, validate_persistent_volume_update),
    "kemu.api.v1.PersistentVolumeClaim": (
        validate_persistent_volume_claim,
        validate_persistent_volume_claim_update,
    ),
    "kemu.api.v1.StorageClass": (validate_storage_class, validate_storage_class_update),
    "kemu.api.v1.CSINode": (validate_csi_node, validate_csi_node_update),
    "kemu.api.v1.StatefulSet": (validate_stateful_set, validate_stateful_set_update),
    "kemu.api.v1.ServiceAccount": (validate_service_account, _no_update_rules),
    "kemu.api.v1.Secret": (validate_secret, validate_secret_update),
    "kemu.api.v1.CronJob": (validate_cron_job, validate_cron_job_update),
    **_KINDS_A_VALIDATORS,
    # apiextensions.k8s.io (issue #57 item 3)
    "kemu.api.v1.CustomResourceDefinition": (crd.validate_crd, crd.validate_crd_update),
    # ---- kinds-b (issue #57)
    "kemu.api.v1.ReplicationController": (
        validate_replication_controller,
        validate_replication_controller_update,
    ),
    "kemu.api.v1.Endpoints": (validate_endpoints, _no_update_rules),
    "kemu.api.v1.EndpointSlice": (validate_endpoint_slice, validate_endpoint_slice_update),
    "kemu.api.v1.HorizontalPodAutoscaler": (validate_horizontal_pod_autoscaler, _no_update_rules),
}


# Per kind whose rules differ by emulated version and gate (the Workload API): (validate,
# extra rules of an update, rules of a status write), each also given the PodGroupRules.
_VersionedValidate = Callable[[Any, PodGroupRules], list[Cause]]
_VersionedUpdate = Callable[[Any, Any, PodGroupRules], list[Cause]]
_VERSIONED: Final[
    dict[str, tuple[_VersionedValidate, _VersionedUpdate, _VersionedUpdate | None]]
] = {
    "kemu.api.v1.Workload": (
        scheduling.validate_workload,
        scheduling.validate_workload_update,
        None,
    ),
    "kemu.api.v1.PodGroup": (
        scheduling.validate_pod_group,
        scheduling.validate_pod_group_update,
        scheduling.validate_pod_group_status_update,
    ),
    "kemu.api.v1.CompositePodGroup": (
        scheduling.validate_composite_pod_group,
        scheduling.validate_composite_pod_group_update,
        scheduling.validate_composite_pod_group_status_update,
    ),
}


# resource.k8s.io (DRA): per kind, (validate given the stored object on update, the rules of a
# status write), each also given the DraRules (the gates that change the API).
_DraValidate = Callable[[Any, Any, DraRules], list[Cause]]
_DRA: Final[dict[str, tuple[_DraValidate, _DraValidate | None]]] = {
    "kemu.api.v1.DeviceClass": (resource.validate_device_class, None),
    "kemu.api.v1.ResourceSlice": (resource.validate_resource_slice, None),
    "kemu.api.v1.ResourceClaim": (
        resource.validate_resource_claim,
        resource.validate_resource_claim_status_update,
    ),
    "kemu.api.v1.ResourceClaimTemplate": (resource.validate_resource_claim_template, None),
    "kemu.api.v1.DeviceTaintRule": (
        resource.validate_device_taint_rule,
        resource.validate_device_taint_rule_status_update,
    ),
}


# Per kind: the rules of a create only (upstream's Validate<Kind>Create beside the update's).
_CREATE_VALIDATORS: Final[dict[str, _Validate]] = {
    "kemu.api.v1.CronJob": validate_cron_job_create,
}


# Per kind: the rules of a status subresource write (upstream's Validate<Kind>StatusUpdate),
# where they leave out what the status strategy keeps from the stored object.
_STATUS_VALIDATORS: Final[dict[str, _ValidateUpdate]] = {
    "kemu.api.v1.Pod": validate_pod_status_update,
}


def validate_status_update(
    obj: Message,
    old: Message,
    *,
    pod_groups: PodGroupRules = DEFAULT_RULES,
    dra: DraRules = DEFAULT_DRA_RULES,
) -> list[Cause]:
    """Validates a status subresource write of `old` that stores `obj`: the kind's status
    rules and the metadata update's, or, for a kind without status rules of its own, those of
    an update (`validate_object` with `old`). `pod_groups`: the Workload API's rules at the
    apiserver's version and gates; `dra`: resource.k8s.io's."""
    name = obj.DESCRIPTOR.full_name
    versioned = _VERSIONED.get(name)
    status_rules = versioned[2] if versioned is not None else None
    dra_entry = _DRA.get(name)
    dra_status = dra_entry[1] if dra_entry is not None else None
    rules = _STATUS_VALIDATORS.get(name)
    if rules is None and status_rules is None and dra_status is None:
        return validate_object(obj, old=old, pod_groups=pod_groups, dra=dra)
    if old.DESCRIPTOR.full_name != name:
        raise TypeError(f"validate_status_update: old is {old.DESCRIPTOR.full_name}, not {name}")
    causes = rules(obj, old) if rules is not None else []
    if status_rules is not None:
        causes.extend(status_rules(obj, old, pod_groups))
    if dra_status is not None:
        causes.extend(dra_status(obj, old, dra))
    causes.extend(
        validate_object_meta_update(
            obj.metadata,  # type: ignore[attr-defined]
            old.metadata,  # type: ignore[attr-defined]
        )
    )
    return causes


def validate_object(
    obj: Message,
    *,
    old: Message | None = None,
    pod_groups: PodGroupRules = DEFAULT_RULES,
    dra: DraRules = DEFAULT_DRA_RULES,
) -> list[Cause]:
    """Validates an object of any kind; with `old`, also the rules of a main-resource update,
    without it also those of a create. `pod_groups`: the Workload API's rules at the
    apiserver's emulated version and gates (kemu.machinery.podgroups); `dra`:
    resource.k8s.io's (kemu.machinery.dra).

    Raises TypeError for a message that is not an API kind (a bug in the caller).
    """
    name = obj.DESCRIPTOR.full_name
    if name == "kemu.api.v1.CustomObject":  # a custom resource: its CRD's schema
        return custom.validate(obj, old)
    versioned = _VERSIONED.get(name)
    dra_entry = _DRA.get(name)
    entry: tuple[_Validate, _ValidateUpdate] | None
    if dra_entry is not None:
        dra_validate = dra_entry[0]
        if old is None:
            return dra_validate(obj, None, dra)
        if old.DESCRIPTOR.full_name != name:
            raise TypeError(f"validate_object: old is {old.DESCRIPTOR.full_name}, not {name}")
        return dra_validate(obj, old, dra) + validate_object_meta_update(
            obj.metadata,  # type: ignore[attr-defined]
            old.metadata,  # type: ignore[attr-defined]
        )
    if versioned is not None:
        v_validate, v_update, _ = versioned
        entry = (
            lambda o: v_validate(o, pod_groups),
            lambda n, o: v_update(n, o, pod_groups),
        )
    else:
        entry = _VALIDATORS.get(name)
    if entry is None:
        raise TypeError(f"validate_object: {name} is not an API kind")
    validate, validate_update = entry
    causes = validate(obj)
    if old is None:
        create_rules = _CREATE_VALIDATORS.get(name)
        if create_rules is not None:
            causes.extend(create_rules(obj))
    else:
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

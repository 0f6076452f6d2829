"""The kinds kemu serves: their resource names, scope and message classes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from google.protobuf.message import Message

from kemu.api.v1 import api_pb2, types_pb2
from kemu.machinery.errors import BadRequest, NotFound
from kemu.machinery.runtime_config import ResourceConfig, RuntimeConfig, resolve

SCHEDULING_V1ALPHA1: Final = "scheduling.k8s.io/v1alpha1"
SCHEDULING_V1ALPHA2: Final = "scheduling.k8s.io/v1alpha2"
SCHEDULING_V1ALPHA3: Final = "scheduling.k8s.io/v1alpha3"
SCHEDULING_V1BETA1: Final = "scheduling.k8s.io/v1beta1"
GENERIC_WORKLOAD: Final = "GenericWorkload"
"""(kemu.component.featuregate.GENERIC_WORKLOAD: the machinery names the gate it reads.)"""
COMPOSITE_POD_GROUP: Final = "CompositePodGroup"
"""(kemu.component.featuregate.COMPOSITE_POD_GROUP, which depends on GenericWorkload.)"""
RESOURCE_V1: Final = "resource.k8s.io/v1"
RESOURCE_V1BETA2: Final = "resource.k8s.io/v1beta2"
RESOURCE_V1BETA1: Final = "resource.k8s.io/v1beta1"
RESOURCE_V1ALPHA3: Final = "resource.k8s.io/v1alpha3"
_DRA_VERSIONS: Final = (
    (31, (RESOURCE_V1ALPHA3,)),
    (32, (RESOURCE_V1BETA1, RESOURCE_V1ALPHA3)),
    (33, (RESOURCE_V1BETA2, RESOURCE_V1BETA1)),
    (34, (RESOURCE_V1, RESOURCE_V1BETA2, RESOURCE_V1BETA1)),
)
"""DRA's kinds by release (pkg/registry/resource/rest/storage_resource.go): v1alpha3 at 1.31
(DynamicResourceAllocation alpha), v1beta1 from 1.32 (beta, off), v1beta2 from 1.33, v1 from
1.34 (GA, on); the alpha and beta versions need --runtime-config, as upstream's defaults."""
APIEXTENSIONS_V1: Final = "apiextensions.k8s.io/v1"
DYNAMIC_RESOURCE_ALLOCATION: Final = "DynamicResourceAllocation"
"""(kemu.component.featuregate.DYNAMIC_RESOURCE_ALLOCATION.)"""
DRA_DEVICE_TAINT_RULES: Final = "DRADeviceTaintRules"
"""(kemu.component.featuregate.DRA_DEVICE_TAINT_RULES.)"""
RBAC_V1: Final = "rbac.authorization.k8s.io/v1"
NETWORKING_V1: Final = "networking.k8s.io/v1"
FLOWCONTROL_V1: Final = "flowcontrol.apiserver.k8s.io/v1"
FLOWCONTROL_V1BETA3: Final = "flowcontrol.apiserver.k8s.io/v1beta3"
_FLOWCONTROL_VERSIONS: Final = (
    (26, (FLOWCONTROL_V1BETA3,)),
    (29, (FLOWCONTROL_V1, FLOWCONTROL_V1BETA3)),
    (32, (FLOWCONTROL_V1,)),
)


@dataclass(frozen=True)
class Kind:
    kind: str  # Pod
    resource: str  # pods
    api_version: str  # v1, policy/v1, ...
    namespaced: bool
    message: type[Message]
    field: str  # the Object oneof field: pod, node, ...
    short_names: tuple[str, ...] = ()
    has_status: bool = True
    versions: tuple[tuple[int, tuple[str, ...]], ...] = ()
    """The group versions upstream serves the kind as, by the first minor (1.x) of each
    change, preferred first (Workload: v1alpha1 at 1.35, v1alpha2 at 1.36, v1beta1 and
    v1alpha3 at 1.37); before the first entry the kind is not served. Empty: `api_version`
    at every version. `api_version` is always the shape of the kind's message (what the gRPC
    edge carries); the REST edge converts the others (kemu.machinery.podgroups)."""
    gate: str = ""
    """The feature gate without which the apiserver does not serve the kind (its storage
    provider leaves the resource out, as upstream's pkg/registry/<group>/rest does)."""
    plural: str = ""
    """A custom resource's plural (its `resource` is plural.group, upstream's
    GroupResource string); "" for the built-in kinds."""
    singular: str = ""
    custom_subresources: tuple[str, ...] = ()
    """A custom resource's subresources its CRD's storage version enables (status, scale)."""

    @property
    def custom(self) -> bool:
        """A custom resource (served from a CustomResourceDefinition)."""
        return bool(self.plural)

    @property
    def path_resource(self) -> str:
        """The resource as a REST path names it (plural without the group)."""
        return self.plural or self.resource

    @property
    def storage_prefix(self) -> str:
        """The etcd prefix of the kind's objects: /registry/<resource>/, a custom resource's
        /registry/<group>/<plural>/ as upstream's apiextensions-apiserver keys them."""
        if self.plural:
            return f"/registry/{self.group}/{self.plural}/"
        return f"/registry/{self.resource}/"

    def new(self) -> Message:
        return self.message()

    @property
    def group(self) -> str:
        """The API group: "" for the core group, "apps", "policy", ..."""
        return self.api_version.rpartition("/")[0]

    @property
    def qualified_resource(self) -> str:
        """The resource as upstream's errors name it: "pods", "deployments.apps" (a custom
        resource's `resource` is already plural.group)."""
        if self.plural:
            return self.resource
        return f"{self.resource}.{self.group}" if self.group else self.resource

    @property
    def qualified_kind(self) -> str:
        """The kind as upstream's Invalid errors name it: "Pod", "Deployment.apps"."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    def api_versions_at(self, minor: int) -> tuple[str, ...]:
        """The group versions served at emulated version 1.`minor`, preferred first; () when
        the kind does not exist there (its gate aside)."""
        if not self.versions:
            return (self.api_version,)
        served: tuple[str, ...] = ()
        for since, api_versions in self.versions:
            if minor >= since:
                served = api_versions
        return served


KINDS: Final[tuple[Kind, ...]] = (
    Kind("Pod", "pods", "v1", True, types_pb2.Pod, "pod", ("po",)),
    Kind("Node", "nodes", "v1", False, types_pb2.Node, "node", ("no",)),
    Kind(
        "PriorityClass",
        "priorityclasses",
        "scheduling.k8s.io/v1",
        False,
        types_pb2.PriorityClass,
        "priority_class",
        ("pc",),
        has_status=False,
    ),
    Kind(
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        "policy/v1",
        True,
        types_pb2.PodDisruptionBudget,
        "pod_disruption_budget",
        ("pdb",),
    ),
    Kind(
        "Lease",
        "leases",
        "coordination.k8s.io/v1",
        True,
        types_pb2.Lease,
        "lease",
        has_status=False,
    ),
    Kind("Event", "events", "v1", True, types_pb2.Event, "event", ("ev",), has_status=False),
    Kind("Namespace", "namespaces", "v1", False, types_pb2.Namespace, "namespace", ("ns",)),
    Kind("Service", "services", "v1", True, types_pb2.Service, "service", ("svc",)),
    Kind(
        "ConfigMap",
        "configmaps",
        "v1",
        True,
        types_pb2.ConfigMap,
        "config_map",
        ("cm",),
        has_status=False,
    ),
    Kind(
        "ReplicaSet", "replicasets", "apps/v1", True, types_pb2.ReplicaSet, "replica_set", ("rs",)
    ),
    Kind(
        "Deployment",
        "deployments",
        "apps/v1",
        True,
        types_pb2.Deployment,
        "deployment",
        ("deploy",),
    ),
    Kind("Job", "jobs", "batch/v1", True, types_pb2.Job, "job"),
    Kind("DaemonSet", "daemonsets", "apps/v1", True, types_pb2.DaemonSet, "daemon_set", ("ds",)),
    Kind(
        "PersistentVolume",
        "persistentvolumes",
        "v1",
        False,
        types_pb2.PersistentVolume,
        "persistent_volume",
        ("pv",),
    ),
    Kind(
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        "v1",
        True,
        types_pb2.PersistentVolumeClaim,
        "persistent_volume_claim",
        ("pvc",),
    ),
    Kind(
        "StorageClass",
        "storageclasses",
        "storage.k8s.io/v1",
        False,
        types_pb2.StorageClass,
        "storage_class",
        ("sc",),
        has_status=False,
    ),
    Kind(
        "CSINode",
        "csinodes",
        "storage.k8s.io/v1",
        False,
        types_pb2.CSINode,
        "csi_node",
        has_status=False,
    ),
    Kind(
        "StatefulSet",
        "statefulsets",
        "apps/v1",
        True,
        types_pb2.StatefulSet,
        "stateful_set",
        ("sts",),
    ),
    Kind(
        "ServiceAccount",
        "serviceaccounts",
        "v1",
        True,
        types_pb2.ServiceAccount,
        "service_account",
        ("sa",),
        has_status=False,
    ),
    Kind("Secret", "secrets", "v1", True, types_pb2.Secret, "secret", has_status=False),
    Kind("CronJob", "cronjobs", "batch/v1", True, types_pb2.CronJob, "cron_job", ("cj",)),
    # scheduling.k8s.io pod groups (KEP-4671, KEP-5832): kubernetes/api scheduling/v1alpha1
    # (v0.35.0: Workload only, its pod groups nested), v1alpha2 (v0.36.0: Workload and
    # PodGroup), v1beta1 and v1alpha3 (1.37, kubernetes commit 3ddd5a74 "Graduate WAS APIs to
    # beta"); served with GenericWorkload on (pkg/registry/scheduling/rest).
    Kind(
        "Workload",
        "workloads",
        SCHEDULING_V1BETA1,
        True,
        types_pb2.Workload,
        "workload",
        has_status=False,
        versions=(
            (35, (SCHEDULING_V1ALPHA1,)),
            (36, (SCHEDULING_V1ALPHA2,)),
            (37, (SCHEDULING_V1BETA1, SCHEDULING_V1ALPHA3)),
        ),
        gate=GENERIC_WORKLOAD,
    ),
    Kind(
        "PodGroup",
        "podgroups",
        SCHEDULING_V1BETA1,
        True,
        types_pb2.PodGroup,
        "pod_group",
        versions=((36, (SCHEDULING_V1ALPHA2,)), (37, (SCHEDULING_V1BETA1, SCHEDULING_V1ALPHA3))),
        gate=GENERIC_WORKLOAD,
    ),
    # KEP-6012: scheduling.k8s.io/v1alpha3 only at 1.37 (kubernetes/api v0.37
    # scheduling/v1alpha3/types.go; v1beta1 has the Workload's compositePodGroupTemplates but
    # not the kind); served with CompositePodGroup on (a gate that needs GenericWorkload);
    # no short name (pkg/registry/scheduling/compositepodgroup/storage/storage.go).
    Kind(
        "CompositePodGroup",
        "compositepodgroups",
        SCHEDULING_V1ALPHA3,
        True,
        types_pb2.CompositePodGroup,
        "composite_pod_group",
        versions=((37, (SCHEDULING_V1ALPHA3,)),),
        gate=COMPOSITE_POD_GROUP,
    ),
    # resource.k8s.io (Dynamic Resource Allocation): v1 GA from 1.34 (kubernetes/api
    # resource/v1/types.go; pkg/registry/resource/rest/storage_resource.go), the earlier
    # versions as _DRA_VERSIONS (the REST edge converts their shapes:
    # kemu.machinery.resource_versions), served with DynamicResourceAllocation on; no short
    # names.
    Kind(
        "DeviceClass",
        "deviceclasses",
        RESOURCE_V1,
        False,
        types_pb2.DeviceClass,
        "device_class",
        has_status=False,
        versions=_DRA_VERSIONS,
        gate=DYNAMIC_RESOURCE_ALLOCATION,
    ),
    Kind(
        "ResourceSlice",
        "resourceslices",
        RESOURCE_V1,
        False,
        types_pb2.ResourceSlice,
        "resource_slice",
        has_status=False,
        versions=_DRA_VERSIONS,
        gate=DYNAMIC_RESOURCE_ALLOCATION,
    ),
    Kind(
        "ResourceClaim",
        "resourceclaims",
        RESOURCE_V1,
        True,
        types_pb2.ResourceClaim,
        "resource_claim",
        versions=_DRA_VERSIONS,
        gate=DYNAMIC_RESOURCE_ALLOCATION,
    ),
    Kind(
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
        RESOURCE_V1,
        True,
        types_pb2.ResourceClaimTemplate,
        "resource_claim_template",
        has_status=False,
        versions=_DRA_VERSIONS,
        gate=DYNAMIC_RESOURCE_ALLOCATION,
    ),
    # DRADeviceTaintRules: alpha (v1alpha3) at 1.35, beta (v1beta2, off) at 1.36, GA (v1) at
    # 1.37. (Upstream served it in v1alpha3 from 1.33 under DRADeviceTaints; kemu's gate
    # table has DRADeviceTaintRules from 1.35, so the kind starts there.)
    Kind(
        "DeviceTaintRule",
        "devicetaintrules",
        RESOURCE_V1,
        False,
        types_pb2.DeviceTaintRule,
        "device_taint_rule",
        versions=(
            (35, (RESOURCE_V1ALPHA3,)),
            (36, (RESOURCE_V1BETA2, RESOURCE_V1ALPHA3)),
            (37, (RESOURCE_V1, RESOURCE_V1BETA2)),
        ),
        gate=DRA_DEVICE_TAINT_RULES,
    ),
    # ---- issue #57 kinds-a: RBAC, networking, certificates, apiregistration, quota. All GA
    # long before 1.21 (rbac/v1 1.8, networking/v1 NetworkPolicy 1.7 and Ingress/IngressClass
    # 1.19, certificates/v1 1.19, apiregistration/v1 1.10): served at every emulated version.
    # Short names as upstream's REST storages (ShortNames()).
    Kind("Role", "roles", RBAC_V1, True, types_pb2.Role, "role", has_status=False),
    Kind(
        "ClusterRole",
        "clusterroles",
        RBAC_V1,
        False,
        types_pb2.ClusterRole,
        "cluster_role",
        has_status=False,
    ),
    Kind(
        "RoleBinding",
        "rolebindings",
        RBAC_V1,
        True,
        types_pb2.RoleBinding,
        "role_binding",
        has_status=False,
    ),
    Kind(
        "ClusterRoleBinding",
        "clusterrolebindings",
        RBAC_V1,
        False,
        types_pb2.ClusterRoleBinding,
        "cluster_role_binding",
        has_status=False,
    ),
    Kind("Ingress", "ingresses", NETWORKING_V1, True, types_pb2.Ingress, "ingress", ("ing",)),
    Kind(
        "IngressClass",
        "ingressclasses",
        NETWORKING_V1,
        False,
        types_pb2.IngressClass,
        "ingress_class",
        has_status=False,
    ),
    Kind(
        "NetworkPolicy",
        "networkpolicies",
        NETWORKING_V1,
        True,
        types_pb2.NetworkPolicy,
        "network_policy",
        ("netpol",),
        has_status=False,
    ),
    Kind(
        "CertificateSigningRequest",
        "certificatesigningrequests",
        "certificates.k8s.io/v1",
        False,
        types_pb2.CertificateSigningRequest,
        "certificate_signing_request",
        ("csr",),
    ),
    Kind(
        "APIService",
        "apiservices",
        "apiregistration.k8s.io/v1",
        False,
        types_pb2.APIService,
        "api_service",
    ),
    Kind(
        "LimitRange",
        "limitranges",
        "v1",
        True,
        types_pb2.LimitRange,
        "limit_range",
        ("limits",),
        has_status=False,
    ),
    Kind(
        "ResourceQuota",
        "resourcequotas",
        "v1",
        True,
        types_pb2.ResourceQuota,
        "resource_quota",
        ("quota",),
    ),
    # ---- apiextensions.k8s.io (issue #57 item 3): the CRD kind; its custom resources are
    # the kinds registered at run time below (register_custom).
    Kind(
        "CustomResourceDefinition",
        "customresourcedefinitions",
        APIEXTENSIONS_V1,
        False,
        types_pb2.CustomResourceDefinition,
        "custom_resource_definition",
        ("crd", "crds"),
    ),
    # ---- kinds-b (issue #57): core/v1 ReplicationController and Endpoints,
    # discovery.k8s.io/v1 EndpointSlice, autoscaling/v2 HorizontalPodAutoscaler; short names
    # as upstream's storages (pkg/registry/core/replicationcontroller/storage,
    # core/endpoint/storage, autoscaling/horizontalpodautoscaler/storage).
    Kind(
        "ReplicationController",
        "replicationcontrollers",
        "v1",
        True,
        types_pb2.ReplicationController,
        "replication_controller",
        ("rc",),
    ),
    Kind("Endpoints", "endpoints", "v1", True, types_pb2.Endpoints, "endpoints", ("ep",), False),
    Kind(
        "EndpointSlice",
        "endpointslices",
        "discovery.k8s.io/v1",
        True,
        types_pb2.EndpointSlice,
        "endpoint_slice",
        has_status=False,
    ),
    Kind(
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        "autoscaling/v2",
        True,
        types_pb2.HorizontalPodAutoscaler,
        "horizontal_pod_autoscaler",
        ("hpa",),
        # autoscaling/v2 from 1.23 (GA), v1 always (converted: kemu.machinery.autoscaling)
        versions=((21, ("autoscaling/v1",)), (23, ("autoscaling/v2", "autoscaling/v1"))),
    ),
    # ---- flowcontrol.apiserver.k8s.io/v1 (issue #58 item 3): GA at 1.29 (upstream's
    # pkg/registry/flowcontrol/rest/storage_flowcontrol.go); v1beta3 (the same shape) from 1.26
    # until its removal in 1.32, on by default (runtime_config.LEGACY_BETA_ON_BY_DEFAULT).
    # v1beta1 and v1beta2 are not served: before 1.26 the kinds are absent (their
    # assuredConcurrencyShares would need a conversion). No short names upstream.
    Kind(
        "FlowSchema",
        "flowschemas",
        FLOWCONTROL_V1,
        False,
        types_pb2.FlowSchema,
        "flow_schema",
        versions=_FLOWCONTROL_VERSIONS,
    ),
    Kind(
        "PriorityLevelConfiguration",
        "prioritylevelconfigurations",
        FLOWCONTROL_V1,
        False,
        types_pb2.PriorityLevelConfiguration,
        "priority_level_configuration",
        versions=_FLOWCONTROL_VERSIONS,
    ),
)

BY_KIND: Final[dict[str, Kind]] = {k.kind: k for k in KINDS}
BY_RESOURCE: Final[dict[str, Kind]] = {k.resource: k for k in KINDS}
BY_FIELD: Final[dict[str, Kind]] = {k.field: k for k in KINDS}
BY_MESSAGE: Final[dict[str, Kind]] = {k.message.DESCRIPTOR.full_name: k for k in KINDS}

_ALIASES: Final[dict[str, Kind]] = {
    alias: k
    for k in KINDS
    for alias in (k.kind.lower(), k.resource, k.resource.rstrip("s"), *k.short_names)
}


_CUSTOM: Final[dict[str, Kind]] = {}
"""The custom resources this process knows, by resource (plural.group): the apiserver's
CRD controller registers a CRD's kind once its names are accepted and forgets it when the CRD
goes; a client registers those it reads from the CRDs it was asked about. (Process-wide as
upstream's RESTMapper is per client; kinds are values, so a stale entry is harmless.)"""


def register_custom(kind: Kind) -> None:
    _CUSTOM[kind.resource] = kind


def forget_custom(resource: str) -> None:
    _CUSTOM.pop(resource, None)


def custom_kinds() -> tuple[Kind, ...]:
    return tuple(_CUSTOM.values())


def custom_kind(group: str, kind: str) -> Kind | None:
    """The registered custom resource of a group's kind."""
    for k in _CUSTOM.values():
        if k.kind == kind and k.group == group:
            return k
    return None


def registered_group_versions(minor: int) -> tuple[str, ...]:
    """Every group version some kind is served as at 1.`minor` (its gate aside), in KINDS'
    order: what --runtime-config addresses there."""
    out: list[str] = []
    for k in KINDS:
        for gv in k.api_versions_at(minor):
            if gv not in out:
                out.append(gv)
    return tuple(out)


_KNOWN_GROUP_VERSIONS: Final = frozenset(
    gv for k in KINDS for gv in (k.api_version, *(v for _, vs in k.versions for v in vs))
)


def resource_config(runtime: RuntimeConfig, minor: int) -> ResourceConfig:
    """The group versions and resources enabled at 1.`minor` under `runtime`;
    RuntimeConfigError (upstream's message, naming the key) for one the apiserver refuses."""
    return resolve(runtime, minor, registered_group_versions(minor), _KNOWN_GROUP_VERSIONS)


@dataclass(frozen=True)
class Served:
    """What one apiserver serves: per kind, its group versions (preferred first) at the
    emulated version, enabled by the runtime config (upstream's defaults: alpha off, beta off
    from 1.24; kemu.machinery.runtime_config), with the process's gates; a kind left out is not
    served (NotFound, not in discovery). Resolved once (`Served.at`) and passed down."""

    minor: int
    api_versions: Mapping[str, tuple[str, ...]]
    """Kind name -> the group versions served."""

    @classmethod
    def at(cls, minor: int, enabled: Callable[[str], bool], runtime: RuntimeConfig) -> Served:
        """The one resolution of what is served: emulated version 1.`minor`, the gates
        (`enabled`) and the runtime config. A kind behind a gate needs it on and one of its
        group versions enabled (pkg/registry/scheduling/rest checks both); a group version
        whose resource is disabled leaves that kind out of it."""
        config = resource_config(runtime, minor)
        out: dict[str, tuple[str, ...]] = {}
        for k in KINDS:
            if k.gate and not enabled(k.gate):
                continue
            versions = tuple(
                gv for gv in k.api_versions_at(minor) if config.resource_enabled(gv, k.resource)
            )
            if versions:
                out[k.kind] = versions
        return cls(minor, out)

    def __hash__(self) -> int:
        return hash((self.minor, tuple(self.api_versions.items())))

    def serves(self, kind: Kind) -> bool:
        if kind.custom:
            return kind.resource in _CUSTOM
        return kind.kind in self.api_versions

    def check(self, kind: Kind) -> None:
        """NotFound for a kind not served, as upstream answers a resource it does not have."""
        if not self.serves(kind):
            raise NotFound(
                f"the server could not find the requested resource ({kind.resource}"
                f"{'.' + kind.api_version.partition('/')[0] if '/' in kind.api_version else ''})"
            )

    def preferred(self, kind: Kind) -> str:
        """The preferred group version of a served kind (its message's own otherwise)."""
        if kind.custom:
            return kind.api_versions_at(self.minor)[0]
        versions = self.api_versions.get(kind.kind)
        return versions[0] if versions else kind.api_version

    def kinds_of(self, group: str, version: str) -> list[Kind]:
        """The kinds served under a group version, in KINDS' order, then the custom
        resources served there."""
        gv = f"{group}/{version}" if group else version
        return [k for k in KINDS if gv in self.api_versions.get(k.kind, ())] + [
            k for k in _CUSTOM.values() if gv in k.api_versions_at(self.minor)
        ]

    def group_versions(self) -> list[tuple[str, str]]:
        """Every served (group, version), in KINDS' order, each kind's preferred first."""
        out: list[tuple[str, str]] = []
        for k in KINDS:
            for gv in self.api_versions.get(k.kind, ()):
                group, _, version = gv.rpartition("/")
                if (group, version) not in out:
                    out.append((group, version))
        for k in _CUSTOM.values():
            for gv in k.api_versions_at(self.minor):
                group, _, version = gv.rpartition("/")
                if (group, version) not in out:
                    out.append((group, version))
        return out


ALL_SERVED: Final = Served(
    37, {k.kind: k.api_versions_at(37) for k in KINDS if k.api_versions_at(37)}
)
"""Every kind at 1.37 with every gate on and `api/all=true` (tests and tools that serve all)."""


def kind_for_resource(resource: str) -> Kind:
    """The kind served under a resource name (pods); BadRequest for an unknown one."""
    k = BY_RESOURCE.get(resource) or _CUSTOM.get(resource)
    if k is None:
        raise BadRequest(f"the server could not find the requested resource {resource!r}")
    return k


def lookup(name: str) -> Kind:
    """Resolves what a user types (pod, pods, po, Pod, PodDisruptionBudget, pdb)."""
    k = BY_KIND.get(name) or _ALIASES.get(name.lower()) or _custom_alias(name)
    if k is None:
        raise BadRequest(f'the server doesn\'t have a resource type "{name}"')
    return k


def _custom_alias(name: str) -> Kind | None:
    low = name.lower()
    for k in _CUSTOM.values():
        if low in (k.kind.lower(), k.plural, k.singular, k.resource, *k.short_names):
            return k
    return None


def kind_of(obj: Message) -> Kind:
    if isinstance(obj, types_pb2.CustomObject):
        group = obj.api_version.rpartition("/")[0]
        found = custom_kind(group, obj.kind)
        if found is None:
            raise NotFound(f'no custom resource of kind "{obj.kind}" in group "{group}"')
        return found
    k = BY_MESSAGE.get(obj.DESCRIPTOR.full_name)
    if k is None:
        raise BadRequest(f"{obj.DESCRIPTOR.full_name} is not an API kind")
    return k


def wrap(obj: Message) -> api_pb2.Object:
    """Puts an object into the Object envelope (copying it)."""
    out = api_pb2.Object()
    getattr(out, kind_of(obj).field).CopyFrom(obj)
    return out


def unwrap(envelope: api_pb2.Object) -> Message:
    """The object inside an envelope (a reference into it, not a copy)."""
    which = envelope.WhichOneof("kind")
    if which is None:
        raise BadRequest("object: a kind is required")
    msg: Message = getattr(envelope, which)
    return msg


# Event.type values (upstream core/v1 EventTypeNormal and EventTypeWarning).
EVENT_NORMAL: Final = "Normal"
EVENT_WARNING: Final = "Warning"


INITIAL_EVENTS_END_ANNOTATION: Final = "k8s.io/initial-events-end"
"""On the BOOKMARK that ends a watch's initial events (sendInitialEvents), value "true"."""

import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from kemu.api.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Object(_message.Message):
    __slots__ = ("pod", "node", "priority_class", "pod_disruption_budget", "lease", "event", "namespace", "service", "config_map", "replica_set", "deployment", "job", "daemon_set", "persistent_volume", "persistent_volume_claim", "storage_class", "csi_node", "stateful_set", "service_account", "secret", "cron_job", "workload", "pod_group", "composite_pod_group", "device_class", "resource_slice", "resource_claim", "resource_claim_template", "device_taint_rule", "role", "cluster_role", "role_binding", "cluster_role_binding", "ingress", "ingress_class", "network_policy", "certificate_signing_request", "api_service", "limit_range", "resource_quota", "custom_resource_definition", "custom_object", "replication_controller", "endpoints", "endpoint_slice", "horizontal_pod_autoscaler", "flow_schema", "priority_level_configuration")
    POD_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASS_FIELD_NUMBER: _ClassVar[int]
    POD_DISRUPTION_BUDGET_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    CONFIG_MAP_FIELD_NUMBER: _ClassVar[int]
    REPLICA_SET_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    DAEMON_SET_FIELD_NUMBER: _ClassVar[int]
    PERSISTENT_VOLUME_FIELD_NUMBER: _ClassVar[int]
    PERSISTENT_VOLUME_CLAIM_FIELD_NUMBER: _ClassVar[int]
    STORAGE_CLASS_FIELD_NUMBER: _ClassVar[int]
    CSI_NODE_FIELD_NUMBER: _ClassVar[int]
    STATEFUL_SET_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    CRON_JOB_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_FIELD_NUMBER: _ClassVar[int]
    POD_GROUP_FIELD_NUMBER: _ClassVar[int]
    COMPOSITE_POD_GROUP_FIELD_NUMBER: _ClassVar[int]
    DEVICE_CLASS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_SLICE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIM_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIM_TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    DEVICE_TAINT_RULE_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ROLE_FIELD_NUMBER: _ClassVar[int]
    ROLE_BINDING_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ROLE_BINDING_FIELD_NUMBER: _ClassVar[int]
    INGRESS_FIELD_NUMBER: _ClassVar[int]
    INGRESS_CLASS_FIELD_NUMBER: _ClassVar[int]
    NETWORK_POLICY_FIELD_NUMBER: _ClassVar[int]
    CERTIFICATE_SIGNING_REQUEST_FIELD_NUMBER: _ClassVar[int]
    API_SERVICE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_RANGE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_QUOTA_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_RESOURCE_DEFINITION_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_OBJECT_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_SLICE_FIELD_NUMBER: _ClassVar[int]
    HORIZONTAL_POD_AUTOSCALER_FIELD_NUMBER: _ClassVar[int]
    FLOW_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_LEVEL_CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    pod: _types_pb2.Pod
    node: _types_pb2.Node
    priority_class: _types_pb2.PriorityClass
    pod_disruption_budget: _types_pb2.PodDisruptionBudget
    lease: _types_pb2.Lease
    event: _types_pb2.Event
    namespace: _types_pb2.Namespace
    service: _types_pb2.Service
    config_map: _types_pb2.ConfigMap
    replica_set: _types_pb2.ReplicaSet
    deployment: _types_pb2.Deployment
    job: _types_pb2.Job
    daemon_set: _types_pb2.DaemonSet
    persistent_volume: _types_pb2.PersistentVolume
    persistent_volume_claim: _types_pb2.PersistentVolumeClaim
    storage_class: _types_pb2.StorageClass
    csi_node: _types_pb2.CSINode
    stateful_set: _types_pb2.StatefulSet
    service_account: _types_pb2.ServiceAccount
    secret: _types_pb2.Secret
    cron_job: _types_pb2.CronJob
    workload: _types_pb2.Workload
    pod_group: _types_pb2.PodGroup
    composite_pod_group: _types_pb2.CompositePodGroup
    device_class: _types_pb2.DeviceClass
    resource_slice: _types_pb2.ResourceSlice
    resource_claim: _types_pb2.ResourceClaim
    resource_claim_template: _types_pb2.ResourceClaimTemplate
    device_taint_rule: _types_pb2.DeviceTaintRule
    role: _types_pb2.Role
    cluster_role: _types_pb2.ClusterRole
    role_binding: _types_pb2.RoleBinding
    cluster_role_binding: _types_pb2.ClusterRoleBinding
    ingress: _types_pb2.Ingress
    ingress_class: _types_pb2.IngressClass
    network_policy: _types_pb2.NetworkPolicy
    certificate_signing_request: _types_pb2.CertificateSigningRequest
    api_service: _types_pb2.APIService
    limit_range: _types_pb2.LimitRange
    resource_quota: _types_pb2.ResourceQuota
    custom_resource_definition: _types_pb2.CustomResourceDefinition
    custom_object: _types_pb2.CustomObject
    replication_controller: _types_pb2.ReplicationController
    endpoints: _types_pb2.Endpoints
    endpoint_slice: _types_pb2.EndpointSlice
    horizontal_pod_autoscaler: _types_pb2.HorizontalPodAutoscaler
    flow_schema: _types_pb2.FlowSchema
    priority_level_configuration: _types_pb2.PriorityLevelConfiguration
    def __init__(self, pod: _Optional[_Union[_types_pb2.Pod, _Mapping]] = ..., node: _Optional[_Union[_types_pb2.Node, _Mapping]] = ..., priority_class: _Optional[_Union[_types_pb2.PriorityClass, _Mapping]] = ..., pod_disruption_budget: _Optional[_Union[_types_pb2.PodDisruptionBudget, _Mapping]] = ..., lease: _Optional[_Union[_types_pb2.Lease, _Mapping]] = ..., event: _Optional[_Union[_types_pb2.Event, _Mapping]] = ..., namespace: _Optional[_Union[_types_pb2.Namespace, _Mapping]] = ..., service: _Optional[_Union[_types_pb2.Service, _Mapping]] = ..., config_map: _Optional[_Union[_types_pb2.ConfigMap, _Mapping]] = ..., replica_set: _Optional[_Union[_types_pb2.ReplicaSet, _Mapping]] = ..., deployment: _Optional[_Union[_types_pb2.Deployment, _Mapping]] = ..., job: _Optional[_Union[_types_pb2.Job, _Mapping]] = ..., daemon_set: _Optional[_Union[_types_pb2.DaemonSet, _Mapping]] = ..., persistent_volume: _Optional[_Union[_types_pb2.PersistentVolume, _Mapping]] = ..., persistent_volume_claim: _Optional[_Union[_types_pb2.PersistentVolumeClaim, _Mapping]] = ..., storage_class: _Optional[_Union[_types_pb2.StorageClass, _Mapping]] = ..., csi_node: _Optional[_Union[_types_pb2.CSINode, _Mapping]] = ..., stateful_set: _Optional[_Union[_types_pb2.StatefulSet, _Mapping]] = ..., service_account: _Optional[_Union[_types_pb2.ServiceAccount, _Mapping]] = ..., secret: _Optional[_Union[_types_pb2.Secret, _Mapping]] = ..., cron_job: _Optional[_Union[_types_pb2.CronJob, _Mapping]] = ..., workload: _Optional[_Union[_types_pb2.Workload, _Mapping]] = ..., pod_group: _Optional[_Union[_types_pb2.PodGroup, _Mapping]] = ..., composite_pod_group: _Optional[_Union[_types_pb2.CompositePodGroup, _Mapping]] = ..., device_class: _Optional[_Union[_types_pb2.DeviceClass, _Mapping]] = ..., resource_slice: _Optional[_Union[_types_pb2.ResourceSlice, _Mapping]] = ..., resource_claim: _Optional[_Union[_types_pb2.ResourceClaim, _Mapping]] = ..., resource_claim_template: _Optional[_Union[_types_pb2.ResourceClaimTemplate, _Mapping]] = ..., device_taint_rule: _Optional[_Union[_types_pb2.DeviceTaintRule, _Mapping]] = ..., role: _Optional[_Union[_types_pb2.Role, _Mapping]] = ..., cluster_role: _Optional[_Union[_types_pb2.ClusterRole, _Mapping]] = ..., role_binding: _Optional[_Union[_types_pb2.RoleBinding, _Mapping]] = ..., cluster_role_binding: _Optional[_Union[_types_pb2.ClusterRoleBinding, _Mapping]] = ..., ingress: _Optional[_Union[_types_pb2.Ingress, _Mapping]] = ..., ingress_class: _Optional[_Union[_types_pb2.IngressClass, _Mapping]] = ..., network_policy: _Optional[_Union[_types_pb2.NetworkPolicy, _Mapping]] = ..., certificate_signing_request: _Optional[_Union[_types_pb2.CertificateSigningRequest, _Mapping]] = ..., api_service: _Optional[_Union[_types_pb2.APIService, _Mapping]] = ..., limit_range: _Optional[_Union[_types_pb2.LimitRange, _Mapping]] = ..., resource_quota: _Optional[_Union[_types_pb2.ResourceQuota, _Mapping]] = ..., custom_resource_definition: _Optional[_Union[_types_pb2.CustomResourceDefinition, _Mapping]] = ..., custom_object: _Optional[_Union[_types_pb2.CustomObject, _Mapping]] = ..., replication_controller: _Optional[_Union[_types_pb2.ReplicationController, _Mapping]] = ..., endpoints: _Optional[_Union[_types_pb2.Endpoints, _Mapping]] = ..., endpoint_slice: _Optional[_Union[_types_pb2.EndpointSlice, _Mapping]] = ..., horizontal_pod_autoscaler: _Optional[_Union[_types_pb2.HorizontalPodAutoscaler, _Mapping]] = ..., flow_schema: _Optional[_Union[_types_pb2.FlowSchema, _Mapping]] = ..., priority_level_configuration: _Optional[_Union[_types_pb2.PriorityLevelConfiguration, _Mapping]] = ...) -> None: ...

class CreateRequest(_message.Message):
    __slots__ = ("object",)
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    object: Object
    def __init__(self, object: _Optional[_Union[Object, _Mapping]] = ...) -> None: ...

class GetRequest(_message.Message):
    __slots__ = ("resource", "namespace", "name")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    resource: str
    namespace: str
    name: str
    def __init__(self, resource: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class ListRequest(_message.Message):
    __slots__ = ("resource", "namespace", "label_selector", "field_selector", "resource_version", "resource_version_match", "limit")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    FIELD_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_MATCH_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    CONTINUE_FIELD_NUMBER: _ClassVar[int]
    resource: str
    namespace: str
    label_selector: str
    field_selector: str
    resource_version: str
    resource_version_match: str
    limit: int
    def __init__(self, resource: _Optional[str] = ..., namespace: _Optional[str] = ..., label_selector: _Optional[str] = ..., field_selector: _Optional[str] = ..., resource_version: _Optional[str] = ..., resource_version_match: _Optional[str] = ..., limit: _Optional[int] = ..., **kwargs) -> None: ...

class ListResponse(_message.Message):
    __slots__ = ("items", "resource_version")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    CONTINUE_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[Object]
    resource_version: str
    def __init__(self, items: _Optional[_Iterable[_Union[Object, _Mapping]]] = ..., resource_version: _Optional[str] = ..., **kwargs) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ("resource", "namespace", "label_selector", "field_selector", "resource_version", "allow_watch_bookmarks", "send_initial_events", "resource_version_match")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    FIELD_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    ALLOW_WATCH_BOOKMARKS_FIELD_NUMBER: _ClassVar[int]
    SEND_INITIAL_EVENTS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_MATCH_FIELD_NUMBER: _ClassVar[int]
    resource: str
    namespace: str
    label_selector: str
    field_selector: str
    resource_version: str
    allow_watch_bookmarks: bool
    send_initial_events: bool
    resource_version_match: str
    def __init__(self, resource: _Optional[str] = ..., namespace: _Optional[str] = ..., label_selector: _Optional[str] = ..., field_selector: _Optional[str] = ..., resource_version: _Optional[str] = ..., allow_watch_bookmarks: _Optional[bool] = ..., send_initial_events: _Optional[bool] = ..., resource_version_match: _Optional[str] = ...) -> None: ...

class WatchEvent(_message.Message):
    __slots__ = ("type", "object")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    type: str
    object: Object
    def __init__(self, type: _Optional[str] = ..., object: _Optional[_Union[Object, _Mapping]] = ...) -> None: ...

class WatchResponse(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[WatchEvent]
    def __init__(self, events: _Optional[_Iterable[_Union[WatchEvent, _Mapping]]] = ...) -> None: ...

class UpdateRequest(_message.Message):
    __slots__ = ("object",)
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    object: Object
    def __init__(self, object: _Optional[_Union[Object, _Mapping]] = ...) -> None: ...

class UpdateBatchRequest(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[UpdateRequest]
    def __init__(self, items: _Optional[_Iterable[_Union[UpdateRequest, _Mapping]]] = ...) -> None: ...

class UpdateResult(_message.Message):
    __slots__ = ("object", "error")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    object: Object
    error: Status
    def __init__(self, object: _Optional[_Union[Object, _Mapping]] = ..., error: _Optional[_Union[Status, _Mapping]] = ...) -> None: ...

class UpdateBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[UpdateResult]
    def __init__(self, results: _Optional[_Iterable[_Union[UpdateResult, _Mapping]]] = ...) -> None: ...

class PatchRequest(_message.Message):
    __slots__ = ("resource", "namespace", "name", "patch", "subresource")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PATCH_FIELD_NUMBER: _ClassVar[int]
    SUBRESOURCE_FIELD_NUMBER: _ClassVar[int]
    resource: str
    namespace: str
    name: str
    patch: str
    subresource: str
    def __init__(self, resource: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., patch: _Optional[str] = ..., subresource: _Optional[str] = ...) -> None: ...

class Preconditions(_message.Message):
    __slots__ = ("uid", "resource_version")
    UID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    uid: str
    resource_version: str
    def __init__(self, uid: _Optional[str] = ..., resource_version: _Optional[str] = ...) -> None: ...

class DeleteRequest(_message.Message):
    __slots__ = ("resource", "namespace", "name", "grace_period_seconds", "preconditions", "propagation_policy", "orphan_dependents")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    GRACE_PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PRECONDITIONS_FIELD_NUMBER: _ClassVar[int]
    PROPAGATION_POLICY_FIELD_NUMBER: _ClassVar[int]
    ORPHAN_DEPENDENTS_FIELD_NUMBER: _ClassVar[int]
    resource: str
    namespace: str
    name: str
    grace_period_seconds: int
    preconditions: Preconditions
    propagation_policy: str
    orphan_dependents: bool
    def __init__(self, resource: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., grace_period_seconds: _Optional[int] = ..., preconditions: _Optional[_Union[Preconditions, _Mapping]] = ..., propagation_policy: _Optional[str] = ..., orphan_dependents: _Optional[bool] = ...) -> None: ...

class Binding(_message.Message):
    __slots__ = ("metadata", "target")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    metadata: _types_pb2.ObjectMeta
    target: _types_pb2.ObjectReference
    def __init__(self, metadata: _Optional[_Union[_types_pb2.ObjectMeta, _Mapping]] = ..., target: _Optional[_Union[_types_pb2.ObjectReference, _Mapping]] = ...) -> None: ...

class Eviction(_message.Message):
    __slots__ = ("metadata", "grace_period_seconds", "preconditions", "propagation_policy", "dry_run")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    GRACE_PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PRECONDITIONS_FIELD_NUMBER: _ClassVar[int]
    PROPAGATION_POLICY_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    metadata: _types_pb2.ObjectMeta
    grace_period_seconds: int
    preconditions: Preconditions
    propagation_policy: str
    dry_run: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, metadata: _Optional[_Union[_types_pb2.ObjectMeta, _Mapping]] = ..., grace_period_seconds: _Optional[int] = ..., preconditions: _Optional[_Union[Preconditions, _Mapping]] = ..., propagation_policy: _Optional[str] = ..., dry_run: _Optional[_Iterable[str]] = ...) -> None: ...

class TokenRequest(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: _types_pb2.ObjectMeta
    spec: TokenRequestSpec
    status: TokenRequestStatus
    def __init__(self, metadata: _Optional[_Union[_types_pb2.ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[TokenRequestSpec, _Mapping]] = ..., status: _Optional[_Union[TokenRequestStatus, _Mapping]] = ...) -> None: ...

class TokenRequestSpec(_message.Message):
    __slots__ = ("audiences", "expiration_seconds", "bound_object_ref")
    AUDIENCES_FIELD_NUMBER: _ClassVar[int]
    EXPIRATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    BOUND_OBJECT_REF_FIELD_NUMBER: _ClassVar[int]
    audiences: _containers.RepeatedScalarFieldContainer[str]
    expiration_seconds: int
    bound_object_ref: BoundObjectReference
    def __init__(self, audiences: _Optional[_Iterable[str]] = ..., expiration_seconds: _Optional[int] = ..., bound_object_ref: _Optional[_Union[BoundObjectReference, _Mapping]] = ...) -> None: ...

class BoundObjectReference(_message.Message):
    __slots__ = ("kind", "api_version", "name", "uid")
    KIND_FIELD_NUMBER: _ClassVar[int]
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    kind: str
    api_version: str
    name: str
    uid: str
    def __init__(self, kind: _Optional[str] = ..., api_version: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ...) -> None: ...

class TokenRequestStatus(_message.Message):
    __slots__ = ("token", "expiration_timestamp")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    EXPIRATION_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    token: str
    expiration_timestamp: _timestamp_pb2.Timestamp
    def __init__(self, token: _Optional[str] = ..., expiration_timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Status(_message.Message):
    __slots__ = ("status", "message", "reason", "code")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    status: str
    message: str
    reason: str
    code: int
    def __init__(self, status: _Optional[str] = ..., message: _Optional[str] = ..., reason: _Optional[str] = ..., code: _Optional[int] = ...) -> None: ...

class VersionRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Metadatum(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class CallFrame(_message.Message):
    __slots__ = ("id", "method", "payload", "metadata", "timeout_seconds", "cancel")
    ID_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    id: int
    method: str
    payload: bytes
    metadata: _containers.RepeatedCompositeFieldContainer[Metadatum]
    timeout_seconds: float
    cancel: bool
    def __init__(self, id: _Optional[int] = ..., method: _Optional[str] = ..., payload: _Optional[bytes] = ..., metadata: _Optional[_Iterable[_Union[Metadatum, _Mapping]]] = ..., timeout_seconds: _Optional[float] = ..., cancel: _Optional[bool] = ...) -> None: ...

class CallFrames(_message.Message):
    __slots__ = ("frames",)
    FRAMES_FIELD_NUMBER: _ClassVar[int]
    frames: _containers.RepeatedCompositeFieldContainer[CallFrame]
    def __init__(self, frames: _Optional[_Iterable[_Union[CallFrame, _Mapping]]] = ...) -> None: ...

class ReplyFrame(_message.Message):
    __slots__ = ("id", "payload", "code", "details", "trailing")
    ID_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    TRAILING_FIELD_NUMBER: _ClassVar[int]
    id: int
    payload: bytes
    code: int
    details: str
    trailing: _containers.RepeatedCompositeFieldContainer[Metadatum]
    def __init__(self, id: _Optional[int] = ..., payload: _Optional[bytes] = ..., code: _Optional[int] = ..., details: _Optional[str] = ..., trailing: _Optional[_Iterable[_Union[Metadatum, _Mapping]]] = ...) -> None: ...

class ReplyFrames(_message.Message):
    __slots__ = ("replies",)
    REPLIES_FIELD_NUMBER: _ClassVar[int]
    replies: _containers.RepeatedCompositeFieldContainer[ReplyFrame]
    def __init__(self, replies: _Optional[_Iterable[_Union[ReplyFrame, _Mapping]]] = ...) -> None: ...

class FeatureGateState(_message.Message):
    __slots__ = ("name", "enabled", "stage", "locked")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    LOCKED_FIELD_NUMBER: _ClassVar[int]
    name: str
    enabled: bool
    stage: str
    locked: bool
    def __init__(self, name: _Optional[str] = ..., enabled: _Optional[bool] = ..., stage: _Optional[str] = ..., locked: _Optional[bool] = ...) -> None: ...

class ComponentVersion(_message.Message):
    __slots__ = ("component", "identity", "emulated_version", "binary_version", "feature_gates", "runtime_config")
    COMPONENT_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    EMULATED_VERSION_FIELD_NUMBER: _ClassVar[int]
    BINARY_VERSION_FIELD_NUMBER: _ClassVar[int]
    FEATURE_GATES_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_CONFIG_FIELD_NUMBER: _ClassVar[int]
    component: str
    identity: str
    emulated_version: str
    binary_version: str
    feature_gates: _containers.RepeatedCompositeFieldContainer[FeatureGateState]
    runtime_config: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, component: _Optional[str] = ..., identity: _Optional[str] = ..., emulated_version: _Optional[str] = ..., binary_version: _Optional[str] = ..., feature_gates: _Optional[_Iterable[_Union[FeatureGateState, _Mapping]]] = ..., runtime_config: _Optional[_Iterable[str]] = ...) -> None: ...

class VersionInfo(_message.Message):
    __slots__ = ("server", "components")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    server: ComponentVersion
    components: _containers.RepeatedCompositeFieldContainer[ComponentVersion]
    def __init__(self, server: _Optional[_Union[ComponentVersion, _Mapping]] = ..., components: _Optional[_Iterable[_Union[ComponentVersion, _Mapping]]] = ...) -> None: ...

import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ObjectMeta(_message.Message):
    __slots__ = ("name", "generate_name", "namespace", "uid", "resource_version", "generation", "creation_timestamp", "deletion_timestamp", "deletion_grace_period_seconds", "labels", "annotations", "owner_references", "finalizers", "managed_fields")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    GENERATE_NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    CREATION_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    DELETION_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    DELETION_GRACE_PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    OWNER_REFERENCES_FIELD_NUMBER: _ClassVar[int]
    FINALIZERS_FIELD_NUMBER: _ClassVar[int]
    MANAGED_FIELDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    generate_name: str
    namespace: str
    uid: str
    resource_version: str
    generation: int
    creation_timestamp: _timestamp_pb2.Timestamp
    deletion_timestamp: _timestamp_pb2.Timestamp
    deletion_grace_period_seconds: int
    labels: _containers.ScalarMap[str, str]
    annotations: _containers.ScalarMap[str, str]
    owner_references: _containers.RepeatedCompositeFieldContainer[OwnerReference]
    finalizers: _containers.RepeatedScalarFieldContainer[str]
    managed_fields: _containers.RepeatedCompositeFieldContainer[ManagedFieldsEntry]
    def __init__(self, name: _Optional[str] = ..., generate_name: _Optional[str] = ..., namespace: _Optional[str] = ..., uid: _Optional[str] = ..., resource_version: _Optional[str] = ..., generation: _Optional[int] = ..., creation_timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., deletion_timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., deletion_grace_period_seconds: _Optional[int] = ..., labels: _Optional[_Mapping[str, str]] = ..., annotations: _Optional[_Mapping[str, str]] = ..., owner_references: _Optional[_Iterable[_Union[OwnerReference, _Mapping]]] = ..., finalizers: _Optional[_Iterable[str]] = ..., managed_fields: _Optional[_Iterable[_Union[ManagedFieldsEntry, _Mapping]]] = ...) -> None: ...

class ManagedFieldsEntry(_message.Message):
    __slots__ = ("manager", "operation", "api_version", "time", "fields_type", "fields_v1", "subresource")
    MANAGER_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    FIELDS_TYPE_FIELD_NUMBER: _ClassVar[int]
    FIELDS_V1_FIELD_NUMBER: _ClassVar[int]
    SUBRESOURCE_FIELD_NUMBER: _ClassVar[int]
    manager: str
    operation: str
    api_version: str
    time: _timestamp_pb2.Timestamp
    fields_type: str
    fields_v1: RawExtension
    subresource: str
    def __init__(self, manager: _Optional[str] = ..., operation: _Optional[str] = ..., api_version: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., fields_type: _Optional[str] = ..., fields_v1: _Optional[_Union[RawExtension, _Mapping]] = ..., subresource: _Optional[str] = ...) -> None: ...

class OwnerReference(_message.Message):
    __slots__ = ("api_version", "kind", "name", "uid", "controller", "block_owner_deletion")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    BLOCK_OWNER_DELETION_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool
    block_owner_deletion: bool
    def __init__(self, api_version: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ..., controller: _Optional[bool] = ..., block_owner_deletion: _Optional[bool] = ...) -> None: ...

class LabelSelectorRequirement(_message.Message):
    __slots__ = ("key", "operator", "values")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    key: str
    operator: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class LabelSelector(_message.Message):
    __slots__ = ("match_labels", "match_expressions")
    class MatchLabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    MATCH_LABELS_FIELD_NUMBER: _ClassVar[int]
    MATCH_EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    match_labels: _containers.ScalarMap[str, str]
    match_expressions: _containers.RepeatedCompositeFieldContainer[LabelSelectorRequirement]
    def __init__(self, match_labels: _Optional[_Mapping[str, str]] = ..., match_expressions: _Optional[_Iterable[_Union[LabelSelectorRequirement, _Mapping]]] = ...) -> None: ...

class IntOrString(_message.Message):
    __slots__ = ("int_val", "str_val")
    INT_VAL_FIELD_NUMBER: _ClassVar[int]
    STR_VAL_FIELD_NUMBER: _ClassVar[int]
    int_val: int
    str_val: str
    def __init__(self, int_val: _Optional[int] = ..., str_val: _Optional[str] = ...) -> None: ...

class ObjectReference(_message.Message):
    __slots__ = ("kind", "namespace", "name", "uid", "api_version", "resource_version", "field_path")
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    FIELD_PATH_FIELD_NUMBER: _ClassVar[int]
    kind: str
    namespace: str
    name: str
    uid: str
    api_version: str
    resource_version: str
    field_path: str
    def __init__(self, kind: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ..., api_version: _Optional[str] = ..., resource_version: _Optional[str] = ..., field_path: _Optional[str] = ...) -> None: ...

class Condition(_message.Message):
    __slots__ = ("type", "status", "observed_generation", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    observed_generation: int
    last_transition_time: _timestamp_pb2.Timestamp
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., observed_generation: _Optional[int] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ResourceRequirements(_message.Message):
    __slots__ = ("requests", "limits", "claims")
    class RequestsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class LimitsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    CLAIMS_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.ScalarMap[str, str]
    limits: _containers.ScalarMap[str, str]
    claims: _containers.RepeatedCompositeFieldContainer[ContainerResourceClaim]
    def __init__(self, requests: _Optional[_Mapping[str, str]] = ..., limits: _Optional[_Mapping[str, str]] = ..., claims: _Optional[_Iterable[_Union[ContainerResourceClaim, _Mapping]]] = ...) -> None: ...

class ContainerResourceClaim(_message.Message):
    __slots__ = ("name", "request")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    name: str
    request: str
    def __init__(self, name: _Optional[str] = ..., request: _Optional[str] = ...) -> None: ...

class ContainerResizePolicy(_message.Message):
    __slots__ = ("resource_name", "restart_policy")
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    RESTART_POLICY_FIELD_NUMBER: _ClassVar[int]
    resource_name: str
    restart_policy: str
    def __init__(self, resource_name: _Optional[str] = ..., restart_policy: _Optional[str] = ...) -> None: ...

class ContainerPort(_message.Message):
    __slots__ = ("name", "host_port", "container_port", "protocol", "host_ip")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_PORT_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_PORT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    HOST_IP_FIELD_NUMBER: _ClassVar[int]
    name: str
    host_port: int
    container_port: int
    protocol: str
    host_ip: str
    def __init__(self, name: _Optional[str] = ..., host_port: _Optional[int] = ..., container_port: _Optional[int] = ..., protocol: _Optional[str] = ..., host_ip: _Optional[str] = ...) -> None: ...

class ObjectFieldSelector(_message.Message):
    __slots__ = ("api_version", "field_path")
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    FIELD_PATH_FIELD_NUMBER: _ClassVar[int]
    api_version: str
    field_path: str
    def __init__(self, api_version: _Optional[str] = ..., field_path: _Optional[str] = ...) -> None: ...

class ResourceFieldSelector(_message.Message):
    __slots__ = ("container_name", "resource", "divisor")
    CONTAINER_NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    DIVISOR_FIELD_NUMBER: _ClassVar[int]
    container_name: str
    resource: str
    divisor: str
    def __init__(self, container_name: _Optional[str] = ..., resource: _Optional[str] = ..., divisor: _Optional[str] = ...) -> None: ...

class ConfigMapKeySelector(_message.Message):
    __slots__ = ("name", "key", "optional")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    key: str
    optional: bool
    def __init__(self, name: _Optional[str] = ..., key: _Optional[str] = ..., optional: _Optional[bool] = ...) -> None: ...

class SecretKeySelector(_message.Message):
    __slots__ = ("name", "key", "optional")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    key: str
    optional: bool
    def __init__(self, name: _Optional[str] = ..., key: _Optional[str] = ..., optional: _Optional[bool] = ...) -> None: ...

class EnvVarSource(_message.Message):
    __slots__ = ("field_ref", "resource_field_ref", "config_map_key_ref", "secret_key_ref")
    FIELD_REF_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_REF_FIELD_NUMBER: _ClassVar[int]
    CONFIG_MAP_KEY_REF_FIELD_NUMBER: _ClassVar[int]
    SECRET_KEY_REF_FIELD_NUMBER: _ClassVar[int]
    field_ref: ObjectFieldSelector
    resource_field_ref: ResourceFieldSelector
    config_map_key_ref: ConfigMapKeySelector
    secret_key_ref: SecretKeySelector
    def __init__(self, field_ref: _Optional[_Union[ObjectFieldSelector, _Mapping]] = ..., resource_field_ref: _Optional[_Union[ResourceFieldSelector, _Mapping]] = ..., config_map_key_ref: _Optional[_Union[ConfigMapKeySelector, _Mapping]] = ..., secret_key_ref: _Optional[_Union[SecretKeySelector, _Mapping]] = ...) -> None: ...

class EnvVar(_message.Message):
    __slots__ = ("name", "value", "value_from")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FROM_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    value_from: EnvVarSource
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ..., value_from: _Optional[_Union[EnvVarSource, _Mapping]] = ...) -> None: ...

class ConfigMapEnvSource(_message.Message):
    __slots__ = ("name", "optional")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    optional: bool
    def __init__(self, name: _Optional[str] = ..., optional: _Optional[bool] = ...) -> None: ...

class SecretEnvSource(_message.Message):
    __slots__ = ("name", "optional")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    optional: bool
    def __init__(self, name: _Optional[str] = ..., optional: _Optional[bool] = ...) -> None: ...

class EnvFromSource(_message.Message):
    __slots__ = ("prefix", "config_map_ref", "secret_ref")
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    CONFIG_MAP_REF_FIELD_NUMBER: _ClassVar[int]
    SECRET_REF_FIELD_NUMBER: _ClassVar[int]
    prefix: str
    config_map_ref: ConfigMapEnvSource
    secret_ref: SecretEnvSource
    def __init__(self, prefix: _Optional[str] = ..., config_map_ref: _Optional[_Union[ConfigMapEnvSource, _Mapping]] = ..., secret_ref: _Optional[_Union[SecretEnvSource, _Mapping]] = ...) -> None: ...

class VolumeMount(_message.Message):
    __slots__ = ("name", "read_only", "recursive_read_only", "mount_path", "sub_path", "mount_propagation", "sub_path_expr")
    NAME_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    RECURSIVE_READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    MOUNT_PATH_FIELD_NUMBER: _ClassVar[int]
    SUB_PATH_FIELD_NUMBER: _ClassVar[int]
    MOUNT_PROPAGATION_FIELD_NUMBER: _ClassVar[int]
    SUB_PATH_EXPR_FIELD_NUMBER: _ClassVar[int]
    name: str
    read_only: bool
    recursive_read_only: str
    mount_path: str
    sub_path: str
    mount_propagation: str
    sub_path_expr: str
    def __init__(self, name: _Optional[str] = ..., read_only: _Optional[bool] = ..., recursive_read_only: _Optional[str] = ..., mount_path: _Optional[str] = ..., sub_path: _Optional[str] = ..., mount_propagation: _Optional[str] = ..., sub_path_expr: _Optional[str] = ...) -> None: ...

class VolumeDevice(_message.Message):
    __slots__ = ("name", "device_path")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DEVICE_PATH_FIELD_NUMBER: _ClassVar[int]
    name: str
    device_path: str
    def __init__(self, name: _Optional[str] = ..., device_path: _Optional[str] = ...) -> None: ...

class ExecAction(_message.Message):
    __slots__ = ("command",)
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    command: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, command: _Optional[_Iterable[str]] = ...) -> None: ...

class HTTPHeader(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class HTTPGetAction(_message.Message):
    __slots__ = ("path", "port", "host", "scheme", "http_headers")
    PATH_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    SCHEME_FIELD_NUMBER: _ClassVar[int]
    HTTP_HEADERS_FIELD_NUMBER: _ClassVar[int]
    path: str
    port: IntOrString
    host: str
    scheme: str
    http_headers: _containers.RepeatedCompositeFieldContainer[HTTPHeader]
    def __init__(self, path: _Optional[str] = ..., port: _Optional[_Union[IntOrString, _Mapping]] = ..., host: _Optional[str] = ..., scheme: _Optional[str] = ..., http_headers: _Optional[_Iterable[_Union[HTTPHeader, _Mapping]]] = ...) -> None: ...

class TCPSocketAction(_message.Message):
    __slots__ = ("port", "host")
    PORT_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    port: IntOrString
    host: str
    def __init__(self, port: _Optional[_Union[IntOrString, _Mapping]] = ..., host: _Optional[str] = ...) -> None: ...

class GRPCAction(_message.Message):
    __slots__ = ("port", "service")
    PORT_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    port: int
    service: str
    def __init__(self, port: _Optional[int] = ..., service: _Optional[str] = ...) -> None: ...

class SleepAction(_message.Message):
    __slots__ = ("seconds",)
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    seconds: int
    def __init__(self, seconds: _Optional[int] = ...) -> None: ...

class Probe(_message.Message):
    __slots__ = ("exec", "http_get", "tcp_socket", "grpc", "initial_delay_seconds", "timeout_seconds", "period_seconds", "success_threshold", "failure_threshold", "termination_grace_period_seconds")
    EXEC_FIELD_NUMBER: _ClassVar[int]
    HTTP_GET_FIELD_NUMBER: _ClassVar[int]
    TCP_SOCKET_FIELD_NUMBER: _ClassVar[int]
    GRPC_FIELD_NUMBER: _ClassVar[int]
    INITIAL_DELAY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    FAILURE_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    TERMINATION_GRACE_PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    exec: ExecAction
    http_get: HTTPGetAction
    tcp_socket: TCPSocketAction
    grpc: GRPCAction
    initial_delay_seconds: int
    timeout_seconds: int
    period_seconds: int
    success_threshold: int
    failure_threshold: int
    termination_grace_period_seconds: int
    def __init__(self, exec: _Optional[_Union[ExecAction, _Mapping]] = ..., http_get: _Optional[_Union[HTTPGetAction, _Mapping]] = ..., tcp_socket: _Optional[_Union[TCPSocketAction, _Mapping]] = ..., grpc: _Optional[_Union[GRPCAction, _Mapping]] = ..., initial_delay_seconds: _Optional[int] = ..., timeout_seconds: _Optional[int] = ..., period_seconds: _Optional[int] = ..., success_threshold: _Optional[int] = ..., failure_threshold: _Optional[int] = ..., termination_grace_period_seconds: _Optional[int] = ...) -> None: ...

class LifecycleHandler(_message.Message):
    __slots__ = ("exec", "http_get", "tcp_socket", "sleep")
    EXEC_FIELD_NUMBER: _ClassVar[int]
    HTTP_GET_FIELD_NUMBER: _ClassVar[int]
    TCP_SOCKET_FIELD_NUMBER: _ClassVar[int]
    SLEEP_FIELD_NUMBER: _ClassVar[int]
    exec: ExecAction
    http_get: HTTPGetAction
    tcp_socket: TCPSocketAction
    sleep: SleepAction
    def __init__(self, exec: _Optional[_Union[ExecAction, _Mapping]] = ..., http_get: _Optional[_Union[HTTPGetAction, _Mapping]] = ..., tcp_socket: _Optional[_Union[TCPSocketAction, _Mapping]] = ..., sleep: _Optional[_Union[SleepAction, _Mapping]] = ...) -> None: ...

class Lifecycle(_message.Message):
    __slots__ = ("post_start", "pre_stop", "stop_signal")
    POST_START_FIELD_NUMBER: _ClassVar[int]
    PRE_STOP_FIELD_NUMBER: _ClassVar[int]
    STOP_SIGNAL_FIELD_NUMBER: _ClassVar[int]
    post_start: LifecycleHandler
    pre_stop: LifecycleHandler
    stop_signal: str
    def __init__(self, post_start: _Optional[_Union[LifecycleHandler, _Mapping]] = ..., pre_stop: _Optional[_Union[LifecycleHandler, _Mapping]] = ..., stop_signal: _Optional[str] = ...) -> None: ...

class Capabilities(_message.Message):
    __slots__ = ("add", "drop")
    ADD_FIELD_NUMBER: _ClassVar[int]
    DROP_FIELD_NUMBER: _ClassVar[int]
    add: _containers.RepeatedScalarFieldContainer[str]
    drop: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, add: _Optional[_Iterable[str]] = ..., drop: _Optional[_Iterable[str]] = ...) -> None: ...

class SELinuxOptions(_message.Message):
    __slots__ = ("user", "role", "type", "level")
    USER_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    user: str
    role: str
    type: str
    level: str
    def __init__(self, user: _Optional[str] = ..., role: _Optional[str] = ..., type: _Optional[str] = ..., level: _Optional[str] = ...) -> None: ...

class WindowsSecurityContextOptions(_message.Message):
    __slots__ = ("gmsa_credential_spec_name", "gmsa_credential_spec", "run_as_user_name", "host_process")
    GMSA_CREDENTIAL_SPEC_NAME_FIELD_NUMBER: _ClassVar[int]
    GMSA_CREDENTIAL_SPEC_FIELD_NUMBER: _ClassVar[int]
    RUN_AS_USER_NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_PROCESS_FIELD_NUMBER: _ClassVar[int]
    gmsa_credential_spec_name: str
    gmsa_credential_spec: str
    run_as_user_name: str
    host_process: bool
    def __init__(self, gmsa_credential_spec_name: _Optional[str] = ..., gmsa_credential_spec: _Optional[str] = ..., run_as_user_name: _Optional[str] = ..., host_process: _Optional[bool] = ...) -> None: ...

class SeccompProfile(_message.Message):
    __slots__ = ("type", "localhost_profile")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    LOCALHOST_PROFILE_FIELD_NUMBER: _ClassVar[int]
    type: str
    localhost_profile: str
    def __init__(self, type: _Optional[str] = ..., localhost_profile: _Optional[str] = ...) -> None: ...

class AppArmorProfile(_message.Message):
    __slots__ = ("type", "localhost_profile")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    LOCALHOST_PROFILE_FIELD_NUMBER: _ClassVar[int]
    type: str
    localhost_profile: str
    def __init__(self, type: _Optional[str] = ..., localhost_profile: _Optional[str] = ...) -> None: ...

class SecurityContext(_message.Message):
    __slots__ = ("capabilities", "privileged", "se_linux_options", "windows_options", "run_as_user", "run_as_group", "run_as_non_root", "read_only_root_filesystem", "allow_privilege_escalation", "proc_mount", "seccomp_profile", "app_armor_profile")
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    PRIVILEGED_FIELD_NUMBER: _ClassVar[int]
    SE_LINUX_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    WINDOWS_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    RUN_AS_USER_FIELD_NUMBER: _ClassVar[int]
    RUN_AS_GROUP_FIELD_NUMBER: _ClassVar[int]
    RUN_AS_NON_ROOT_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_ROOT_FILESYSTEM_FIELD_NUMBER: _ClassVar[int]
    ALLOW_PRIVILEGE_ESCALATION_FIELD_NUMBER: _ClassVar[int]
    PROC_MOUNT_FIELD_NUMBER: _ClassVar[int]
    SECCOMP_PROFILE_FIELD_NUMBER: _ClassVar[int]
    APP_ARMOR_PROFILE_FIELD_NUMBER: _ClassVar[int]
    capabilities: Capabilities
    privileged: bool
    se_linux_options: SELinuxOptions
    windows_options: WindowsSecurityContextOptions
    run_as_user: int
    run_as_group: int
    run_as_non_root: bool
    read_only_root_filesystem: bool
    allow_privilege_escalation: bool
    proc_mount: str
    seccomp_profile: SeccompProfile
    app_armor_profile: AppArmorProfile
    def __init__(self, capabilities: _Optional[_Union[Capabilities, _Mapping]] = ..., privileged: _Optional[bool] = ..., se_linux_options: _Optional[_Union[SELinuxOptions, _Mapping]] = ..., windows_options: _Optional[_Union[WindowsSecurityContextOptions, _Mapping]] = ..., run_as_user: _Optional[int] = ..., run_as_group: _Optional[int] = ..., run_as_non_root: _Optional[bool] = ..., read_only_root_filesystem: _Optional[bool] = ..., allow_privilege_escalation: _Optional[bool] = ..., proc_mount: _Optional[str] = ..., seccomp_profile: _Optional[_Union[SeccompProfile, _Mapping]] = ..., app_armor_profile: _Optional[_Union[AppArmorProfile, _Mapping]] = ...) -> None: ...

class Container(_message.Message):
    __slots__ = ("name", "image", "resources", "resize_policy", "restart_policy", "command", "args", "working_dir", "ports", "env_from", "env", "volume_mounts", "volume_devices", "liveness_probe", "readiness_probe", "startup_probe", "lifecycle", "termination_message_path", "termination_message_policy", "image_pull_policy", "security_context", "stdin", "stdin_once", "tty")
    NAME_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    RESIZE_POLICY_FIELD_NUMBER: _ClassVar[int]
    RESTART_POLICY_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIR_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    ENV_FROM_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    VOLUME_MOUNTS_FIELD_NUMBER: _ClassVar[int]
    VOLUME_DEVICES_FIELD_NUMBER: _ClassVar[int]
    LIVENESS_PROBE_FIELD_NUMBER: _ClassVar[int]
    READINESS_PROBE_FIELD_NUMBER: _ClassVar[int]
    STARTUP_PROBE_FIELD_NUMBER: _ClassVar[int]
    LIFECYCLE_FIELD_NUMBER: _ClassVar[int]
    TERMINATION_MESSAGE_PATH_FIELD_NUMBER: _ClassVar[int]
    TERMINATION_MESSAGE_POLICY_FIELD_NUMBER: _ClassVar[int]
    IMAGE_PULL_POLICY_FIELD_NUMBER: _ClassVar[int]
    SECURITY_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    STDIN_FIELD_NUMBER: _ClassVar[int]
    STDIN_ONCE_FIELD_NUMBER: _ClassVar[int]
    TTY_FIELD_NUMBER: _ClassVar[int]
    name: str
    image: str
    resources: ResourceRequirements
    resize_policy: _containers.RepeatedCompositeFieldContainer[ContainerResizePolicy]
    restart_policy: str
    command: _containers.RepeatedScalarFieldContainer[str]
    args: _containers.RepeatedScalarFieldContainer[str]
    working_dir: str
    ports: _containers.RepeatedCompositeFieldContainer[ContainerPort]
    env_from: _containers.RepeatedCompositeFieldContainer[EnvFromSource]
    env: _containers.RepeatedCompositeFieldContainer[EnvVar]
    volume_mounts: _containers.RepeatedCompositeFieldContainer[VolumeMount]
    volume_devices: _containers.RepeatedCompositeFieldContainer[VolumeDevice]
    liveness_probe: Probe
    readiness_probe: Probe
    startup_probe: Probe
    lifecycle: Lifecycle
    termination_message_path: str
    termination_message_policy: str
    image_pull_policy: str
    security_context: SecurityContext
    stdin: bool
    stdin_once: bool
    tty: bool
    def __init__(self, name: _Optional[str] = ..., image: _Optional[str] = ..., resources: _Optional[_Union[ResourceRequirements, _Mapping]] = ..., resize_policy: _Optional[_Iterable[_Union[ContainerResizePolicy, _Mapping]]] = ..., restart_policy: _Optional[str] = ..., command: _Optional[_Iterable[str]] = ..., args: _Optional[_Iterable[str]] = ..., working_dir: _Optional[str] = ..., ports: _Optional[_Iterable[_Union[ContainerPort, _Mapping]]] = ..., env_from: _Optional[_Iterable[_Union[EnvFromSource, _Mapping]]] = ..., env: _Optional[_Iterable[_Union[EnvVar, _Mapping]]] = ..., volume_mounts: _Optional[_Iterable[_Union[VolumeMount, _Mapping]]] = ..., volume_devices: _Optional[_Iterable[_Union[VolumeDevice, _Mapping]]] = ..., liveness_probe: _Optional[_Union[Probe, _Mapping]] = ..., readiness_probe: _Optional[_Union[Probe, _Mapping]] = ..., startup_probe: _Optional[_Union[Probe, _Mapping]] = ..., lifecycle: _Optional[_Union[Lifecycle, _Mapping]] = ..., termination_message_path: _Optional[str] = ..., termination_message_policy: _Optional[str] = ..., image_pull_policy: _Optional[str] = ..., security_context: _Optional[_Union[SecurityContext, _Mapping]] = ..., stdin: _Optional[bool] = ..., stdin_once: _Optional[bool] = ..., tty: _Optional[bool] = ...) -> None: ...

class KeyToPath(_message.Message):
    __slots__ = ("key", "path", "mode")
    KEY_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    key: str
    path: str
    mode: int
    def __init__(self, key: _Optional[str] = ..., path: _Optional[str] = ..., mode: _Optional[int] = ...) -> None: ...

class HostPathVolumeSource(_message.Message):
    __slots__ = ("path", "type")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    path: str
    type: str
    def __init__(self, path: _Optional[str] = ..., type: _Optional[str] = ...) -> None: ...

class EmptyDirVolumeSource(_message.Message):
    __slots__ = ("medium", "size_limit")
    MEDIUM_FIELD_NUMBER: _ClassVar[int]
    SIZE_LIMIT_FIELD_NUMBER: _ClassVar[int]
    medium: str
    size_limit: str
    def __init__(self, medium: _Optional[str] = ..., size_limit: _Optional[str] = ...) -> None: ...

class SecretVolumeSource(_message.Message):
    __slots__ = ("secret_name", "items", "default_mode", "optional")
    SECRET_NAME_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_MODE_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    secret_name: str
    items: _containers.RepeatedCompositeFieldContainer[KeyToPath]
    default_mode: int
    optional: bool
    def __init__(self, secret_name: _Optional[str] = ..., items: _Optional[_Iterable[_Union[KeyToPath, _Mapping]]] = ..., default_mode: _Optional[int] = ..., optional: _Optional[bool] = ...) -> None: ...

class ConfigMapVolumeSource(_message.Message):
    __slots__ = ("name", "items", "default_mode", "optional")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_MODE_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    items: _containers.RepeatedCompositeFieldContainer[KeyToPath]
    default_mode: int
    optional: bool
    def __init__(self, name: _Optional[str] = ..., items: _Optional[_Iterable[_Union[KeyToPath, _Mapping]]] = ..., default_mode: _Optional[int] = ..., optional: _Optional[bool] = ...) -> None: ...

class PersistentVolumeClaimVolumeSource(_message.Message):
    __slots__ = ("claim_name", "read_only")
    CLAIM_NAME_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    claim_name: str
    read_only: bool
    def __init__(self, claim_name: _Optional[str] = ..., read_only: _Optional[bool] = ...) -> None: ...

class DownwardAPIVolumeFile(_message.Message):
    __slots__ = ("path", "field_ref", "resource_field_ref", "mode")
    PATH_FIELD_NUMBER: _ClassVar[int]
    FIELD_REF_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_REF_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    path: str
    field_ref: ObjectFieldSelector
    resource_field_ref: ResourceFieldSelector
    mode: int
    def __init__(self, path: _Optional[str] = ..., field_ref: _Optional[_Union[ObjectFieldSelector, _Mapping]] = ..., resource_field_ref: _Optional[_Union[ResourceFieldSelector, _Mapping]] = ..., mode: _Optional[int] = ...) -> None: ...

class DownwardAPIVolumeSource(_message.Message):
    __slots__ = ("items", "default_mode")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_MODE_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[DownwardAPIVolumeFile]
    default_mode: int
    def __init__(self, items: _Optional[_Iterable[_Union[DownwardAPIVolumeFile, _Mapping]]] = ..., default_mode: _Optional[int] = ...) -> None: ...

class DownwardAPIProjection(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[DownwardAPIVolumeFile]
    def __init__(self, items: _Optional[_Iterable[_Union[DownwardAPIVolumeFile, _Mapping]]] = ...) -> None: ...

class SecretProjection(_message.Message):
    __slots__ = ("name", "items", "optional")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    items: _containers.RepeatedCompositeFieldContainer[KeyToPath]
    optional: bool
    def __init__(self, name: _Optional[str] = ..., items: _Optional[_Iterable[_Union[KeyToPath, _Mapping]]] = ..., optional: _Optional[bool] = ...) -> None: ...

class ConfigMapProjection(_message.Message):
    __slots__ = ("name", "items", "optional")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    OPTIONAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    items: _containers.RepeatedCompositeFieldContainer[KeyToPath]
    optional: bool
    def __init__(self, name: _Optional[str] = ..., items: _Optional[_Iterable[_Union[KeyToPath, _Mapping]]] = ..., optional: _Optional[bool] = ...) -> None: ...

class ServiceAccountTokenProjection(_message.Message):
    __slots__ = ("audience", "expiration_seconds", "path")
    AUDIENCE_FIELD_NUMBER: _ClassVar[int]
    EXPIRATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    audience: str
    expiration_seconds: int
    path: str
    def __init__(self, audience: _Optional[str] = ..., expiration_seconds: _Optional[int] = ..., path: _Optional[str] = ...) -> None: ...

class VolumeProjection(_message.Message):
    __slots__ = ("secret", "downward_api", "config_map", "service_account_token")
    SECRET_FIELD_NUMBER: _ClassVar[int]
    DOWNWARD_API_FIELD_NUMBER: _ClassVar[int]
    CONFIG_MAP_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ACCOUNT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    secret: SecretProjection
    downward_api: DownwardAPIProjection
    config_map: ConfigMapProjection
    service_account_token: ServiceAccountTokenProjection
    def __init__(self, secret: _Optional[_Union[SecretProjection, _Mapping]] = ..., downward_api: _Optional[_Union[DownwardAPIProjection, _Mapping]] = ..., config_map: _Optional[_Union[ConfigMapProjection, _Mapping]] = ..., service_account_token: _Optional[_Union[ServiceAccountTokenProjection, _Mapping]] = ...) -> None: ...

class ProjectedVolumeSource(_message.Message):
    __slots__ = ("sources", "default_mode")
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_MODE_FIELD_NUMBER: _ClassVar[int]
    sources: _containers.RepeatedCompositeFieldContainer[VolumeProjection]
    default_mode: int
    def __init__(self, sources: _Optional[_Iterable[_Union[VolumeProjection, _Mapping]]] = ..., default_mode: _Optional[int] = ...) -> None: ...

class Volume(_message.Message):
    __slots__ = ("name", "host_path", "empty_dir", "secret", "persistent_volume_claim", "config_map", "downward_api", "projected")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_PATH_FIELD_NUMBER: _ClassVar[int]
    EMPTY_DIR_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    PERSISTENT_VOLUME_CLAIM_FIELD_NUMBER: _ClassVar[int]
    CONFIG_MAP_FIELD_NUMBER: _ClassVar[int]
    DOWNWARD_API_FIELD_NUMBER: _ClassVar[int]
    PROJECTED_FIELD_NUMBER: _ClassVar[int]
    name: str
    host_path: HostPathVolumeSource
    empty_dir: EmptyDirVolumeSource
    secret: SecretVolumeSource
    persistent_volume_claim: PersistentVolumeClaimVolumeSource
    config_map: ConfigMapVolumeSource
    downward_api: DownwardAPIVolumeSource
    projected: ProjectedVolumeSource
    def __init__(self, name: _Optional[str] = ..., host_path: _Optional[_Union[HostPathVolumeSource, _Mapping]] = ..., empty_dir: _Optional[_Union[EmptyDirVolumeSource, _Mapping]] = ..., secret: _Optional[_Union[SecretVolumeSource, _Mapping]] = ..., persistent_volume_claim: _Optional[_Union[PersistentVolumeClaimVolumeSource, _Mapping]] = ..., config_map: _Optional[_Union[ConfigMapVolumeSource, _Mapping]] = ..., downward_api: _Optional[_Union[DownwardAPIVolumeSource, _Mapping]] = ..., projected: _Optional[_Union[ProjectedVolumeSource, _Mapping]] = ...) -> None: ...

class NodeSelectorRequirement(_message.Message):
    __slots__ = ("key", "operator", "values")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    key: str
    operator: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class NodeSelectorTerm(_message.Message):
    __slots__ = ("match_expressions", "match_fields")
    MATCH_EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELDS_FIELD_NUMBER: _ClassVar[int]
    match_expressions: _containers.RepeatedCompositeFieldContainer[NodeSelectorRequirement]
    match_fields: _containers.RepeatedCompositeFieldContainer[NodeSelectorRequirement]
    def __init__(self, match_expressions: _Optional[_Iterable[_Union[NodeSelectorRequirement, _Mapping]]] = ..., match_fields: _Optional[_Iterable[_Union[NodeSelectorRequirement, _Mapping]]] = ...) -> None: ...

class NodeSelector(_message.Message):
    __slots__ = ("node_selector_terms",)
    NODE_SELECTOR_TERMS_FIELD_NUMBER: _ClassVar[int]
    node_selector_terms: _containers.RepeatedCompositeFieldContainer[NodeSelectorTerm]
    def __init__(self, node_selector_terms: _Optional[_Iterable[_Union[NodeSelectorTerm, _Mapping]]] = ...) -> None: ...

class PreferredSchedulingTerm(_message.Message):
    __slots__ = ("weight", "preference")
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    PREFERENCE_FIELD_NUMBER: _ClassVar[int]
    weight: int
    preference: NodeSelectorTerm
    def __init__(self, weight: _Optional[int] = ..., preference: _Optional[_Union[NodeSelectorTerm, _Mapping]] = ...) -> None: ...

class NodeAffinity(_message.Message):
    __slots__ = ("required_during_scheduling_ignored_during_execution", "preferred_during_scheduling_ignored_during_execution")
    REQUIRED_DURING_SCHEDULING_IGNORED_DURING_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_DURING_SCHEDULING_IGNORED_DURING_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    required_during_scheduling_ignored_during_execution: NodeSelector
    preferred_during_scheduling_ignored_during_execution: _containers.RepeatedCompositeFieldContainer[PreferredSchedulingTerm]
    def __init__(self, required_during_scheduling_ignored_during_execution: _Optional[_Union[NodeSelector, _Mapping]] = ..., preferred_during_scheduling_ignored_during_execution: _Optional[_Iterable[_Union[PreferredSchedulingTerm, _Mapping]]] = ...) -> None: ...

class PodAffinityTerm(_message.Message):
    __slots__ = ("label_selector", "namespaces", "topology_key", "namespace_selector")
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_KEY_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    label_selector: LabelSelector
    namespaces: _containers.RepeatedScalarFieldContainer[str]
    topology_key: str
    namespace_selector: LabelSelector
    def __init__(self, label_selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., namespaces: _Optional[_Iterable[str]] = ..., topology_key: _Optional[str] = ..., namespace_selector: _Optional[_Union[LabelSelector, _Mapping]] = ...) -> None: ...

class WeightedPodAffinityTerm(_message.Message):
    __slots__ = ("weight", "pod_affinity_term")
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    POD_AFFINITY_TERM_FIELD_NUMBER: _ClassVar[int]
    weight: int
    pod_affinity_term: PodAffinityTerm
    def __init__(self, weight: _Optional[int] = ..., pod_affinity_term: _Optional[_Union[PodAffinityTerm, _Mapping]] = ...) -> None: ...

class PodAffinity(_message.Message):
    __slots__ = ("required_during_scheduling_ignored_during_execution", "preferred_during_scheduling_ignored_during_execution")
    REQUIRED_DURING_SCHEDULING_IGNORED_DURING_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_DURING_SCHEDULING_IGNORED_DURING_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    required_during_scheduling_ignored_during_execution: _containers.RepeatedCompositeFieldContainer[PodAffinityTerm]
    preferred_during_scheduling_ignored_during_execution: _containers.RepeatedCompositeFieldContainer[WeightedPodAffinityTerm]
    def __init__(self, required_during_scheduling_ignored_during_execution: _Optional[_Iterable[_Union[PodAffinityTerm, _Mapping]]] = ..., preferred_during_scheduling_ignored_during_execution: _Optional[_Iterable[_Union[WeightedPodAffinityTerm, _Mapping]]] = ...) -> None: ...

class PodAntiAffinity(_message.Message):
    __slots__ = ("required_during_scheduling_ignored_during_execution", "preferred_during_scheduling_ignored_during_execution")
    REQUIRED_DURING_SCHEDULING_IGNORED_DURING_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_DURING_SCHEDULING_IGNORED_DURING_EXECUTION_FIELD_NUMBER: _ClassVar[int]
    required_during_scheduling_ignored_during_execution: _containers.RepeatedCompositeFieldContainer[PodAffinityTerm]
    preferred_during_scheduling_ignored_during_execution: _containers.RepeatedCompositeFieldContainer[WeightedPodAffinityTerm]
    def __init__(self, required_during_scheduling_ignored_during_execution: _Optional[_Iterable[_Union[PodAffinityTerm, _Mapping]]] = ..., preferred_during_scheduling_ignored_during_execution: _Optional[_Iterable[_Union[WeightedPodAffinityTerm, _Mapping]]] = ...) -> None: ...

class Affinity(_message.Message):
    __slots__ = ("node_affinity", "pod_affinity", "pod_anti_affinity")
    NODE_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    POD_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    POD_ANTI_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    node_affinity: NodeAffinity
    pod_affinity: PodAffinity
    pod_anti_affinity: PodAntiAffinity
    def __init__(self, node_affinity: _Optional[_Union[NodeAffinity, _Mapping]] = ..., pod_affinity: _Optional[_Union[PodAffinity, _Mapping]] = ..., pod_anti_affinity: _Optional[_Union[PodAntiAffinity, _Mapping]] = ...) -> None: ...

class Toleration(_message.Message):
    __slots__ = ("key", "operator", "value", "effect", "toleration_seconds")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    TOLERATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    key: str
    operator: str
    value: str
    effect: str
    toleration_seconds: int
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[str] = ..., value: _Optional[str] = ..., effect: _Optional[str] = ..., toleration_seconds: _Optional[int] = ...) -> None: ...

class PodSchedulingGate(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class TopologySpreadConstraint(_message.Message):
    __slots__ = ("max_skew", "topology_key", "when_unsatisfiable", "label_selector", "min_domains", "node_affinity_policy", "node_taints_policy", "match_label_keys")
    MAX_SKEW_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_KEY_FIELD_NUMBER: _ClassVar[int]
    WHEN_UNSATISFIABLE_FIELD_NUMBER: _ClassVar[int]
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    MIN_DOMAINS_FIELD_NUMBER: _ClassVar[int]
    NODE_AFFINITY_POLICY_FIELD_NUMBER: _ClassVar[int]
    NODE_TAINTS_POLICY_FIELD_NUMBER: _ClassVar[int]
    MATCH_LABEL_KEYS_FIELD_NUMBER: _ClassVar[int]
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector
    min_domains: int
    node_affinity_policy: str
    node_taints_policy: str
    match_label_keys: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, max_skew: _Optional[int] = ..., topology_key: _Optional[str] = ..., when_unsatisfiable: _Optional[str] = ..., label_selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., min_domains: _Optional[int] = ..., node_affinity_policy: _Optional[str] = ..., node_taints_policy: _Optional[str] = ..., match_label_keys: _Optional[_Iterable[str]] = ...) -> None: ...

class PodReadinessGate(_message.Message):
    __slots__ = ("condition_type",)
    CONDITION_TYPE_FIELD_NUMBER: _ClassVar[int]
    condition_type: str
    def __init__(self, condition_type: _Optional[str] = ...) -> None: ...

class LocalObjectReference(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class HostAlias(_message.Message):
    __slots__ = ("ip", "hostnames")
    IP_FIELD_NUMBER: _ClassVar[int]
    HOSTNAMES_FIELD_NUMBER: _ClassVar[int]
    ip: str
    hostnames: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ip: _Optional[str] = ..., hostnames: _Optional[_Iterable[str]] = ...) -> None: ...

class PodDNSConfigOption(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class PodDNSConfig(_message.Message):
    __slots__ = ("nameservers", "searches", "options")
    NAMESERVERS_FIELD_NUMBER: _ClassVar[int]
    SEARCHES_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    nameservers: _containers.RepeatedScalarFieldContainer[str]
    searches: _containers.RepeatedScalarFieldContainer[str]
    options: _containers.RepeatedCompositeFieldContainer[PodDNSConfigOption]
    def __init__(self, nameservers: _Optional[_Iterable[str]] = ..., searches: _Optional[_Iterable[str]] = ..., options: _Optional[_Iterable[_Union[PodDNSConfigOption, _Mapping]]] = ...) -> None: ...

class Sysctl(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class PodSecurityContext(_message.Message):
    __slots__ = ("se_linux_options", "windows_options", "run_as_user", "run_as_group", "run_as_non_root", "supplemental_groups", "supplemental_groups_policy", "fs_group", "sysctls", "fs_group_change_policy", "seccomp_profile", "app_armor_profile", "se_linux_change_policy")
    SE_LINUX_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    WINDOWS_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    RUN_AS_USER_FIELD_NUMBER: _ClassVar[int]
    RUN_AS_GROUP_FIELD_NUMBER: _ClassVar[int]
    RUN_AS_NON_ROOT_FIELD_NUMBER: _ClassVar[int]
    SUPPLEMENTAL_GROUPS_FIELD_NUMBER: _ClassVar[int]
    SUPPLEMENTAL_GROUPS_POLICY_FIELD_NUMBER: _ClassVar[int]
    FS_GROUP_FIELD_NUMBER: _ClassVar[int]
    SYSCTLS_FIELD_NUMBER: _ClassVar[int]
    FS_GROUP_CHANGE_POLICY_FIELD_NUMBER: _ClassVar[int]
    SECCOMP_PROFILE_FIELD_NUMBER: _ClassVar[int]
    APP_ARMOR_PROFILE_FIELD_NUMBER: _ClassVar[int]
    SE_LINUX_CHANGE_POLICY_FIELD_NUMBER: _ClassVar[int]
    se_linux_options: SELinuxOptions
    windows_options: WindowsSecurityContextOptions
    run_as_user: int
    run_as_group: int
    run_as_non_root: bool
    supplemental_groups: _containers.RepeatedScalarFieldContainer[int]
    supplemental_groups_policy: str
    fs_group: int
    sysctls: _containers.RepeatedCompositeFieldContainer[Sysctl]
    fs_group_change_policy: str
    seccomp_profile: SeccompProfile
    app_armor_profile: AppArmorProfile
    se_linux_change_policy: str
    def __init__(self, se_linux_options: _Optional[_Union[SELinuxOptions, _Mapping]] = ..., windows_options: _Optional[_Union[WindowsSecurityContextOptions, _Mapping]] = ..., run_as_user: _Optional[int] = ..., run_as_group: _Optional[int] = ..., run_as_non_root: _Optional[bool] = ..., supplemental_groups: _Optional[_Iterable[int]] = ..., supplemental_groups_policy: _Optional[str] = ..., fs_group: _Optional[int] = ..., sysctls: _Optional[_Iterable[_Union[Sysctl, _Mapping]]] = ..., fs_group_change_policy: _Optional[str] = ..., seccomp_profile: _Optional[_Union[SeccompProfile, _Mapping]] = ..., app_armor_profile: _Optional[_Union[AppArmorProfile, _Mapping]] = ..., se_linux_change_policy: _Optional[str] = ...) -> None: ...

class PodOS(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class PodSpec(_message.Message):
    __slots__ = ("node_name", "scheduler_name", "priority", "priority_class_name", "preemption_policy", "containers", "init_containers", "node_selector", "affinity", "tolerations", "scheduling_gates", "termination_grace_period_seconds", "overhead", "restart_policy", "resources", "volumes", "active_deadline_seconds", "dns_policy", "service_account_name", "service_account", "automount_service_account_token", "host_network", "host_pid", "host_ipc", "share_process_namespace", "security_context", "image_pull_secrets", "hostname", "subdomain", "host_aliases", "dns_config", "readiness_gates", "runtime_class_name", "enable_service_links", "topology_spread_constraints", "set_hostname_as_fqdn", "os", "host_users", "scheduling_group", "workload_ref", "resource_claims")
    class NodeSelectorEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class OverheadEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_NAME_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    INIT_CONTAINERS_FIELD_NUMBER: _ClassVar[int]
    NODE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    AFFINITY_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_GATES_FIELD_NUMBER: _ClassVar[int]
    TERMINATION_GRACE_PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    OVERHEAD_FIELD_NUMBER: _ClassVar[int]
    RESTART_POLICY_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    VOLUMES_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_DEADLINE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    DNS_POLICY_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ACCOUNT_NAME_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    AUTOMOUNT_SERVICE_ACCOUNT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    HOST_NETWORK_FIELD_NUMBER: _ClassVar[int]
    HOST_PID_FIELD_NUMBER: _ClassVar[int]
    HOST_IPC_FIELD_NUMBER: _ClassVar[int]
    SHARE_PROCESS_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SECURITY_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    IMAGE_PULL_SECRETS_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    SUBDOMAIN_FIELD_NUMBER: _ClassVar[int]
    HOST_ALIASES_FIELD_NUMBER: _ClassVar[int]
    DNS_CONFIG_FIELD_NUMBER: _ClassVar[int]
    READINESS_GATES_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    ENABLE_SERVICE_LINKS_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_SPREAD_CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    SET_HOSTNAME_AS_FQDN_FIELD_NUMBER: _ClassVar[int]
    OS_FIELD_NUMBER: _ClassVar[int]
    HOST_USERS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_GROUP_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_REF_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIMS_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    scheduler_name: str
    priority: int
    priority_class_name: str
    preemption_policy: str
    containers: _containers.RepeatedCompositeFieldContainer[Container]
    init_containers: _containers.RepeatedCompositeFieldContainer[Container]
    node_selector: _containers.ScalarMap[str, str]
    affinity: Affinity
    tolerations: _containers.RepeatedCompositeFieldContainer[Toleration]
    scheduling_gates: _containers.RepeatedCompositeFieldContainer[PodSchedulingGate]
    termination_grace_period_seconds: int
    overhead: _containers.ScalarMap[str, str]
    restart_policy: str
    resources: ResourceRequirements
    volumes: _containers.RepeatedCompositeFieldContainer[Volume]
    active_deadline_seconds: int
    dns_policy: str
    service_account_name: str
    service_account: str
    automount_service_account_token: bool
    host_network: bool
    host_pid: bool
    host_ipc: bool
    share_process_namespace: bool
    security_context: PodSecurityContext
    image_pull_secrets: _containers.RepeatedCompositeFieldContainer[LocalObjectReference]
    hostname: str
    subdomain: str
    host_aliases: _containers.RepeatedCompositeFieldContainer[HostAlias]
    dns_config: PodDNSConfig
    readiness_gates: _containers.RepeatedCompositeFieldContainer[PodReadinessGate]
    runtime_class_name: str
    enable_service_links: bool
    topology_spread_constraints: _containers.RepeatedCompositeFieldContainer[TopologySpreadConstraint]
    set_hostname_as_fqdn: bool
    os: PodOS
    host_users: bool
    scheduling_group: PodSchedulingGroup
    workload_ref: WorkloadReferenceV1alpha1
    resource_claims: _containers.RepeatedCompositeFieldContainer[PodResourceClaim]
    def __init__(self, node_name: _Optional[str] = ..., scheduler_name: _Optional[str] = ..., priority: _Optional[int] = ..., priority_class_name: _Optional[str] = ..., preemption_policy: _Optional[str] = ..., containers: _Optional[_Iterable[_Union[Container, _Mapping]]] = ..., init_containers: _Optional[_Iterable[_Union[Container, _Mapping]]] = ..., node_selector: _Optional[_Mapping[str, str]] = ..., affinity: _Optional[_Union[Affinity, _Mapping]] = ..., tolerations: _Optional[_Iterable[_Union[Toleration, _Mapping]]] = ..., scheduling_gates: _Optional[_Iterable[_Union[PodSchedulingGate, _Mapping]]] = ..., termination_grace_period_seconds: _Optional[int] = ..., overhead: _Optional[_Mapping[str, str]] = ..., restart_policy: _Optional[str] = ..., resources: _Optional[_Union[ResourceRequirements, _Mapping]] = ..., volumes: _Optional[_Iterable[_Union[Volume, _Mapping]]] = ..., active_deadline_seconds: _Optional[int] = ..., dns_policy: _Optional[str] = ..., service_account_name: _Optional[str] = ..., service_account: _Optional[str] = ..., automount_service_account_token: _Optional[bool] = ..., host_network: _Optional[bool] = ..., host_pid: _Optional[bool] = ..., host_ipc: _Optional[bool] = ..., share_process_namespace: _Optional[bool] = ..., security_context: _Optional[_Union[PodSecurityContext, _Mapping]] = ..., image_pull_secrets: _Optional[_Iterable[_Union[LocalObjectReference, _Mapping]]] = ..., hostname: _Optional[str] = ..., subdomain: _Optional[str] = ..., host_aliases: _Optional[_Iterable[_Union[HostAlias, _Mapping]]] = ..., dns_config: _Optional[_Union[PodDNSConfig, _Mapping]] = ..., readiness_gates: _Optional[_Iterable[_Union[PodReadinessGate, _Mapping]]] = ..., runtime_class_name: _Optional[str] = ..., enable_service_links: _Optional[bool] = ..., topology_spread_constraints: _Optional[_Iterable[_Union[TopologySpreadConstraint, _Mapping]]] = ..., set_hostname_as_fqdn: _Optional[bool] = ..., os: _Optional[_Union[PodOS, _Mapping]] = ..., host_users: _Optional[bool] = ..., scheduling_group: _Optional[_Union[PodSchedulingGroup, _Mapping]] = ..., workload_ref: _Optional[_Union[WorkloadReferenceV1alpha1, _Mapping]] = ..., resource_claims: _Optional[_Iterable[_Union[PodResourceClaim, _Mapping]]] = ...) -> None: ...

class PodResourceClaim(_message.Message):
    __slots__ = ("name", "resource_claim_name", "resource_claim_template_name")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIM_NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIM_TEMPLATE_NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    resource_claim_name: str
    resource_claim_template_name: str
    def __init__(self, name: _Optional[str] = ..., resource_claim_name: _Optional[str] = ..., resource_claim_template_name: _Optional[str] = ...) -> None: ...

class PodResourceClaimStatus(_message.Message):
    __slots__ = ("name", "resource_claim_name")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIM_NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    resource_claim_name: str
    def __init__(self, name: _Optional[str] = ..., resource_claim_name: _Optional[str] = ...) -> None: ...

class ContainerExtendedResourceRequest(_message.Message):
    __slots__ = ("container_name", "resource_name", "request_name")
    CONTAINER_NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    REQUEST_NAME_FIELD_NUMBER: _ClassVar[int]
    container_name: str
    resource_name: str
    request_name: str
    def __init__(self, container_name: _Optional[str] = ..., resource_name: _Optional[str] = ..., request_name: _Optional[str] = ...) -> None: ...

class PodExtendedResourceClaimStatus(_message.Message):
    __slots__ = ("request_mappings", "resource_claim_name")
    REQUEST_MAPPINGS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIM_NAME_FIELD_NUMBER: _ClassVar[int]
    request_mappings: _containers.RepeatedCompositeFieldContainer[ContainerExtendedResourceRequest]
    resource_claim_name: str
    def __init__(self, request_mappings: _Optional[_Iterable[_Union[ContainerExtendedResourceRequest, _Mapping]]] = ..., resource_claim_name: _Optional[str] = ...) -> None: ...

class PodSchedulingGroup(_message.Message):
    __slots__ = ("pod_group_name",)
    POD_GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    pod_group_name: str
    def __init__(self, pod_group_name: _Optional[str] = ...) -> None: ...

class WorkloadReferenceV1alpha1(_message.Message):
    __slots__ = ("name", "pod_group", "pod_group_replica_key")
    NAME_FIELD_NUMBER: _ClassVar[int]
    POD_GROUP_FIELD_NUMBER: _ClassVar[int]
    POD_GROUP_REPLICA_KEY_FIELD_NUMBER: _ClassVar[int]
    name: str
    pod_group: str
    pod_group_replica_key: str
    def __init__(self, name: _Optional[str] = ..., pod_group: _Optional[str] = ..., pod_group_replica_key: _Optional[str] = ...) -> None: ...

class PodCondition(_message.Message):
    __slots__ = ("type", "status", "observed_generation", "last_probe_time", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    LAST_PROBE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    observed_generation: int
    last_probe_time: _timestamp_pb2.Timestamp
    last_transition_time: _timestamp_pb2.Timestamp
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., observed_generation: _Optional[int] = ..., last_probe_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ContainerStateRunning(_message.Message):
    __slots__ = ("started_at",)
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    started_at: _timestamp_pb2.Timestamp
    def __init__(self, started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ContainerStateTerminated(_message.Message):
    __slots__ = ("exit_code", "reason", "message", "started_at", "finished_at")
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    exit_code: int
    reason: str
    message: str
    started_at: _timestamp_pb2.Timestamp
    finished_at: _timestamp_pb2.Timestamp
    def __init__(self, exit_code: _Optional[int] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ContainerStateWaiting(_message.Message):
    __slots__ = ("reason", "message")
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    reason: str
    message: str
    def __init__(self, reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ContainerState(_message.Message):
    __slots__ = ("waiting", "running", "terminated")
    WAITING_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    TERMINATED_FIELD_NUMBER: _ClassVar[int]
    waiting: ContainerStateWaiting
    running: ContainerStateRunning
    terminated: ContainerStateTerminated
    def __init__(self, waiting: _Optional[_Union[ContainerStateWaiting, _Mapping]] = ..., running: _Optional[_Union[ContainerStateRunning, _Mapping]] = ..., terminated: _Optional[_Union[ContainerStateTerminated, _Mapping]] = ...) -> None: ...

class ContainerStatus(_message.Message):
    __slots__ = ("name", "state", "ready", "restart_count", "image", "started", "allocated_resources", "resources", "last_state")
    class AllocatedResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    RESTART_COUNT_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    LAST_STATE_FIELD_NUMBER: _ClassVar[int]
    name: str
    state: ContainerState
    ready: bool
    restart_count: int
    image: str
    started: bool
    allocated_resources: _containers.ScalarMap[str, str]
    resources: ResourceRequirements
    last_state: ContainerState
    def __init__(self, name: _Optional[str] = ..., state: _Optional[_Union[ContainerState, _Mapping]] = ..., ready: _Optional[bool] = ..., restart_count: _Optional[int] = ..., image: _Optional[str] = ..., started: _Optional[bool] = ..., allocated_resources: _Optional[_Mapping[str, str]] = ..., resources: _Optional[_Union[ResourceRequirements, _Mapping]] = ..., last_state: _Optional[_Union[ContainerState, _Mapping]] = ...) -> None: ...

class PodIP(_message.Message):
    __slots__ = ("ip",)
    IP_FIELD_NUMBER: _ClassVar[int]
    ip: str
    def __init__(self, ip: _Optional[str] = ...) -> None: ...

class HostIP(_message.Message):
    __slots__ = ("ip",)
    IP_FIELD_NUMBER: _ClassVar[int]
    ip: str
    def __init__(self, ip: _Optional[str] = ...) -> None: ...

class PodStatus(_message.Message):
    __slots__ = ("phase", "conditions", "message", "reason", "nominated_node_name", "host_ip", "pod_ip", "start_time", "init_container_statuses", "container_statuses", "qos_class", "observed_generation", "resize", "pod_ips", "host_ips", "resource_claim_statuses", "extended_resource_claim_status")
    PHASE_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    NOMINATED_NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_IP_FIELD_NUMBER: _ClassVar[int]
    POD_IP_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    INIT_CONTAINER_STATUSES_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_STATUSES_FIELD_NUMBER: _ClassVar[int]
    QOS_CLASS_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    RESIZE_FIELD_NUMBER: _ClassVar[int]
    POD_IPS_FIELD_NUMBER: _ClassVar[int]
    HOST_IPS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIM_STATUSES_FIELD_NUMBER: _ClassVar[int]
    EXTENDED_RESOURCE_CLAIM_STATUS_FIELD_NUMBER: _ClassVar[int]
    phase: str
    conditions: _containers.RepeatedCompositeFieldContainer[PodCondition]
    message: str
    reason: str
    nominated_node_name: str
    host_ip: str
    pod_ip: str
    start_time: _timestamp_pb2.Timestamp
    init_container_statuses: _containers.RepeatedCompositeFieldContainer[ContainerStatus]
    container_statuses: _containers.RepeatedCompositeFieldContainer[ContainerStatus]
    qos_class: str
    observed_generation: int
    resize: str
    pod_ips: _containers.RepeatedCompositeFieldContainer[PodIP]
    host_ips: _containers.RepeatedCompositeFieldContainer[HostIP]
    resource_claim_statuses: _containers.RepeatedCompositeFieldContainer[PodResourceClaimStatus]
    extended_resource_claim_status: PodExtendedResourceClaimStatus
    def __init__(self, phase: _Optional[str] = ..., conditions: _Optional[_Iterable[_Union[PodCondition, _Mapping]]] = ..., message: _Optional[str] = ..., reason: _Optional[str] = ..., nominated_node_name: _Optional[str] = ..., host_ip: _Optional[str] = ..., pod_ip: _Optional[str] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., init_container_statuses: _Optional[_Iterable[_Union[ContainerStatus, _Mapping]]] = ..., container_statuses: _Optional[_Iterable[_Union[ContainerStatus, _Mapping]]] = ..., qos_class: _Optional[str] = ..., observed_generation: _Optional[int] = ..., resize: _Optional[str] = ..., pod_ips: _Optional[_Iterable[_Union[PodIP, _Mapping]]] = ..., host_ips: _Optional[_Iterable[_Union[HostIP, _Mapping]]] = ..., resource_claim_statuses: _Optional[_Iterable[_Union[PodResourceClaimStatus, _Mapping]]] = ..., extended_resource_claim_status: _Optional[_Union[PodExtendedResourceClaimStatus, _Mapping]] = ...) -> None: ...

class Pod(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: PodSpec
    status: PodStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[PodSpec, _Mapping]] = ..., status: _Optional[_Union[PodStatus, _Mapping]] = ...) -> None: ...

class Taint(_message.Message):
    __slots__ = ("key", "value", "effect", "time_added")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    TIME_ADDED_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    effect: str
    time_added: _timestamp_pb2.Timestamp
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ..., effect: _Optional[str] = ..., time_added: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class NodePodPreemptionPolicy(_message.Message):
    __slots__ = ("disable_resize_preemption",)
    DISABLE_RESIZE_PREEMPTION_FIELD_NUMBER: _ClassVar[int]
    disable_resize_preemption: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, disable_resize_preemption: _Optional[_Iterable[str]] = ...) -> None: ...

class NodeSpec(_message.Message):
    __slots__ = ("unschedulable", "taints", "provider_id", "pod_preemption_policy", "pod_cidr", "pod_cidrs")
    UNSCHEDULABLE_FIELD_NUMBER: _ClassVar[int]
    TAINTS_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_ID_FIELD_NUMBER: _ClassVar[int]
    POD_PREEMPTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    POD_CIDR_FIELD_NUMBER: _ClassVar[int]
    POD_CIDRS_FIELD_NUMBER: _ClassVar[int]
    unschedulable: bool
    taints: _containers.RepeatedCompositeFieldContainer[Taint]
    provider_id: str
    pod_preemption_policy: NodePodPreemptionPolicy
    pod_cidr: str
    pod_cidrs: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, unschedulable: _Optional[bool] = ..., taints: _Optional[_Iterable[_Union[Taint, _Mapping]]] = ..., provider_id: _Optional[str] = ..., pod_preemption_policy: _Optional[_Union[NodePodPreemptionPolicy, _Mapping]] = ..., pod_cidr: _Optional[str] = ..., pod_cidrs: _Optional[_Iterable[str]] = ...) -> None: ...

class NodeCondition(_message.Message):
    __slots__ = ("type", "status", "last_heartbeat_time", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    last_heartbeat_time: _timestamp_pb2.Timestamp
    last_transition_time: _timestamp_pb2.Timestamp
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., last_heartbeat_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class NodeSystemInfo(_message.Message):
    __slots__ = ("kubelet_version", "operating_system", "architecture")
    KUBELET_VERSION_FIELD_NUMBER: _ClassVar[int]
    OPERATING_SYSTEM_FIELD_NUMBER: _ClassVar[int]
    ARCHITECTURE_FIELD_NUMBER: _ClassVar[int]
    kubelet_version: str
    operating_system: str
    architecture: str
    def __init__(self, kubelet_version: _Optional[str] = ..., operating_system: _Optional[str] = ..., architecture: _Optional[str] = ...) -> None: ...

class NodeAddress(_message.Message):
    __slots__ = ("type", "address")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    type: str
    address: str
    def __init__(self, type: _Optional[str] = ..., address: _Optional[str] = ...) -> None: ...

class NodeStatus(_message.Message):
    __slots__ = ("capacity", "allocatable", "conditions", "node_info", "phase", "addresses")
    class CapacityEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AllocatableEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    ALLOCATABLE_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    NODE_INFO_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    capacity: _containers.ScalarMap[str, str]
    allocatable: _containers.ScalarMap[str, str]
    conditions: _containers.RepeatedCompositeFieldContainer[NodeCondition]
    node_info: NodeSystemInfo
    phase: str
    addresses: _containers.RepeatedCompositeFieldContainer[NodeAddress]
    def __init__(self, capacity: _Optional[_Mapping[str, str]] = ..., allocatable: _Optional[_Mapping[str, str]] = ..., conditions: _Optional[_Iterable[_Union[NodeCondition, _Mapping]]] = ..., node_info: _Optional[_Union[NodeSystemInfo, _Mapping]] = ..., phase: _Optional[str] = ..., addresses: _Optional[_Iterable[_Union[NodeAddress, _Mapping]]] = ...) -> None: ...

class Node(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: NodeSpec
    status: NodeStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[NodeSpec, _Mapping]] = ..., status: _Optional[_Union[NodeStatus, _Mapping]] = ...) -> None: ...

class PriorityClass(_message.Message):
    __slots__ = ("metadata", "value", "global_default", "description", "preemption_policy")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    GLOBAL_DEFAULT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    value: int
    global_default: bool
    description: str
    preemption_policy: str
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., value: _Optional[int] = ..., global_default: _Optional[bool] = ..., description: _Optional[str] = ..., preemption_policy: _Optional[str] = ...) -> None: ...

class PodDisruptionBudgetSpec(_message.Message):
    __slots__ = ("min_available", "selector", "max_unavailable", "unhealthy_pod_eviction_policy")
    MIN_AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    MAX_UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    UNHEALTHY_POD_EVICTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    min_available: IntOrString
    selector: LabelSelector
    max_unavailable: IntOrString
    unhealthy_pod_eviction_policy: str
    def __init__(self, min_available: _Optional[_Union[IntOrString, _Mapping]] = ..., selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., max_unavailable: _Optional[_Union[IntOrString, _Mapping]] = ..., unhealthy_pod_eviction_policy: _Optional[str] = ...) -> None: ...

class PodDisruptionBudgetStatus(_message.Message):
    __slots__ = ("observed_generation", "disrupted_pods", "disruptions_allowed", "current_healthy", "desired_healthy", "expected_pods", "conditions")
    class DisruptedPodsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _timestamp_pb2.Timestamp
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    DISRUPTED_PODS_FIELD_NUMBER: _ClassVar[int]
    DISRUPTIONS_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    CURRENT_HEALTHY_FIELD_NUMBER: _ClassVar[int]
    DESIRED_HEALTHY_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_PODS_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    observed_generation: int
    disrupted_pods: _containers.MessageMap[str, _timestamp_pb2.Timestamp]
    disruptions_allowed: int
    current_healthy: int
    desired_healthy: int
    expected_pods: int
    conditions: _containers.RepeatedCompositeFieldContainer[Condition]
    def __init__(self, observed_generation: _Optional[int] = ..., disrupted_pods: _Optional[_Mapping[str, _timestamp_pb2.Timestamp]] = ..., disruptions_allowed: _Optional[int] = ..., current_healthy: _Optional[int] = ..., desired_healthy: _Optional[int] = ..., expected_pods: _Optional[int] = ..., conditions: _Optional[_Iterable[_Union[Condition, _Mapping]]] = ...) -> None: ...

class PodDisruptionBudget(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: PodDisruptionBudgetSpec
    status: PodDisruptionBudgetStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[PodDisruptionBudgetSpec, _Mapping]] = ..., status: _Optional[_Union[PodDisruptionBudgetStatus, _Mapping]] = ...) -> None: ...

class LeaseSpec(_message.Message):
    __slots__ = ("holder_identity", "lease_duration_seconds", "acquire_time", "renew_time", "lease_transitions")
    HOLDER_IDENTITY_FIELD_NUMBER: _ClassVar[int]
    LEASE_DURATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    ACQUIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    RENEW_TIME_FIELD_NUMBER: _ClassVar[int]
    LEASE_TRANSITIONS_FIELD_NUMBER: _ClassVar[int]
    holder_identity: str
    lease_duration_seconds: int
    acquire_time: _timestamp_pb2.Timestamp
    renew_time: _timestamp_pb2.Timestamp
    lease_transitions: int
    def __init__(self, holder_identity: _Optional[str] = ..., lease_duration_seconds: _Optional[int] = ..., acquire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., renew_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., lease_transitions: _Optional[int] = ...) -> None: ...

class Lease(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: LeaseSpec
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[LeaseSpec, _Mapping]] = ...) -> None: ...

class EventSource(_message.Message):
    __slots__ = ("component", "host")
    COMPONENT_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    component: str
    host: str
    def __init__(self, component: _Optional[str] = ..., host: _Optional[str] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("metadata", "involved_object", "reason", "message", "source", "first_timestamp", "last_timestamp", "count", "type", "reporting_component", "reporting_instance", "action", "related")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    INVOLVED_OBJECT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    FIRST_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    LAST_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    REPORTING_COMPONENT_FIELD_NUMBER: _ClassVar[int]
    REPORTING_INSTANCE_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    RELATED_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    involved_object: ObjectReference
    reason: str
    message: str
    source: EventSource
    first_timestamp: _timestamp_pb2.Timestamp
    last_timestamp: _timestamp_pb2.Timestamp
    count: int
    type: str
    reporting_component: str
    reporting_instance: str
    action: str
    related: ObjectReference
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., involved_object: _Optional[_Union[ObjectReference, _Mapping]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., source: _Optional[_Union[EventSource, _Mapping]] = ..., first_timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., count: _Optional[int] = ..., type: _Optional[str] = ..., reporting_component: _Optional[str] = ..., reporting_instance: _Optional[str] = ..., action: _Optional[str] = ..., related: _Optional[_Union[ObjectReference, _Mapping]] = ...) -> None: ...

class NamespaceSpec(_message.Message):
    __slots__ = ("finalizers",)
    FINALIZERS_FIELD_NUMBER: _ClassVar[int]
    finalizers: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, finalizers: _Optional[_Iterable[str]] = ...) -> None: ...

class NamespaceCondition(_message.Message):
    __slots__ = ("type", "status", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    last_transition_time: _timestamp_pb2.Timestamp
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class NamespaceStatus(_message.Message):
    __slots__ = ("phase", "conditions")
    PHASE_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    phase: str
    conditions: _containers.RepeatedCompositeFieldContainer[NamespaceCondition]
    def __init__(self, phase: _Optional[str] = ..., conditions: _Optional[_Iterable[_Union[NamespaceCondition, _Mapping]]] = ...) -> None: ...

class Namespace(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: NamespaceSpec
    status: NamespaceStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[NamespaceSpec, _Mapping]] = ..., status: _Optional[_Union[NamespaceStatus, _Mapping]] = ...) -> None: ...

class ServicePort(_message.Message):
    __slots__ = ("name", "protocol", "app_protocol", "port", "target_port", "node_port")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    APP_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    TARGET_PORT_FIELD_NUMBER: _ClassVar[int]
    NODE_PORT_FIELD_NUMBER: _ClassVar[int]
    name: str
    protocol: str
    app_protocol: str
    port: int
    target_port: IntOrString
    node_port: int
    def __init__(self, name: _Optional[str] = ..., protocol: _Optional[str] = ..., app_protocol: _Optional[str] = ..., port: _Optional[int] = ..., target_port: _Optional[_Union[IntOrString, _Mapping]] = ..., node_port: _Optional[int] = ...) -> None: ...

class ServiceSpec(_message.Message):
    __slots__ = ("ports", "selector", "cluster_ip", "cluster_ips", "type", "external_ips", "session_affinity", "load_balancer_ip", "external_name", "external_traffic_policy", "internal_traffic_policy", "publish_not_ready_addresses", "ip_families", "ip_family_policy")
    class SelectorEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PORTS_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_IP_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_IPS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_IPS_FIELD_NUMBER: _ClassVar[int]
    SESSION_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    LOAD_BALANCER_IP_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_NAME_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_TRAFFIC_POLICY_FIELD_NUMBER: _ClassVar[int]
    INTERNAL_TRAFFIC_POLICY_FIELD_NUMBER: _ClassVar[int]
    PUBLISH_NOT_READY_ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    IP_FAMILIES_FIELD_NUMBER: _ClassVar[int]
    IP_FAMILY_POLICY_FIELD_NUMBER: _ClassVar[int]
    ports: _containers.RepeatedCompositeFieldContainer[ServicePort]
    selector: _containers.ScalarMap[str, str]
    cluster_ip: str
    cluster_ips: _containers.RepeatedScalarFieldContainer[str]
    type: str
    external_ips: _containers.RepeatedScalarFieldContainer[str]
    session_affinity: str
    load_balancer_ip: str
    external_name: str
    external_traffic_policy: str
    internal_traffic_policy: str
    publish_not_ready_addresses: bool
    ip_families: _containers.RepeatedScalarFieldContainer[str]
    ip_family_policy: str
    def __init__(self, ports: _Optional[_Iterable[_Union[ServicePort, _Mapping]]] = ..., selector: _Optional[_Mapping[str, str]] = ..., cluster_ip: _Optional[str] = ..., cluster_ips: _Optional[_Iterable[str]] = ..., type: _Optional[str] = ..., external_ips: _Optional[_Iterable[str]] = ..., session_affinity: _Optional[str] = ..., load_balancer_ip: _Optional[str] = ..., external_name: _Optional[str] = ..., external_traffic_policy: _Optional[str] = ..., internal_traffic_policy: _Optional[str] = ..., publish_not_ready_addresses: _Optional[bool] = ..., ip_families: _Optional[_Iterable[str]] = ..., ip_family_policy: _Optional[str] = ...) -> None: ...

class LoadBalancerIngress(_message.Message):
    __slots__ = ("ip", "hostname")
    IP_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    ip: str
    hostname: str
    def __init__(self, ip: _Optional[str] = ..., hostname: _Optional[str] = ...) -> None: ...

class LoadBalancerStatus(_message.Message):
    __slots__ = ("ingress",)
    INGRESS_FIELD_NUMBER: _ClassVar[int]
    ingress: _containers.RepeatedCompositeFieldContainer[LoadBalancerIngress]
    def __init__(self, ingress: _Optional[_Iterable[_Union[LoadBalancerIngress, _Mapping]]] = ...) -> None: ...

class ServiceStatus(_message.Message):
    __slots__ = ("load_balancer", "conditions")
    LOAD_BALANCER_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    load_balancer: LoadBalancerStatus
    conditions: _containers.RepeatedCompositeFieldContainer[Condition]
    def __init__(self, load_balancer: _Optional[_Union[LoadBalancerStatus, _Mapping]] = ..., conditions: _Optional[_Iterable[_Union[Condition, _Mapping]]] = ...) -> None: ...

class Service(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: ServiceSpec
    status: ServiceStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ServiceSpec, _Mapping]] = ..., status: _Optional[_Union[ServiceStatus, _Mapping]] = ...) -> None: ...

class ConfigMap(_message.Message):
    __slots__ = ("metadata", "data", "binary_data", "immutable")
    class DataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class BinaryDataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    METADATA_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    BINARY_DATA_FIELD_NUMBER: _ClassVar[int]
    IMMUTABLE_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    data: _containers.ScalarMap[str, str]
    binary_data: _containers.ScalarMap[str, bytes]
    immutable: bool
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., data: _Optional[_Mapping[str, str]] = ..., binary_data: _Optional[_Mapping[str, bytes]] = ..., immutable: _Optional[bool] = ...) -> None: ...

class PodTemplateSpec(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: PodSpec
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[PodSpec, _Mapping]] = ...) -> None: ...

class ReplicaSetSpec(_message.Message):
    __slots__ = ("replicas", "min_ready_seconds", "selector", "template")
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    MIN_READY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    replicas: int
    min_ready_seconds: int
    selector: LabelSelector
    template: PodTemplateSpec
    def __init__(self, replicas: _Optional[int] = ..., min_ready_seconds: _Optional[int] = ..., selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., template: _Optional[_Union[PodTemplateSpec, _Mapping]] = ...) -> None: ...

class ReplicaSetCondition(_message.Message):
    __slots__ = ("type", "status", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    last_transition_time: _timestamp_pb2.Timestamp
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ReplicaSetStatus(_message.Message):
    __slots__ = ("replicas", "fully_labeled_replicas", "ready_replicas", "available_replicas", "observed_generation", "conditions")
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    FULLY_LABELED_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    READY_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    replicas: int
    fully_labeled_replicas: int
    ready_replicas: int
    available_replicas: int
    observed_generation: int
    conditions: _containers.RepeatedCompositeFieldContainer[ReplicaSetCondition]
    def __init__(self, replicas: _Optional[int] = ..., fully_labeled_replicas: _Optional[int] = ..., ready_replicas: _Optional[int] = ..., available_replicas: _Optional[int] = ..., observed_generation: _Optional[int] = ..., conditions: _Optional[_Iterable[_Union[ReplicaSetCondition, _Mapping]]] = ...) -> None: ...

class ReplicaSet(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: ReplicaSetSpec
    status: ReplicaSetStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ReplicaSetSpec, _Mapping]] = ..., status: _Optional[_Union[ReplicaSetStatus, _Mapping]] = ...) -> None: ...

class RollingUpdateDeployment(_message.Message):
    __slots__ = ("max_unavailable", "max_surge")
    MAX_UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    MAX_SURGE_FIELD_NUMBER: _ClassVar[int]
    max_unavailable: IntOrString
    max_surge: IntOrString
    def __init__(self, max_unavailable: _Optional[_Union[IntOrString, _Mapping]] = ..., max_surge: _Optional[_Union[IntOrString, _Mapping]] = ...) -> None: ...

class DeploymentStrategy(_message.Message):
    __slots__ = ("type", "rolling_update")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ROLLING_UPDATE_FIELD_NUMBER: _ClassVar[int]
    type: str
    rolling_update: RollingUpdateDeployment
    def __init__(self, type: _Optional[str] = ..., rolling_update: _Optional[_Union[RollingUpdateDeployment, _Mapping]] = ...) -> None: ...

class DeploymentSpec(_message.Message):
    __slots__ = ("replicas", "selector", "template", "strategy", "min_ready_seconds", "revision_history_limit", "paused", "progress_deadline_seconds")
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    MIN_READY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    REVISION_HISTORY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_DEADLINE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    replicas: int
    selector: LabelSelector
    template: PodTemplateSpec
    strategy: DeploymentStrategy
    min_ready_seconds: int
    revision_history_limit: int
    paused: bool
    progress_deadline_seconds: int
    def __init__(self, replicas: _Optional[int] = ..., selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., template: _Optional[_Union[PodTemplateSpec, _Mapping]] = ..., strategy: _Optional[_Union[DeploymentStrategy, _Mapping]] = ..., min_ready_seconds: _Optional[int] = ..., revision_history_limit: _Optional[int] = ..., paused: _Optional[bool] = ..., progress_deadline_seconds: _Optional[int] = ...) -> None: ...

class DeploymentCondition(_message.Message):
    __slots__ = ("type", "status", "last_update_time", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    last_update_time: _timestamp_pb2.Timestamp
    last_transition_time: _timestamp_pb2.Timestamp
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., last_update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class DeploymentStatus(_message.Message):
    __slots__ = ("observed_generation", "replicas", "updated_replicas", "ready_replicas", "available_replicas", "unavailable_replicas", "conditions", "collision_count")
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    READY_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    UNAVAILABLE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    COLLISION_COUNT_FIELD_NUMBER: _ClassVar[int]
    observed_generation: int
    replicas: int
    updated_replicas: int
    ready_replicas: int
    available_replicas: int
    unavailable_replicas: int
    conditions: _containers.RepeatedCompositeFieldContainer[DeploymentCondition]
    collision_count: int
    def __init__(self, observed_generation: _Optional[int] = ..., replicas: _Optional[int] = ..., updated_replicas: _Optional[int] = ..., ready_replicas: _Optional[int] = ..., available_replicas: _Optional[int] = ..., unavailable_replicas: _Optional[int] = ..., conditions: _Optional[_Iterable[_Union[DeploymentCondition, _Mapping]]] = ..., collision_count: _Optional[int] = ...) -> None: ...

class Deployment(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: DeploymentSpec
    status: DeploymentStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[DeploymentSpec, _Mapping]] = ..., status: _Optional[_Union[DeploymentStatus, _Mapping]] = ...) -> None: ...

class UncountedTerminatedPods(_message.Message):
    __slots__ = ("succeeded", "failed")
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    succeeded: _containers.RepeatedScalarFieldContainer[str]
    failed: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, succeeded: _Optional[_Iterable[str]] = ..., failed: _Optional[_Iterable[str]] = ...) -> None: ...

class JobSpec(_message.Message):
    __slots__ = ("parallelism", "completions", "active_deadline_seconds", "backoff_limit", "selector", "manual_selector", "template", "ttl_seconds_after_finished", "completion_mode", "suspend", "pod_replacement_policy", "scheduling")
    PARALLELISM_FIELD_NUMBER: _ClassVar[int]
    COMPLETIONS_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_DEADLINE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    BACKOFF_LIMIT_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    MANUAL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_AFTER_FINISHED_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_MODE_FIELD_NUMBER: _ClassVar[int]
    SUSPEND_FIELD_NUMBER: _ClassVar[int]
    POD_REPLACEMENT_POLICY_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_FIELD_NUMBER: _ClassVar[int]
    parallelism: int
    completions: int
    active_deadline_seconds: int
    backoff_limit: int
    selector: LabelSelector
    manual_selector: bool
    template: PodTemplateSpec
    ttl_seconds_after_finished: int
    completion_mode: str
    suspend: bool
    pod_replacement_policy: str
    scheduling: JobSchedulingConfiguration
    def __init__(self, parallelism: _Optional[int] = ..., completions: _Optional[int] = ..., active_deadline_seconds: _Optional[int] = ..., backoff_limit: _Optional[int] = ..., selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., manual_selector: _Optional[bool] = ..., template: _Optional[_Union[PodTemplateSpec, _Mapping]] = ..., ttl_seconds_after_finished: _Optional[int] = ..., completion_mode: _Optional[str] = ..., suspend: _Optional[bool] = ..., pod_replacement_policy: _Optional[str] = ..., scheduling: _Optional[_Union[JobSchedulingConfiguration, _Mapping]] = ...) -> None: ...

class JobSchedulingConfiguration(_message.Message):
    __slots__ = ("scheduling_policy", "scheduling_constraints", "disruption_mode", "resource_claims")
    SCHEDULING_POLICY_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    DISRUPTION_MODE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIMS_FIELD_NUMBER: _ClassVar[int]
    scheduling_policy: WorkloadPodGroupSchedulingPolicy
    scheduling_constraints: WorkloadPodGroupSchedulingConstraints
    disruption_mode: WorkloadPodGroupDisruptionMode
    resource_claims: _containers.RepeatedCompositeFieldContainer[WorkloadPodGroupResourceClaim]
    def __init__(self, scheduling_policy: _Optional[_Union[WorkloadPodGroupSchedulingPolicy, _Mapping]] = ..., scheduling_constraints: _Optional[_Union[WorkloadPodGroupSchedulingConstraints, _Mapping]] = ..., disruption_mode: _Optional[_Union[WorkloadPodGroupDisruptionMode, _Mapping]] = ..., resource_claims: _Optional[_Iterable[_Union[WorkloadPodGroupResourceClaim, _Mapping]]] = ...) -> None: ...

class WorkloadPodGroupBasicSchedulingPolicy(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class WorkloadPodGroupGangSchedulingPolicy(_message.Message):
    __slots__ = ("min_count",)
    MIN_COUNT_FIELD_NUMBER: _ClassVar[int]
    min_count: int
    def __init__(self, min_count: _Optional[int] = ...) -> None: ...

class WorkloadPodGroupSchedulingPolicy(_message.Message):
    __slots__ = ("basic", "gang")
    BASIC_FIELD_NUMBER: _ClassVar[int]
    GANG_FIELD_NUMBER: _ClassVar[int]
    basic: WorkloadPodGroupBasicSchedulingPolicy
    gang: WorkloadPodGroupGangSchedulingPolicy
    def __init__(self, basic: _Optional[_Union[WorkloadPodGroupBasicSchedulingPolicy, _Mapping]] = ..., gang: _Optional[_Union[WorkloadPodGroupGangSchedulingPolicy, _Mapping]] = ...) -> None: ...

class WorkloadPodGroupSchedulingConstraints(_message.Message):
    __slots__ = ("topology",)
    TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    topology: _containers.RepeatedCompositeFieldContainer[TopologyConstraint]
    def __init__(self, topology: _Optional[_Iterable[_Union[TopologyConstraint, _Mapping]]] = ...) -> None: ...

class WorkloadPodGroupResourceClaim(_message.Message):
    __slots__ = ("name", "resource_claim_name", "resource_claim_template_name")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIM_NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIM_TEMPLATE_NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    resource_claim_name: str
    resource_claim_template_name: str
    def __init__(self, name: _Optional[str] = ..., resource_claim_name: _Optional[str] = ..., resource_claim_template_name: _Optional[str] = ...) -> None: ...

class WorkloadPodGroupSingleDisruptionMode(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class WorkloadPodGroupAllDisruptionMode(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class WorkloadPodGroupDisruptionMode(_message.Message):
    __slots__ = ("single", "all")
    SINGLE_FIELD_NUMBER: _ClassVar[int]
    ALL_FIELD_NUMBER: _ClassVar[int]
    single: WorkloadPodGroupSingleDisruptionMode
    all: WorkloadPodGroupAllDisruptionMode
    def __init__(self, single: _Optional[_Union[WorkloadPodGroupSingleDisruptionMode, _Mapping]] = ..., all: _Optional[_Union[WorkloadPodGroupAllDisruptionMode, _Mapping]] = ...) -> None: ...

class JobCondition(_message.Message):
    __slots__ = ("type", "status", "last_probe_time", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_PROBE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    last_probe_time: _timestamp_pb2.Timestamp
    last_transition_time: _timestamp_pb2.Timestamp
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., last_probe_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class JobStatus(_message.Message):
    __slots__ = ("conditions", "start_time", "completion_time", "active", "succeeded", "failed", "terminating", "ready", "uncounted_terminated_pods")
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TIME_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    TERMINATING_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    UNCOUNTED_TERMINATED_PODS_FIELD_NUMBER: _ClassVar[int]
    conditions: _containers.RepeatedCompositeFieldContainer[JobCondition]
    start_time: _timestamp_pb2.Timestamp
    completion_time: _timestamp_pb2.Timestamp
    active: int
    succeeded: int
    failed: int
    terminating: int
    ready: int
    uncounted_terminated_pods: UncountedTerminatedPods
    def __init__(self, conditions: _Optional[_Iterable[_Union[JobCondition, _Mapping]]] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., completion_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., active: _Optional[int] = ..., succeeded: _Optional[int] = ..., failed: _Optional[int] = ..., terminating: _Optional[int] = ..., ready: _Optional[int] = ..., uncounted_terminated_pods: _Optional[_Union[UncountedTerminatedPods, _Mapping]] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: JobSpec
    status: JobStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[JobSpec, _Mapping]] = ..., status: _Optional[_Union[JobStatus, _Mapping]] = ...) -> None: ...

class RollingUpdateDaemonSet(_message.Message):
    __slots__ = ("max_unavailable", "max_surge")
    MAX_UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    MAX_SURGE_FIELD_NUMBER: _ClassVar[int]
    max_unavailable: IntOrString
    max_surge: IntOrString
    def __init__(self, max_unavailable: _Optional[_Union[IntOrString, _Mapping]] = ..., max_surge: _Optional[_Union[IntOrString, _Mapping]] = ...) -> None: ...

class DaemonSetUpdateStrategy(_message.Message):
    __slots__ = ("type", "rolling_update")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ROLLING_UPDATE_FIELD_NUMBER: _ClassVar[int]
    type: str
    rolling_update: RollingUpdateDaemonSet
    def __init__(self, type: _Optional[str] = ..., rolling_update: _Optional[_Union[RollingUpdateDaemonSet, _Mapping]] = ...) -> None: ...

class DaemonSetSpec(_message.Message):
    __slots__ = ("selector", "template", "update_strategy", "min_ready_seconds", "revision_history_limit")
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    UPDATE_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    MIN_READY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    REVISION_HISTORY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    selector: LabelSelector
    template: PodTemplateSpec
    update_strategy: DaemonSetUpdateStrategy
    min_ready_seconds: int
    revision_history_limit: int
    def __init__(self, selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., template: _Optional[_Union[PodTemplateSpec, _Mapping]] = ..., update_strategy: _Optional[_Union[DaemonSetUpdateStrategy, _Mapping]] = ..., min_ready_seconds: _Optional[int] = ..., revision_history_limit: _Optional[int] = ...) -> None: ...

class DaemonSetCondition(_message.Message):
    __slots__ = ("type", "status", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    last_transition_time: _timestamp_pb2.Timestamp
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class DaemonSetStatus(_message.Message):
    __slots__ = ("current_number_scheduled", "number_misscheduled", "desired_number_scheduled", "number_ready", "observed_generation", "updated_number_scheduled", "number_available", "number_unavailable", "collision_count", "conditions")
    CURRENT_NUMBER_SCHEDULED_FIELD_NUMBER: _ClassVar[int]
    NUMBER_MISSCHEDULED_FIELD_NUMBER: _ClassVar[int]
    DESIRED_NUMBER_SCHEDULED_FIELD_NUMBER: _ClassVar[int]
    NUMBER_READY_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    UPDATED_NUMBER_SCHEDULED_FIELD_NUMBER: _ClassVar[int]
    NUMBER_AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    NUMBER_UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    COLLISION_COUNT_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    current_number_scheduled: int
    number_misscheduled: int
    desired_number_scheduled: int
    number_ready: int
    observed_generation: int
    updated_number_scheduled: int
    number_available: int
    number_unavailable: int
    collision_count: int
    conditions: _containers.RepeatedCompositeFieldContainer[DaemonSetCondition]
    def __init__(self, current_number_scheduled: _Optional[int] = ..., number_misscheduled: _Optional[int] = ..., desired_number_scheduled: _Optional[int] = ..., number_ready: _Optional[int] = ..., observed_generation: _Optional[int] = ..., updated_number_scheduled: _Optional[int] = ..., number_available: _Optional[int] = ..., number_unavailable: _Optional[int] = ..., collision_count: _Optional[int] = ..., conditions: _Optional[_Iterable[_Union[DaemonSetCondition, _Mapping]]] = ...) -> None: ...

class DaemonSet(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: DaemonSetSpec
    status: DaemonSetStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[DaemonSetSpec, _Mapping]] = ..., status: _Optional[_Union[DaemonSetStatus, _Mapping]] = ...) -> None: ...

class TypedLocalObjectReference(_message.Message):
    __slots__ = ("api_group", "kind", "name")
    API_GROUP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    api_group: str
    kind: str
    name: str
    def __init__(self, api_group: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class TypedObjectReference(_message.Message):
    __slots__ = ("api_group", "kind", "name", "namespace")
    API_GROUP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    api_group: str
    kind: str
    name: str
    namespace: str
    def __init__(self, api_group: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class VolumeNodeAffinity(_message.Message):
    __slots__ = ("required",)
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    required: NodeSelector
    def __init__(self, required: _Optional[_Union[NodeSelector, _Mapping]] = ...) -> None: ...

class CSIPersistentVolumeSource(_message.Message):
    __slots__ = ("driver", "volume_handle", "read_only", "fs_type", "volume_attributes")
    class VolumeAttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    DRIVER_FIELD_NUMBER: _ClassVar[int]
    VOLUME_HANDLE_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    FS_TYPE_FIELD_NUMBER: _ClassVar[int]
    VOLUME_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    driver: str
    volume_handle: str
    read_only: bool
    fs_type: str
    volume_attributes: _containers.ScalarMap[str, str]
    def __init__(self, driver: _Optional[str] = ..., volume_handle: _Optional[str] = ..., read_only: _Optional[bool] = ..., fs_type: _Optional[str] = ..., volume_attributes: _Optional[_Mapping[str, str]] = ...) -> None: ...

class LocalVolumeSource(_message.Message):
    __slots__ = ("path", "fs_type")
    PATH_FIELD_NUMBER: _ClassVar[int]
    FS_TYPE_FIELD_NUMBER: _ClassVar[int]
    path: str
    fs_type: str
    def __init__(self, path: _Optional[str] = ..., fs_type: _Optional[str] = ...) -> None: ...

class AWSElasticBlockStoreVolumeSource(_message.Message):
    __slots__ = ("volume_id", "fs_type", "partition", "read_only")
    VOLUME_ID_FIELD_NUMBER: _ClassVar[int]
    FS_TYPE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    volume_id: str
    fs_type: str
    partition: int
    read_only: bool
    def __init__(self, volume_id: _Optional[str] = ..., fs_type: _Optional[str] = ..., partition: _Optional[int] = ..., read_only: _Optional[bool] = ...) -> None: ...

class PersistentVolumeSpec(_message.Message):
    __slots__ = ("capacity", "access_modes", "claim_ref", "persistent_volume_reclaim_policy", "storage_class_name", "mount_options", "volume_mode", "node_affinity", "volume_attributes_class_name", "host_path", "local", "csi", "aws_elastic_block_store")
    class CapacityEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    ACCESS_MODES_FIELD_NUMBER: _ClassVar[int]
    CLAIM_REF_FIELD_NUMBER: _ClassVar[int]
    PERSISTENT_VOLUME_RECLAIM_POLICY_FIELD_NUMBER: _ClassVar[int]
    STORAGE_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    MOUNT_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    VOLUME_MODE_FIELD_NUMBER: _ClassVar[int]
    NODE_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    VOLUME_ATTRIBUTES_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_PATH_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    CSI_FIELD_NUMBER: _ClassVar[int]
    AWS_ELASTIC_BLOCK_STORE_FIELD_NUMBER: _ClassVar[int]
    capacity: _containers.ScalarMap[str, str]
    access_modes: _containers.RepeatedScalarFieldContainer[str]
    claim_ref: ObjectReference
    persistent_volume_reclaim_policy: str
    storage_class_name: str
    mount_options: _containers.RepeatedScalarFieldContainer[str]
    volume_mode: str
    node_affinity: VolumeNodeAffinity
    volume_attributes_class_name: str
    host_path: HostPathVolumeSource
    local: LocalVolumeSource
    csi: CSIPersistentVolumeSource
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource
    def __init__(self, capacity: _Optional[_Mapping[str, str]] = ..., access_modes: _Optional[_Iterable[str]] = ..., claim_ref: _Optional[_Union[ObjectReference, _Mapping]] = ..., persistent_volume_reclaim_policy: _Optional[str] = ..., storage_class_name: _Optional[str] = ..., mount_options: _Optional[_Iterable[str]] = ..., volume_mode: _Optional[str] = ..., node_affinity: _Optional[_Union[VolumeNodeAffinity, _Mapping]] = ..., volume_attributes_class_name: _Optional[str] = ..., host_path: _Optional[_Union[HostPathVolumeSource, _Mapping]] = ..., local: _Optional[_Union[LocalVolumeSource, _Mapping]] = ..., csi: _Optional[_Union[CSIPersistentVolumeSource, _Mapping]] = ..., aws_elastic_block_store: _Optional[_Union[AWSElasticBlockStoreVolumeSource, _Mapping]] = ...) -> None: ...

class PersistentVolumeStatus(_message.Message):
    __slots__ = ("phase", "message", "reason", "last_phase_transition_time")
    PHASE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    LAST_PHASE_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    phase: str
    message: str
    reason: str
    last_phase_transition_time: _timestamp_pb2.Timestamp
    def __init__(self, phase: _Optional[str] = ..., message: _Optional[str] = ..., reason: _Optional[str] = ..., last_phase_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PersistentVolume(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: PersistentVolumeSpec
    status: PersistentVolumeStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[PersistentVolumeSpec, _Mapping]] = ..., status: _Optional[_Union[PersistentVolumeStatus, _Mapping]] = ...) -> None: ...

class VolumeResourceRequirements(_message.Message):
    __slots__ = ("requests", "limits")
    class RequestsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class LimitsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.ScalarMap[str, str]
    limits: _containers.ScalarMap[str, str]
    def __init__(self, requests: _Optional[_Mapping[str, str]] = ..., limits: _Optional[_Mapping[str, str]] = ...) -> None: ...

class PersistentVolumeClaimSpec(_message.Message):
    __slots__ = ("access_modes", "selector", "resources", "volume_name", "storage_class_name", "volume_mode", "data_source", "data_source_ref", "volume_attributes_class_name")
    ACCESS_MODES_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    VOLUME_NAME_FIELD_NUMBER: _ClassVar[int]
    STORAGE_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    VOLUME_MODE_FIELD_NUMBER: _ClassVar[int]
    DATA_SOURCE_FIELD_NUMBER: _ClassVar[int]
    DATA_SOURCE_REF_FIELD_NUMBER: _ClassVar[int]
    VOLUME_ATTRIBUTES_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    access_modes: _containers.RepeatedScalarFieldContainer[str]
    selector: LabelSelector
    resources: VolumeResourceRequirements
    volume_name: str
    storage_class_name: str
    volume_mode: str
    data_source: TypedLocalObjectReference
    data_source_ref: TypedObjectReference
    volume_attributes_class_name: str
    def __init__(self, access_modes: _Optional[_Iterable[str]] = ..., selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., resources: _Optional[_Union[VolumeResourceRequirements, _Mapping]] = ..., volume_name: _Optional[str] = ..., storage_class_name: _Optional[str] = ..., volume_mode: _Optional[str] = ..., data_source: _Optional[_Union[TypedLocalObjectReference, _Mapping]] = ..., data_source_ref: _Optional[_Union[TypedObjectReference, _Mapping]] = ..., volume_attributes_class_name: _Optional[str] = ...) -> None: ...

class PersistentVolumeClaimCondition(_message.Message):
    __slots__ = ("type", "status", "last_probe_time", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_PROBE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    last_probe_time: _timestamp_pb2.Timestamp
    last_transition_time: _timestamp_pb2.Timestamp
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., last_probe_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class PersistentVolumeClaimStatus(_message.Message):
    __slots__ = ("phase", "access_modes", "capacity", "conditions", "allocated_resources")
    class CapacityEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class AllocatedResourcesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PHASE_FIELD_NUMBER: _ClassVar[int]
    ACCESS_MODES_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    phase: str
    access_modes: _containers.RepeatedScalarFieldContainer[str]
    capacity: _containers.ScalarMap[str, str]
    conditions: _containers.RepeatedCompositeFieldContainer[PersistentVolumeClaimCondition]
    allocated_resources: _containers.ScalarMap[str, str]
    def __init__(self, phase: _Optional[str] = ..., access_modes: _Optional[_Iterable[str]] = ..., capacity: _Optional[_Mapping[str, str]] = ..., conditions: _Optional[_Iterable[_Union[PersistentVolumeClaimCondition, _Mapping]]] = ..., allocated_resources: _Optional[_Mapping[str, str]] = ...) -> None: ...

class PersistentVolumeClaim(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: PersistentVolumeClaimSpec
    status: PersistentVolumeClaimStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[PersistentVolumeClaimSpec, _Mapping]] = ..., status: _Optional[_Union[PersistentVolumeClaimStatus, _Mapping]] = ...) -> None: ...

class TopologySelectorLabelRequirement(_message.Message):
    __slots__ = ("key", "values")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    key: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, key: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class TopologySelectorTerm(_message.Message):
    __slots__ = ("match_label_expressions",)
    MATCH_LABEL_EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    match_label_expressions: _containers.RepeatedCompositeFieldContainer[TopologySelectorLabelRequirement]
    def __init__(self, match_label_expressions: _Optional[_Iterable[_Union[TopologySelectorLabelRequirement, _Mapping]]] = ...) -> None: ...

class StorageClass(_message.Message):
    __slots__ = ("metadata", "provisioner", "parameters", "reclaim_policy", "mount_options", "allow_volume_expansion", "volume_binding_mode", "allowed_topologies")
    class ParametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    METADATA_FIELD_NUMBER: _ClassVar[int]
    PROVISIONER_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    RECLAIM_POLICY_FIELD_NUMBER: _ClassVar[int]
    MOUNT_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_VOLUME_EXPANSION_FIELD_NUMBER: _ClassVar[int]
    VOLUME_BINDING_MODE_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_TOPOLOGIES_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    provisioner: str
    parameters: _containers.ScalarMap[str, str]
    reclaim_policy: str
    mount_options: _containers.RepeatedScalarFieldContainer[str]
    allow_volume_expansion: bool
    volume_binding_mode: str
    allowed_topologies: _containers.RepeatedCompositeFieldContainer[TopologySelectorTerm]
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., provisioner: _Optional[str] = ..., parameters: _Optional[_Mapping[str, str]] = ..., reclaim_policy: _Optional[str] = ..., mount_options: _Optional[_Iterable[str]] = ..., allow_volume_expansion: _Optional[bool] = ..., volume_binding_mode: _Optional[str] = ..., allowed_topologies: _Optional[_Iterable[_Union[TopologySelectorTerm, _Mapping]]] = ...) -> None: ...

class VolumeNodeResources(_message.Message):
    __slots__ = ("count",)
    COUNT_FIELD_NUMBER: _ClassVar[int]
    count: int
    def __init__(self, count: _Optional[int] = ...) -> None: ...

class CSINodeDriver(_message.Message):
    __slots__ = ("name", "node_id", "topology_keys", "allocatable")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_KEYS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATABLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    node_id: str
    topology_keys: _containers.RepeatedScalarFieldContainer[str]
    allocatable: VolumeNodeResources
    def __init__(self, name: _Optional[str] = ..., node_id: _Optional[str] = ..., topology_keys: _Optional[_Iterable[str]] = ..., allocatable: _Optional[_Union[VolumeNodeResources, _Mapping]] = ...) -> None: ...

class CSINodeSpec(_message.Message):
    __slots__ = ("drivers",)
    DRIVERS_FIELD_NUMBER: _ClassVar[int]
    drivers: _containers.RepeatedCompositeFieldContainer[CSINodeDriver]
    def __init__(self, drivers: _Optional[_Iterable[_Union[CSINodeDriver, _Mapping]]] = ...) -> None: ...

class CSINode(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: CSINodeSpec
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[CSINodeSpec, _Mapping]] = ...) -> None: ...

class ServiceAccount(_message.Message):
    __slots__ = ("metadata", "secrets", "image_pull_secrets", "automount_service_account_token")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SECRETS_FIELD_NUMBER: _ClassVar[int]
    IMAGE_PULL_SECRETS_FIELD_NUMBER: _ClassVar[int]
    AUTOMOUNT_SERVICE_ACCOUNT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    secrets: _containers.RepeatedCompositeFieldContainer[ObjectReference]
    image_pull_secrets: _containers.RepeatedCompositeFieldContainer[LocalObjectReference]
    automount_service_account_token: bool
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., secrets: _Optional[_Iterable[_Union[ObjectReference, _Mapping]]] = ..., image_pull_secrets: _Optional[_Iterable[_Union[LocalObjectReference, _Mapping]]] = ..., automount_service_account_token: _Optional[bool] = ...) -> None: ...

class Secret(_message.Message):
    __slots__ = ("metadata", "data", "string_data", "type", "immutable")
    class DataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    class StringDataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    METADATA_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    STRING_DATA_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    IMMUTABLE_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    data: _containers.ScalarMap[str, bytes]
    string_data: _containers.ScalarMap[str, str]
    type: str
    immutable: bool
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., data: _Optional[_Mapping[str, bytes]] = ..., string_data: _Optional[_Mapping[str, str]] = ..., type: _Optional[str] = ..., immutable: _Optional[bool] = ...) -> None: ...

class RollingUpdateStatefulSetStrategy(_message.Message):
    __slots__ = ("partition", "max_unavailable")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    MAX_UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    partition: int
    max_unavailable: IntOrString
    def __init__(self, partition: _Optional[int] = ..., max_unavailable: _Optional[_Union[IntOrString, _Mapping]] = ...) -> None: ...

class StatefulSetUpdateStrategy(_message.Message):
    __slots__ = ("type", "rolling_update")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    ROLLING_UPDATE_FIELD_NUMBER: _ClassVar[int]
    type: str
    rolling_update: RollingUpdateStatefulSetStrategy
    def __init__(self, type: _Optional[str] = ..., rolling_update: _Optional[_Union[RollingUpdateStatefulSetStrategy, _Mapping]] = ...) -> None: ...

class StatefulSetPersistentVolumeClaimRetentionPolicy(_message.Message):
    __slots__ = ("when_deleted", "when_scaled")
    WHEN_DELETED_FIELD_NUMBER: _ClassVar[int]
    WHEN_SCALED_FIELD_NUMBER: _ClassVar[int]
    when_deleted: str
    when_scaled: str
    def __init__(self, when_deleted: _Optional[str] = ..., when_scaled: _Optional[str] = ...) -> None: ...

class StatefulSetOrdinals(_message.Message):
    __slots__ = ("start",)
    START_FIELD_NUMBER: _ClassVar[int]
    start: int
    def __init__(self, start: _Optional[int] = ...) -> None: ...

class StatefulSetSpec(_message.Message):
    __slots__ = ("replicas", "selector", "template", "volume_claim_templates", "service_name", "pod_management_policy", "update_strategy", "revision_history_limit", "min_ready_seconds", "persistent_volume_claim_retention_policy", "ordinals")
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    VOLUME_CLAIM_TEMPLATES_FIELD_NUMBER: _ClassVar[int]
    SERVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    POD_MANAGEMENT_POLICY_FIELD_NUMBER: _ClassVar[int]
    UPDATE_STRATEGY_FIELD_NUMBER: _ClassVar[int]
    REVISION_HISTORY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    MIN_READY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PERSISTENT_VOLUME_CLAIM_RETENTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    ORDINALS_FIELD_NUMBER: _ClassVar[int]
    replicas: int
    selector: LabelSelector
    template: PodTemplateSpec
    volume_claim_templates: _containers.RepeatedCompositeFieldContainer[PersistentVolumeClaim]
    service_name: str
    pod_management_policy: str
    update_strategy: StatefulSetUpdateStrategy
    revision_history_limit: int
    min_ready_seconds: int
    persistent_volume_claim_retention_policy: StatefulSetPersistentVolumeClaimRetentionPolicy
    ordinals: StatefulSetOrdinals
    def __init__(self, replicas: _Optional[int] = ..., selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., template: _Optional[_Union[PodTemplateSpec, _Mapping]] = ..., volume_claim_templates: _Optional[_Iterable[_Union[PersistentVolumeClaim, _Mapping]]] = ..., service_name: _Optional[str] = ..., pod_management_policy: _Optional[str] = ..., update_strategy: _Optional[_Union[StatefulSetUpdateStrategy, _Mapping]] = ..., revision_history_limit: _Optional[int] = ..., min_ready_seconds: _Optional[int] = ..., persistent_volume_claim_retention_policy: _Optional[_Union[StatefulSetPersistentVolumeClaimRetentionPolicy, _Mapping]] = ..., ordinals: _Optional[_Union[StatefulSetOrdinals, _Mapping]] = ...) -> None: ...

class StatefulSetCondition(_message.Message):
    __slots__ = ("type", "status", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    last_transition_time: _timestamp_pb2.Timestamp
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class StatefulSetStatus(_message.Message):
    __slots__ = ("observed_generation", "replicas", "ready_replicas", "current_replicas", "updated_replicas", "current_revision", "update_revision", "collision_count", "conditions", "available_replicas")
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    READY_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    UPDATED_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_REVISION_FIELD_NUMBER: _ClassVar[int]
    UPDATE_REVISION_FIELD_NUMBER: _ClassVar[int]
    COLLISION_COUNT_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    observed_generation: int
    replicas: int
    ready_replicas: int
    current_replicas: int
    updated_replicas: int
    current_revision: str
    update_revision: str
    collision_count: int
    conditions: _containers.RepeatedCompositeFieldContainer[StatefulSetCondition]
    available_replicas: int
    def __init__(self, observed_generation: _Optional[int] = ..., replicas: _Optional[int] = ..., ready_replicas: _Optional[int] = ..., current_replicas: _Optional[int] = ..., updated_replicas: _Optional[int] = ..., current_revision: _Optional[str] = ..., update_revision: _Optional[str] = ..., collision_count: _Optional[int] = ..., conditions: _Optional[_Iterable[_Union[StatefulSetCondition, _Mapping]]] = ..., available_replicas: _Optional[int] = ...) -> None: ...

class StatefulSet(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: StatefulSetSpec
    status: StatefulSetStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[StatefulSetSpec, _Mapping]] = ..., status: _Optional[_Union[StatefulSetStatus, _Mapping]] = ...) -> None: ...

class JobTemplateSpec(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: JobSpec
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[JobSpec, _Mapping]] = ...) -> None: ...

class CronJobSpec(_message.Message):
    __slots__ = ("schedule", "time_zone", "starting_deadline_seconds", "concurrency_policy", "suspend", "job_template", "successful_jobs_history_limit", "failed_jobs_history_limit")
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    STARTING_DEADLINE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_POLICY_FIELD_NUMBER: _ClassVar[int]
    SUSPEND_FIELD_NUMBER: _ClassVar[int]
    JOB_TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    SUCCESSFUL_JOBS_HISTORY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    FAILED_JOBS_HISTORY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    schedule: str
    time_zone: str
    starting_deadline_seconds: int
    concurrency_policy: str
    suspend: bool
    job_template: JobTemplateSpec
    successful_jobs_history_limit: int
    failed_jobs_history_limit: int
    def __init__(self, schedule: _Optional[str] = ..., time_zone: _Optional[str] = ..., starting_deadline_seconds: _Optional[int] = ..., concurrency_policy: _Optional[str] = ..., suspend: _Optional[bool] = ..., job_template: _Optional[_Union[JobTemplateSpec, _Mapping]] = ..., successful_jobs_history_limit: _Optional[int] = ..., failed_jobs_history_limit: _Optional[int] = ...) -> None: ...

class CronJobStatus(_message.Message):
    __slots__ = ("active", "last_schedule_time", "last_successful_time")
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    LAST_SCHEDULE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_SUCCESSFUL_TIME_FIELD_NUMBER: _ClassVar[int]
    active: _containers.RepeatedCompositeFieldContainer[ObjectReference]
    last_schedule_time: _timestamp_pb2.Timestamp
    last_successful_time: _timestamp_pb2.Timestamp
    def __init__(self, active: _Optional[_Iterable[_Union[ObjectReference, _Mapping]]] = ..., last_schedule_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_successful_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CronJob(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: CronJobSpec
    status: CronJobStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[CronJobSpec, _Mapping]] = ..., status: _Optional[_Union[CronJobStatus, _Mapping]] = ...) -> None: ...

class BasicSchedulingPolicy(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GangSchedulingPolicy(_message.Message):
    __slots__ = ("min_count",)
    MIN_COUNT_FIELD_NUMBER: _ClassVar[int]
    min_count: int
    def __init__(self, min_count: _Optional[int] = ...) -> None: ...

class PodGroupSchedulingPolicy(_message.Message):
    __slots__ = ("basic", "gang")
    BASIC_FIELD_NUMBER: _ClassVar[int]
    GANG_FIELD_NUMBER: _ClassVar[int]
    basic: BasicSchedulingPolicy
    gang: GangSchedulingPolicy
    def __init__(self, basic: _Optional[_Union[BasicSchedulingPolicy, _Mapping]] = ..., gang: _Optional[_Union[GangSchedulingPolicy, _Mapping]] = ...) -> None: ...

class TopologyConstraint(_message.Message):
    __slots__ = ("key",)
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: str
    def __init__(self, key: _Optional[str] = ...) -> None: ...

class PodGroupSchedulingConstraints(_message.Message):
    __slots__ = ("topology",)
    TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    topology: _containers.RepeatedCompositeFieldContainer[TopologyConstraint]
    def __init__(self, topology: _Optional[_Iterable[_Union[TopologyConstraint, _Mapping]]] = ...) -> None: ...

class PodGroupResourceClaim(_message.Message):
    __slots__ = ("name", "resource_claim_name", "resource_claim_template_name")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIM_NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIM_TEMPLATE_NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    resource_claim_name: str
    resource_claim_template_name: str
    def __init__(self, name: _Optional[str] = ..., resource_claim_name: _Optional[str] = ..., resource_claim_template_name: _Optional[str] = ...) -> None: ...

class SingleDisruptionMode(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AllDisruptionMode(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DisruptionMode(_message.Message):
    __slots__ = ("single", "all")
    SINGLE_FIELD_NUMBER: _ClassVar[int]
    ALL_FIELD_NUMBER: _ClassVar[int]
    single: SingleDisruptionMode
    all: AllDisruptionMode
    def __init__(self, single: _Optional[_Union[SingleDisruptionMode, _Mapping]] = ..., all: _Optional[_Union[AllDisruptionMode, _Mapping]] = ...) -> None: ...

class PodGroupTemplate(_message.Message):
    __slots__ = ("name", "scheduling_policy", "scheduling_constraints", "resource_claims", "disruption_mode", "priority_class_name", "priority", "preemption_policy")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_POLICY_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIMS_FIELD_NUMBER: _ClassVar[int]
    DISRUPTION_MODE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    name: str
    scheduling_policy: PodGroupSchedulingPolicy
    scheduling_constraints: PodGroupSchedulingConstraints
    resource_claims: _containers.RepeatedCompositeFieldContainer[PodGroupResourceClaim]
    disruption_mode: DisruptionMode
    priority_class_name: str
    priority: int
    preemption_policy: str
    def __init__(self, name: _Optional[str] = ..., scheduling_policy: _Optional[_Union[PodGroupSchedulingPolicy, _Mapping]] = ..., scheduling_constraints: _Optional[_Union[PodGroupSchedulingConstraints, _Mapping]] = ..., resource_claims: _Optional[_Iterable[_Union[PodGroupResourceClaim, _Mapping]]] = ..., disruption_mode: _Optional[_Union[DisruptionMode, _Mapping]] = ..., priority_class_name: _Optional[str] = ..., priority: _Optional[int] = ..., preemption_policy: _Optional[str] = ...) -> None: ...

class CompositeBasicSchedulingPolicy(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CompositeGangSchedulingPolicy(_message.Message):
    __slots__ = ("min_group_count",)
    MIN_GROUP_COUNT_FIELD_NUMBER: _ClassVar[int]
    min_group_count: int
    def __init__(self, min_group_count: _Optional[int] = ...) -> None: ...

class CompositePodGroupSchedulingPolicy(_message.Message):
    __slots__ = ("basic", "gang")
    BASIC_FIELD_NUMBER: _ClassVar[int]
    GANG_FIELD_NUMBER: _ClassVar[int]
    basic: CompositeBasicSchedulingPolicy
    gang: CompositeGangSchedulingPolicy
    def __init__(self, basic: _Optional[_Union[CompositeBasicSchedulingPolicy, _Mapping]] = ..., gang: _Optional[_Union[CompositeGangSchedulingPolicy, _Mapping]] = ...) -> None: ...

class CompositePodGroupSchedulingConstraints(_message.Message):
    __slots__ = ("topology",)
    TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    topology: _containers.RepeatedCompositeFieldContainer[TopologyConstraint]
    def __init__(self, topology: _Optional[_Iterable[_Union[TopologyConstraint, _Mapping]]] = ...) -> None: ...

class SingleCompositeDisruptionMode(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AllCompositeDisruptionMode(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CompositeDisruptionMode(_message.Message):
    __slots__ = ("single", "all")
    SINGLE_FIELD_NUMBER: _ClassVar[int]
    ALL_FIELD_NUMBER: _ClassVar[int]
    single: SingleCompositeDisruptionMode
    all: AllCompositeDisruptionMode
    def __init__(self, single: _Optional[_Union[SingleCompositeDisruptionMode, _Mapping]] = ..., all: _Optional[_Union[AllCompositeDisruptionMode, _Mapping]] = ...) -> None: ...

class CompositePodGroupTemplate(_message.Message):
    __slots__ = ("name", "scheduling_policy", "priority_class_name", "priority", "pod_group_templates", "composite_pod_group_templates", "scheduling_constraints", "disruption_mode", "preemption_policy")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_POLICY_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    POD_GROUP_TEMPLATES_FIELD_NUMBER: _ClassVar[int]
    COMPOSITE_POD_GROUP_TEMPLATES_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    DISRUPTION_MODE_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    name: str
    scheduling_policy: CompositePodGroupSchedulingPolicy
    priority_class_name: str
    priority: int
    pod_group_templates: _containers.RepeatedCompositeFieldContainer[PodGroupTemplate]
    composite_pod_group_templates: _containers.RepeatedCompositeFieldContainer[CompositePodGroupTemplate]
    scheduling_constraints: CompositePodGroupSchedulingConstraints
    disruption_mode: CompositeDisruptionMode
    preemption_policy: str
    def __init__(self, name: _Optional[str] = ..., scheduling_policy: _Optional[_Union[CompositePodGroupSchedulingPolicy, _Mapping]] = ..., priority_class_name: _Optional[str] = ..., priority: _Optional[int] = ..., pod_group_templates: _Optional[_Iterable[_Union[PodGroupTemplate, _Mapping]]] = ..., composite_pod_group_templates: _Optional[_Iterable[_Union[CompositePodGroupTemplate, _Mapping]]] = ..., scheduling_constraints: _Optional[_Union[CompositePodGroupSchedulingConstraints, _Mapping]] = ..., disruption_mode: _Optional[_Union[CompositeDisruptionMode, _Mapping]] = ..., preemption_policy: _Optional[str] = ...) -> None: ...

class WorkloadSpec(_message.Message):
    __slots__ = ("controller_ref", "pod_group_templates", "composite_pod_group_templates")
    CONTROLLER_REF_FIELD_NUMBER: _ClassVar[int]
    POD_GROUP_TEMPLATES_FIELD_NUMBER: _ClassVar[int]
    COMPOSITE_POD_GROUP_TEMPLATES_FIELD_NUMBER: _ClassVar[int]
    controller_ref: TypedLocalObjectReference
    pod_group_templates: _containers.RepeatedCompositeFieldContainer[PodGroupTemplate]
    composite_pod_group_templates: _containers.RepeatedCompositeFieldContainer[CompositePodGroupTemplate]
    def __init__(self, controller_ref: _Optional[_Union[TypedLocalObjectReference, _Mapping]] = ..., pod_group_templates: _Optional[_Iterable[_Union[PodGroupTemplate, _Mapping]]] = ..., composite_pod_group_templates: _Optional[_Iterable[_Union[CompositePodGroupTemplate, _Mapping]]] = ...) -> None: ...

class Workload(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: WorkloadSpec
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[WorkloadSpec, _Mapping]] = ...) -> None: ...

class WorkloadReference(_message.Message):
    __slots__ = ("workload_name", "template_name")
    WORKLOAD_NAME_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_NAME_FIELD_NUMBER: _ClassVar[int]
    workload_name: str
    template_name: str
    def __init__(self, workload_name: _Optional[str] = ..., template_name: _Optional[str] = ...) -> None: ...

class PodGroupSpec(_message.Message):
    __slots__ = ("parent_composite_pod_group_name", "workload_ref", "scheduling_policy", "scheduling_constraints", "resource_claims", "disruption_mode", "priority_class_name", "priority", "preemption_policy")
    PARENT_COMPOSITE_POD_GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_REF_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_POLICY_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIMS_FIELD_NUMBER: _ClassVar[int]
    DISRUPTION_MODE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    parent_composite_pod_group_name: str
    workload_ref: WorkloadReference
    scheduling_policy: PodGroupSchedulingPolicy
    scheduling_constraints: PodGroupSchedulingConstraints
    resource_claims: _containers.RepeatedCompositeFieldContainer[PodGroupResourceClaim]
    disruption_mode: DisruptionMode
    priority_class_name: str
    priority: int
    preemption_policy: str
    def __init__(self, parent_composite_pod_group_name: _Optional[str] = ..., workload_ref: _Optional[_Union[WorkloadReference, _Mapping]] = ..., scheduling_policy: _Optional[_Union[PodGroupSchedulingPolicy, _Mapping]] = ..., scheduling_constraints: _Optional[_Union[PodGroupSchedulingConstraints, _Mapping]] = ..., resource_claims: _Optional[_Iterable[_Union[PodGroupResourceClaim, _Mapping]]] = ..., disruption_mode: _Optional[_Union[DisruptionMode, _Mapping]] = ..., priority_class_name: _Optional[str] = ..., priority: _Optional[int] = ..., preemption_policy: _Optional[str] = ...) -> None: ...

class PodGroupResourceClaimStatus(_message.Message):
    __slots__ = ("name", "resource_claim_name")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIM_NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    resource_claim_name: str
    def __init__(self, name: _Optional[str] = ..., resource_claim_name: _Optional[str] = ...) -> None: ...

class PodGroupStatus(_message.Message):
    __slots__ = ("conditions", "resource_claim_statuses")
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIM_STATUSES_FIELD_NUMBER: _ClassVar[int]
    conditions: _containers.RepeatedCompositeFieldContainer[Condition]
    resource_claim_statuses: _containers.RepeatedCompositeFieldContainer[PodGroupResourceClaimStatus]
    def __init__(self, conditions: _Optional[_Iterable[_Union[Condition, _Mapping]]] = ..., resource_claim_statuses: _Optional[_Iterable[_Union[PodGroupResourceClaimStatus, _Mapping]]] = ...) -> None: ...

class PodGroup(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: PodGroupSpec
    status: PodGroupStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[PodGroupSpec, _Mapping]] = ..., status: _Optional[_Union[PodGroupStatus, _Mapping]] = ...) -> None: ...

class CompositePodGroupSpec(_message.Message):
    __slots__ = ("parent_composite_pod_group_name", "workload_ref", "scheduling_policy", "priority_class_name", "priority", "scheduling_constraints", "disruption_mode", "preemption_policy")
    PARENT_COMPOSITE_POD_GROUP_NAME_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_REF_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_POLICY_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    SCHEDULING_CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    DISRUPTION_MODE_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    parent_composite_pod_group_name: str
    workload_ref: WorkloadReference
    scheduling_policy: CompositePodGroupSchedulingPolicy
    priority_class_name: str
    priority: int
    scheduling_constraints: CompositePodGroupSchedulingConstraints
    disruption_mode: CompositeDisruptionMode
    preemption_policy: str
    def __init__(self, parent_composite_pod_group_name: _Optional[str] = ..., workload_ref: _Optional[_Union[WorkloadReference, _Mapping]] = ..., scheduling_policy: _Optional[_Union[CompositePodGroupSchedulingPolicy, _Mapping]] = ..., priority_class_name: _Optional[str] = ..., priority: _Optional[int] = ..., scheduling_constraints: _Optional[_Union[CompositePodGroupSchedulingConstraints, _Mapping]] = ..., disruption_mode: _Optional[_Union[CompositeDisruptionMode, _Mapping]] = ..., preemption_policy: _Optional[str] = ...) -> None: ...

class CompositePodGroupStatus(_message.Message):
    __slots__ = ("conditions",)
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    conditions: _containers.RepeatedCompositeFieldContainer[Condition]
    def __init__(self, conditions: _Optional[_Iterable[_Union[Condition, _Mapping]]] = ...) -> None: ...

class CompositePodGroup(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: CompositePodGroupSpec
    status: CompositePodGroupStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[CompositePodGroupSpec, _Mapping]] = ..., status: _Optional[_Union[CompositePodGroupStatus, _Mapping]] = ...) -> None: ...

class RawExtension(_message.Message):
    __slots__ = ("raw",)
    RAW_FIELD_NUMBER: _ClassVar[int]
    raw: str
    def __init__(self, raw: _Optional[str] = ...) -> None: ...

class CELDeviceSelector(_message.Message):
    __slots__ = ("expression",)
    EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    expression: str
    def __init__(self, expression: _Optional[str] = ...) -> None: ...

class DeviceSelector(_message.Message):
    __slots__ = ("cel",)
    CEL_FIELD_NUMBER: _ClassVar[int]
    cel: CELDeviceSelector
    def __init__(self, cel: _Optional[_Union[CELDeviceSelector, _Mapping]] = ...) -> None: ...

class OpaqueDeviceConfiguration(_message.Message):
    __slots__ = ("driver", "parameters")
    DRIVER_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    driver: str
    parameters: RawExtension
    def __init__(self, driver: _Optional[str] = ..., parameters: _Optional[_Union[RawExtension, _Mapping]] = ...) -> None: ...

class DeviceConfiguration(_message.Message):
    __slots__ = ("opaque",)
    OPAQUE_FIELD_NUMBER: _ClassVar[int]
    opaque: OpaqueDeviceConfiguration
    def __init__(self, opaque: _Optional[_Union[OpaqueDeviceConfiguration, _Mapping]] = ...) -> None: ...

class DeviceClassSpec(_message.Message):
    __slots__ = ("selectors", "config", "extended_resource_name")
    SELECTORS_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    EXTENDED_RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    selectors: _containers.RepeatedCompositeFieldContainer[DeviceSelector]
    config: _containers.RepeatedCompositeFieldContainer[DeviceConfiguration]
    extended_resource_name: str
    def __init__(self, selectors: _Optional[_Iterable[_Union[DeviceSelector, _Mapping]]] = ..., config: _Optional[_Iterable[_Union[DeviceConfiguration, _Mapping]]] = ..., extended_resource_name: _Optional[str] = ...) -> None: ...

class DeviceClass(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: DeviceClassSpec
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[DeviceClassSpec, _Mapping]] = ...) -> None: ...

class ResourcePool(_message.Message):
    __slots__ = ("name", "generation", "resource_slice_count")
    NAME_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_SLICE_COUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    generation: int
    resource_slice_count: int
    def __init__(self, name: _Optional[str] = ..., generation: _Optional[int] = ..., resource_slice_count: _Optional[int] = ...) -> None: ...

class DeviceAttribute(_message.Message):
    __slots__ = ("int_value", "bool_value", "string_value", "version_value")
    INT_VALUE_FIELD_NUMBER: _ClassVar[int]
    BOOL_VALUE_FIELD_NUMBER: _ClassVar[int]
    STRING_VALUE_FIELD_NUMBER: _ClassVar[int]
    VERSION_VALUE_FIELD_NUMBER: _ClassVar[int]
    int_value: int
    bool_value: bool
    string_value: str
    version_value: str
    def __init__(self, int_value: _Optional[int] = ..., bool_value: _Optional[bool] = ..., string_value: _Optional[str] = ..., version_value: _Optional[str] = ...) -> None: ...

class CapacityRequestPolicyRange(_message.Message):
    __slots__ = ("min", "max", "step")
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    min: str
    max: str
    step: str
    def __init__(self, min: _Optional[str] = ..., max: _Optional[str] = ..., step: _Optional[str] = ...) -> None: ...

class CapacityRequestPolicy(_message.Message):
    __slots__ = ("default_value", "valid_values", "valid_range")
    DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
    VALID_VALUES_FIELD_NUMBER: _ClassVar[int]
    VALID_RANGE_FIELD_NUMBER: _ClassVar[int]
    default_value: str
    valid_values: _containers.RepeatedScalarFieldContainer[str]
    valid_range: CapacityRequestPolicyRange
    def __init__(self, default_value: _Optional[str] = ..., valid_values: _Optional[_Iterable[str]] = ..., valid_range: _Optional[_Union[CapacityRequestPolicyRange, _Mapping]] = ...) -> None: ...

class DeviceCapacity(_message.Message):
    __slots__ = ("value", "request_policy")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_POLICY_FIELD_NUMBER: _ClassVar[int]
    value: str
    request_policy: CapacityRequestPolicy
    def __init__(self, value: _Optional[str] = ..., request_policy: _Optional[_Union[CapacityRequestPolicy, _Mapping]] = ...) -> None: ...

class Counter(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: str
    def __init__(self, value: _Optional[str] = ...) -> None: ...

class CounterSet(_message.Message):
    __slots__ = ("name", "counters")
    class CountersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Counter
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Counter, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    counters: _containers.MessageMap[str, Counter]
    def __init__(self, name: _Optional[str] = ..., counters: _Optional[_Mapping[str, Counter]] = ...) -> None: ...

class DeviceCounterConsumption(_message.Message):
    __slots__ = ("counter_set", "counters")
    class CountersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: Counter
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[Counter, _Mapping]] = ...) -> None: ...
    COUNTER_SET_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    counter_set: str
    counters: _containers.MessageMap[str, Counter]
    def __init__(self, counter_set: _Optional[str] = ..., counters: _Optional[_Mapping[str, Counter]] = ...) -> None: ...

class DeviceTaint(_message.Message):
    __slots__ = ("key", "value", "effect", "time_added")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    TIME_ADDED_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    effect: str
    time_added: _timestamp_pb2.Timestamp
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ..., effect: _Optional[str] = ..., time_added: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Device(_message.Message):
    __slots__ = ("name", "attributes", "capacity", "consumes_counters", "node_name", "node_selector", "all_nodes", "taints", "binds_to_node", "binding_conditions", "binding_failure_conditions", "allow_multiple_allocations")
    class AttributesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: DeviceAttribute
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[DeviceAttribute, _Mapping]] = ...) -> None: ...
    class CapacityEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: DeviceCapacity
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[DeviceCapacity, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    CONSUMES_COUNTERS_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    ALL_NODES_FIELD_NUMBER: _ClassVar[int]
    TAINTS_FIELD_NUMBER: _ClassVar[int]
    BINDS_TO_NODE_FIELD_NUMBER: _ClassVar[int]
    BINDING_CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    BINDING_FAILURE_CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_MULTIPLE_ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    attributes: _containers.MessageMap[str, DeviceAttribute]
    capacity: _containers.MessageMap[str, DeviceCapacity]
    consumes_counters: _containers.RepeatedCompositeFieldContainer[DeviceCounterConsumption]
    node_name: str
    node_selector: NodeSelector
    all_nodes: bool
    taints: _containers.RepeatedCompositeFieldContainer[DeviceTaint]
    binds_to_node: bool
    binding_conditions: _containers.RepeatedScalarFieldContainer[str]
    binding_failure_conditions: _containers.RepeatedScalarFieldContainer[str]
    allow_multiple_allocations: bool
    def __init__(self, name: _Optional[str] = ..., attributes: _Optional[_Mapping[str, DeviceAttribute]] = ..., capacity: _Optional[_Mapping[str, DeviceCapacity]] = ..., consumes_counters: _Optional[_Iterable[_Union[DeviceCounterConsumption, _Mapping]]] = ..., node_name: _Optional[str] = ..., node_selector: _Optional[_Union[NodeSelector, _Mapping]] = ..., all_nodes: _Optional[bool] = ..., taints: _Optional[_Iterable[_Union[DeviceTaint, _Mapping]]] = ..., binds_to_node: _Optional[bool] = ..., binding_conditions: _Optional[_Iterable[str]] = ..., binding_failure_conditions: _Optional[_Iterable[str]] = ..., allow_multiple_allocations: _Optional[bool] = ...) -> None: ...

class ResourceSliceSpec(_message.Message):
    __slots__ = ("driver", "pool", "node_name", "node_selector", "all_nodes", "devices", "per_device_node_selection", "shared_counters")
    DRIVER_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    ALL_NODES_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    PER_DEVICE_NODE_SELECTION_FIELD_NUMBER: _ClassVar[int]
    SHARED_COUNTERS_FIELD_NUMBER: _ClassVar[int]
    driver: str
    pool: ResourcePool
    node_name: str
    node_selector: NodeSelector
    all_nodes: bool
    devices: _containers.RepeatedCompositeFieldContainer[Device]
    per_device_node_selection: bool
    shared_counters: _containers.RepeatedCompositeFieldContainer[CounterSet]
    def __init__(self, driver: _Optional[str] = ..., pool: _Optional[_Union[ResourcePool, _Mapping]] = ..., node_name: _Optional[str] = ..., node_selector: _Optional[_Union[NodeSelector, _Mapping]] = ..., all_nodes: _Optional[bool] = ..., devices: _Optional[_Iterable[_Union[Device, _Mapping]]] = ..., per_device_node_selection: _Optional[bool] = ..., shared_counters: _Optional[_Iterable[_Union[CounterSet, _Mapping]]] = ...) -> None: ...

class ResourceSlice(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: ResourceSliceSpec
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ResourceSliceSpec, _Mapping]] = ...) -> None: ...

class CapacityRequirements(_message.Message):
    __slots__ = ("requests",)
    class RequestsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.ScalarMap[str, str]
    def __init__(self, requests: _Optional[_Mapping[str, str]] = ...) -> None: ...

class DeviceToleration(_message.Message):
    __slots__ = ("key", "operator", "value", "effect", "toleration_seconds")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    TOLERATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    key: str
    operator: str
    value: str
    effect: str
    toleration_seconds: int
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[str] = ..., value: _Optional[str] = ..., effect: _Optional[str] = ..., toleration_seconds: _Optional[int] = ...) -> None: ...

class ExactDeviceRequest(_message.Message):
    __slots__ = ("device_class_name", "selectors", "allocation_mode", "count", "admin_access", "tolerations", "capacity")
    DEVICE_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    SELECTORS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_MODE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    ADMIN_ACCESS_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    device_class_name: str
    selectors: _containers.RepeatedCompositeFieldContainer[DeviceSelector]
    allocation_mode: str
    count: int
    admin_access: bool
    tolerations: _containers.RepeatedCompositeFieldContainer[DeviceToleration]
    capacity: CapacityRequirements
    def __init__(self, device_class_name: _Optional[str] = ..., selectors: _Optional[_Iterable[_Union[DeviceSelector, _Mapping]]] = ..., allocation_mode: _Optional[str] = ..., count: _Optional[int] = ..., admin_access: _Optional[bool] = ..., tolerations: _Optional[_Iterable[_Union[DeviceToleration, _Mapping]]] = ..., capacity: _Optional[_Union[CapacityRequirements, _Mapping]] = ...) -> None: ...

class DeviceSubRequest(_message.Message):
    __slots__ = ("name", "device_class_name", "selectors", "allocation_mode", "count", "tolerations", "capacity")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DEVICE_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    SELECTORS_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_MODE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    name: str
    device_class_name: str
    selectors: _containers.RepeatedCompositeFieldContainer[DeviceSelector]
    allocation_mode: str
    count: int
    tolerations: _containers.RepeatedCompositeFieldContainer[DeviceToleration]
    capacity: CapacityRequirements
    def __init__(self, name: _Optional[str] = ..., device_class_name: _Optional[str] = ..., selectors: _Optional[_Iterable[_Union[DeviceSelector, _Mapping]]] = ..., allocation_mode: _Optional[str] = ..., count: _Optional[int] = ..., tolerations: _Optional[_Iterable[_Union[DeviceToleration, _Mapping]]] = ..., capacity: _Optional[_Union[CapacityRequirements, _Mapping]] = ...) -> None: ...

class DeviceRequest(_message.Message):
    __slots__ = ("name", "exactly", "first_available")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXACTLY_FIELD_NUMBER: _ClassVar[int]
    FIRST_AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    exactly: ExactDeviceRequest
    first_available: _containers.RepeatedCompositeFieldContainer[DeviceSubRequest]
    def __init__(self, name: _Optional[str] = ..., exactly: _Optional[_Union[ExactDeviceRequest, _Mapping]] = ..., first_available: _Optional[_Iterable[_Union[DeviceSubRequest, _Mapping]]] = ...) -> None: ...

class DeviceConstraint(_message.Message):
    __slots__ = ("requests", "match_attribute", "distinct_attribute")
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    MATCH_ATTRIBUTE_FIELD_NUMBER: _ClassVar[int]
    DISTINCT_ATTRIBUTE_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.RepeatedScalarFieldContainer[str]
    match_attribute: str
    distinct_attribute: str
    def __init__(self, requests: _Optional[_Iterable[str]] = ..., match_attribute: _Optional[str] = ..., distinct_attribute: _Optional[str] = ...) -> None: ...

class DeviceClaimConfiguration(_message.Message):
    __slots__ = ("requests", "opaque")
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    OPAQUE_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.RepeatedScalarFieldContainer[str]
    opaque: OpaqueDeviceConfiguration
    def __init__(self, requests: _Optional[_Iterable[str]] = ..., opaque: _Optional[_Union[OpaqueDeviceConfiguration, _Mapping]] = ...) -> None: ...

class DeviceClaim(_message.Message):
    __slots__ = ("requests", "constraints", "config")
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.RepeatedCompositeFieldContainer[DeviceRequest]
    constraints: _containers.RepeatedCompositeFieldContainer[DeviceConstraint]
    config: _containers.RepeatedCompositeFieldContainer[DeviceClaimConfiguration]
    def __init__(self, requests: _Optional[_Iterable[_Union[DeviceRequest, _Mapping]]] = ..., constraints: _Optional[_Iterable[_Union[DeviceConstraint, _Mapping]]] = ..., config: _Optional[_Iterable[_Union[DeviceClaimConfiguration, _Mapping]]] = ...) -> None: ...

class ResourceClaimSpec(_message.Message):
    __slots__ = ("devices",)
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    devices: DeviceClaim
    def __init__(self, devices: _Optional[_Union[DeviceClaim, _Mapping]] = ...) -> None: ...

class DeviceRequestAllocationResult(_message.Message):
    __slots__ = ("request", "driver", "pool", "device", "admin_access", "tolerations", "binding_conditions", "binding_failure_conditions", "share_id", "consumed_capacity")
    class ConsumedCapacityEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    DRIVER_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    ADMIN_ACCESS_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    BINDING_CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    BINDING_FAILURE_CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    SHARE_ID_FIELD_NUMBER: _ClassVar[int]
    CONSUMED_CAPACITY_FIELD_NUMBER: _ClassVar[int]
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool
    tolerations: _containers.RepeatedCompositeFieldContainer[DeviceToleration]
    binding_conditions: _containers.RepeatedScalarFieldContainer[str]
    binding_failure_conditions: _containers.RepeatedScalarFieldContainer[str]
    share_id: str
    consumed_capacity: _containers.ScalarMap[str, str]
    def __init__(self, request: _Optional[str] = ..., driver: _Optional[str] = ..., pool: _Optional[str] = ..., device: _Optional[str] = ..., admin_access: _Optional[bool] = ..., tolerations: _Optional[_Iterable[_Union[DeviceToleration, _Mapping]]] = ..., binding_conditions: _Optional[_Iterable[str]] = ..., binding_failure_conditions: _Optional[_Iterable[str]] = ..., share_id: _Optional[str] = ..., consumed_capacity: _Optional[_Mapping[str, str]] = ...) -> None: ...

class DeviceAllocationConfiguration(_message.Message):
    __slots__ = ("source", "requests", "opaque")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    OPAQUE_FIELD_NUMBER: _ClassVar[int]
    source: str
    requests: _containers.RepeatedScalarFieldContainer[str]
    opaque: OpaqueDeviceConfiguration
    def __init__(self, source: _Optional[str] = ..., requests: _Optional[_Iterable[str]] = ..., opaque: _Optional[_Union[OpaqueDeviceConfiguration, _Mapping]] = ...) -> None: ...

class DeviceAllocationResult(_message.Message):
    __slots__ = ("results", "config")
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[DeviceRequestAllocationResult]
    config: _containers.RepeatedCompositeFieldContainer[DeviceAllocationConfiguration]
    def __init__(self, results: _Optional[_Iterable[_Union[DeviceRequestAllocationResult, _Mapping]]] = ..., config: _Optional[_Iterable[_Union[DeviceAllocationConfiguration, _Mapping]]] = ...) -> None: ...

class AllocationResult(_message.Message):
    __slots__ = ("devices", "node_selector", "allocation_timestamp")
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    NODE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    devices: DeviceAllocationResult
    node_selector: NodeSelector
    allocation_timestamp: _timestamp_pb2.Timestamp
    def __init__(self, devices: _Optional[_Union[DeviceAllocationResult, _Mapping]] = ..., node_selector: _Optional[_Union[NodeSelector, _Mapping]] = ..., allocation_timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ResourceClaimConsumerReference(_message.Message):
    __slots__ = ("api_group", "resource", "name", "uid")
    API_GROUP_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    api_group: str
    resource: str
    name: str
    uid: str
    def __init__(self, api_group: _Optional[str] = ..., resource: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ...) -> None: ...

class NetworkDeviceData(_message.Message):
    __slots__ = ("interface_name", "ips", "hardware_address")
    INTERFACE_NAME_FIELD_NUMBER: _ClassVar[int]
    IPS_FIELD_NUMBER: _ClassVar[int]
    HARDWARE_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    interface_name: str
    ips: _containers.RepeatedScalarFieldContainer[str]
    hardware_address: str
    def __init__(self, interface_name: _Optional[str] = ..., ips: _Optional[_Iterable[str]] = ..., hardware_address: _Optional[str] = ...) -> None: ...

class AllocatedDeviceStatus(_message.Message):
    __slots__ = ("driver", "pool", "device", "share_id", "conditions", "data", "network_data")
    DRIVER_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    SHARE_ID_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    NETWORK_DATA_FIELD_NUMBER: _ClassVar[int]
    driver: str
    pool: str
    device: str
    share_id: str
    conditions: _containers.RepeatedCompositeFieldContainer[Condition]
    data: RawExtension
    network_data: NetworkDeviceData
    def __init__(self, driver: _Optional[str] = ..., pool: _Optional[str] = ..., device: _Optional[str] = ..., share_id: _Optional[str] = ..., conditions: _Optional[_Iterable[_Union[Condition, _Mapping]]] = ..., data: _Optional[_Union[RawExtension, _Mapping]] = ..., network_data: _Optional[_Union[NetworkDeviceData, _Mapping]] = ...) -> None: ...

class ResourceClaimStatus(_message.Message):
    __slots__ = ("allocation", "reserved_for", "devices")
    ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    RESERVED_FOR_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    allocation: AllocationResult
    reserved_for: _containers.RepeatedCompositeFieldContainer[ResourceClaimConsumerReference]
    devices: _containers.RepeatedCompositeFieldContainer[AllocatedDeviceStatus]
    def __init__(self, allocation: _Optional[_Union[AllocationResult, _Mapping]] = ..., reserved_for: _Optional[_Iterable[_Union[ResourceClaimConsumerReference, _Mapping]]] = ..., devices: _Optional[_Iterable[_Union[AllocatedDeviceStatus, _Mapping]]] = ...) -> None: ...

class ResourceClaim(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: ResourceClaimSpec
    status: ResourceClaimStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ResourceClaimSpec, _Mapping]] = ..., status: _Optional[_Union[ResourceClaimStatus, _Mapping]] = ...) -> None: ...

class ResourceClaimTemplateSpec(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: ResourceClaimSpec
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ResourceClaimSpec, _Mapping]] = ...) -> None: ...

class ResourceClaimTemplate(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: ResourceClaimTemplateSpec
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ResourceClaimTemplateSpec, _Mapping]] = ...) -> None: ...

class DeviceTaintSelector(_message.Message):
    __slots__ = ("driver", "pool", "device")
    DRIVER_FIELD_NUMBER: _ClassVar[int]
    POOL_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    driver: str
    pool: str
    device: str
    def __init__(self, driver: _Optional[str] = ..., pool: _Optional[str] = ..., device: _Optional[str] = ...) -> None: ...

class DeviceTaintRuleSpec(_message.Message):
    __slots__ = ("device_selector", "taint")
    DEVICE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TAINT_FIELD_NUMBER: _ClassVar[int]
    device_selector: DeviceTaintSelector
    taint: DeviceTaint
    def __init__(self, device_selector: _Optional[_Union[DeviceTaintSelector, _Mapping]] = ..., taint: _Optional[_Union[DeviceTaint, _Mapping]] = ...) -> None: ...

class DeviceTaintRuleStatus(_message.Message):
    __slots__ = ("conditions",)
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    conditions: _containers.RepeatedCompositeFieldContainer[Condition]
    def __init__(self, conditions: _Optional[_Iterable[_Union[Condition, _Mapping]]] = ...) -> None: ...

class DeviceTaintRule(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: DeviceTaintRuleSpec
    status: DeviceTaintRuleStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[DeviceTaintRuleSpec, _Mapping]] = ..., status: _Optional[_Union[DeviceTaintRuleStatus, _Mapping]] = ...) -> None: ...

class PolicyRule(_message.Message):
    __slots__ = ("verbs", "api_groups", "resources", "resource_names", "non_resource_urls")
    VERBS_FIELD_NUMBER: _ClassVar[int]
    API_GROUPS_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAMES_FIELD_NUMBER: _ClassVar[int]
    NON_RESOURCE_URLS_FIELD_NUMBER: _ClassVar[int]
    verbs: _containers.RepeatedScalarFieldContainer[str]
    api_groups: _containers.RepeatedScalarFieldContainer[str]
    resources: _containers.RepeatedScalarFieldContainer[str]
    resource_names: _containers.RepeatedScalarFieldContainer[str]
    non_resource_urls: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, verbs: _Optional[_Iterable[str]] = ..., api_groups: _Optional[_Iterable[str]] = ..., resources: _Optional[_Iterable[str]] = ..., resource_names: _Optional[_Iterable[str]] = ..., non_resource_urls: _Optional[_Iterable[str]] = ...) -> None: ...

class AggregationRule(_message.Message):
    __slots__ = ("cluster_role_selectors",)
    CLUSTER_ROLE_SELECTORS_FIELD_NUMBER: _ClassVar[int]
    cluster_role_selectors: _containers.RepeatedCompositeFieldContainer[LabelSelector]
    def __init__(self, cluster_role_selectors: _Optional[_Iterable[_Union[LabelSelector, _Mapping]]] = ...) -> None: ...

class RoleRef(_message.Message):
    __slots__ = ("api_group", "kind", "name")
    API_GROUP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    api_group: str
    kind: str
    name: str
    def __init__(self, api_group: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class Subject(_message.Message):
    __slots__ = ("kind", "api_group", "name", "namespace")
    KIND_FIELD_NUMBER: _ClassVar[int]
    API_GROUP_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    kind: str
    api_group: str
    name: str
    namespace: str
    def __init__(self, kind: _Optional[str] = ..., api_group: _Optional[str] = ..., name: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class Role(_message.Message):
    __slots__ = ("metadata", "rules")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    rules: _containers.RepeatedCompositeFieldContainer[PolicyRule]
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., rules: _Optional[_Iterable[_Union[PolicyRule, _Mapping]]] = ...) -> None: ...

class ClusterRole(_message.Message):
    __slots__ = ("metadata", "rules", "aggregation_rule")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    AGGREGATION_RULE_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    rules: _containers.RepeatedCompositeFieldContainer[PolicyRule]
    aggregation_rule: AggregationRule
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., rules: _Optional[_Iterable[_Union[PolicyRule, _Mapping]]] = ..., aggregation_rule: _Optional[_Union[AggregationRule, _Mapping]] = ...) -> None: ...

class RoleBinding(_message.Message):
    __slots__ = ("metadata", "subjects", "role_ref")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SUBJECTS_FIELD_NUMBER: _ClassVar[int]
    ROLE_REF_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    subjects: _containers.RepeatedCompositeFieldContainer[Subject]
    role_ref: RoleRef
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., subjects: _Optional[_Iterable[_Union[Subject, _Mapping]]] = ..., role_ref: _Optional[_Union[RoleRef, _Mapping]] = ...) -> None: ...

class ClusterRoleBinding(_message.Message):
    __slots__ = ("metadata", "subjects", "role_ref")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SUBJECTS_FIELD_NUMBER: _ClassVar[int]
    ROLE_REF_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    subjects: _containers.RepeatedCompositeFieldContainer[Subject]
    role_ref: RoleRef
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., subjects: _Optional[_Iterable[_Union[Subject, _Mapping]]] = ..., role_ref: _Optional[_Union[RoleRef, _Mapping]] = ...) -> None: ...

class ServiceBackendPort(_message.Message):
    __slots__ = ("name", "number")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    name: str
    number: int
    def __init__(self, name: _Optional[str] = ..., number: _Optional[int] = ...) -> None: ...

class IngressServiceBackend(_message.Message):
    __slots__ = ("name", "port")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    name: str
    port: ServiceBackendPort
    def __init__(self, name: _Optional[str] = ..., port: _Optional[_Union[ServiceBackendPort, _Mapping]] = ...) -> None: ...

class IngressBackend(_message.Message):
    __slots__ = ("service", "resource")
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    service: IngressServiceBackend
    resource: TypedLocalObjectReference
    def __init__(self, service: _Optional[_Union[IngressServiceBackend, _Mapping]] = ..., resource: _Optional[_Union[TypedLocalObjectReference, _Mapping]] = ...) -> None: ...

class HTTPIngressPath(_message.Message):
    __slots__ = ("path", "path_type", "backend")
    PATH_FIELD_NUMBER: _ClassVar[int]
    PATH_TYPE_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    path: str
    path_type: str
    backend: IngressBackend
    def __init__(self, path: _Optional[str] = ..., path_type: _Optional[str] = ..., backend: _Optional[_Union[IngressBackend, _Mapping]] = ...) -> None: ...

class HTTPIngressRuleValue(_message.Message):
    __slots__ = ("paths",)
    PATHS_FIELD_NUMBER: _ClassVar[int]
    paths: _containers.RepeatedCompositeFieldContainer[HTTPIngressPath]
    def __init__(self, paths: _Optional[_Iterable[_Union[HTTPIngressPath, _Mapping]]] = ...) -> None: ...

class IngressRule(_message.Message):
    __slots__ = ("host", "http")
    HOST_FIELD_NUMBER: _ClassVar[int]
    HTTP_FIELD_NUMBER: _ClassVar[int]
    host: str
    http: HTTPIngressRuleValue
    def __init__(self, host: _Optional[str] = ..., http: _Optional[_Union[HTTPIngressRuleValue, _Mapping]] = ...) -> None: ...

class IngressTLS(_message.Message):
    __slots__ = ("hosts", "secret_name")
    HOSTS_FIELD_NUMBER: _ClassVar[int]
    SECRET_NAME_FIELD_NUMBER: _ClassVar[int]
    hosts: _containers.RepeatedScalarFieldContainer[str]
    secret_name: str
    def __init__(self, hosts: _Optional[_Iterable[str]] = ..., secret_name: _Optional[str] = ...) -> None: ...

class IngressSpec(_message.Message):
    __slots__ = ("ingress_class_name", "default_backend", "tls", "rules")
    INGRESS_CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_BACKEND_FIELD_NUMBER: _ClassVar[int]
    TLS_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    ingress_class_name: str
    default_backend: IngressBackend
    tls: _containers.RepeatedCompositeFieldContainer[IngressTLS]
    rules: _containers.RepeatedCompositeFieldContainer[IngressRule]
    def __init__(self, ingress_class_name: _Optional[str] = ..., default_backend: _Optional[_Union[IngressBackend, _Mapping]] = ..., tls: _Optional[_Iterable[_Union[IngressTLS, _Mapping]]] = ..., rules: _Optional[_Iterable[_Union[IngressRule, _Mapping]]] = ...) -> None: ...

class IngressPortStatus(_message.Message):
    __slots__ = ("port", "protocol", "error")
    PORT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    port: int
    protocol: str
    error: str
    def __init__(self, port: _Optional[int] = ..., protocol: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class IngressLoadBalancerIngress(_message.Message):
    __slots__ = ("ip", "hostname", "ports")
    IP_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    ip: str
    hostname: str
    ports: _containers.RepeatedCompositeFieldContainer[IngressPortStatus]
    def __init__(self, ip: _Optional[str] = ..., hostname: _Optional[str] = ..., ports: _Optional[_Iterable[_Union[IngressPortStatus, _Mapping]]] = ...) -> None: ...

class IngressLoadBalancerStatus(_message.Message):
    __slots__ = ("ingress",)
    INGRESS_FIELD_NUMBER: _ClassVar[int]
    ingress: _containers.RepeatedCompositeFieldContainer[IngressLoadBalancerIngress]
    def __init__(self, ingress: _Optional[_Iterable[_Union[IngressLoadBalancerIngress, _Mapping]]] = ...) -> None: ...

class IngressStatus(_message.Message):
    __slots__ = ("load_balancer",)
    LOAD_BALANCER_FIELD_NUMBER: _ClassVar[int]
    load_balancer: IngressLoadBalancerStatus
    def __init__(self, load_balancer: _Optional[_Union[IngressLoadBalancerStatus, _Mapping]] = ...) -> None: ...

class Ingress(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: IngressSpec
    status: IngressStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[IngressSpec, _Mapping]] = ..., status: _Optional[_Union[IngressStatus, _Mapping]] = ...) -> None: ...

class IngressClassParametersReference(_message.Message):
    __slots__ = ("api_group", "kind", "name", "scope", "namespace")
    API_GROUP_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    api_group: str
    kind: str
    name: str
    scope: str
    namespace: str
    def __init__(self, api_group: _Optional[str] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., scope: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class IngressClassSpec(_message.Message):
    __slots__ = ("controller", "parameters")
    CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    controller: str
    parameters: IngressClassParametersReference
    def __init__(self, controller: _Optional[str] = ..., parameters: _Optional[_Union[IngressClassParametersReference, _Mapping]] = ...) -> None: ...

class IngressClass(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: IngressClassSpec
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[IngressClassSpec, _Mapping]] = ...) -> None: ...

class IPBlock(_message.Message):
    __slots__ = ("cidr",)
    CIDR_FIELD_NUMBER: _ClassVar[int]
    EXCEPT_FIELD_NUMBER: _ClassVar[int]
    cidr: str
    def __init__(self, cidr: _Optional[str] = ..., **kwargs) -> None: ...

class NetworkPolicyPeer(_message.Message):
    __slots__ = ("pod_selector", "namespace_selector", "ip_block")
    POD_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    IP_BLOCK_FIELD_NUMBER: _ClassVar[int]
    pod_selector: LabelSelector
    namespace_selector: LabelSelector
    ip_block: IPBlock
    def __init__(self, pod_selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., namespace_selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., ip_block: _Optional[_Union[IPBlock, _Mapping]] = ...) -> None: ...

class NetworkPolicyPort(_message.Message):
    __slots__ = ("protocol", "port", "end_port")
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    END_PORT_FIELD_NUMBER: _ClassVar[int]
    protocol: str
    port: IntOrString
    end_port: int
    def __init__(self, protocol: _Optional[str] = ..., port: _Optional[_Union[IntOrString, _Mapping]] = ..., end_port: _Optional[int] = ...) -> None: ...

class NetworkPolicyIngressRule(_message.Message):
    __slots__ = ("ports",)
    PORTS_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    ports: _containers.RepeatedCompositeFieldContainer[NetworkPolicyPort]
    def __init__(self, ports: _Optional[_Iterable[_Union[NetworkPolicyPort, _Mapping]]] = ..., **kwargs) -> None: ...

class NetworkPolicyEgressRule(_message.Message):
    __slots__ = ("ports", "to")
    PORTS_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    ports: _containers.RepeatedCompositeFieldContainer[NetworkPolicyPort]
    to: _containers.RepeatedCompositeFieldContainer[NetworkPolicyPeer]
    def __init__(self, ports: _Optional[_Iterable[_Union[NetworkPolicyPort, _Mapping]]] = ..., to: _Optional[_Iterable[_Union[NetworkPolicyPeer, _Mapping]]] = ...) -> None: ...

class NetworkPolicySpec(_message.Message):
    __slots__ = ("pod_selector", "ingress", "egress", "policy_types")
    POD_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    INGRESS_FIELD_NUMBER: _ClassVar[int]
    EGRESS_FIELD_NUMBER: _ClassVar[int]
    POLICY_TYPES_FIELD_NUMBER: _ClassVar[int]
    pod_selector: LabelSelector
    ingress: _containers.RepeatedCompositeFieldContainer[NetworkPolicyIngressRule]
    egress: _containers.RepeatedCompositeFieldContainer[NetworkPolicyEgressRule]
    policy_types: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, pod_selector: _Optional[_Union[LabelSelector, _Mapping]] = ..., ingress: _Optional[_Iterable[_Union[NetworkPolicyIngressRule, _Mapping]]] = ..., egress: _Optional[_Iterable[_Union[NetworkPolicyEgressRule, _Mapping]]] = ..., policy_types: _Optional[_Iterable[str]] = ...) -> None: ...

class NetworkPolicy(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: NetworkPolicySpec
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[NetworkPolicySpec, _Mapping]] = ...) -> None: ...

class CertificateSigningRequestSpec(_message.Message):
    __slots__ = ("request", "signer_name", "expiration_seconds", "usages", "username", "uid", "groups")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    SIGNER_NAME_FIELD_NUMBER: _ClassVar[int]
    EXPIRATION_SECONDS_FIELD_NUMBER: _ClassVar[int]
    USAGES_FIELD_NUMBER: _ClassVar[int]
    USERNAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    request: bytes
    signer_name: str
    expiration_seconds: int
    usages: _containers.RepeatedScalarFieldContainer[str]
    username: str
    uid: str
    groups: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, request: _Optional[bytes] = ..., signer_name: _Optional[str] = ..., expiration_seconds: _Optional[int] = ..., usages: _Optional[_Iterable[str]] = ..., username: _Optional[str] = ..., uid: _Optional[str] = ..., groups: _Optional[_Iterable[str]] = ...) -> None: ...

class CertificateSigningRequestCondition(_message.Message):
    __slots__ = ("type", "status", "reason", "message", "last_update_time", "last_transition_time")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LAST_UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    reason: str
    message: str
    last_update_time: _timestamp_pb2.Timestamp
    last_transition_time: _timestamp_pb2.Timestamp
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., last_update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CertificateSigningRequestStatus(_message.Message):
    __slots__ = ("conditions", "certificate")
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    conditions: _containers.RepeatedCompositeFieldContainer[CertificateSigningRequestCondition]
    certificate: bytes
    def __init__(self, conditions: _Optional[_Iterable[_Union[CertificateSigningRequestCondition, _Mapping]]] = ..., certificate: _Optional[bytes] = ...) -> None: ...

class CertificateSigningRequest(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: CertificateSigningRequestSpec
    status: CertificateSigningRequestStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[CertificateSigningRequestSpec, _Mapping]] = ..., status: _Optional[_Union[CertificateSigningRequestStatus, _Mapping]] = ...) -> None: ...

class APIServiceReference(_message.Message):
    __slots__ = ("namespace", "name", "port")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    port: int
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class APIServiceSpec(_message.Message):
    __slots__ = ("service", "group", "version", "insecure_skip_tls_verify", "ca_bundle", "group_priority_minimum", "version_priority")
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    INSECURE_SKIP_TLS_VERIFY_FIELD_NUMBER: _ClassVar[int]
    CA_BUNDLE_FIELD_NUMBER: _ClassVar[int]
    GROUP_PRIORITY_MINIMUM_FIELD_NUMBER: _ClassVar[int]
    VERSION_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    service: APIServiceReference
    group: str
    version: str
    insecure_skip_tls_verify: bool
    ca_bundle: bytes
    group_priority_minimum: int
    version_priority: int
    def __init__(self, service: _Optional[_Union[APIServiceReference, _Mapping]] = ..., group: _Optional[str] = ..., version: _Optional[str] = ..., insecure_skip_tls_verify: _Optional[bool] = ..., ca_bundle: _Optional[bytes] = ..., group_priority_minimum: _Optional[int] = ..., version_priority: _Optional[int] = ...) -> None: ...

class APIServiceCondition(_message.Message):
    __slots__ = ("type", "status", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    last_transition_time: _timestamp_pb2.Timestamp
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class APIServiceStatus(_message.Message):
    __slots__ = ("conditions",)
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    conditions: _containers.RepeatedCompositeFieldContainer[APIServiceCondition]
    def __init__(self, conditions: _Optional[_Iterable[_Union[APIServiceCondition, _Mapping]]] = ...) -> None: ...

class APIService(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: APIServiceSpec
    status: APIServiceStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[APIServiceSpec, _Mapping]] = ..., status: _Optional[_Union[APIServiceStatus, _Mapping]] = ...) -> None: ...

class LimitRangeItem(_message.Message):
    __slots__ = ("type", "max", "min", "default_limit", "default_request", "max_limit_request_ratio")
    class MaxEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class MinEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class DefaultLimitEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class DefaultRequestEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class MaxLimitRequestRatioEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TYPE_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_LIMIT_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_REQUEST_FIELD_NUMBER: _ClassVar[int]
    MAX_LIMIT_REQUEST_RATIO_FIELD_NUMBER: _ClassVar[int]
    type: str
    max: _containers.ScalarMap[str, str]
    min: _containers.ScalarMap[str, str]
    default_limit: _containers.ScalarMap[str, str]
    default_request: _containers.ScalarMap[str, str]
    max_limit_request_ratio: _containers.ScalarMap[str, str]
    def __init__(self, type: _Optional[str] = ..., max: _Optional[_Mapping[str, str]] = ..., min: _Optional[_Mapping[str, str]] = ..., default_limit: _Optional[_Mapping[str, str]] = ..., default_request: _Optional[_Mapping[str, str]] = ..., max_limit_request_ratio: _Optional[_Mapping[str, str]] = ...) -> None: ...

class LimitRangeSpec(_message.Message):
    __slots__ = ("limits",)
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    limits: _containers.RepeatedCompositeFieldContainer[LimitRangeItem]
    def __init__(self, limits: _Optional[_Iterable[_Union[LimitRangeItem, _Mapping]]] = ...) -> None: ...

class LimitRange(_message.Message):
    __slots__ = ("metadata", "spec")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: LimitRangeSpec
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[LimitRangeSpec, _Mapping]] = ...) -> None: ...

class ScopedResourceSelectorRequirement(_message.Message):
    __slots__ = ("scope_name", "operator", "values")
    SCOPE_NAME_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    scope_name: str
    operator: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, scope_name: _Optional[str] = ..., operator: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class ScopeSelector(_message.Message):
    __slots__ = ("match_expressions",)
    MATCH_EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    match_expressions: _containers.RepeatedCompositeFieldContainer[ScopedResourceSelectorRequirement]
    def __init__(self, match_expressions: _Optional[_Iterable[_Union[ScopedResourceSelectorRequirement, _Mapping]]] = ...) -> None: ...

class ResourceQuotaSpec(_message.Message):
    __slots__ = ("hard", "scopes", "scope_selector")
    class HardEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    HARD_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    SCOPE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    hard: _containers.ScalarMap[str, str]
    scopes: _containers.RepeatedScalarFieldContainer[str]
    scope_selector: ScopeSelector
    def __init__(self, hard: _Optional[_Mapping[str, str]] = ..., scopes: _Optional[_Iterable[str]] = ..., scope_selector: _Optional[_Union[ScopeSelector, _Mapping]] = ...) -> None: ...

class ResourceQuotaStatus(_message.Message):
    __slots__ = ("hard", "used")
    class HardEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class UsedEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    HARD_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    hard: _containers.ScalarMap[str, str]
    used: _containers.ScalarMap[str, str]
    def __init__(self, hard: _Optional[_Mapping[str, str]] = ..., used: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ResourceQuota(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: ResourceQuotaSpec
    status: ResourceQuotaStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ResourceQuotaSpec, _Mapping]] = ..., status: _Optional[_Union[ResourceQuotaStatus, _Mapping]] = ...) -> None: ...

class CustomResourceDefinition(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: RawExtension
    status: RawExtension
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[RawExtension, _Mapping]] = ..., status: _Optional[_Union[RawExtension, _Mapping]] = ...) -> None: ...

class CustomObject(_message.Message):
    __slots__ = ("metadata", "api_version", "kind", "content")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    api_version: str
    kind: str
    content: RawExtension
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., api_version: _Optional[str] = ..., kind: _Optional[str] = ..., content: _Optional[_Union[RawExtension, _Mapping]] = ...) -> None: ...

class ReplicationControllerSpec(_message.Message):
    __slots__ = ("replicas", "min_ready_seconds", "selector", "template")
    class SelectorEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    MIN_READY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    replicas: int
    min_ready_seconds: int
    selector: _containers.ScalarMap[str, str]
    template: PodTemplateSpec
    def __init__(self, replicas: _Optional[int] = ..., min_ready_seconds: _Optional[int] = ..., selector: _Optional[_Mapping[str, str]] = ..., template: _Optional[_Union[PodTemplateSpec, _Mapping]] = ...) -> None: ...

class ReplicationControllerCondition(_message.Message):
    __slots__ = ("type", "status", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    last_transition_time: _timestamp_pb2.Timestamp
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ReplicationControllerStatus(_message.Message):
    __slots__ = ("replicas", "fully_labeled_replicas", "ready_replicas", "available_replicas", "observed_generation", "conditions")
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    FULLY_LABELED_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    READY_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    replicas: int
    fully_labeled_replicas: int
    ready_replicas: int
    available_replicas: int
    observed_generation: int
    conditions: _containers.RepeatedCompositeFieldContainer[ReplicationControllerCondition]
    def __init__(self, replicas: _Optional[int] = ..., fully_labeled_replicas: _Optional[int] = ..., ready_replicas: _Optional[int] = ..., available_replicas: _Optional[int] = ..., observed_generation: _Optional[int] = ..., conditions: _Optional[_Iterable[_Union[ReplicationControllerCondition, _Mapping]]] = ...) -> None: ...

class ReplicationController(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: ReplicationControllerSpec
    status: ReplicationControllerStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[ReplicationControllerSpec, _Mapping]] = ..., status: _Optional[_Union[ReplicationControllerStatus, _Mapping]] = ...) -> None: ...

class EndpointAddress(_message.Message):
    __slots__ = ("ip", "hostname", "node_name", "target_ref")
    IP_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_REF_FIELD_NUMBER: _ClassVar[int]
    ip: str
    hostname: str
    node_name: str
    target_ref: ObjectReference
    def __init__(self, ip: _Optional[str] = ..., hostname: _Optional[str] = ..., node_name: _Optional[str] = ..., target_ref: _Optional[_Union[ObjectReference, _Mapping]] = ...) -> None: ...

class EndpointPort(_message.Message):
    __slots__ = ("name", "port", "protocol", "app_protocol")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    APP_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    name: str
    port: int
    protocol: str
    app_protocol: str
    def __init__(self, name: _Optional[str] = ..., port: _Optional[int] = ..., protocol: _Optional[str] = ..., app_protocol: _Optional[str] = ...) -> None: ...

class EndpointSubset(_message.Message):
    __slots__ = ("addresses", "not_ready_addresses", "ports")
    ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    NOT_READY_ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    addresses: _containers.RepeatedCompositeFieldContainer[EndpointAddress]
    not_ready_addresses: _containers.RepeatedCompositeFieldContainer[EndpointAddress]
    ports: _containers.RepeatedCompositeFieldContainer[EndpointPort]
    def __init__(self, addresses: _Optional[_Iterable[_Union[EndpointAddress, _Mapping]]] = ..., not_ready_addresses: _Optional[_Iterable[_Union[EndpointAddress, _Mapping]]] = ..., ports: _Optional[_Iterable[_Union[EndpointPort, _Mapping]]] = ...) -> None: ...

class Endpoints(_message.Message):
    __slots__ = ("metadata", "subsets")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SUBSETS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    subsets: _containers.RepeatedCompositeFieldContainer[EndpointSubset]
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., subsets: _Optional[_Iterable[_Union[EndpointSubset, _Mapping]]] = ...) -> None: ...

class EndpointConditions(_message.Message):
    __slots__ = ("ready", "serving", "terminating")
    READY_FIELD_NUMBER: _ClassVar[int]
    SERVING_FIELD_NUMBER: _ClassVar[int]
    TERMINATING_FIELD_NUMBER: _ClassVar[int]
    ready: bool
    serving: bool
    terminating: bool
    def __init__(self, ready: _Optional[bool] = ..., serving: _Optional[bool] = ..., terminating: _Optional[bool] = ...) -> None: ...

class ForZone(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ForNode(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class EndpointHints(_message.Message):
    __slots__ = ("for_zones", "for_nodes")
    FOR_ZONES_FIELD_NUMBER: _ClassVar[int]
    FOR_NODES_FIELD_NUMBER: _ClassVar[int]
    for_zones: _containers.RepeatedCompositeFieldContainer[ForZone]
    for_nodes: _containers.RepeatedCompositeFieldContainer[ForNode]
    def __init__(self, for_zones: _Optional[_Iterable[_Union[ForZone, _Mapping]]] = ..., for_nodes: _Optional[_Iterable[_Union[ForNode, _Mapping]]] = ...) -> None: ...

class Endpoint(_message.Message):
    __slots__ = ("addresses", "conditions", "hostname", "target_ref", "deprecated_topology", "node_name", "zone", "hints")
    class DeprecatedTopologyEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_REF_FIELD_NUMBER: _ClassVar[int]
    DEPRECATED_TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    ZONE_FIELD_NUMBER: _ClassVar[int]
    HINTS_FIELD_NUMBER: _ClassVar[int]
    addresses: _containers.RepeatedScalarFieldContainer[str]
    conditions: EndpointConditions
    hostname: str
    target_ref: ObjectReference
    deprecated_topology: _containers.ScalarMap[str, str]
    node_name: str
    zone: str
    hints: EndpointHints
    def __init__(self, addresses: _Optional[_Iterable[str]] = ..., conditions: _Optional[_Union[EndpointConditions, _Mapping]] = ..., hostname: _Optional[str] = ..., target_ref: _Optional[_Union[ObjectReference, _Mapping]] = ..., deprecated_topology: _Optional[_Mapping[str, str]] = ..., node_name: _Optional[str] = ..., zone: _Optional[str] = ..., hints: _Optional[_Union[EndpointHints, _Mapping]] = ...) -> None: ...

class EndpointSlicePort(_message.Message):
    __slots__ = ("name", "protocol", "port", "app_protocol")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    APP_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    name: str
    protocol: str
    port: int
    app_protocol: str
    def __init__(self, name: _Optional[str] = ..., protocol: _Optional[str] = ..., port: _Optional[int] = ..., app_protocol: _Optional[str] = ...) -> None: ...

class EndpointSlice(_message.Message):
    __slots__ = ("metadata", "address_type", "endpoints", "ports")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_TYPE_FIELD_NUMBER: _ClassVar[int]
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    address_type: str
    endpoints: _containers.RepeatedCompositeFieldContainer[Endpoint]
    ports: _containers.RepeatedCompositeFieldContainer[EndpointSlicePort]
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., address_type: _Optional[str] = ..., endpoints: _Optional[_Iterable[_Union[Endpoint, _Mapping]]] = ..., ports: _Optional[_Iterable[_Union[EndpointSlicePort, _Mapping]]] = ...) -> None: ...

class CrossVersionObjectReference(_message.Message):
    __slots__ = ("kind", "name", "api_version")
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    kind: str
    name: str
    api_version: str
    def __init__(self, kind: _Optional[str] = ..., name: _Optional[str] = ..., api_version: _Optional[str] = ...) -> None: ...

class MetricTarget(_message.Message):
    __slots__ = ("type", "value", "average_value", "average_utilization")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    AVERAGE_VALUE_FIELD_NUMBER: _ClassVar[int]
    AVERAGE_UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    type: str
    value: str
    average_value: str
    average_utilization: int
    def __init__(self, type: _Optional[str] = ..., value: _Optional[str] = ..., average_value: _Optional[str] = ..., average_utilization: _Optional[int] = ...) -> None: ...

class MetricValueStatus(_message.Message):
    __slots__ = ("value", "average_value", "average_utilization")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    AVERAGE_VALUE_FIELD_NUMBER: _ClassVar[int]
    AVERAGE_UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    value: str
    average_value: str
    average_utilization: int
    def __init__(self, value: _Optional[str] = ..., average_value: _Optional[str] = ..., average_utilization: _Optional[int] = ...) -> None: ...

class MetricIdentifier(_message.Message):
    __slots__ = ("name", "selector")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SELECTOR_FIELD_NUMBER: _ClassVar[int]
    name: str
    selector: LabelSelector
    def __init__(self, name: _Optional[str] = ..., selector: _Optional[_Union[LabelSelector, _Mapping]] = ...) -> None: ...

class ResourceMetricSource(_message.Message):
    __slots__ = ("name", "target")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    name: str
    target: MetricTarget
    def __init__(self, name: _Optional[str] = ..., target: _Optional[_Union[MetricTarget, _Mapping]] = ...) -> None: ...

class ContainerResourceMetricSource(_message.Message):
    __slots__ = ("name", "target", "container")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    name: str
    target: MetricTarget
    container: str
    def __init__(self, name: _Optional[str] = ..., target: _Optional[_Union[MetricTarget, _Mapping]] = ..., container: _Optional[str] = ...) -> None: ...

class PodsMetricSource(_message.Message):
    __slots__ = ("metric", "target")
    METRIC_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    metric: MetricIdentifier
    target: MetricTarget
    def __init__(self, metric: _Optional[_Union[MetricIdentifier, _Mapping]] = ..., target: _Optional[_Union[MetricTarget, _Mapping]] = ...) -> None: ...

class ObjectMetricSource(_message.Message):
    __slots__ = ("described_object", "target", "metric")
    DESCRIBED_OBJECT_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    described_object: CrossVersionObjectReference
    target: MetricTarget
    metric: MetricIdentifier
    def __init__(self, described_object: _Optional[_Union[CrossVersionObjectReference, _Mapping]] = ..., target: _Optional[_Union[MetricTarget, _Mapping]] = ..., metric: _Optional[_Union[MetricIdentifier, _Mapping]] = ...) -> None: ...

class ExternalMetricSource(_message.Message):
    __slots__ = ("metric", "target")
    METRIC_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    metric: MetricIdentifier
    target: MetricTarget
    def __init__(self, metric: _Optional[_Union[MetricIdentifier, _Mapping]] = ..., target: _Optional[_Union[MetricTarget, _Mapping]] = ...) -> None: ...

class MetricSpec(_message.Message):
    __slots__ = ("type", "object", "pods", "resource", "container_resource", "external")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    PODS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_FIELD_NUMBER: _ClassVar[int]
    type: str
    object: ObjectMetricSource
    pods: PodsMetricSource
    resource: ResourceMetricSource
    container_resource: ContainerResourceMetricSource
    external: ExternalMetricSource
    def __init__(self, type: _Optional[str] = ..., object: _Optional[_Union[ObjectMetricSource, _Mapping]] = ..., pods: _Optional[_Union[PodsMetricSource, _Mapping]] = ..., resource: _Optional[_Union[ResourceMetricSource, _Mapping]] = ..., container_resource: _Optional[_Union[ContainerResourceMetricSource, _Mapping]] = ..., external: _Optional[_Union[ExternalMetricSource, _Mapping]] = ...) -> None: ...

class ResourceMetricStatus(_message.Message):
    __slots__ = ("name", "current")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    name: str
    current: MetricValueStatus
    def __init__(self, name: _Optional[str] = ..., current: _Optional[_Union[MetricValueStatus, _Mapping]] = ...) -> None: ...

class ContainerResourceMetricStatus(_message.Message):
    __slots__ = ("name", "current", "container")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    name: str
    current: MetricValueStatus
    container: str
    def __init__(self, name: _Optional[str] = ..., current: _Optional[_Union[MetricValueStatus, _Mapping]] = ..., container: _Optional[str] = ...) -> None: ...

class PodsMetricStatus(_message.Message):
    __slots__ = ("metric", "current")
    METRIC_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    metric: MetricIdentifier
    current: MetricValueStatus
    def __init__(self, metric: _Optional[_Union[MetricIdentifier, _Mapping]] = ..., current: _Optional[_Union[MetricValueStatus, _Mapping]] = ...) -> None: ...

class ObjectMetricStatus(_message.Message):
    __slots__ = ("metric", "current", "described_object")
    METRIC_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    DESCRIBED_OBJECT_FIELD_NUMBER: _ClassVar[int]
    metric: MetricIdentifier
    current: MetricValueStatus
    described_object: CrossVersionObjectReference
    def __init__(self, metric: _Optional[_Union[MetricIdentifier, _Mapping]] = ..., current: _Optional[_Union[MetricValueStatus, _Mapping]] = ..., described_object: _Optional[_Union[CrossVersionObjectReference, _Mapping]] = ...) -> None: ...

class ExternalMetricStatus(_message.Message):
    __slots__ = ("metric", "current")
    METRIC_FIELD_NUMBER: _ClassVar[int]
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    metric: MetricIdentifier
    current: MetricValueStatus
    def __init__(self, metric: _Optional[_Union[MetricIdentifier, _Mapping]] = ..., current: _Optional[_Union[MetricValueStatus, _Mapping]] = ...) -> None: ...

class MetricStatus(_message.Message):
    __slots__ = ("type", "object", "pods", "resource", "container_resource", "external")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    PODS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_FIELD_NUMBER: _ClassVar[int]
    type: str
    object: ObjectMetricStatus
    pods: PodsMetricStatus
    resource: ResourceMetricStatus
    container_resource: ContainerResourceMetricStatus
    external: ExternalMetricStatus
    def __init__(self, type: _Optional[str] = ..., object: _Optional[_Union[ObjectMetricStatus, _Mapping]] = ..., pods: _Optional[_Union[PodsMetricStatus, _Mapping]] = ..., resource: _Optional[_Union[ResourceMetricStatus, _Mapping]] = ..., container_resource: _Optional[_Union[ContainerResourceMetricStatus, _Mapping]] = ..., external: _Optional[_Union[ExternalMetricStatus, _Mapping]] = ...) -> None: ...

class HPAScalingPolicy(_message.Message):
    __slots__ = ("type", "value", "period_seconds")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    PERIOD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    type: str
    value: int
    period_seconds: int
    def __init__(self, type: _Optional[str] = ..., value: _Optional[int] = ..., period_seconds: _Optional[int] = ...) -> None: ...

class HPAScalingRules(_message.Message):
    __slots__ = ("stabilization_window_seconds", "select_policy", "policies", "tolerance")
    STABILIZATION_WINDOW_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SELECT_POLICY_FIELD_NUMBER: _ClassVar[int]
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    TOLERANCE_FIELD_NUMBER: _ClassVar[int]
    stabilization_window_seconds: int
    select_policy: str
    policies: _containers.RepeatedCompositeFieldContainer[HPAScalingPolicy]
    tolerance: str
    def __init__(self, stabilization_window_seconds: _Optional[int] = ..., select_policy: _Optional[str] = ..., policies: _Optional[_Iterable[_Union[HPAScalingPolicy, _Mapping]]] = ..., tolerance: _Optional[str] = ...) -> None: ...

class HorizontalPodAutoscalerBehavior(_message.Message):
    __slots__ = ("scale_up", "scale_down")
    SCALE_UP_FIELD_NUMBER: _ClassVar[int]
    SCALE_DOWN_FIELD_NUMBER: _ClassVar[int]
    scale_up: HPAScalingRules
    scale_down: HPAScalingRules
    def __init__(self, scale_up: _Optional[_Union[HPAScalingRules, _Mapping]] = ..., scale_down: _Optional[_Union[HPAScalingRules, _Mapping]] = ...) -> None: ...

class HorizontalPodAutoscalerSpec(_message.Message):
    __slots__ = ("scale_target_ref", "min_replicas", "max_replicas", "metrics", "behavior")
    SCALE_TARGET_REF_FIELD_NUMBER: _ClassVar[int]
    MIN_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    MAX_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    BEHAVIOR_FIELD_NUMBER: _ClassVar[int]
    scale_target_ref: CrossVersionObjectReference
    min_replicas: int
    max_replicas: int
    metrics: _containers.RepeatedCompositeFieldContainer[MetricSpec]
    behavior: HorizontalPodAutoscalerBehavior
    def __init__(self, scale_target_ref: _Optional[_Union[CrossVersionObjectReference, _Mapping]] = ..., min_replicas: _Optional[int] = ..., max_replicas: _Optional[int] = ..., metrics: _Optional[_Iterable[_Union[MetricSpec, _Mapping]]] = ..., behavior: _Optional[_Union[HorizontalPodAutoscalerBehavior, _Mapping]] = ...) -> None: ...

class HorizontalPodAutoscalerCondition(_message.Message):
    __slots__ = ("type", "status", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    last_transition_time: _timestamp_pb2.Timestamp
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class HorizontalPodAutoscalerStatus(_message.Message):
    __slots__ = ("observed_generation", "last_scale_time", "current_replicas", "desired_replicas", "current_metrics", "conditions")
    OBSERVED_GENERATION_FIELD_NUMBER: _ClassVar[int]
    LAST_SCALE_TIME_FIELD_NUMBER: _ClassVar[int]
    CURRENT_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    DESIRED_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_METRICS_FIELD_NUMBER: _ClassVar[int]
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    observed_generation: int
    last_scale_time: _timestamp_pb2.Timestamp
    current_replicas: int
    desired_replicas: int
    current_metrics: _containers.RepeatedCompositeFieldContainer[MetricStatus]
    conditions: _containers.RepeatedCompositeFieldContainer[HorizontalPodAutoscalerCondition]
    def __init__(self, observed_generation: _Optional[int] = ..., last_scale_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., current_replicas: _Optional[int] = ..., desired_replicas: _Optional[int] = ..., current_metrics: _Optional[_Iterable[_Union[MetricStatus, _Mapping]]] = ..., conditions: _Optional[_Iterable[_Union[HorizontalPodAutoscalerCondition, _Mapping]]] = ...) -> None: ...

class HorizontalPodAutoscaler(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: HorizontalPodAutoscalerSpec
    status: HorizontalPodAutoscalerStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[HorizontalPodAutoscalerSpec, _Mapping]] = ..., status: _Optional[_Union[HorizontalPodAutoscalerStatus, _Mapping]] = ...) -> None: ...

class PriorityLevelConfigurationReference(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class FlowDistinguisherMethod(_message.Message):
    __slots__ = ("type",)
    TYPE_FIELD_NUMBER: _ClassVar[int]
    type: str
    def __init__(self, type: _Optional[str] = ...) -> None: ...

class UserSubject(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GroupSubject(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ServiceAccountSubject(_message.Message):
    __slots__ = ("namespace", "name")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class FlowSubject(_message.Message):
    __slots__ = ("kind", "user", "group", "service_account")
    KIND_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    kind: str
    user: UserSubject
    group: GroupSubject
    service_account: ServiceAccountSubject
    def __init__(self, kind: _Optional[str] = ..., user: _Optional[_Union[UserSubject, _Mapping]] = ..., group: _Optional[_Union[GroupSubject, _Mapping]] = ..., service_account: _Optional[_Union[ServiceAccountSubject, _Mapping]] = ...) -> None: ...

class ResourcePolicyRule(_message.Message):
    __slots__ = ("verbs", "api_groups", "resources", "cluster_scope", "namespaces")
    VERBS_FIELD_NUMBER: _ClassVar[int]
    API_GROUPS_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_SCOPE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    verbs: _containers.RepeatedScalarFieldContainer[str]
    api_groups: _containers.RepeatedScalarFieldContainer[str]
    resources: _containers.RepeatedScalarFieldContainer[str]
    cluster_scope: bool
    namespaces: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, verbs: _Optional[_Iterable[str]] = ..., api_groups: _Optional[_Iterable[str]] = ..., resources: _Optional[_Iterable[str]] = ..., cluster_scope: _Optional[bool] = ..., namespaces: _Optional[_Iterable[str]] = ...) -> None: ...

class NonResourcePolicyRule(_message.Message):
    __slots__ = ("verbs", "non_resource_urls")
    VERBS_FIELD_NUMBER: _ClassVar[int]
    NON_RESOURCE_URLS_FIELD_NUMBER: _ClassVar[int]
    verbs: _containers.RepeatedScalarFieldContainer[str]
    non_resource_urls: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, verbs: _Optional[_Iterable[str]] = ..., non_resource_urls: _Optional[_Iterable[str]] = ...) -> None: ...

class PolicyRulesWithSubjects(_message.Message):
    __slots__ = ("subjects", "resource_rules", "non_resource_rules")
    SUBJECTS_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_RULES_FIELD_NUMBER: _ClassVar[int]
    NON_RESOURCE_RULES_FIELD_NUMBER: _ClassVar[int]
    subjects: _containers.RepeatedCompositeFieldContainer[FlowSubject]
    resource_rules: _containers.RepeatedCompositeFieldContainer[ResourcePolicyRule]
    non_resource_rules: _containers.RepeatedCompositeFieldContainer[NonResourcePolicyRule]
    def __init__(self, subjects: _Optional[_Iterable[_Union[FlowSubject, _Mapping]]] = ..., resource_rules: _Optional[_Iterable[_Union[ResourcePolicyRule, _Mapping]]] = ..., non_resource_rules: _Optional[_Iterable[_Union[NonResourcePolicyRule, _Mapping]]] = ...) -> None: ...

class FlowSchemaSpec(_message.Message):
    __slots__ = ("priority_level_configuration", "matching_precedence", "distinguisher_method", "rules")
    PRIORITY_LEVEL_CONFIGURATION_FIELD_NUMBER: _ClassVar[int]
    MATCHING_PRECEDENCE_FIELD_NUMBER: _ClassVar[int]
    DISTINGUISHER_METHOD_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    priority_level_configuration: PriorityLevelConfigurationReference
    matching_precedence: int
    distinguisher_method: FlowDistinguisherMethod
    rules: _containers.RepeatedCompositeFieldContainer[PolicyRulesWithSubjects]
    def __init__(self, priority_level_configuration: _Optional[_Union[PriorityLevelConfigurationReference, _Mapping]] = ..., matching_precedence: _Optional[int] = ..., distinguisher_method: _Optional[_Union[FlowDistinguisherMethod, _Mapping]] = ..., rules: _Optional[_Iterable[_Union[PolicyRulesWithSubjects, _Mapping]]] = ...) -> None: ...

class FlowSchemaCondition(_message.Message):
    __slots__ = ("type", "status", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    last_transition_time: _timestamp_pb2.Timestamp
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class FlowSchemaStatus(_message.Message):
    __slots__ = ("conditions",)
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    conditions: _containers.RepeatedCompositeFieldContainer[FlowSchemaCondition]
    def __init__(self, conditions: _Optional[_Iterable[_Union[FlowSchemaCondition, _Mapping]]] = ...) -> None: ...

class FlowSchema(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: FlowSchemaSpec
    status: FlowSchemaStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[FlowSchemaSpec, _Mapping]] = ..., status: _Optional[_Union[FlowSchemaStatus, _Mapping]] = ...) -> None: ...

class QueuingConfiguration(_message.Message):
    __slots__ = ("queues", "hand_size", "queue_length_limit")
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    HAND_SIZE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_LENGTH_LIMIT_FIELD_NUMBER: _ClassVar[int]
    queues: int
    hand_size: int
    queue_length_limit: int
    def __init__(self, queues: _Optional[int] = ..., hand_size: _Optional[int] = ..., queue_length_limit: _Optional[int] = ...) -> None: ...

class LimitResponse(_message.Message):
    __slots__ = ("type", "queuing")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    QUEUING_FIELD_NUMBER: _ClassVar[int]
    type: str
    queuing: QueuingConfiguration
    def __init__(self, type: _Optional[str] = ..., queuing: _Optional[_Union[QueuingConfiguration, _Mapping]] = ...) -> None: ...

class LimitedPriorityLevelConfiguration(_message.Message):
    __slots__ = ("nominal_concurrency_shares", "limit_response", "lendable_percent", "borrowing_limit_percent")
    NOMINAL_CONCURRENCY_SHARES_FIELD_NUMBER: _ClassVar[int]
    LIMIT_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    LENDABLE_PERCENT_FIELD_NUMBER: _ClassVar[int]
    BORROWING_LIMIT_PERCENT_FIELD_NUMBER: _ClassVar[int]
    nominal_concurrency_shares: int
    limit_response: LimitResponse
    lendable_percent: int
    borrowing_limit_percent: int
    def __init__(self, nominal_concurrency_shares: _Optional[int] = ..., limit_response: _Optional[_Union[LimitResponse, _Mapping]] = ..., lendable_percent: _Optional[int] = ..., borrowing_limit_percent: _Optional[int] = ...) -> None: ...

class ExemptPriorityLevelConfiguration(_message.Message):
    __slots__ = ("nominal_concurrency_shares", "lendable_percent")
    NOMINAL_CONCURRENCY_SHARES_FIELD_NUMBER: _ClassVar[int]
    LENDABLE_PERCENT_FIELD_NUMBER: _ClassVar[int]
    nominal_concurrency_shares: int
    lendable_percent: int
    def __init__(self, nominal_concurrency_shares: _Optional[int] = ..., lendable_percent: _Optional[int] = ...) -> None: ...

class PriorityLevelConfigurationSpec(_message.Message):
    __slots__ = ("type", "limited", "exempt")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    LIMITED_FIELD_NUMBER: _ClassVar[int]
    EXEMPT_FIELD_NUMBER: _ClassVar[int]
    type: str
    limited: LimitedPriorityLevelConfiguration
    exempt: ExemptPriorityLevelConfiguration
    def __init__(self, type: _Optional[str] = ..., limited: _Optional[_Union[LimitedPriorityLevelConfiguration, _Mapping]] = ..., exempt: _Optional[_Union[ExemptPriorityLevelConfiguration, _Mapping]] = ...) -> None: ...

class PriorityLevelConfigurationCondition(_message.Message):
    __slots__ = ("type", "status", "last_transition_time", "reason", "message")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_TRANSITION_TIME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    type: str
    status: str
    last_transition_time: _timestamp_pb2.Timestamp
    reason: str
    message: str
    def __init__(self, type: _Optional[str] = ..., status: _Optional[str] = ..., last_transition_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class PriorityLevelConfigurationStatus(_message.Message):
    __slots__ = ("conditions",)
    CONDITIONS_FIELD_NUMBER: _ClassVar[int]
    conditions: _containers.RepeatedCompositeFieldContainer[PriorityLevelConfigurationCondition]
    def __init__(self, conditions: _Optional[_Iterable[_Union[PriorityLevelConfigurationCondition, _Mapping]]] = ...) -> None: ...

class PriorityLevelConfiguration(_message.Message):
    __slots__ = ("metadata", "spec", "status")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    metadata: ObjectMeta
    spec: PriorityLevelConfigurationSpec
    status: PriorityLevelConfigurationStatus
    def __init__(self, metadata: _Optional[_Union[ObjectMeta, _Mapping]] = ..., spec: _Optional[_Union[PriorityLevelConfigurationSpec, _Mapping]] = ..., status: _Optional[_Union[PriorityLevelConfigurationStatus, _Mapping]] = ...) -> None: ...

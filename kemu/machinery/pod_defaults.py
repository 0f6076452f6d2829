"""The defaults upstream's core/v1 gives a pod's spec on every decode (pkg/apis/core/v1
defaults.go: SetDefaults_PodSpec, _Container, _ContainerPort, _Probe, _HTTPGetAction,
_ObjectFieldSelector, _Volume and the volume sources; the v1 conversion's
serviceAccount alias). The apiserver applies them on create and on update, so that a manifest
applied twice, or a merge patch that replaces the containers list, means the same pod; kemuctl
apply uses them to tell "unchanged" from "configured".

Only fields that are set are visited: a pod without ports, probes or volumes costs one check
of each list. Every default is idempotent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.pod_strategy import (
    DEFAULT_TERMINATION_GRACE_SECONDS,
    default_requests_from_limits,
)

DEFAULT_SCHEDULER: Final = "default-scheduler"
DNS_CLUSTER_FIRST: Final = "ClusterFirst"
PULL_ALWAYS: Final = "Always"
PULL_IF_NOT_PRESENT: Final = "IfNotPresent"
TERMINATION_MESSAGE_PATH: Final = "/dev/termination-log"
TERMINATION_MESSAGE_READ_FILE: Final = "File"
PROTOCOL_TCP: Final = "TCP"
DEFAULT_VOLUME_MODE: Final = 0o644
DEFAULT_TOKEN_EXPIRATION_SECONDS: Final = 3600
_VOLUME_SOURCES: Final = (
    "host_path",
    "empty_dir",
    "secret",
    "persistent_volume_claim",
    "config_map",
    "downward_api",
    "projected",
)


def image_tag(image: str) -> str:
    """The tag of an image reference as the container runtime reads it: "latest" when the
    reference has neither a tag nor a digest ("nginx", "localhost:5000/nginx"), "" when it has
    only a digest."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        return last.split(":", 1)[1]
    return "" if digest else "latest"


def default_image_pull_policy(image: str) -> str:
    """Always for an image at :latest (or with no tag), IfNotPresent otherwise."""
    if image and image_tag(image) == "latest":
        return PULL_ALWAYS
    return PULL_IF_NOT_PRESENT


def _default_http_get(action: types_pb2.HTTPGetAction) -> None:
    if not action.path:
        action.path = "/"
    if not action.scheme:
        action.scheme = "HTTP"


def _default_probe(probe: types_pb2.Probe) -> None:
    if not probe.timeout_seconds:
        probe.timeout_seconds = 1
    if not probe.period_seconds:
        probe.period_seconds = 10
    if not probe.success_threshold:
        probe.success_threshold = 1
    if not probe.failure_threshold:
        probe.failure_threshold = 3
    if probe.HasField("http_get"):
        _default_http_get(probe.http_get)
    if probe.HasField("grpc") and not probe.grpc.HasField("service"):
        probe.grpc.service = ""


def _default_field_ref(ref: types_pb2.ObjectFieldSelector) -> None:
    if not ref.api_version:
        ref.api_version = "v1"


def _default_resource_field_ref(ref: types_pb2.ResourceFieldSelector) -> None:
    # Upstream's divisor is a non-pointer Quantity: unset, it reads back as "0".
    if not ref.divisor:
        ref.divisor = "0"


def _default_container(c: types_pb2.Container, host_network: bool) -> None:
    if not c.image_pull_policy:
        c.image_pull_policy = default_image_pull_policy(c.image)
    if not c.termination_message_path:
        c.termination_message_path = TERMINATION_MESSAGE_PATH
    if not c.termination_message_policy:
        c.termination_message_policy = TERMINATION_MESSAGE_READ_FILE
    for port in c.ports:
        if not port.protocol:
            port.protocol = PROTOCOL_TCP
        if host_network and not port.host_port:
            port.host_port = port.container_port
    for env in c.env:
        if env.HasField("value_from"):
            source = env.value_from
            if source.HasField("field_ref"):
                _default_field_ref(source.field_ref)
            if source.HasField("resource_field_ref"):
                _default_resource_field_ref(source.resource_field_ref)
    for field in ("liveness_probe", "readiness_probe", "startup_probe"):
        if c.HasField(field):
            _default_probe(getattr(c, field))
    if c.HasField("lifecycle"):
        for field in ("post_start", "pre_stop"):
            handler = getattr(c.lifecycle, field)
            if c.lifecycle.HasField(field) and handler.HasField("http_get"):
                _default_http_get(handler.http_get)


def _default_downward_files(items: Iterable[types_pb2.DownwardAPIVolumeFile]) -> None:
    for item in items:
        if item.HasField("field_ref"):
            _default_field_ref(item.field_ref)
        if item.HasField("resource_field_ref"):
            _default_resource_field_ref(item.resource_field_ref)


def _default_volume(v: types_pb2.Volume) -> None:
    source = next((f for f in _VOLUME_SOURCES if v.HasField(f)), None)
    if source is None:
        v.empty_dir.SetInParent()
    elif source == "host_path":
        if not v.host_path.HasField("type"):
            v.host_path.type = ""
    elif source in ("secret", "config_map", "downward_api", "projected"):
        src = getattr(v, source)
        if not src.HasField("default_mode"):
            src.default_mode = DEFAULT_VOLUME_MODE
        if source == "downward_api":
            _default_downward_files(v.downward_api.items)
        elif source == "projected":
            for proj in v.projected.sources:
                if proj.HasField("service_account_token") and not (
                    proj.service_account_token.HasField("expiration_seconds")
                ):
                    proj.service_account_token.expiration_seconds = DEFAULT_TOKEN_EXPIRATION_SECONDS
                if proj.HasField("downward_api"):
                    _default_downward_files(proj.downward_api.items)


def default_pod_spec(spec: types_pb2.PodSpec) -> None:
    """Every core/v1 default of a pod spec: its own fields, its containers and volumes."""
    if not spec.scheduler_name:
        spec.scheduler_name = DEFAULT_SCHEDULER
    if not spec.HasField("termination_grace_period_seconds"):
        spec.termination_grace_period_seconds = DEFAULT_TERMINATION_GRACE_SECONDS
    if not spec.restart_policy:
        spec.restart_policy = "Always"
    default_requests_from_limits(spec)
    if not spec.dns_policy:
        spec.dns_policy = DNS_CLUSTER_FIRST
    if not spec.HasField("security_context"):
        spec.security_context.SetInParent()
    if not spec.HasField("enable_service_links"):
        spec.enable_service_links = True
    # v1's deprecated serviceAccount: read when serviceAccountName is empty, always written.
    if not spec.service_account_name and spec.service_account:
        spec.service_account_name = spec.service_account
    spec.service_account = spec.service_account_name
    host_network = spec.host_network
    for c in spec.init_containers:
        _default_container(c, host_network)
    for c in spec.containers:
        _default_container(c, host_network)
    for v in spec.volumes:
        _default_volume(v)

"""Containers and volumes of a PodSpec (core/v1): ports, env, mounts, probes, lifecycle handlers, security contexts, volume sources."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping, Sequence
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause
from kemu.machinery.quantity import NEGATIVE_ERROR
from kemu.machinery.validation.field import (
    duplicate,
    forbidden,
    invalid,
    not_found,
    not_supported,
    required,
)
from kemu.machinery.validation.names import (
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    _max_len_error,
    _regex_error,
    is_dns1123_label,
    is_qualified_name,
    name_is_dns_subdomain,
)
from kemu.machinery.validation.resources import validate_resource_quantity

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network

# ---------------------------------------------------------------- containers, volumes (core/v1)

PORT_PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
IMAGE_PULL_POLICIES: Final = ("Always", "IfNotPresent", "Never")
TERMINATION_MESSAGE_POLICIES: Final = ("FallbackToLogsOnError", "File")
DNS_POLICIES: Final = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
MOUNT_PROPAGATION_MODES: Final = ("Bidirectional", "HostToContainer", "None")
RECURSIVE_READ_ONLY_MODES: Final = ("Disabled", "Enabled", "IfPossible")
URI_SCHEMES: Final = ("HTTP", "HTTPS")
HOST_PATH_TYPES: Final = (
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
)
WHEN_UNSATISFIABLE: Final = ("DoNotSchedule", "ScheduleAnyway")
NODE_INCLUSION_POLICIES: Final = ("Honor", "Ignore")
PROC_MOUNT_TYPES: Final = ("Default", "Unmasked")
PROFILE_TYPES: Final = ("Localhost", "RuntimeDefault", "Unconfined")
FS_GROUP_CHANGE_POLICIES: Final = ("Always", "OnRootMismatch")
SUPPLEMENTAL_GROUPS_POLICIES: Final = ("Merge", "Strict")
SE_LINUX_CHANGE_POLICIES: Final = ("MountOption", "Recursive")
OS_NAMES: Final = ("linux", "windows")
# Downward API field paths an env var may read; a volume file may also read all labels or
# annotations. metadata.labels['k'] and metadata.annotations['k'] are accepted in both.
ENV_FIELD_PATHS: Final = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
)
VOLUME_FIELD_PATHS: Final = (
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
)
RESOURCE_FIELD_REFS: Final = (
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
)
MAX_INT32: Final = 2**31 - 1
FILE_MODE_ERROR: Final = "must be a number between 0 and 0777 (octal), both inclusive"
_NOT_FOR_INIT: Final = "may not be set for init containers without restartPolicy=Always"

_ENV_VAR_NAME_FMT: Final = "[-._a-zA-Z][-._a-zA-Z0-9]*"
_ENV_VAR_NAME_RE: Final = re.compile(_ENV_VAR_NAME_FMT)
_ENV_VAR_NAME_ERROR: Final = _regex_error(
    "a valid environment variable name must consist of alphabetic characters, digits, '_', "
    "'-', or '.', and must not start with a digit",
    _ENV_VAR_NAME_FMT,
    "my.env-name",
    "MY_ENV.NAME",
    "MyEnvName1",
)
_CONFIG_MAP_KEY_FMT: Final = "[-._a-zA-Z0-9]+"
_CONFIG_MAP_KEY_RE: Final = re.compile(_CONFIG_MAP_KEY_FMT)
_CONFIG_MAP_KEY_ERROR: Final = _regex_error(
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
    _CONFIG_MAP_KEY_FMT,
    "key.name",
    "KEY_NAME",
    "key-name",
)
_PORT_NAME_CHARSET_RE: Final = re.compile("[-a-z0-9]+")
_HTTP_HEADER_NAME_FMT: Final = "[-A-Za-z0-9]+"
_HTTP_HEADER_NAME_RE: Final = re.compile(_HTTP_HEADER_NAME_FMT)
_SUBSCRIPTED_PATH_RE: Final = re.compile(r"^([^\[]+)\['(.*)'\]$")
_PORT_RANGE_ERROR: Final = "must be between 1 and 65535, inclusive"


def _inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


def _chdir_prefix(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


def is_env_var_name(value: str) -> list[str]:
    """apimachinery IsEnvVarName (kemu does not model RelaxedEnvironmentVariableValidation)."""
    errs = [] if _ENV_VAR_NAME_RE.fullmatch(value) else [_ENV_VAR_NAME_ERROR]
    return errs + _chdir_prefix(value)


def is_config_map_key(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(_max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _CONFIG_MAP_KEY_RE.fullmatch(value):
        errs.append(_CONFIG_MAP_KEY_ERROR)
    return errs + _chdir_prefix(value)


def is_valid_port_name(port: str) -> list[str]:
    """An IANA_SVC_NAME: at most 15 characters, a-z, 0-9 and single inner hyphens, a letter."""
    errs = []
    if len(port) > 15:
        errs.append(_max_len_error(15))
    if not _PORT_NAME_CHARSET_RE.fullmatch(port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_valid_port_num(port: int) -> list[str]:
    return [] if 1 <= port <= 65535 else [_PORT_RANGE_ERROR]


def _is_valid_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _validate_ip(value: str, path: str) -> list[Cause]:
    if _is_valid_ip(value):
        return []
    return [invalid(path, value, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")]


def validate_dual_stack(
    values: Sequence[str], path: str, *, parse: Callable[[str], IPAddress | IPNetwork], what: str
) -> list[Cause]:
    """A list of IPs (status.podIPs, hostIPs) or CIDRs (a Node's spec.podCIDRs), as upstream's
    validatePodIPs / validateHostIPs / ValidateNode: each one valid (`parse` raises ValueError
    otherwise), and more than one only as a dual-stack pair without duplicates."""
    causes: list[Cause] = []
    families: list[int] = []
    for i, value in enumerate(values):
        try:
            families.append(parse(value).version)
        except ValueError:
            causes.append(invalid(f"{path}[{i}]", value, f"must be a valid {what}"))
    if len(values) > 1:
        if len(values) > 2 or len(set(families)) != len(families):
            causes.append(
                invalid(
                    path, list(values), f"may specify no more than one {what} for each IP family"
                )
            )
        seen: set[str] = set()
        for i, value in enumerate(values):
            if value in seen:
                causes.append(duplicate(f"{path}[{i}]", value))
            seen.add(value)
    return causes


def _validate_id(value: int, path: str) -> list[Cause]:
    """IsValidUserID / IsValidGroupID."""
    if 0 <= value <= MAX_INT32:
        return []
    return [invalid(path, value, _inclusive_range_error(0, MAX_INT32))]


def _nonnegative(value: int, path: str) -> list[Cause]:
    return [] if value >= 0 else [invalid(path, value, NEGATIVE_ERROR)]


def _validate_port_num_or_name(port: types_pb2.IntOrString, path: str) -> list[Cause]:
    if port.WhichOneof("value") == "str_val":
        return [invalid(path, port.str_val, m) for m in is_valid_port_name(port.str_val)]
    return [invalid(path, port.int_val, m) for m in is_valid_port_num(port.int_val)]


def _validate_descending_path(target: str, path: str) -> list[Cause]:
    """validateLocalDescendingPath: relative, without '..' elements."""
    causes = []
    if target.startswith("/"):
        causes.append(invalid(path, target, "must be a relative path"))
    if ".." in target.replace("\\", "/").split("/"):
        causes.append(invalid(path, target, "must not contain '..'"))
    return causes


def _validate_non_reserved_path(target: str, path: str) -> list[Cause]:
    causes = _validate_descending_path(target, path)
    if target.startswith("..") and not target.startswith("../"):
        causes.append(invalid(path, target, "must not start with '..'"))
    return causes


def _validate_file_mode(mode: int, path: str) -> list[Cause]:
    return [] if 0 <= mode <= 0o777 else [invalid(path, mode, FILE_MODE_ERROR)]


# ------------------------------------------ ports, env


def _validate_container_ports(ports: Sequence[types_pb2.ContainerPort], path: str) -> list[Cause]:
    causes: list[Cause] = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        p = f"{path}[{i}]"
        if port.name:
            errs = is_valid_port_name(port.name)
            if errs:
                causes.extend(invalid(f"{p}.name", port.name, m) for m in errs)
            elif port.name in names:
                causes.append(duplicate(f"{p}.name", port.name))
            names.add(port.name)
        if not port.container_port:
            causes.append(required(f"{p}.containerPort"))
        else:
            causes.extend(
                invalid(f"{p}.containerPort", port.container_port, m)
                for m in is_valid_port_num(port.container_port)
            )
        if port.host_port:
            causes.extend(
                invalid(f"{p}.hostPort", port.host_port, m)
                for m in is_valid_port_num(port.host_port)
            )
        if port.protocol and port.protocol not in PORT_PROTOCOLS:
            causes.append(not_supported(f"{p}.protocol", port.protocol, PORT_PROTOCOLS))
        if port.host_ip:
            causes.extend(_validate_ip(port.host_ip, f"{p}.hostIP"))
    return causes


def _host_port_conflicts(containers: Sequence[types_pb2.Container], path: str) -> list[Cause]:
    """AccumulateUniqueHostPorts: one protocol/hostIP/hostPort per pod."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, c in enumerate(containers):
        for j, port in enumerate(c.ports):
            if not port.host_port:
                continue
            key = f"{port.protocol}/{port.host_ip}/{port.host_port}"
            if key in seen:
                causes.append(duplicate(f"{path}[{i}].ports[{j}].hostPort", key))
            seen.add(key)
    return causes


def _validate_field_ref(
    ref: types_pb2.ObjectFieldSelector, path: str, expressions: Sequence[str]
) -> list[Cause]:
    if not ref.api_version:
        return [required(f"{path}.apiVersion")]
    if not ref.field_path:
        return [required(f"{path}.fieldPath")]
    if ref.api_version != "v1":
        return [
            invalid(
                f"{path}.fieldPath",
                ref.field_path,
                f'error converting fieldPath: unsupported version "{ref.api_version}"',
            )
        ]
    m = _SUBSCRIPTED_PATH_RE.match(ref.field_path)
    if m is not None:
        base, key = m.groups()
        if base in ("metadata.annotations", "metadata.labels"):
            check = key.lower() if base == "metadata.annotations" else key
            return [invalid(f"{path}.fieldPath", key, e) for e in is_qualified_name(check)]
        return [invalid(f"{path}.fieldPath", base, "does not support subscript")]
    if ref.field_path not in expressions:
        return [not_supported(f"{path}.fieldPath", ref.field_path, expressions)]
    return []


def _validate_resource_field_ref(
    ref: types_pb2.ResourceFieldSelector, path: str, *, volume: bool
) -> list[Cause]:
    if volume and not ref.container_name:
        return [required(f"{path}.containerName")]
    if not ref.resource:
        return [required(f"{path}.resource")]
    if ref.resource not in RESOURCE_FIELD_REFS and not ref.resource.startswith(
        ("limits.hugepages-", "requests.hugepages-")
    ):
        return [not_supported(f"{path}.resource", ref.resource, RESOURCE_FIELD_REFS)]
    if ref.divisor:
        return validate_resource_quantity("", ref.divisor, f"{path}.divisor")[1]
    return []


def _validate_key_selector(
    name: str, key: str, path: str, *, name_field: str = "name"
) -> list[Cause]:
    causes = [invalid(f"{path}.{name_field}", name, m) for m in name_is_dns_subdomain(name)]
    if not key:
        causes.append(required(f"{path}.key"))
    else:
        causes.extend(invalid(f"{path}.key", key, m) for m in is_config_map_key(key))
    return causes


def _validate_env(env: Sequence[types_pb2.EnvVar], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, ev in enumerate(env):
        p = f"{path}[{i}]"
        if not ev.name:
            causes.append(required(f"{p}.name"))
        else:
            causes.extend(invalid(f"{p}.name", ev.name, m) for m in is_env_var_name(ev.name))
        if not ev.HasField("value_from"):
            continue
        vp = f"{p}.valueFrom"
        source = ev.value_from
        sources = 0
        if source.HasField("field_ref"):
            sources += 1
            causes.extend(_validate_field_ref(source.field_ref, f"{vp}.fieldRef", ENV_FIELD_PATHS))
        if source.HasField("resource_field_ref"):
            sources += 1
            causes.extend(
                _validate_resource_field_ref(
                    source.resource_field_ref, f"{vp}.resourceFieldRef", volume=False
                )
            )
        for field, json_name in (
            ("config_map_key_ref", "configMapKeyRef"),
            ("secret_key_ref", "secretKeyRef"),
        ):
            if source.HasField(field):
                sources += 1
                ref = getattr(source, field)
                causes.extend(_validate_key_selector(ref.name, ref.key, f"{vp}.{json_name}"))
        if sources == 0:
            causes.append(
                invalid(
                    vp,
                    "",
                    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` "
                    "or `secretKeyRef`",
                )
            )
        elif ev.value:
            causes.append(invalid(vp, "", "may not be specified when `value` is not empty"))
        elif sources > 1:
            causes.append(invalid(vp, "", "may not have more than one field specified at a time"))
    return causes


def _validate_env_from(sources: Sequence[types_pb2.EnvFromSource], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, ef in enumerate(sources):
        p = f"{path}[{i}]"
        if ef.prefix:
            causes.extend(invalid(f"{p}.prefix", ef.prefix, m) for m in is_env_var_name(ef.prefix))
        refs = [f for f in ("config_map_ref", "secret_ref") if ef.HasField(f)]
        if not refs:
            causes.append(invalid(p, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif len(refs) > 1:
            causes.append(invalid(p, "", "may not have more than one field specified at a time"))
        for field, json_name in (("config_map_ref", "configMapRef"), ("secret_ref", "secretRef")):
            if ef.HasField(field):
                name = getattr(ef, field).name
                if not name:
                    causes.append(required(f"{p}.{json_name}.name"))
                else:
                    causes.extend(
                        invalid(f"{p}.{json_name}.name", name, m)
                        for m in name_is_dns_subdomain(name)
                    )
    return causes


# ------------------------------------------ mounts, probes, lifecycle, security


def _validate_volume_mounts(
    c: types_pb2.Container, path: str, volumes: Mapping[str, types_pb2.Volume]
) -> list[Cause]:
    causes: list[Cause] = []
    mount_paths: set[str] = set()
    device_names = {d.name for d in c.volume_devices}
    privileged = c.security_context.privileged
    for i, m in enumerate(c.volume_mounts):
        p = f"{path}[{i}]"
        if not m.name:
            causes.append(required(f"{p}.name"))
        elif m.name not in volumes:
            causes.append(not_found(f"{p}.name", m.name))
        elif m.name in device_names:
            causes.append(invalid(f"{p}.name", m.name, "must not already exist in volumeDevices"))
        if not m.mount_path:
            causes.append(required(f"{p}.mountPath"))
        elif m.mount_path in mount_paths:
            causes.append(invalid(f"{p}.mountPath", m.mount_path, "must be unique"))
        mount_paths.add(m.mount_path)
        if m.sub_path:
            causes.extend(_validate_descending_path(m.sub_path, f"{p}.subPath"))
        if m.sub_path_expr:
            if m.sub_path:
                causes.append(
                    invalid(
                        f"{p}.subPathExpr",
                        m.sub_path_expr,
                        "subPathExpr and subPath are mutually exclusive",
                    )
                )
            causes.extend(_validate_descending_path(m.sub_path_expr, f"{p}.subPathExpr"))
        if m.HasField("mount_propagation"):
            mp = f"{p}.mountPropagation"
            if m.mount_propagation not in MOUNT_PROPAGATION_MODES:
                causes.append(not_supported(mp, m.mount_propagation, MOUNT_PROPAGATION_MODES))
            elif m.mount_propagation == "Bidirectional" and not privileged:
                causes.append(
                    forbidden(
                        mp,
                        "Bidirectional mount propagation is available only to privileged "
                        "containers",
                    )
                )
        if m.HasField("recursive_read_only"):
            rp = f"{p}.recursiveReadOnly"
            if m.recursive_read_only not in RECURSIVE_READ_ONLY_MODES:
                causes.append(not_supported(rp, m.recursive_read_only, RECURSIVE_READ_ONLY_MODES))
            elif m.recursive_read_only != "Disabled" and not m.read_only:
                causes.append(forbidden(rp, "may only be specified when readOnly is true"))
    paths: set[str] = set()
    for i, d in enumerate(c.volume_devices):
        p = f"{path.rsplit('.', 1)[0]}.volumeDevices[{i}]"
        if not d.name:
            causes.append(required(f"{p}.name"))
        elif d.name not in volumes:
            causes.append(not_found(f"{p}.name", d.name))
        if not d.device_path:
            causes.append(required(f"{p}.devicePath"))
        elif d.device_path in paths:
            causes.append(invalid(f"{p}.devicePath", d.device_path, "must be unique"))
        paths.add(d.device_path)
    return causes


def _validate_http_get(action: types_pb2.HTTPGetAction, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if not action.path:
        causes.append(required(f"{path}.path"))
    causes.extend(_validate_port_num_or_name(action.port, f"{path}.port"))
    if action.scheme and action.scheme not in URI_SCHEMES:
        causes.append(not_supported(f"{path}.scheme", action.scheme, URI_SCHEMES))
    for i, header in enumerate(action.http_headers):
        if not _HTTP_HEADER_NAME_RE.fullmatch(header.name):
            causes.append(
                invalid(
                    f"{path}.httpHeaders[{i}].name",
                    header.name,
                    _regex_error(
                        "a valid HTTP header must consist of alphanumeric characters or '-'",
                        _HTTP_HEADER_NAME_FMT,
                        "X-Header-Name",
                    ),
                )
            )
    return causes


_HANDLER_FIELDS: Final = (
    ("exec", "exec"),
    ("http_get", "httpGet"),
    ("tcp_socket", "tcpSocket"),
    ("grpc", "grpc"),
    ("sleep", "sleep"),
)


def _validate_handler(
    handler: types_pb2.Probe | types_pb2.LifecycleHandler, path: str, grace: int | None
) -> list[Cause]:
    """Exactly one handler (validateHandler): the probe's or the lifecycle hook's."""
    causes: list[Cause] = []
    count = 0
    fields = handler.DESCRIPTOR.fields_by_name
    for field, json_name in _HANDLER_FIELDS:
        if field not in fields or not handler.HasField(field):
            continue
        hp = f"{path}.{json_name}"
        if count:
            causes.append(forbidden(hp, "may not specify more than 1 handler type"))
            continue
        count += 1
        if field == "exec":
            if not handler.exec.command:
                causes.append(required(f"{hp}.command"))
        elif field == "http_get":
            causes.extend(_validate_http_get(handler.http_get, hp))
        elif field == "tcp_socket":
            causes.extend(_validate_port_num_or_name(handler.tcp_socket.port, f"{hp}.port"))
        elif field == "grpc":
            assert isinstance(handler, types_pb2.Probe)
            causes.extend(
                invalid(f"{hp}.port", handler.grpc.port, m)
                for m in is_valid_port_num(handler.grpc.port)
            )
        else:
            assert isinstance(handler, types_pb2.LifecycleHandler)
            seconds = handler.sleep.seconds
            if seconds < 0 or (grace is not None and seconds > grace):
                causes.append(
                    invalid(
                        f"{hp}.seconds",
                        seconds,
                        "must be non-negative and less than terminationGracePeriodSeconds "
                        f"({grace if grace is not None else 30})",
                    )
                )
    if not count:
        causes.append(required(path, "must specify a handler type"))
    return causes


def _validate_probe(probe: types_pb2.Probe, path: str, kind: str, grace: int | None) -> list[Cause]:
    causes = _validate_handler(probe, path, grace)
    for field, json_name in (
        ("initial_delay_seconds", "initialDelaySeconds"),
        ("timeout_seconds", "timeoutSeconds"),
        ("period_seconds", "periodSeconds"),
        ("success_threshold", "successThreshold"),
        ("failure_threshold", "failureThreshold"),
    ):
        causes.extend(_nonnegative(getattr(probe, field), f"{path}.{json_name}"))
    tp = f"{path}.terminationGracePeriodSeconds"
    if probe.HasField("termination_grace_period_seconds"):
        if kind == "readiness":
            causes.append(
                invalid(
                    tp,
                    probe.termination_grace_period_seconds,
                    "must not be set for readinessProbes",
                )
            )
        elif probe.termination_grace_period_seconds <= 0:
            causes.append(
                invalid(tp, probe.termination_grace_period_seconds, "must be greater than 0")
            )
    if kind != "readiness" and probe.success_threshold not in (0, 1):
        causes.append(invalid(f"{path}.successThreshold", probe.success_threshold, "must be 1"))
    return causes


def _validate_profile(
    profile: types_pb2.SeccompProfile | types_pb2.AppArmorProfile, path: str, what: str
) -> list[Cause]:
    lp = f"{path}.localhostProfile"
    if profile.type == "Localhost":
        if not profile.HasField("localhost_profile"):
            return [required(lp, f"must be set when {what} type is Localhost")]
        return _validate_descending_path(profile.localhost_profile, lp)
    if profile.type in PROFILE_TYPES:
        if profile.HasField("localhost_profile"):
            return [
                invalid(
                    lp, profile.localhost_profile, f"can only be set when {what} type is Localhost"
                )
            ]
        return []
    return [not_supported(f"{path}.type", profile.type, PROFILE_TYPES)]


def _validate_security_context(sc: types_pb2.SecurityContext, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if sc.HasField("run_as_user"):
        causes.extend(_validate_id(sc.run_as_user, f"{path}.runAsUser"))
    if sc.HasField("run_as_group"):
        causes.extend(_validate_id(sc.run_as_group, f"{path}.runAsGroup"))
    if sc.HasField("proc_mount") and sc.proc_mount not in PROC_MOUNT_TYPES:
        causes.append(not_supported(f"{path}.procMount", sc.proc_mount, PROC_MOUNT_TYPES))
    if sc.HasField("allow_privilege_escalation") and not sc.allow_privilege_escalation:
        if sc.privileged:
            causes.append(
                invalid(
                    path,
                    "",
                    "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
                )
            )
        if "CAP_SYS_ADMIN" in sc.capabilities.add:
            causes.append(
                invalid(
                    path,
                    "",
                    "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` "
                    "CAP_SYS_ADMIN",
                )
            )
    if sc.HasField("seccomp_profile"):
        causes.extend(_validate_profile(sc.seccomp_profile, f"{path}.seccompProfile", "seccomp"))
    if sc.HasField("app_armor_profile"):
        causes.extend(
            _validate_profile(sc.app_armor_profile, f"{path}.appArmorProfile", "AppArmor")
        )
    return causes


def _validate_pod_security_context(sc: types_pb2.PodSecurityContext, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for field, json_name in (
        ("run_as_user", "runAsUser"),
        ("run_as_group", "runAsGroup"),
        ("fs_group", "fsGroup"),
    ):
        if sc.HasField(field):
            causes.extend(_validate_id(getattr(sc, field), f"{path}.{json_name}"))
    for i, gid in enumerate(sc.supplemental_groups):
        causes.extend(_validate_id(gid, f"{path}.supplementalGroups[{i}]"))
    for field, json_name, allowed in (
        ("fs_group_change_policy", "fsGroupChangePolicy", FS_GROUP_CHANGE_POLICIES),
        ("supplemental_groups_policy", "supplementalGroupsPolicy", SUPPLEMENTAL_GROUPS_POLICIES),
        ("se_linux_change_policy", "seLinuxChangePolicy", SE_LINUX_CHANGE_POLICIES),
    ):
        if sc.HasField(field) and getattr(sc, field) not in allowed:
            causes.append(not_supported(f"{path}.{json_name}", getattr(sc, field), allowed))
    names: set[str] = set()
    for i, sysctl in enumerate(sc.sysctls):
        p = f"{path}.sysctls[{i}].name"
        if not sysctl.name:
            causes.append(required(p))
        elif sysctl.name in names:
            causes.append(duplicate(p, sysctl.name))
        names.add(sysctl.name)
    if sc.HasField("seccomp_profile"):
        causes.extend(_validate_profile(sc.seccomp_profile, f"{path}.seccompProfile", "seccomp"))
    if sc.HasField("app_armor_profile"):
        causes.extend(
            _validate_profile(sc.app_armor_profile, f"{path}.appArmorProfile", "AppArmor")
        )
    return causes


# ------------------------------------------ volumes


def _validate_key_to_paths(items: Sequence[types_pb2.KeyToPath], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for i, item in enumerate(items):
        p = f"{path}[{i}]"
        if not item.key:
            causes.append(required(f"{p}.key"))
        if not item.path:
            causes.append(required(f"{p}.path"))
        causes.extend(_validate_non_reserved_path(item.path, f"{p}.path"))
        if item.HasField("mode"):
            causes.extend(_validate_file_mode(item.mode, f"{p}.mode"))
    return causes


def _validate_downward_files(
    items: Sequence[types_pb2.DownwardAPIVolumeFile], path: str
) -> list[Cause]:
    causes: list[Cause] = []
    for i, item in enumerate(items):
        p = f"{path}[{i}]"
        if not item.path:
            causes.append(required(f"{p}.path"))
        causes.extend(_validate_non_reserved_path(item.path, f"{p}.path"))
        has_field, has_resource = item.HasField("field_ref"), item.HasField("resource_field_ref")
        if has_field and has_resource:
            causes.append(
                invalid(
                    p,
                    "resource",
                    "fieldRef and resourceFieldRef can not be specified simultaneously",
                )
            )
        elif has_field:
            causes.extend(_validate_field_ref(item.field_ref, f"{p}.fieldRef", VOLUME_FIELD_PATHS))
        elif has_resource:
            causes.extend(
                _validate_resource_field_ref(
                    item.resource_field_ref, f"{p}.resourceFieldRef", volume=True
                )
            )
        else:
            causes.append(required(p, "one of fieldRef and resourceFieldRef is required"))
        if item.HasField("mode"):
            causes.extend(_validate_file_mode(item.mode, f"{p}.mode"))
    return causes


_VOLUME_SOURCE_FIELDS: Final = (
    ("host_path", "hostPath"),
    ("empty_dir", "emptyDir"),
    ("secret", "secret"),
    ("persistent_volume_claim", "persistentVolumeClaim"),
    ("config_map", "configMap"),
    ("downward_api", "downwardAPI"),
    ("projected", "projected"),
)
_PROJECTION_FIELDS: Final = (
    ("secret", "secret"),
    ("downward_api", "downwardAPI"),
    ("config_map", "configMap"),
    ("service_account_token", "serviceAccountToken"),
)


def _validate_projected(src: types_pb2.ProjectedVolumeSource, path: str) -> list[Cause]:
    causes: list[Cause] = []
    all_paths: set[str] = set()
    for i, proj in enumerate(src.sources):
        p = f"{path}.sources[{i}]"
        present = [(f, j) for f, j in _PROJECTION_FIELDS if proj.HasField(f)]
        if not present:
            causes.append(required(p, "must specify a projection source"))
        for _, json_name in present[1:]:
            causes.append(
                forbidden(f"{p}.{json_name}", "may not specify more than 1 volume type per source")
            )
        paths: list[str] = []
        if proj.HasField("secret"):
            causes.extend(_validate_key_to_paths(proj.secret.items, f"{p}.secret.items"))
            paths += [item.path for item in proj.secret.items]
        if proj.HasField("config_map"):
            causes.extend(_validate_key_to_paths(proj.config_map.items, f"{p}.configMap.items"))
            paths += [item.path for item in proj.config_map.items]
        if proj.HasField("downward_api"):
            causes.extend(
                _validate_downward_files(proj.downward_api.items, f"{p}.downwardAPI.items")
            )
            paths += [item.path for item in proj.downward_api.items]
        if proj.HasField("service_account_token"):
            token = proj.service_account_token
            tp = f"{p}.serviceAccountToken"
            if token.HasField("expiration_seconds"):
                if token.expiration_seconds < 600:
                    causes.append(
                        invalid(
                            f"{tp}.expirationSeconds",
                            token.expiration_seconds,
                            "may not specify a duration less than 10 minutes",
                        )
                    )
                elif token.expiration_seconds > 2**32:
                    causes.append(
                        invalid(
                            f"{tp}.expirationSeconds",
                            token.expiration_seconds,
                            "may not specify a duration larger than 2^32 seconds",
                        )
                    )
            if not token.path:
                causes.append(required(f"{tp}.path"))
            else:
                causes.extend(_validate_non_reserved_path(token.path, f"{tp}.path"))
            paths.append(token.path)
        for item_path in paths:
            if item_path and item_path in all_paths:
                causes.append(invalid(p, item_path, "conflicting duplicate paths"))
            all_paths.add(item_path)
    return causes


def _validate_volume_source(v: types_pb2.Volume, path: str) -> list[Cause]:
    present = [(f, j) for f, j in _VOLUME_SOURCE_FIELDS if v.HasField(f)]
    if not present:
        return [required(path, "must specify a volume type")]
    causes = [
        forbidden(f"{path}.{json_name}", "may not specify more than 1 volume type")
        for _, json_name in present[1:]
    ]
    field, json_name = present[0]
    p = f"{path}.{json_name}"
    if field == "host_path":
        if not v.host_path.path:
            causes.append(required(f"{p}.path"))
        elif ".." in v.host_path.path.split("/"):
            causes.append(invalid(f"{p}.path", v.host_path.path, "must not contain '..'"))
        if v.host_path.type not in HOST_PATH_TYPES:
            causes.append(not_supported(f"{p}.type", v.host_path.type, HOST_PATH_TYPES[1:]))
    elif field == "empty_dir":
        if v.empty_dir.size_limit:
            causes.extend(
                validate_resource_quantity("", v.empty_dir.size_limit, f"{p}.sizeLimit")[1]
            )
    elif field in ("secret", "config_map"):
        src = getattr(v, field)
        name_field = "secretName" if field == "secret" else "name"
        name = src.secret_name if field == "secret" else src.name
        if not name:
            causes.append(required(f"{p}.{name_field}"))
        else:
            causes.extend(
                invalid(f"{p}.{name_field}", name, m) for m in name_is_dns_subdomain(name)
            )
        if src.HasField("default_mode"):
            causes.extend(_validate_file_mode(src.default_mode, f"{p}.defaultMode"))
        causes.extend(_validate_key_to_paths(src.items, f"{p}.items"))
    elif field == "persistent_volume_claim":
        if not v.persistent_volume_claim.claim_name:
            causes.append(required(f"{p}.claimName"))
    elif field == "downward_api":
        if v.downward_api.HasField("default_mode"):
            causes.extend(_validate_file_mode(v.downward_api.default_mode, f"{p}.defaultMode"))
        causes.extend(_validate_downward_files(v.downward_api.items, f"{p}.items"))
    else:
        if v.projected.HasField("default_mode"):
            causes.extend(_validate_file_mode(v.projected.default_mode, f"{p}.defaultMode"))
        causes.extend(_validate_projected(v.projected, p))
    return causes


def validate_volumes(
    volumes: Sequence[types_pb2.Volume], path: str
) -> tuple[dict[str, types_pb2.Volume], list[Cause]]:
    """The pod's volumes (ValidateVolumes): the valid ones by name, and the causes."""
    causes: list[Cause] = []
    by_name: dict[str, types_pb2.Volume] = {}
    for i, v in enumerate(volumes):
        p = f"{path}[{i}]"
        errs = _validate_volume_source(v, p)
        if not v.name:
            errs.append(required(f"{p}.name"))
        else:
            errs.extend(invalid(f"{p}.name", v.name, m) for m in is_dns1123_label(v.name))
        if v.name in by_name:
            errs.append(duplicate(f"{p}.name", v.name))
        if errs:
            causes.extend(errs)
        else:
            by_name[v.name] = v
    return by_name, causes

"""Upstream's scheme defaulters (SetDefaults_*): what every decoded object of a kind gets,
on create and on every update. The apiserver applies them; kemuctl applies the same to tell
whether `apply` would change anything. Idempotent."""

from __future__ import annotations

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery import (  # issue #57 kinds-a, kinds-b
    apps,
    autoscaling,
    batch,
    endpoints,
    flowcontrol,
    limit_ranger,
    networking,
    rbac,
    storage,
)
from kemu.machinery.namespaces import default_namespace
from kemu.machinery.pod_defaults import default_pod_spec


def set_defaults(obj: Message) -> None:
    """Fills the fields upstream defaults for `obj`'s kind (in place); other kinds are left
    as they are."""
    if isinstance(obj, types_pb2.Pod):
        default_pod_spec(obj.spec)
        pair_pod_ips(obj.status)
    elif isinstance(obj, types_pb2.ReplicaSet):
        apps.set_defaults_replica_set(obj)
        _default_template(obj.spec)
    elif isinstance(obj, types_pb2.Deployment):
        apps.set_defaults_deployment(obj)
        _default_template(obj.spec)
    elif isinstance(obj, types_pb2.Job):
        batch.set_defaults_job(obj)
        _default_template(obj.spec)
    elif isinstance(obj, types_pb2.DaemonSet):
        apps.set_defaults_daemon_set(obj)
        _default_template(obj.spec)
    elif isinstance(obj, types_pb2.StatefulSet):
        apps.set_defaults_stateful_set(obj)
        _default_template(obj.spec)
        for claim in obj.spec.volume_claim_templates:
            storage.set_defaults_claim(claim)
    elif isinstance(obj, types_pb2.CronJob):
        batch.set_defaults_cron_job(obj)
        if obj.spec.HasField("job_template"):
            _default_template(obj.spec.job_template.spec)
    elif isinstance(obj, types_pb2.PersistentVolume):
        storage.set_defaults_persistent_volume(obj)
    elif isinstance(obj, types_pb2.PersistentVolumeClaim):
        storage.set_defaults_claim(obj)
    elif isinstance(obj, types_pb2.StorageClass):
        storage.set_defaults_storage_class(obj)
    elif isinstance(obj, types_pb2.Secret):
        storage.set_defaults_secret(obj)
    elif isinstance(obj, types_pb2.Namespace):
        default_namespace(obj)
    elif isinstance(obj, types_pb2.Node):
        pair_pod_cidrs(obj.spec)
    elif isinstance(obj, types_pb2.PriorityClass):
        # SetDefaults_PriorityClass (pkg/apis/scheduling/v1/defaults.go); kubectl describe
        # of a class without one dereferences nil
        if not obj.HasField("preemption_policy"):
            obj.preemption_policy = "PreemptLowerPriority"
    # ---- issue #57 kinds-a
    elif isinstance(obj, types_pb2.RoleBinding | types_pb2.ClusterRoleBinding):
        rbac.set_defaults_binding(obj)
    elif isinstance(obj, types_pb2.NetworkPolicy):
        networking.set_defaults_network_policy(obj)
    elif isinstance(obj, types_pb2.IngressClass):
        networking.set_defaults_ingress_class(obj)
    elif isinstance(obj, types_pb2.LimitRange):
        limit_ranger.set_defaults_limit_range(obj)
    # ---- kinds-b (issue #57)
    elif isinstance(obj, types_pb2.ReplicationController):
        apps.set_defaults_replication_controller(obj)
        if obj.spec.HasField("template"):
            default_pod_spec(obj.spec.template.spec)
    elif isinstance(obj, types_pb2.Endpoints):
        endpoints.set_defaults_endpoints(obj)
    elif isinstance(obj, types_pb2.EndpointSlice):
        endpoints.set_defaults_endpoint_slice(obj)
    elif isinstance(obj, types_pb2.HorizontalPodAutoscaler):
        autoscaling.set_defaults_horizontal_pod_autoscaler(obj)
    # ---- flowcontrol.apiserver.k8s.io/v1 (issue #58 item 3)
    elif isinstance(obj, types_pb2.FlowSchema):
        flowcontrol.set_defaults_flow_schema(obj)
    elif isinstance(obj, types_pb2.PriorityLevelConfiguration):
        flowcontrol.set_defaults_priority_level(obj)


def pair_pod_ips(status: types_pb2.PodStatus) -> None:
    """podIP is podIPs[0] and hostIP hostIPs[0]: a client that sets only the singular field
    gets the list of it, and the list wins when both are set (core/v1's conversion to the
    internal type, which has only the lists, and back: pkg/apis/core/v1/conversion.go
    Convert_v1_PodStatus_To_core_PodStatus)."""
    if status.pod_ip and not status.pod_ips:
        status.pod_ips.add(ip=status.pod_ip)
    if status.pod_ips:
        status.pod_ip = status.pod_ips[0].ip
    if status.host_ip and not status.host_ips:
        status.host_ips.add(ip=status.host_ip)
    if status.host_ips:
        status.host_ip = status.host_ips[0].ip


def pair_pod_cidrs(spec: types_pb2.NodeSpec) -> None:
    """podCIDR is podCIDRs[0], as pair_pod_ips (Convert_v1_NodeSpec_To_core_NodeSpec)."""
    if spec.pod_cidr and not spec.pod_cidrs:
        spec.pod_cidrs.append(spec.pod_cidr)
    if spec.pod_cidrs:
        spec.pod_cidr = spec.pod_cidrs[0]


def _default_template(
    spec: types_pb2.ReplicaSetSpec
    | types_pb2.DeploymentSpec
    | types_pb2.JobSpec
    | types_pb2.DaemonSetSpec
    | types_pb2.StatefulSetSpec,
) -> None:
    if spec.HasField("template"):
        default_pod_spec(spec.template.spec)

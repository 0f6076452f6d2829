"""Upstream's scheme defaulters (SetDefaults_*): what every decoded object of a kind gets,
on create and on every update. The apiserver applies them; kemuctl applies the same to tell
whether `apply` would change anything. Idempotent."""

from __future__ import annotations

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery import apps, batch
from kemu.machinery.namespaces import default_namespace
from kemu.machinery.pod_defaults import default_pod_spec


def set_defaults(obj: Message) -> None:
    """Fills the fields upstream defaults for `obj`'s kind (in place); other kinds are left
    as they are."""
    if isinstance(obj, types_pb2.Pod):
        default_pod_spec(obj.spec)
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
    elif isinstance(obj, types_pb2.Namespace):
        default_namespace(obj)


def _default_template(
    spec: types_pb2.ReplicaSetSpec
    | types_pb2.DeploymentSpec
    | types_pb2.JobSpec
    | types_pb2.DaemonSetSpec,
) -> None:
    if spec.HasField("template"):
        default_pod_spec(spec.template.spec)

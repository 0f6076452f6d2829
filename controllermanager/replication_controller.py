"""The replicationcontroller controller (upstream pkg/controller/replication): the ReplicaSet
controller (controllermanager.replicaset) run on ReplicationControllers, as upstream's
NewReplicationManager runs its base controller through adapters that convert a
ReplicationController to a ReplicaSet and the status back (conversion.go). The map selector
becomes a LabelSelector's matchLabels; the pods' controllerRef, adoption and events name the
ReplicationController."""

from __future__ import annotations

from typing import Final

from google.protobuf.message import Message

from controllermanager.controller import ControllerContext
from controllermanager.replicaset import ControlledKind, ReplicaSetController
from kemu.api.v1 import types_pb2

NAME: Final = "replicationcontroller"


def to_replica_set(obj: Message) -> types_pb2.ReplicaSet:
    """Convert_v1_ReplicationController_To_apps_ReplicaSet (its fields kemu has)."""
    assert isinstance(obj, types_pb2.ReplicationController)
    rs = types_pb2.ReplicaSet()
    rs.metadata.CopyFrom(obj.metadata)
    spec = obj.spec
    if spec.HasField("replicas"):
        rs.spec.replicas = spec.replicas
    rs.spec.min_ready_seconds = spec.min_ready_seconds
    if spec.selector:
        rs.spec.selector.match_labels.update(spec.selector)
    if spec.HasField("template"):
        rs.spec.template.CopyFrom(spec.template)
    st = obj.status
    rs.status.replicas = st.replicas
    rs.status.fully_labeled_replicas = st.fully_labeled_replicas
    rs.status.ready_replicas = st.ready_replicas
    rs.status.available_replicas = st.available_replicas
    rs.status.observed_generation = st.observed_generation
    for c in st.conditions:
        rc_cond = rs.status.conditions.add(
            type=c.type, status=c.status, reason=c.reason, message=c.message
        )
        if c.HasField("last_transition_time"):
            rc_cond.last_transition_time.CopyFrom(c.last_transition_time)
    return rs


def with_status(obj: Message, status: types_pb2.ReplicaSetStatus) -> Message:
    """A copy of the ReplicationController with the ReplicaSet status converted back."""
    assert isinstance(obj, types_pb2.ReplicationController)
    rc = types_pb2.ReplicationController()
    rc.CopyFrom(obj)
    st = rc.status
    st.Clear()
    st.replicas = status.replicas
    st.fully_labeled_replicas = status.fully_labeled_replicas
    st.ready_replicas = status.ready_replicas
    st.available_replicas = status.available_replicas
    st.observed_generation = status.observed_generation
    for c in status.conditions:
        cond = st.conditions.add(type=c.type, status=c.status, reason=c.reason, message=c.message)
        if c.HasField("last_transition_time"):
            cond.last_transition_time.CopyFrom(c.last_transition_time)
    return rc


REPLICATION_CONTROLLERS: Final = ControlledKind(
    NAME, "replication-controller", types_pb2.ReplicationController, to_replica_set, with_status
)


def new_controller(ctx: ControllerContext) -> ReplicaSetController:
    """The init function registered as "replicationcontroller"."""
    return ReplicaSetController(ctx.client, ctx.informers, ctx.clock, kind=REPLICATION_CONTROLLERS)

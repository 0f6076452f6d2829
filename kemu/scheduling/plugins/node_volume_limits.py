"""NodeVolumeLimits: a node attaches at most its CSINode's allocatable count of each CSI
driver's volumes (upstream nodevolumelimits/csi.go, CSILimits). Of the in-tree sources kemu
has AWS EBS: counted through its CSI migration (below); the in-tree plugins' own limits are
gone upstream.

A volume is counted once per node by its unique name, "driver/handle": a bound claim's volume
is its PV's CSI driver and volumeHandle (an EBS volume's ebs.csi.aws.com and volume ID where
the node migrated kubernetes.io/aws-ebs; a volume of another source is not counted); an unbound
claim's is its class's provisioner and a handle made of the claim's namespace and name, as
upstream counts a volume about to be provisioned.

PreFilter: Skip a pod without claims. Filter: the pod's volumes not already attached to the
node, per driver, added to the node's pods' volumes, must not exceed the driver's
`allocatable.count` in the node's CSINode (no CSINode, or no count: no limit), else
Unschedulable "node(s) exceed max volume count" (preemption may free room). A claim that does
not exist is UnschedulableAndUnresolvable with its NotFound message; the node's pods' missing
claims are not counted.

Events: a CSINode added or updated, a bound pod with claims deleted, a claim added.
"""

from __future__ import annotations

from collections import Counter
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.resources import is_pod_resize_deferred
from kemu.machinery.storage import (
    ANN_MIGRATED_PLUGINS,
    AWS_EBS_CSI_DRIVER,
    AWS_EBS_PLUGIN,
    claim_class,
)
from kemu.scheduling.deferred import resize_preemption_enabled
from kemu.scheduling.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from kemu.scheduling.interface import (
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PluginArgs,
    PreFilterExtensions,
    PreFilterPlugin,
)
from kemu.scheduling.plugins.volumes import (
    VolumeListers,
    has_claims,
    pod_claim_names,
    volume_listers,
)
from kemu.scheduling.status import SKIP, SUCCESS, Status, unresolvable, unschedulable
from kemu.scheduling.types import NodeInfo, PreFilterResult

NAME: Final = "NodeVolumeLimits"

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED: Final = "node(s) exceed max volume count"


class _ClaimNotFound(Exception):
    pass


def migrated_plugins(csi_node: types_pb2.CSINode | None) -> frozenset[str]:
    """The in-tree plugins the node's CSINode lists as migrated to CSI (its
    storage.alpha.kubernetes.io/migrated-plugins annotation, comma-separated)."""
    if csi_node is None:
        return frozenset()
    text = csi_node.metadata.annotations.get(ANN_MIGRATED_PLUGINS, "")
    return frozenset(p.strip() for p in text.split(",") if p.strip())


def ebs_volume_handle(volume_id: str) -> str:
    """csi-translation-lib's EBS handle: the volume ID without an aws://<zone>/ prefix."""
    if volume_id.startswith("aws://"):
        return volume_id.rsplit("/", 1)[-1]
    return volume_id


class NodeVolumeLimits(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    NAME = NAME

    def __init__(self, listers: VolumeListers, *, skip_deferred: bool = False) -> None:
        self.skip_deferred = skip_deferred
        self.listers = listers

    def name(self) -> str:
        return NAME

    def attachable_volumes(
        self, pod: types_pb2.Pod, *, new_pod: bool, migrated: frozenset[str] = frozenset()
    ) -> dict[str, str]:
        """ "driver/handle" -> driver of the pod's CSI volumes (filterAttachableVolumes).
        _ClaimNotFound for a missing claim of the new pod; an existing pod's is skipped. An
        in-tree AWS EBS volume counts as ebs.csi.aws.com's, its handle the volume ID, on a node
        whose CSINode lists kubernetes.io/aws-ebs among its `migrated` plugins (upstream
        getCSIDriverInfo with CSI migration); elsewhere not at all."""
        out: dict[str, str] = {}
        ns = pod.metadata.namespace
        for name in pod_claim_names(pod):
            claim = self.listers.claims.get(name, ns)
            if claim is None:
                if new_pod:
                    raise _ClaimNotFound(f'persistentvolumeclaim "{name}" not found')
                continue
            driver = handle = ""
            if claim.spec.volume_name:
                pv = self.listers.volumes.get(claim.spec.volume_name)
                if pv is not None and pv.spec.HasField("csi"):
                    driver, handle = pv.spec.csi.driver, pv.spec.csi.volume_handle
                elif (
                    pv is not None
                    and pv.spec.HasField("aws_elastic_block_store")
                    and AWS_EBS_PLUGIN in migrated
                ):
                    driver = AWS_EBS_CSI_DRIVER
                    handle = ebs_volume_handle(pv.spec.aws_elastic_block_store.volume_id)
            else:
                sc = self.listers.classes.get(claim_class(claim))
                if sc is not None:
                    # A volume yet to be provisioned: a unique placeholder handle.
                    driver, handle = sc.provisioner, f"{ns}-{name}"
            if driver and handle:
                out[f"{driver}/{handle}"] = driver
        return out

    def pre_filter(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if self.skip_deferred and is_pod_resize_deferred(pod):
            return None, SKIP  # KEP-5836: nothing to say about a deferred resize
        if not has_claims(pod):
            return None, SKIP
        return None, SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        csi_node = self.listers.csi_nodes.get(node.name)
        migrated = migrated_plugins(csi_node)
        try:
            wanted = self.attachable_volumes(pod, new_pod=True, migrated=migrated)
        except _ClaimNotFound as e:
            return unresolvable(str(e))
        if not wanted or csi_node is None:
            return SUCCESS
        limits = {
            d.name: d.allocatable.count
            for d in csi_node.spec.drivers
            if d.HasField("allocatable") and d.allocatable.HasField("count")
        }
        if not limits or not any(driver in limits for driver in wanted.values()):
            return SUCCESS
        attached: dict[str, str] = {}
        for pi in node.pods:
            if pi.pod.spec.volumes:
                attached.update(self.attachable_volumes(pi.pod, new_pod=False, migrated=migrated))
        attached_count = Counter(attached.values())
        new_count = Counter(d for key, d in wanted.items() if key not in attached)
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count[driver] + count > limit:
                return unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return SUCCESS

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, ActionType.ADD | ActionType.UPDATE_OBJECT)
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE),
                self.is_schedulable_after_pod_deleted,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.PVC, ActionType.ADD)),
        ]

    def is_schedulable_after_pod_deleted(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        """Queue when the deleted pod was on a node and used claims (it may have held an
        attachment)."""
        if not isinstance(old, types_pb2.Pod):
            return QueueingHint.QUEUE
        if old.spec.node_name and has_claims(old):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP


def new(args: PluginArgs, handle: Handle) -> NodeVolumeLimits:
    return NodeVolumeLimits(
        volume_listers(handle), skip_deferred=resize_preemption_enabled(handle.gates)
    )

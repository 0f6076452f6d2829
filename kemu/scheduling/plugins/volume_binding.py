"""VolumeBinding: a pod's claims must be bound, or bindable on the node, and the binding
cycle binds them before the pod (upstream volumebinding/volume_binding.go; the binder in
volume_binder.py).

- PreFilter: Skip a pod without claims (the plain path). A claim that does not exist, is
  being deleted, or (from 1.23, kubernetes#105245: version rule
  `volume_binding_lost_claim_pre_filter`) is Lost, checked before the deletion as upstream's
  podHasPVCs, is UnschedulableAndUnresolvable
  ('persistentvolumeclaim "c" bound to non-existent persistentvolume "v"'; before 1.23 Filter
  refuses every node for it instead); an unbound claim whose class binds
  immediately is UnschedulableAndUnresolvable "pod has unbound immediate
  PersistentVolumeClaims" (the PV controller binds it; its update requeues the pod).
- Filter: the binder's reasons on the node, UnschedulableAndUnresolvable: "node(s)
  unavailable due to one or more pvc(s) bound to non-existent pv(s)", "node(s) had volume
  node affinity conflict", "node(s) didn't find available persistent volumes to bind".
  What the node would need done is kept per node in the cycle state.
- Reserve: the node's work is assumed (a static PV's claimRef, a provisioned claim's
  `volume.kubernetes.io/selected-node`), so that the next cycles see it; Unreserve reverts it.
- PreBindPreFlight: Success when there is work (KEP-5278: the scheduler then shows the pod's
  nominatedNodeName while PreBind waits), Skip when every claim is bound.
- PreBind: writes the PVs and claims, then waits, polling each second on the handle's clock,
  until the PV controller (or an external provisioner) has bound every claim, for at most
  VolumeBindingArgs' `bindTimeoutSeconds` (600 by default): an Error after it, or as soon as a
  binding went wrong (the provisioner reset the selected node) or the scheduler's informer no
  longer has the pod ("pod does not exist any more": deleted, it stops waiting; upstream
  binder.go checkBindings), and the pod is retried.

Events (EventsToRegister): StorageClass added or updated, a claim or PV added or updated, a
node added or its labels changed, a CSINode added or updated. A claim's event queues
only the pods that use it.

The plugin has no Score (upstream's scores only with the alpha StorageCapacityScoring) and no
CSIStorageCapacity check; upstream's PreFilterResult from local volumes' hostname affinity is
not computed (Filter rejects those nodes with the node affinity reason instead).
"""

from __future__ import annotations

import logging
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.component.clock_steps import StepOrder
from kemu.component.version_rules import VersionRules
from kemu.component.virtual_clock import take_step
from kemu.machinery.errors import ApiError
from kemu.machinery.keys import object_key
from kemu.machinery.resources import is_pod_resize_deferred
from kemu.machinery.storage import CLAIM_LOST
from kemu.scheduling.deferred import resize_preemption_enabled
from kemu.scheduling.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from kemu.scheduling.interface import (
    SCHEDULER_POD_FIELD_SELECTOR,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    ObjectLister,
    PluginArgs,
    PreBindPlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    ReservePlugin,
)
from kemu.scheduling.plugins.helpers import check_arg_keys
from kemu.scheduling.plugins.volume_binder import (
    ERR_REASON_UNBOUND_IMMEDIATE,
    Binder,
    BindingFailed,
    PodVolumeClaims,
    PodVolumes,
)
from kemu.scheduling.plugins.volumes import (
    VolumeListers,
    has_claims,
    pod_claim_names,
    volume_listers,
)
from kemu.scheduling.status import SKIP, SUCCESS, Status, as_error, unresolvable
from kemu.scheduling.types import NodeInfo, PreFilterResult

logger = logging.getLogger(__name__)

NAME: Final = "VolumeBinding"
STATE_KEY: Final = NAME
DEFAULT_BIND_TIMEOUT_SECONDS: Final = 600
POLL_INTERVAL: Final = 1.0  # upstream's BindPodVolumes polls each second


class _State:
    __slots__ = ("all_bound", "by_node", "claims", "chosen")

    def __init__(self, claims: PodVolumeClaims) -> None:
        self.claims = claims
        # node -> the work it needs (Filter); shared by clones, as upstream's under its lock.
        self.by_node: dict[str, PodVolumes] = {}
        self.chosen: PodVolumes | None = None  # Reserve's node's
        self.all_bound = False

    def clone(self) -> _State:
        return self


class VolumeBinding(
    PreFilterPlugin,
    FilterPlugin,
    ReservePlugin,
    PreBindPlugin,
    EnqueueExtensions,
):
    NAME = NAME

    def __init__(
        self,
        handle: Handle,
        listers: VolumeListers,
        *,
        bind_timeout: float,
        skip_deferred: bool = False,
        lost_claim_at_pre_filter: bool = True,
    ) -> None:
        self.skip_deferred = skip_deferred
        self.handle = handle
        self.binder = Binder(listers)
        self.bind_timeout = bind_timeout
        self.lost_claim_at_pre_filter = lost_claim_at_pre_filter

    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ scheduling cycle

    def pre_filter(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if self.skip_deferred and is_pod_resize_deferred(pod):
            return None, SKIP  # KEP-5836: nothing to say about a deferred resize
        if not has_claims(pod):
            return None, SKIP
        names = list(pod_claim_names(pod))
        ns = pod.metadata.namespace
        for name in names:
            claim = self.binder.claims.get(name, ns)
            if claim is None:
                return None, unresolvable(f'persistentvolumeclaim "{name}" not found')
            if self.lost_claim_at_pre_filter and claim.status.phase == CLAIM_LOST:
                return None, unresolvable(
                    f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume '
                    f'"{claim.spec.volume_name}"'
                )
            if claim.metadata.HasField("deletion_timestamp"):
                return None, unresolvable(f'persistentvolumeclaim "{name}" is being deleted')
        claims = self.binder.pod_volume_claims(pod, names)
        if claims.unbound_immediate:
            return None, unresolvable(ERR_REASON_UNBOUND_IMMEDIATE)
        state.write(STATE_KEY, _State(claims))
        return None, SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        s = state.read(STATE_KEY)
        if not isinstance(s, _State):
            return as_error(f"reading {STATE_KEY!r} from cycleState: not found")
        if node.node is None:
            return as_error("node not found")
        volumes, reasons = self.binder.find_pod_volumes(s.claims, node.node)
        if reasons:
            return unresolvable(*reasons)
        s.by_node[node.name] = volumes
        return SUCCESS

    def reserve(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        s = state.read(STATE_KEY)
        if not isinstance(s, _State):
            return SUCCESS  # PreFilter skipped: no claims
        volumes = s.by_node.get(node_name)
        if volumes is None:
            s.all_bound = True  # as upstream's Reserve: nothing known to do on this node
            return SUCCESS
        s.chosen = volumes
        s.all_bound = volumes.empty()
        if not s.all_bound:
            self.binder.assume(volumes)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> None:
        s = state.read(STATE_KEY)
        if isinstance(s, _State) and s.chosen is not None:
            self.binder.revert(s.chosen)

    # ------------------------------------------------------------ binding cycle

    def pre_bind_pre_flight(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        s = state.read(STATE_KEY)
        if not isinstance(s, _State) or s.all_bound:
            return SKIP
        if node_name not in s.by_node:
            return as_error(f'no pod volumes found for node "{node_name}"')
        return SUCCESS

    async def pre_bind(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        s = state.read(STATE_KEY)
        if not isinstance(s, _State) or s.all_bound or s.chosen is None:
            return SUCCESS
        try:
            await self._bind_pod_volumes(pod, node_name, s.chosen)
        except (BindingFailed, ApiError) as e:
            return as_error(f"binding volumes: {e}")
        return SUCCESS

    async def _bind_pod_volumes(
        self, pod: types_pb2.Pod, node_name: str, volumes: PodVolumes
    ) -> None:
        """BindPodVolumes: the API writes, then the wait for the PV controller."""
        client = self.handle.client
        binder = self.binder
        for i, (pv, claim) in enumerate(volumes.static_bindings):
            written = await client.update(pv)
            binder.volumes.assume(written, from_api=True)
            volumes.static_bindings[i] = (written, claim)
        for i, claim in enumerate(volumes.dynamic_provisions):
            written_claim = await client.update(claim)
            binder.claims.assume(written_claim, from_api=True)
            volumes.dynamic_provisions[i] = written_claim
        pods = self._pod_lister()
        clock = self.handle.clock
        deadline = clock.monotonic() + self.bind_timeout
        while True:
            if pods is not None and pods.get(pod.metadata.name, pod.metadata.namespace) is None:
                # Deleted: the binding is given up (by name, as upstream's pod lister).
                raise BindingFailed(
                    f'pod does not exist any more: pod "{pod.metadata.name}" not found'
                )
            info = self.handle.snapshot_shared_lister().node_infos().get(node_name)
            if binder.bindings_done(volumes, None if info is None else info.node, node_name):
                logger.debug("volumes of %s bound on %s", object_key(pod), node_name)
                return
            remaining = deadline - clock.monotonic()
            if remaining <= 0:
                raise BindingFailed("context deadline exceeded")
            await clock.sleep(min(POLL_INTERVAL, remaining))
            # (the look is a step: what else is due at the instant, the claim's provisioning
            # or allocation included, is done first; kemu.component.clock_steps)
            await take_step(clock, StepOrder.BINDING_CYCLE)

    def _pod_lister(self) -> ObjectLister[types_pb2.Pod] | None:
        """The scheduler's pod informer (None without informers). Asked for in PreBind only,
        which simulations never run: they need no pod informer of this shape."""
        factory = self.handle.informer_factory()
        if factory is None:
            return None
        return factory.informer(types_pb2.Pod, field_selector=SCHEDULER_POD_FIELD_SELECTOR).lister

    # ------------------------------------------------------------ events

    def events_to_register(self) -> list[ClusterEventWithHint]:
        update = ActionType.ADD | ActionType.UPDATE_OBJECT
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.STORAGE_CLASS, update)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PVC, update), self.is_schedulable_after_claim_change
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.PV, update)),
            ClusterEventWithHint(
                # (Upstream adds UpdateNodeTaint only without queueing hints.)
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.CSI_NODE, update)),
        ]

    def is_schedulable_after_claim_change(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        """Queue only for one of the pod's claims."""
        if not isinstance(new, types_pb2.PersistentVolumeClaim):
            return QueueingHint.QUEUE
        if new.metadata.namespace == pod.metadata.namespace and new.metadata.name in set(
            pod_claim_names(pod)
        ):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP


def new(args: PluginArgs, handle: Handle) -> VolumeBinding:
    check_arg_keys(args, ("bindTimeoutSeconds", "shape"), NAME)
    timeout = args.get("bindTimeoutSeconds", DEFAULT_BIND_TIMEOUT_SECONDS)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 0:
        raise ValueError(
            f"{NAME} args: bindTimeoutSeconds: Invalid value: {timeout!r}: invalid "
            "BindTimeoutSeconds, should not be a negative value"
        )
    return VolumeBinding(
        handle,
        volume_listers(handle),
        bind_timeout=float(timeout),
        skip_deferred=resize_preemption_enabled(handle.gates),
        lost_claim_at_pre_filter=VersionRules.at(
            handle.gates.version
        ).volume_binding_lost_claim_pre_filter,
    )

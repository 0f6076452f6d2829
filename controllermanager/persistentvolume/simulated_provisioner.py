"""kemu's simulated CSI provisioner, `simulated-csi-provisioner` (NOT upstream: a stand-in for
kubernetes-csi/external-provisioner and its sig-storage-lib-external-provisioner controller in
front of a CSI driver, run as a controller of the controller-manager).

It provisions the claims of the StorageClasses whose `provisioner` is `kemu.io/simulated`, as
the external provisioner does (lib controller.go shouldProvision/provisionClaimOperation,
csi-provisioner pkg/controller/controller.go Provision):
- a claim is provisioned once the PersistentVolume controller annotated it with the class's
  provisioner (`volume.kubernetes.io/storage-provisioner`, or its beta name), it has no
  volumeName, is not being deleted and, for a WaitForFirstConsumer class, has
  `volume.kubernetes.io/selected-node` (a selected node that does not exist is a
  reschedule: ProvisioningFailed and the annotation removed, so that the scheduler picks
  another);
- each attempt records the event Provisioning ("External provisioner is provisioning volume
  for claim ..."), takes `provisionDelay`, then succeeds or fails. A failure records
  ProvisioningFailed ("failed to provision volume with StorageClass ...: rpc error: ...") and
  the claim is tried again after a per-claim exponential backoff, 1 s doubling up to 5 min
  (external-provisioner's --retry-interval-start and --retry-interval-max);
- a claim with a selector fails ("claim Selector is not supported", as csi-provisioner);
- a success creates the PersistentVolume `pvc-<claim uid>`: the request's capacity (in bytes,
  printed BinarySI as csi-provisioner does: 1Gi stays 1Gi, 1G is 1000000000), the
  claim's access modes and volume mode, the class's reclaim policy (Delete when unset) and
  mount options, spec.csi with the driver `simulated.kemu.io` (a CSI driver name is a DNS
  subdomain: the provisioner's name cannot be one), the claimRef pre-bound to the
  claim and `pv.kubernetes.io/provisioned-by`; then ProvisioningSucceeded ("Successfully
  provisioned volume pvc-..."). The PersistentVolume controller binds the claim to it. With a
  selected node, the volume's node affinity requires the node's value of `topologyKey`;
  without one (Immediate), it requires the class's allowedTopologies, if any;
- a volume it provisioned that is Released with the reclaim policy Delete is deleted (the
  lib's shouldDelete/deleteVolumeOperation); Retain leaves it Released.

The class's parameters (anything else, but for `csi.storage.k8s.io/` ones, is refused as a CSI
driver refuses it: InvalidArgument, in the ProvisioningFailed event):
- `provisionDelay`: a Go duration each attempt takes (0 by default), on the controller-manager's
  clock, so virtual time moves it;
- `failureRate`: 0 to 1, the chance an attempt fails, drawn from a random source per class
  seeded with `--simulated-provisioner-seed` and the class's name (repeatable in attempt order);
- `failNext`: the class's first N attempts fail (counted per class uid, in this process's
  memory: a new leader counts afresh);
- `topologyKey`: the node label the volume is pinned by (default `kubernetes.io/hostname`).

Not modelled: the PersistentVolume finalizer `external-provisioner.volume.kubernetes.io/finalizer`
(HonorPVReclaimPolicy), secrets, data sources (clones, snapshots, populators), storage capacity
tracking (CSIStorageCapacity), expansion, and CSINode's topology keys (the class says which
label pins a volume).
"""

from __future__ import annotations

import logging
import random
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from controllermanager.config import SimulatedProvisionerOptions
from controllermanager.controller import ControllerContext, run_controller, workers
from controllermanager.persistentvolume.binding import claim_reference
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery.duration import DurationError, parse_duration
from kemu.machinery.errors import AlreadyExists, ApiError, NotFound
from kemu.machinery.keys import object_key
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING
from kemu.machinery.quantity import BINARY_SI, Quantity
from kemu.machinery.storage import (
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    DELETE,
    STORAGE,
    VOLUME_RELEASED,
    WAIT_FOR_FIRST_CONSUMER,
    claim_class,
)
from kemu.scheduling.pv_helpers import (
    binding_mode,
    class_reclaim_policy,
    storage_quantity,
    volume_reclaim_policy,
)

logger = logging.getLogger(__name__)

NAME: Final = "simulated-csi-provisioner"
PROVISIONER: Final = "kemu.io/simulated"
CSI_DRIVER: Final = "simulated.kemu.io"
"""The volumes' spec.csi.driver. Upstream's provisioner name is its CSI driver's, but a driver
name is a DNS subdomain (validateCSIDriverName) and the issue's provisioner has a slash: the
driver is named in the DNS form of it, and `pv.kubernetes.io/provisioned-by` keeps the
provisioner's name (which the PersistentVolume controller and the deletion go by)."""
DEFAULT_TOPOLOGY_KEY: Final = "kubernetes.io/hostname"
RETRY_INTERVAL_START: Final = 1.0
RETRY_INTERVAL_MAX: Final = 300.0
VOLUME_NAME_PREFIX: Final = "pvc"
CSI_PARAMETER_PREFIX: Final = "csi.storage.k8s.io/"
FSTYPE_PARAMETER: Final = "csi.storage.k8s.io/fstype"

PROVISIONING: Final = "Provisioning"
PROVISIONING_SUCCEEDED: Final = "ProvisioningSucceeded"
PROVISIONING_FAILED: Final = "ProvisioningFailed"
VOLUME_FAILED_DELETE: Final = "VolumeFailedDelete"

PROVISION_DELAY: Final = "provisionDelay"
FAILURE_RATE: Final = "failureRate"
FAIL_NEXT: Final = "failNext"
TOPOLOGY_KEY: Final = "topologyKey"


class ProvisioningError(Exception):
    """An attempt that failed; the message is what the event reports after the class."""


def _rpc_error(code: str, desc: str) -> ProvisioningError:
    return ProvisioningError(f"rpc error: code = {code} desc = {desc}")


@dataclass(frozen=True)
class SimulatedParameters:
    """A class's parameters, parsed."""

    provision_delay: float = 0.0
    failure_rate: float = 0.0
    fail_next: int = 0
    topology_key: str = DEFAULT_TOPOLOGY_KEY
    fs_type: str = ""


def parse_parameters(params: dict[str, str]) -> SimulatedParameters:
    """ProvisioningError (InvalidArgument, naming the parameter) for a bad value or an unknown
    parameter."""
    unknown = sorted(
        k
        for k in params
        if k not in (PROVISION_DELAY, FAILURE_RATE, FAIL_NEXT, TOPOLOGY_KEY)
        and not k.startswith(CSI_PARAMETER_PREFIX)
    )
    if unknown:
        raise _rpc_error("InvalidArgument", f"unknown parameter {unknown[0]!r}")
    delay = 0.0
    if PROVISION_DELAY in params:
        try:
            delay = parse_duration(params[PROVISION_DELAY])
        except DurationError as e:
            raise _rpc_error("InvalidArgument", f"parameter {PROVISION_DELAY}: {e}") from None
    rate = 0.0
    if FAILURE_RATE in params:
        try:
            rate = float(params[FAILURE_RATE])
        except ValueError:
            rate = -1.0
        if not 0.0 <= rate <= 1.0:
            raise _rpc_error(
                "InvalidArgument",
                f"parameter {FAILURE_RATE}: {params[FAILURE_RATE]!r} is not a number from 0 to 1",
            )
    fail_next = 0
    if FAIL_NEXT in params:
        try:
            fail_next = int(params[FAIL_NEXT])
        except ValueError:
            fail_next = -1
        if fail_next < 0:
            raise _rpc_error(
                "InvalidArgument",
                f"parameter {FAIL_NEXT}: {params[FAIL_NEXT]!r} is not a non-negative integer",
            )
    topology_key = params.get(TOPOLOGY_KEY, DEFAULT_TOPOLOGY_KEY)
    if not topology_key:
        raise _rpc_error("InvalidArgument", f"parameter {TOPOLOGY_KEY}: must not be empty")
    return SimulatedParameters(
        provision_delay=delay,
        failure_rate=rate,
        fail_next=fail_next,
        topology_key=topology_key,
        fs_type=params.get(FSTYPE_PARAMETER, ""),
    )


def provisioned_volume_name(claim: types_pb2.PersistentVolumeClaim) -> str:
    """getProvisionedVolumeNameForClaim: `pvc-<claim uid>`."""
    return f"{VOLUME_NAME_PREFIX}-{claim.metadata.uid}"


def node_affinity_for(
    cls: types_pb2.StorageClass,
    params: SimulatedParameters,
    node: types_pb2.Node | None,
) -> types_pb2.VolumeNodeAffinity | None:
    """Where the volume is reachable from: the selected node's value of the topology key;
    without a node, the class's allowedTopologies (None: everywhere). ProvisioningError when
    the node lacks the key."""
    if node is not None:
        value = node.metadata.labels.get(params.topology_key)
        if value is None:
            raise ProvisioningError(
                "error generating accessibility requirements: node "
                f'"{node.metadata.name}" has no label "{params.topology_key}"'
            )
        affinity = types_pb2.VolumeNodeAffinity()
        term = affinity.required.node_selector_terms.add()
        term.match_expressions.add(key=params.topology_key, operator="In", values=[value])
        return affinity
    if not cls.allowed_topologies:
        return None
    affinity = types_pb2.VolumeNodeAffinity()
    for topology in cls.allowed_topologies:
        term = affinity.required.node_selector_terms.add()
        for req in topology.match_label_expressions:
            term.match_expressions.add(key=req.key, operator="In", values=list(req.values))
    return affinity


def build_volume(
    claim: types_pb2.PersistentVolumeClaim,
    cls: types_pb2.StorageClass,
    params: SimulatedParameters,
    affinity: types_pb2.VolumeNodeAffinity | None,
) -> types_pb2.PersistentVolume:
    """The PersistentVolume csi-provisioner's Provision returns for the claim."""
    pv = types_pb2.PersistentVolume()
    pv.metadata.name = provisioned_volume_name(claim)
    pv.metadata.annotations[ANN_DYNAMICALLY_PROVISIONED] = PROVISIONER
    spec = pv.spec
    # The driver's answer in bytes, printed as csi-provisioner does (BinarySI).
    requested = storage_quantity(claim.spec.resources.requests, "spec.resources.requests")
    spec.capacity[STORAGE] = str(Quantity.from_int(requested.value(), BINARY_SI))
    spec.access_modes.extend(claim.spec.access_modes)
    spec.claim_ref.CopyFrom(claim_reference(claim))
    spec.persistent_volume_reclaim_policy = class_reclaim_policy(cls)
    spec.storage_class_name = cls.metadata.name
    spec.mount_options.extend(cls.mount_options)
    if claim.spec.HasField("volume_mode"):
        spec.volume_mode = claim.spec.volume_mode
    if affinity is not None:
        spec.node_affinity.CopyFrom(affinity)
    spec.csi.driver = CSI_DRIVER
    spec.csi.volume_handle = f"sim-{claim.metadata.uid}"
    if params.fs_type:
        spec.csi.fs_type = params.fs_type
    return pv


class SimulatedProvisioner:
    """Provisions and deletes the volumes of `kemu.io/simulated` classes; see the module
    docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        options: SimulatedProvisionerOptions | None = None,
        recorder: EventRecorder | None = None,
    ) -> None:
        self._client = client
        self._clock = clock
        self.options = options or SimulatedProvisionerOptions()
        self._recorder = recorder or EventRecorder(
            client, f"{PROVISIONER}_{socket.gethostname()}", clock=clock
        )
        self.claim_queue = WorkQueue(
            clock,
            name=f"{NAME}-claims",
            base_delay=RETRY_INTERVAL_START,
            max_delay=RETRY_INTERVAL_MAX,
        )
        self.volume_queue = WorkQueue(
            clock,
            name=f"{NAME}-volumes",
            base_delay=RETRY_INTERVAL_START,
            max_delay=RETRY_INTERVAL_MAX,
        )
        self._claims: Informer[types_pb2.PersistentVolumeClaim] = informers.informer(
            types_pb2.PersistentVolumeClaim
        )
        self._volumes: Informer[types_pb2.PersistentVolume] = informers.informer(
            types_pb2.PersistentVolume
        )
        self._classes: Informer[types_pb2.StorageClass] = informers.informer(types_pb2.StorageClass)
        self._nodes: Informer[types_pb2.Node] = informers.informer(types_pb2.Node)
        self._attempts: dict[str, float] = {}
        """Claim uid -> when (monotonic) its attempt in progress started."""
        self._failed_next: dict[str, int] = {}
        """Class uid -> how many of its attempts failed by failNext."""
        self._rngs: dict[str, random.Random] = {}
        """Class uid -> its failureRate source."""
        self._claims.add_event_handler(
            FuncHandler(
                self._enqueue_claim,
                lambda _old, new: self._enqueue_claim(new),
                self._forget_claim,
            )
        )
        self._classes.add_event_handler(FuncHandler(on_delete=self._forget_class))
        self._volumes.add_event_handler(
            FuncHandler(self._enqueue_volume, lambda _old, new: self._enqueue_volume(new))
        )

    @property
    def name(self) -> str:
        return NAME

    def _enqueue_claim(self, claim: types_pb2.PersistentVolumeClaim) -> None:
        if self._annotated_provisioner(claim) == PROVISIONER:
            self.claim_queue.add(object_key(claim))

    def _enqueue_volume(self, volume: types_pb2.PersistentVolume) -> None:
        if volume.metadata.annotations.get(ANN_DYNAMICALLY_PROVISIONED) == PROVISIONER:
            self.volume_queue.add(volume.metadata.name)

    def _forget_claim(self, claim: types_pb2.PersistentVolumeClaim) -> None:
        """A deleted claim's attempt in progress goes with it."""
        self._attempts.pop(claim.metadata.uid, None)

    def _forget_class(self, cls: types_pb2.StorageClass) -> None:
        """A deleted class's failNext count and failureRate source go with it."""
        self._failed_next.pop(cls.metadata.uid, None)
        self._rngs.pop(cls.metadata.uid, None)

    @staticmethod
    def _annotated_provisioner(claim: types_pb2.PersistentVolumeClaim) -> str:
        ann = claim.metadata.annotations
        return ann.get(ANN_STORAGE_PROVISIONER) or ann.get(ANN_BETA_STORAGE_PROVISIONER, "")

    # ------------------------------------------------------------ provisioning

    def _should_provision(
        self, claim: types_pb2.PersistentVolumeClaim, cls: types_pb2.StorageClass
    ) -> bool:
        """shouldProvision."""
        if claim.spec.volume_name or claim.metadata.HasField("deletion_timestamp"):
            return False
        if self._annotated_provisioner(claim) != PROVISIONER or cls.provisioner != PROVISIONER:
            return False
        if binding_mode(cls) == WAIT_FOR_FIRST_CONSUMER:
            return ANN_SELECTED_NODE in claim.metadata.annotations
        return True

    async def sync_claim(self, key: str) -> bool:
        """One look at a claim; False while an attempt is under way (its provisionDelay).
        ProvisioningError: the attempt failed (retried with backoff); an ApiError is retried
        too."""
        namespace, _, name = key.partition("/")
        claim = self._claims.lister.get(name, namespace)
        if claim is None:
            return True
        cls = self._classes.lister.get(claim_class(claim))
        if cls is None or not self._should_provision(claim, cls):
            self._attempts.pop(claim.metadata.uid, None)
            return True
        volume_name = provisioned_volume_name(claim)
        if self._volumes.lister.get(volume_name) is not None:
            self._attempts.pop(claim.metadata.uid, None)
            return True  # provisioned already: the binder binds it
        node: types_pb2.Node | None = None
        selected = claim.metadata.annotations.get(ANN_SELECTED_NODE)
        if selected is not None:
            node = await self._selected_node(selected)
            if node is None:
                await self._reschedule(claim, cls, f'node "{selected}" not found')
                return True
        uid = claim.metadata.uid
        now = self._clock.monotonic()
        started = self._attempts.get(uid)
        if started is None:
            started = self._attempts[uid] = now
            self._recorder.event(
                claim,
                EVENT_NORMAL,
                PROVISIONING,
                "",
                f'External provisioner is provisioning volume for claim "{key}"',
            )
        try:
            params = parse_parameters(dict(cls.parameters))
        except ProvisioningError as e:
            self._attempts.pop(uid, None)
            self._failed(claim, cls, e)
            raise
        remaining = started + params.provision_delay - now
        if remaining > 0:
            self.claim_queue.add_after(key, remaining)
            return False
        del self._attempts[uid]
        try:
            if claim.spec.HasField("selector"):
                raise ProvisioningError("claim Selector is not supported")
            self._simulate_outcome(cls, params)
            pv = build_volume(claim, cls, params, node_affinity_for(cls, params, node))
        except ProvisioningError as e:
            self._failed(claim, cls, e)
            raise
        try:
            await self._client.create(pv)
        except AlreadyExists:
            pass
        logger.info("claim %s: provisioned volume %s", key, volume_name)
        self._recorder.event(
            claim,
            EVENT_NORMAL,
            PROVISIONING_SUCCEEDED,
            "",
            f"Successfully provisioned volume {volume_name}",
        )
        return True

    def _simulate_outcome(self, cls: types_pb2.StorageClass, params: SimulatedParameters) -> None:
        """The simulated CreateVolume: failNext first, then the seeded failureRate draw."""
        uid = cls.metadata.uid
        failed = self._failed_next.get(uid, 0)
        if failed < params.fail_next:
            self._failed_next[uid] = failed + 1
            raise _rpc_error(
                "Internal",
                f"simulated provisioning failure ({FAIL_NEXT} {failed + 1} of {params.fail_next})",
            )
        if params.failure_rate > 0:
            rng = self._rngs.get(uid)
            if rng is None:
                rng = self._rngs[uid] = random.Random(f"{self.options.seed}/{cls.metadata.name}")
            if rng.random() < params.failure_rate:
                raise _rpc_error(
                    "Internal",
                    f"simulated provisioning failure ({FAILURE_RATE} {params.failure_rate:g})",
                )

    def _failed(
        self,
        claim: types_pb2.PersistentVolumeClaim,
        cls: types_pb2.StorageClass,
        error: ProvisioningError,
    ) -> None:
        logger.info("claim %s: provisioning failed: %s", object_key(claim), error)
        self._recorder.event(
            claim,
            EVENT_WARNING,
            PROVISIONING_FAILED,
            "",
            f'failed to provision volume with StorageClass "{cls.metadata.name}": {error}',
        )

    async def _selected_node(self, name: str) -> types_pb2.Node | None:
        node = self._nodes.lister.get(name)
        if node is not None:
            return node
        try:
            return await self._client.get(types_pb2.Node, name)
        except NotFound:
            return None

    async def _reschedule(
        self, claim: types_pb2.PersistentVolumeClaim, cls: types_pb2.StorageClass, why: str
    ) -> None:
        """rescheduleProvisioning: the selected node is dropped so the scheduler picks again."""
        self._attempts.pop(claim.metadata.uid, None)
        self._recorder.event(claim, EVENT_WARNING, PROVISIONING_FAILED, "", why)
        new = types_pb2.PersistentVolumeClaim()
        new.CopyFrom(claim)
        del new.metadata.annotations[ANN_SELECTED_NODE]
        await self._client.update(new)
        logger.info("claim %s: %s, selected node removed", object_key(claim), why)

    # ------------------------------------------------------------ deleting

    async def sync_volume(self, name: str) -> bool:
        """shouldDelete and deleteVolumeOperation: a Released volume of ours with policy
        Delete is deleted."""
        volume = self._volumes.lister.get(name)
        if volume is None or volume.metadata.HasField("deletion_timestamp"):
            return True
        if (
            volume.status.phase != VOLUME_RELEASED
            or volume_reclaim_policy(volume) != DELETE
            or volume.metadata.annotations.get(ANN_DYNAMICALLY_PROVISIONED) != PROVISIONER
        ):
            return True
        try:
            await self._client.delete(types_pb2.PersistentVolume, name, uid=volume.metadata.uid)
        except NotFound:
            return True
        except ApiError as e:
            self._recorder.event(volume, EVENT_WARNING, VOLUME_FAILED_DELETE, "", str(e))
            raise
        logger.info("volume %s deleted", name)
        return True

    # ------------------------------------------------------------ running

    async def _work(
        self, queue: WorkQueue, sync: Callable[[str], Awaitable[bool]], what: str
    ) -> None:
        """A worker (the lib's processNextClaimWorkItem): a failed attempt or an API error
        requeues the key with backoff; its failures are forgotten once it is done with (not
        while an attempt waits out its delay)."""
        while (key := await queue.get()) is not None:
            try:
                done = await sync(key)
            except (ProvisioningError, ApiError) as e:
                delay = queue.add_rate_limited(key)
                logger.info("%s %s failed, retrying in %gs: %s", what, key, delay, e)
            else:
                if done:
                    queue.forget(key)
            finally:
                queue.done(key)

    async def _claim_worker(self) -> None:
        await self._work(self.claim_queue, self.sync_claim, "provisioning claim")

    async def _volume_worker(self) -> None:
        await self._work(self.volume_queue, self.sync_volume, "deleting volume")

    async def run(self) -> None:
        await run_controller(
            f"the simulated CSI provisioner {PROVISIONER} (seed {self.options.seed})",
            logger,
            synced=(self._claims, self._volumes, self._classes, self._nodes),
            queues=(self.claim_queue, self.volume_queue),
            tasks=[
                (f"{NAME} events", self._recorder.run),
                *workers(f"{NAME} claims", 1, self._claim_worker),
                *workers(f"{NAME} volumes", 1, self._volume_worker),
            ],
        )


def new_controller(
    ctx: ControllerContext, options: SimulatedProvisionerOptions | None = None
) -> SimulatedProvisioner:
    """The init function registered as "simulated-csi-provisioner"."""
    return SimulatedProvisioner(ctx.client, ctx.informers, ctx.clock, options=options)

"""The ResourceClaim controller (upstream pkg/controller/resourceclaim/controller.go):
`resourceclaim-controller`, run with DynamicResourceAllocation on.

Pods (syncPod), for a pod not being deleted and not done:

- each `spec.resourceClaims[]` entry with `resourceClaimTemplateName` gets its claim: the one
  `status.resourceClaimStatuses` names if it still exists and the pod owns it, else an orphan
  the pod owns with annotation `resource.kubernetes.io/pod-claim-name: <entry>` (the
  controller created it and failed before recording it), else a new one: generateName
  `<pod>-<entry>-` (both parts cut in proportion when longer than 57 characters), the pod as
  controlling owner with blockOwnerDeletion, the template's labels and annotations plus that
  annotation, the template's spec. A missing template is the error `resource claim template
  "<t>": ...` and the Event Warning FailedResourceClaimCreation `PodResourceClaim <entry>:
  <error>` on the pod, which is retried (and queued again when the template appears);
- the claims it created are recorded in `status.resourceClaimStatuses` (upstream applies them
  with the field manager ResourceClaimController; kemu merges them into the list);
- a pod bound without the scheduler (spec.nodeName set) has each allocated claim that is not
  reserved for it reserved (`status.reservedFor` gets the pod, if under the 256 limit).

Claims (syncClaim):

- `status.reservedFor` entries for pods that are gone (deleted, seen deleted, or replaced under
  the same name: a GET confirms what the informer does not know) or done (Succeeded/Failed, or
  being deleted while unscheduled) are dropped; when that leaves none, a claim holding the
  finalizer `resource.kubernetes.io/delete-protection` is deallocated (status.allocation
  cleared, 1.31+ structured parameters: the scheduler allocated it) and then loses the
  finalizer. A claim being deleted that nobody uses loses its allocation and finalizer;
- a claim reserved for nobody that was generated for a pod which is done or was replaced is
  deleted ("deleting unused generated claim"); when the pod is gone the garbage collector
  deletes the claim through its owner reference.

Metrics: `resourceclaim_controller_creates_total{status, admin_access}` (claims created from
templates, status success or failure) and `resourceclaim_controller_resource_claims{allocated,
admin_access, source}` (the claims the informer holds; source `resource_claim_template`,
`extended_resource` or "").
"""

from __future__ import annotations

import logging
import socket
from collections import OrderedDict
from collections.abc import Iterator
from typing import Final

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery.errors import ApiError, Conflict, NotFound
from kemu.machinery.kinds import EVENT_WARNING
from kemu.machinery.pod_strategy import TERMINAL_PHASES
from kemu.machinery.resourceclaim import (
    DELETE_PROTECTION_FINALIZER,
    POD_CLAIM_NAME_ANNOTATION,
    ClaimNameError,
    can_be_reserved,
    extended_resource_claim_name,
    is_extended_resource_claim,
    is_for_pod,
    is_reserved_for_pod,
    pod_claim_name,
    uses_claims,
)

logger = logging.getLogger(__name__)

NAME: Final = "resourceclaim-controller"
"""upstream's names.ResourceClaimController."""
EVENT_SOURCE: Final = "resource_claim"
FAILED_CREATION_REASON: Final = "FailedResourceClaimCreation"
MAX_GENERATE_NAME_BASE: Final = 57
"""Room for the apiserver's 5 random characters in a 63-character name... and the hyphen."""
POD_RESOURCE_CLAIM_INDEX: Final = "pod-resource-claim-index"
POD_TEMPLATE_INDEX: Final = "pod-resource-claim-template-index"
CLAIM_POD_OWNER_INDEX: Final = "claim-pod-owner-index"
_POD: Final = "pod:"
_CLAIM: Final = "claim:"
_DELETED_PODS_KEPT: Final = 10000
"""How many deleted pods' uids are remembered (upstream's deletedObjects LRU)."""


class TemplateNotFound(NotFound):
    """The pod's template is missing: the pod waits (retried, and queued when it appears)."""


def is_pod_done(pod: types_pb2.Pod) -> bool:
    """isPodDone: it finished, or it is being deleted before it was scheduled."""
    return pod.status.phase in TERMINAL_PHASES or (
        pod.metadata.HasField("deletion_timestamp") and not pod.spec.node_name
    )


def generate_name(pod: str, claim: str) -> str:
    """`<pod>-<claim>-`, both parts cut in proportion when longer than 57 characters (upstream
    keeps something of the claim's name rather than letting the apiserver cut its end)."""
    base = f"{pod}-{claim}-"
    if len(base) > MAX_GENERATE_NAME_BASE:
        n = len(base)
        base = (
            pod[: len(pod) * MAX_GENERATE_NAME_BASE // n]
            + "-"
            + claim[: len(claim) * MAX_GENERATE_NAME_BASE // n]
        )
    return base


def owning_pod(claim: types_pb2.ResourceClaim) -> tuple[str, str]:
    """The (name, uid) of the pod that controls the claim, or ("", "")."""
    for r in claim.metadata.owner_references:
        if r.api_version == "v1" and r.kind == "Pod" and r.controller:
            return r.name, r.uid
    return "", ""


def admin_access(claim: types_pb2.ResourceClaim | types_pb2.ResourceClaimTemplate) -> bool:
    spec = claim.spec.spec if isinstance(claim, types_pb2.ResourceClaimTemplate) else claim.spec
    return any(r.exactly.admin_access for r in spec.devices.requests)


def claim_source(claim: types_pb2.ResourceClaim) -> str:
    """The metric's `source`: a template's claim, an extended resource's, or ""."""
    if is_extended_resource_claim(claim):
        return "extended_resource"
    if POD_CLAIM_NAME_ANNOTATION in claim.metadata.annotations:
        return "resource_claim_template"
    return ""


def _pod_claim_keys(pod: types_pb2.Pod) -> list[str]:
    """`namespace/claim` of every claim the pod uses (spec or status, and the claim of its
    DRA-backed extended resources)."""
    out = []
    extended = extended_resource_claim_name(pod)
    if extended:
        out.append(f"{pod.metadata.namespace}/{extended}")
    for pc in pod.spec.resource_claims:
        found = claim_of(pod, pc)
        if found is not None and found[0]:
            out.append(f"{pod.metadata.namespace}/{found[0]}")
    return out


def claim_of(pod: types_pb2.Pod, pc: types_pb2.PodResourceClaim) -> tuple[str, bool] | None:
    """resourceclaim.Name: (the claim, whether the pod must own it), with "" for a template's
    claim not created yet (ErrClaimNotFound); None when the entry needs no claim."""
    try:
        name, must_check_owner = pod_claim_name(pod, pc)
    except ClaimNameError:
        return "", True
    return None if name is None else (name, must_check_owner)


def _pod_template_keys(pod: types_pb2.Pod) -> list[str]:
    return [
        f"{pod.metadata.namespace}/{pc.resource_claim_template_name}"
        for pc in pod.spec.resource_claims
        if pc.HasField("resource_claim_template_name")
    ]


def _claim_owner_keys(claim: types_pb2.ResourceClaim) -> list[str]:
    return [r.uid for r in claim.metadata.owner_references if r.kind == "Pod" and r.controller]


class _ClaimsCollector(Collector):
    """resourceclaim_controller_resource_claims over the claim informer (upstream's custom
    collector)."""

    def __init__(self, claims: Informer[types_pb2.ResourceClaim]) -> None:
        self._claims = claims

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "resourceclaim_controller_resource_claims",
            "Number of ResourceClaims, categorized by allocation status, admin access, and "
            "source. Source can be 'resource_claim_template' (created from a template), "
            "'extended_resource' (extended resources), or empty (manually created by a user).",
            labels=("allocated", "admin_access", "source"),
        )
        counts: dict[tuple[str, str, str], int] = {}
        for claim in self._claims.lister.list():
            key = (
                str(claim.status.HasField("allocation")).lower(),
                str(admin_access(claim)).lower(),
                claim_source(claim),
            )
            counts[key] = counts.get(key, 0) + 1
        for labels, n in sorted(counts.items()):
            family.add_metric(labels, n)
        yield family


class ResourceClaimController:
    """`resourceclaim-controller`; see the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        recorder: EventRecorder | None = None,
        registry: CollectorRegistry | None = None,
        workers: int = 10,
    ) -> None:
        self._client = client
        self._workers = workers
        self._recorder = recorder or EventRecorder(
            client, EVENT_SOURCE, host=socket.gethostname(), clock=clock
        )
        self.queue = WorkQueue(clock, name="resource_claim")
        self._pods: Informer[types_pb2.Pod] = informers.informer(types_pb2.Pod)
        self._claims: Informer[types_pb2.ResourceClaim] = informers.informer(
            types_pb2.ResourceClaim
        )
        self._templates: Informer[types_pb2.ResourceClaimTemplate] = informers.informer(
            types_pb2.ResourceClaimTemplate
        )
        for inf, name, fn in (
            (self._pods, POD_RESOURCE_CLAIM_INDEX, _pod_claim_keys),
            (self._pods, POD_TEMPLATE_INDEX, _pod_template_keys),
            (self._claims, CLAIM_POD_OWNER_INDEX, _claim_owner_keys),
        ):
            try:
                inf.add_indexer(name, fn)  # type: ignore[arg-type]
            except ValueError:
                pass  # another controller added it
        self._deleted_pods: OrderedDict[str, None] = OrderedDict()
        self._creates = (
            None
            if registry is None
            else Counter(
                "resourceclaim_controller_creates",
                "Number of ResourceClaims creation requests, categorized by creation status "
                "and admin access",
                ("status", "admin_access"),
                registry=registry,
            )
        )
        if registry is not None:
            registry.register(_ClaimsCollector(self._claims))
        self._pods.add_event_handler(
            FuncHandler(
                lambda pod: self._on_pod(pod, deleted=False),
                lambda _old, new: self._on_pod(new, deleted=False),
                lambda pod: self._on_pod(pod, deleted=True),
            )
        )
        self._claims.add_event_handler(
            FuncHandler(
                self._on_claim,
                lambda _old, new: self._on_claim(new),
                self._on_claim_deleted,
            )
        )
        self._templates.add_event_handler(
            FuncHandler(self._on_template, lambda _old, new: self._on_template(new), None)
        )

    @property
    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ events

    def _on_pod(self, pod: types_pb2.Pod, *, deleted: bool) -> None:
        """enqueuePod: a pod done or gone releases its claims; a live one may need some."""
        if not uses_claims(pod):
            return
        if deleted:
            self._deleted_pods[pod.metadata.uid] = None
            while len(self._deleted_pods) > _DELETED_PODS_KEPT:
                self._deleted_pods.popitem(last=False)
        if deleted or is_pod_done(pod):
            for key in _pod_claim_keys(pod):
                self.queue.add(_CLAIM + key)
            return
        if not pod.metadata.HasField("deletion_timestamp"):
            self.queue.add(f"{_POD}{pod.metadata.namespace}/{pod.metadata.name}")

    def _on_claim(self, claim: types_pb2.ResourceClaim) -> None:
        """enqueueResourceClaim: the claim itself, and the pods using it (a bound pod may now
        reserve it)."""
        key = f"{claim.metadata.namespace}/{claim.metadata.name}"
        self.queue.add(_CLAIM + key)
        for pod in self._pods.lister.by_index(POD_RESOURCE_CLAIM_INDEX, key):
            self._on_pod(pod, deleted=False)

    def _on_claim_deleted(self, claim: types_pb2.ResourceClaim) -> None:
        """A pod whose generated claim was deleted gets a new one."""
        key = f"{claim.metadata.namespace}/{claim.metadata.name}"
        for pod in self._pods.lister.by_index(POD_RESOURCE_CLAIM_INDEX, key):
            self._on_pod(pod, deleted=False)

    def _on_template(self, template: types_pb2.ResourceClaimTemplate) -> None:
        key = f"{template.metadata.namespace}/{template.metadata.name}"
        for pod in self._pods.lister.by_index(POD_TEMPLATE_INDEX, key):
            self._on_pod(pod, deleted=False)

    # ------------------------------------------------------------ sync

    async def sync(self, key: str) -> None:
        """syncHandler: `pod:ns/name` or `claim:ns/name`."""
        kind, _, rest = key.partition(":")
        namespace, _, name = rest.partition("/")
        if kind + ":" == _POD:
            await self.sync_pod(namespace, name)
        else:
            await self.sync_claim(namespace, name)

    async def sync_pod(self, namespace: str, name: str) -> None:
        pod = self._pods.lister.get(name, namespace)
        if pod is None or pod.metadata.HasField("deletion_timestamp") or is_pod_done(pod):
            return
        new_claims: dict[str, str] = {}
        for pc in pod.spec.resource_claims:
            try:
                created = await self._handle_claim(pod, pc)
            except ApiError as e:
                self._recorder.event(
                    pod,
                    EVENT_WARNING,
                    FAILED_CREATION_REASON,
                    "",
                    f"PodResourceClaim {pc.name}: {e}",
                )
                raise
            if created:
                new_claims[pc.name] = created
        if new_claims:
            await self._record_claims(pod, new_claims)
        if not pod.spec.node_name:
            return  # the scheduler reserves the claims of the pods it schedules
        for pc in pod.spec.resource_claims:
            found = claim_of(pod, pc)
            if found is None:
                continue
            cname, check_owner = found
            cname = cname or new_claims.get(pc.name, "")
            claim = self._claims.lister.get(cname, namespace) if cname else None
            if claim is None:
                return
            if check_owner and not is_for_pod(pod, claim):
                return
            if (
                claim.status.HasField("allocation")
                and not is_reserved_for_pod(pod, claim)
                and can_be_reserved(claim)
            ):
                await self._reserve_for_pod(pod, claim)

    async def _handle_claim(self, pod: types_pb2.Pod, pc: types_pb2.PodResourceClaim) -> str | None:
        """handleClaim: the name of the claim created (or found orphaned) for a template
        entry that the pod's status does not record yet; None when there is nothing to do."""
        found = claim_of(pod, pc)
        if found is None:
            return None
        cname, must_check_owner = found
        ns = pod.metadata.namespace
        if cname:
            claim = self._claims.lister.get(cname, ns)
            if claim is not None:
                if not must_check_owner or is_for_pod(pod, claim):
                    return None
                logger.warning(
                    "claim %s/%s that was created for pod %s is no longer owned by it, "
                    "creating a new one",
                    ns,
                    cname,
                    pod.metadata.name,
                )
        if not pc.HasField("resource_claim_template_name"):
            return None
        orphan = self._find_pod_resource_claim(pod, pc)
        if orphan is not None:
            return orphan.metadata.name
        tname = pc.resource_claim_template_name
        template = self._templates.lister.get(tname, ns)
        if template is None:
            raise TemplateNotFound(
                f'resource claim template "{tname}": resourceclaimtemplates.resource.k8s.io '
                f'"{tname}" not found'
            )
        claim = types_pb2.ResourceClaim()
        meta = claim.metadata
        meta.generate_name = generate_name(pod.metadata.name, pc.name)
        meta.namespace = ns
        meta.labels.update(template.spec.metadata.labels)
        meta.annotations.update(template.spec.metadata.annotations)
        meta.annotations[POD_CLAIM_NAME_ANNOTATION] = pc.name
        ref = meta.owner_references.add()
        ref.api_version, ref.kind, ref.name, ref.uid = (
            "v1",
            "Pod",
            pod.metadata.name,
            pod.metadata.uid,
        )
        ref.controller = True
        ref.block_owner_deletion = True
        claim.spec.CopyFrom(template.spec.spec)
        access = str(admin_access(template)).lower()
        try:
            created = await self._client.create(claim)
        except ApiError as e:
            if self._creates is not None:
                self._creates.labels("failure", access).inc()
            raise type(e)(f"create ResourceClaim {meta.generate_name}: {e}", list(e.causes)) from e
        if self._creates is not None:
            self._creates.labels("success", access).inc()
        logger.info(
            "created ResourceClaim %s/%s for pod %s (PodResourceClaim %s)",
            ns,
            created.metadata.name,
            pod.metadata.name,
            pc.name,
        )
        # What the informer does not show yet (upstream's claimCache.Mutation).
        self._claims.merge([created])
        return created.metadata.name

    def _find_pod_resource_claim(
        self, pod: types_pb2.Pod, pc: types_pb2.PodResourceClaim
    ) -> types_pb2.ResourceClaim | None:
        """findPodResourceClaim: a claim the pod owns, annotated with the entry's name (or
        named `<pod>-<entry>`, as before 1.28, with no annotation)."""
        deterministic = f"{pod.metadata.name}-{pc.name}"
        for claim in self._claims.lister.by_index(CLAIM_POD_OWNER_INDEX, pod.metadata.uid):
            if claim.metadata.namespace != pod.metadata.namespace:
                continue
            annotated = claim.metadata.annotations.get(POD_CLAIM_NAME_ANNOTATION)
            if annotated is not None and annotated != pc.name:
                continue
            if annotated is None and claim.metadata.name != deterministic:
                continue
            return claim
        return None

    async def _record_claims(self, pod: types_pb2.Pod, new_claims: dict[str, str]) -> None:
        """status.resourceClaimStatuses gets the new claims (entries of other names kept)."""
        entries = {s.name: s for s in pod.status.resource_claim_statuses}
        out = [
            {"name": s.name, "resourceClaimName": s.resource_claim_name}
            if s.HasField("resource_claim_name")
            else {"name": s.name}
            for name, s in entries.items()
            if name not in new_claims
        ]
        out += [{"name": k, "resourceClaimName": v} for k, v in sorted(new_claims.items())]
        try:
            await self._client.patch(
                types_pb2.Pod,
                pod.metadata.name,
                {"status": {"resourceClaimStatuses": out}},
                pod.metadata.namespace,
                subresource="status",
            )
        except ApiError as e:
            raise type(e)(
                f"update pod {pod.metadata.namespace}/{pod.metadata.name} "
                f"ResourceClaimStatuses: {e}",
                list(e.causes),
            ) from e

    async def _reserve_for_pod(self, pod: types_pb2.Pod, claim: types_pb2.ResourceClaim) -> None:
        new = types_pb2.ResourceClaim()
        new.CopyFrom(claim)
        new.status.reserved_for.add(resource="pods", name=pod.metadata.name, uid=pod.metadata.uid)
        await self._client.update_status(new)
        logger.info(
            "reserved claim %s/%s for pod %s",
            claim.metadata.namespace,
            claim.metadata.name,
            pod.metadata.name,
        )

    async def _pod_is_gone_or_done(
        self, namespace: str, ref: types_pb2.ResourceClaimConsumerReference
    ) -> bool:
        """Whether the reservation of `ref` (a pod) is to be dropped."""
        if ref.uid in self._deleted_pods:
            return True
        pod = self._pods.lister.get(ref.name, namespace)
        if pod is None:
            # Perhaps not in the informer yet: removing a reservation the scheduler just
            # made would be bad, so the apiserver decides.
            try:
                pod = await self._client.get(types_pb2.Pod, ref.name, namespace)
            except NotFound:
                return True
        return pod.metadata.uid != ref.uid or is_pod_done(pod)

    async def sync_claim(self, namespace: str, name: str) -> None:
        claim = self._claims.lister.get(name, namespace)
        if claim is None:
            return
        valid = []
        for ref in claim.status.reserved_for:
            if ref.api_group == "" and ref.resource == "pods":
                if await self._pod_is_gone_or_done(namespace, ref):
                    continue
            valid.append(ref)
        protected = DELETE_PROTECTION_FINALIZER in claim.metadata.finalizers
        key = f"{namespace}/{name}"
        if len(valid) < len(claim.status.reserved_for):
            new = types_pb2.ResourceClaim()
            new.CopyFrom(claim)
            del new.status.reserved_for[:]
            new.status.reserved_for.extend(valid)
            # The last consumer gone: the devices are released for others (the claim may be
            # allocated again, elsewhere, for a future consumer).
            if not valid and protected:
                new.status.ClearField("allocation")
            written = await self._client.update_status(new)
            logger.info(
                "claim %s: %d reservation(s) removed%s",
                key,
                len(claim.status.reserved_for) - len(valid),
                ", deallocated" if not valid and protected else "",
            )
            if protected and not written.status.HasField("allocation"):
                await self._remove_finalizer(written)
        elif protected and claim.metadata.HasField("deletion_timestamp") and not valid:
            current = claim
            if claim.status.HasField("allocation"):
                new = types_pb2.ResourceClaim()
                new.CopyFrom(claim)
                new.status.ClearField("allocation")
                current = await self._client.update_status(new)
            await self._remove_finalizer(current)
        if valid:
            return
        pod_name, pod_uid = owning_pod(claim)
        if not pod_name:
            return
        pod = self._pods.lister.get(pod_name, namespace)
        if pod is None:
            return  # perhaps not known yet: the garbage collector handles a pod truly gone
        if pod.metadata.uid != pod_uid or is_pod_done(pod):
            logger.info("deleting unused generated claim %s (pod %s)", key, pod_name)
            try:
                await self._client.delete(
                    types_pb2.ResourceClaim, name, namespace, uid=claim.metadata.uid
                )
            except (NotFound, Conflict):
                pass

    async def _remove_finalizer(self, claim: types_pb2.ResourceClaim) -> None:
        new = types_pb2.ResourceClaim()
        new.CopyFrom(claim)
        kept = [f for f in new.metadata.finalizers if f != DELETE_PROTECTION_FINALIZER]
        del new.metadata.finalizers[:]
        new.metadata.finalizers.extend(kept)
        try:
            await self._client.update(new)
        except NotFound:
            return

    # ------------------------------------------------------------ run

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "syncing", logger)

    async def run(self) -> None:
        await run_controller(
            "the resource claim controller",
            logger,
            synced=(self._pods, self._claims, self._templates),
            queues=(self.queue,),
            tasks=[
                ("resource_claim events", self._recorder.run),
                *workers(NAME, self._workers, self._worker),
            ],
        )


def new_controller(ctx: ControllerContext) -> ResourceClaimController:
    """The init function registered as "resourceclaim-controller"."""
    return ResourceClaimController(ctx.client, ctx.informers, ctx.clock, registry=ctx.registry)

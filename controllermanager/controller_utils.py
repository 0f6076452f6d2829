"""What the workload controllers share (upstream pkg/controller/controller_utils.go and
controller_ref_manager.go): expectations, creating and deleting pods for an owner, claiming
dependents by selector and controllerRef, and the active-pod filters and deletion ranking.

The ReplicaSet, Deployment, Job and DaemonSet controllers use it.

- `ControllerExpectations`: the creations and deletions a controller has asked for and not yet
  seen in its informer. A controller syncs an owner only when its expectations are satisfied
  (all observed, or older than EXPECTATIONS_TIMEOUT), so that it never acts twice on a stale
  cache. Deletions are tracked by pod key (upstream's UIDTrackingControllerExpectations), so a
  pod that is first marked for deletion and then removed counts once. Expectations live in
  memory only: a restarted controller starts with none and works from what its informers list,
  which hold every pod the previous instance created.
- `PodControl`: creates pods from a template with a controller ownerReference and
  generateName `<owner>-`, deletes pods, and records upstream's events.
- `ControllerRefManager`: claims dependents (pods, ReplicaSets) for an owner: those it controls
  and its selector matches are kept, orphans its selector matches are adopted (a merge patch
  adding the ownerReference, pinned to the dependent's resourceVersion), and those it controls
  but its selector no longer matches are released.
- `active_pods_with_ranks_less` and `pods_to_delete`: which pods a scale-down removes first.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Generic, TypeVar

import anyio
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import Informer, Lister
from kemu.client.interface import ApiClient
from kemu.component.clock import Clock
from kemu.machinery.errors import ApiError, Invalid, NotFound
from kemu.machinery.jsonvalue import JSONArray, JSONObject
from kemu.machinery.keys import object_key, object_meta
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING, kind_of
from kemu.machinery.labels import Selector, selector_from_set, selector_of
from kemu.machinery.owners import controller_of
from kemu.machinery.pod_conditions import is_pod_ready
from kemu.machinery.validation.names import name_is_dns_subdomain

logger = logging.getLogger(__name__)

EXPECTATIONS_TIMEOUT: Final = 5 * 60.0
"""After this long, unfulfilled expectations no longer block a sync (upstream 5m)."""
SLOW_START_INITIAL_BATCH_SIZE: Final = 1
POD_DELETION_COST_ANNOTATION: Final = "controller.kubernetes.io/pod-deletion-cost"

# Event reasons of upstream's PodControl.
SUCCESSFUL_CREATE: Final = "SuccessfulCreate"
FAILED_CREATE: Final = "FailedCreate"
SUCCESSFUL_DELETE: Final = "SuccessfulDelete"
FAILED_DELETE: Final = "FailedDelete"

D = TypeVar("D", types_pb2.Pod, types_pb2.ReplicaSet, types_pb2.ReplicationController, Message)


# ---------------------------------------------------------------- expectations


@dataclass
class _Expectation:
    add: int
    dele: int
    timestamp: float
    deleting: set[str] = field(default_factory=set)  # pod keys expected to go


class ControllerExpectations:
    """Creations and deletions asked for per owner key, lowered as the informer observes them."""

    def __init__(self, clock: Clock, *, timeout: float = EXPECTATIONS_TIMEOUT) -> None:
        self._clock = clock
        self._timeout = timeout
        self._items: dict[str, _Expectation] = {}

    def satisfied(self, key: str) -> bool:
        """True when the owner may be synced: nothing is pending, the expectations expired,
        or there are none (a new owner, or a restarted controller)."""
        exp = self._items.get(key)
        if exp is None:
            return True
        if exp.add <= 0 and exp.dele <= 0:
            return True
        if self._clock.monotonic() - exp.timestamp > self._timeout:
            logger.info("expectations of %s expired: %d adds, %d deletes", key, exp.add, exp.dele)
            return True
        return False

    def expect_creations(self, key: str, adds: int) -> None:
        self._items[key] = _Expectation(adds, 0, self._clock.monotonic())

    def expect_deletions(self, key: str, pod_keys: Iterable[str]) -> None:
        keys = set(pod_keys)
        self._items[key] = _Expectation(0, len(keys), self._clock.monotonic(), keys)

    def expect(self, key: str, adds: int, pod_keys: Iterable[str]) -> None:
        """Creations and deletions at once (upstream SetExpectations)."""
        keys = set(pod_keys)
        self._items[key] = _Expectation(adds, len(keys), self._clock.monotonic(), keys)

    def creation_observed(self, key: str) -> None:
        exp = self._items.get(key)
        if exp is not None:
            exp.add -= 1

    def deletion_observed(self, key: str, pod_key: str) -> None:
        """A pod of the owner is gone or going; counts once per expected pod key."""
        exp = self._items.get(key)
        if exp is not None and pod_key in exp.deleting:
            exp.deleting.discard(pod_key)
            exp.dele -= 1

    def pending(self, key: str) -> tuple[int, int]:
        """(adds, deletes) still expected (for tests and logs)."""
        exp = self._items.get(key)
        return (0, 0) if exp is None else (exp.add, exp.dele)

    def delete(self, key: str) -> None:
        self._items.pop(key, None)


# ---------------------------------------------------------------- owner references


CONTROLLER_UID_INDEX: Final = "controller-uid"


def index_by_controller_uid(informer: Informer[D]) -> None:
    """Indexes an informer's objects by their controller's uid (CONTROLLER_UID_INDEX), once
    however many controllers share the informer."""
    try:
        informer.add_indexer(CONTROLLER_UID_INDEX, _controller_uid)
    except ValueError:
        pass  # another controller added it


def _controller_uid(obj: Message) -> list[str]:
    ref = controller_of(obj)
    return [ref.uid] if ref is not None else []


W = TypeVar("W", bound=Message)
"""A workload kind (ReplicaSet, Deployment, Job, DaemonSet, StatefulSet, CronJob)."""
_SPEC: Final = "spec"  # every workload kind's message has one


def resolve_controller_ref(
    lister: Lister[W], kind: str, namespace: str, ref: types_pb2.OwnerReference | None
) -> W | None:
    """upstream resolveControllerRef: the object of `kind` the controllerRef names, if the
    lister has it with the ref's uid (a recreated owner of the same name is not the owner)."""
    if ref is None or ref.kind != kind:
        return None
    owner = lister.get(ref.name, namespace)
    if owner is None or object_meta(owner).uid != ref.uid:
        return None
    return owner


def owner_selector(owner: Message) -> Selector | None:
    """The workload's spec.selector; None when it does not parse (the apiserver validates it:
    such an owner selects nothing)."""
    if isinstance(owner, types_pb2.ReplicationController):
        # core/v1's selector is a map (labels.SelectorFromSet); an empty one selects nothing
        return selector_from_set(owner.spec.selector) if owner.spec.selector else None
    try:
        spec: Message = getattr(owner, _SPEC)
        return selector_of(spec, "selector")
    except Invalid:
        return None


def owners_selecting(lister: Lister[W], namespace: str, labels: Mapping[str, str]) -> list[W]:
    """The namespace's owners whose non-empty selector matches the labels (upstream's
    Get<Kind>sForPod and its orphan adoption)."""
    out = []
    for owner in lister.list(namespace):
        selector = owner_selector(owner)
        if selector is not None and not selector.empty and selector.matches(labels):
            out.append(owner)
    return out


def new_controller_ref(owner: Message) -> types_pb2.OwnerReference:
    """metav1.NewControllerRef: controller and blockOwnerDeletion set."""
    kind = kind_of(owner)
    meta = object_meta(owner)
    return types_pb2.OwnerReference(
        api_version=kind.api_version,
        kind=kind.kind,
        name=meta.name,
        uid=meta.uid,
        controller=True,
        block_owner_deletion=True,
    )


def _owner_refs_json(refs: Iterable[types_pb2.OwnerReference]) -> JSONArray:
    out: JSONArray = []
    for r in refs:
        item: JSONObject = {
            "apiVersion": r.api_version,
            "kind": r.kind,
            "name": r.name,
            "uid": r.uid,
        }
        if r.HasField("controller"):
            item["controller"] = r.controller
        if r.HasField("block_owner_deletion"):
            item["blockOwnerDeletion"] = r.block_owner_deletion
        out.append(item)
    return out


class ControllerRefManager(Generic[D]):
    """Claims dependents of kind D for one owner (upstream BaseControllerRefManager with its
    Pod and ReplicaSet variants).

    `can_adopt` is awaited once before the first adoption: upstream re-reads the owner from the
    API and refuses to adopt when it is being deleted or was replaced (another uid)."""

    def __init__(
        self,
        client: ApiClient,
        owner: Message,
        selector: Selector,
        can_adopt: Callable[[], Awaitable[None]],
    ) -> None:
        self._client = client
        self._owner = owner
        self._owner_meta = object_meta(owner)
        self._selector = selector
        self._can_adopt = can_adopt
        self._adoption_checked: ApiError | None | bool = False

    async def claim(
        self, objs: Sequence[D], *, match: Callable[[D], bool] | None = None
    ) -> list[D]:
        """The dependents that belong to the owner after adopting and releasing. Errors of
        single adoptions or releases are raised after every dependent was tried."""
        claimed: list[D] = []
        errors: list[ApiError] = []
        for obj in objs:
            try:
                if await self._claim_one(obj, match):
                    claimed.append(obj)
            except ApiError as e:
                errors.append(e)
        if errors:
            raise errors[0]
        return claimed

    def _matches(self, obj: D, match: Callable[[D], bool] | None) -> bool:
        if not self._selector.matches(object_meta(obj).labels):
            return False
        return match is None or match(obj)

    async def _claim_one(self, obj: D, match: Callable[[D], bool] | None) -> bool:
        owner = self._owner_meta
        ref = controller_of(obj)
        if ref is not None:
            if ref.uid != owner.uid:
                return False  # another controller's
            if self._matches(obj, match):
                return True
            if owner.HasField("deletion_timestamp"):
                return False
            await self._release(obj)
            return False
        # An orphan.
        if owner.HasField("deletion_timestamp") or not self._matches(obj, match):
            return False
        meta: types_pb2.ObjectMeta = object_meta(obj)
        if meta.HasField("deletion_timestamp") or meta.namespace != owner.namespace:
            return False
        return await self._adopt(obj)

    async def _check_can_adopt(self) -> None:
        if self._adoption_checked is False:
            try:
                await self._can_adopt()
                self._adoption_checked = None
            except ApiError as e:
                self._adoption_checked = e
        if isinstance(self._adoption_checked, ApiError):
            raise self._adoption_checked

    async def _adopt(self, obj: D) -> bool:
        await self._check_can_adopt()
        meta: types_pb2.ObjectMeta = object_meta(obj)
        refs = [*meta.owner_references, new_controller_ref(self._owner)]
        patch = {
            "metadata": {
                "ownerReferences": _owner_refs_json(refs),
                "resourceVersion": meta.resource_version,
            }
        }
        try:
            await self._client.patch(type(obj), meta.name, patch, meta.namespace)
        except NotFound:
            return False
        logger.info(
            "%s %s adopted %s %s",
            kind_of(self._owner).kind,
            object_key(self._owner),
            kind_of(obj).kind.lower(),
            object_key(obj),
        )
        return True

    async def _release(self, obj: D) -> None:
        meta: types_pb2.ObjectMeta = object_meta(obj)
        refs = [r for r in meta.owner_references if r.uid != self._owner_meta.uid]
        patch = {
            "metadata": {
                "ownerReferences": _owner_refs_json(refs),
                "resourceVersion": meta.resource_version,
            }
        }
        try:
            await self._client.patch(type(obj), meta.name, patch, meta.namespace)
        except (NotFound, Invalid):
            return  # gone, or replaced: nothing to release
        logger.info(
            "%s %s released %s %s",
            kind_of(self._owner).kind,
            object_key(self._owner),
            kind_of(obj).kind.lower(),
            object_key(obj),
        )


def recheck_owner(client: ApiClient, owner: Message) -> Callable[[], Awaitable[None]]:
    """upstream RecheckDeletionTimestamp: a can_adopt that re-reads the owner and refuses
    (Invalid) when it was replaced or is being deleted."""
    meta = object_meta(owner)

    async def check() -> None:
        fresh = await client.get(type(owner), meta.name, meta.namespace)
        fresh_meta = object_meta(fresh)
        if fresh_meta.uid != meta.uid:
            raise Invalid(
                f"original {kind_of(owner).kind} {object_key(owner)} is gone: got uid "
                f"{fresh_meta.uid}, wanted {meta.uid}"
            )
        if fresh_meta.HasField("deletion_timestamp"):
            raise Invalid(
                f"{kind_of(owner).kind} {object_key(owner)} has just been deleted at "
                f"{fresh_meta.deletion_timestamp.ToJsonString()}"
            )

    return check


# ---------------------------------------------------------------- creating and deleting pods


def pod_name_prefix(owner_name: str) -> str:
    """generateName for the pods of an owner: `<name>-`, or the bare name when that would not
    be a valid generateName (upstream getPodsPrefix)."""
    prefix = f"{owner_name}-"
    if name_is_dns_subdomain(prefix, True):
        return owner_name
    return prefix


def pod_from_template(
    template: types_pb2.PodTemplateSpec, owner: Message, ref: types_pb2.OwnerReference
) -> types_pb2.Pod:
    """upstream GetPodFromTemplate: the template's labels, annotations, finalizers and spec,
    generateName `<owner>-`, and the controller reference."""
    pod = types_pb2.Pod()
    pod.metadata.generate_name = pod_name_prefix(object_meta(owner).name)
    pod.metadata.namespace = object_meta(owner).namespace
    pod.metadata.labels.update(template.metadata.labels)
    pod.metadata.annotations.update(template.metadata.annotations)
    pod.metadata.finalizers.extend(template.metadata.finalizers)
    pod.metadata.owner_references.append(ref)
    pod.spec.CopyFrom(template.spec)
    return pod


class PodControl:
    """Creates and deletes an owner's pods and records upstream's events for it."""

    def __init__(self, client: ApiClient, recorder: EventRecorder) -> None:
        self._client = client
        self._recorder = recorder

    async def create_pods(
        self,
        template: types_pb2.PodTemplateSpec,
        owner: Message,
        ref: types_pb2.OwnerReference,
        generate_name: str | None = None,
    ) -> types_pb2.Pod:
        """Creates a pod from `template` (generateName `<owner>-` unless given)."""
        pod = pod_from_template(template, owner, ref)
        if generate_name is not None:
            pod.metadata.generate_name = generate_name
        if not pod.metadata.labels:
            raise Invalid("unable to create pods, no labels")
        try:
            created = await self._client.create(pod)
        except ApiError as e:
            self._recorder.event(
                owner, EVENT_WARNING, FAILED_CREATE, "Create", f"Error creating: {e.message}"
            )
            raise
        logger.debug(
            "%s %s created pod %s", kind_of(owner).kind, object_key(owner), object_key(created)
        )
        self._recorder.event(
            owner,
            EVENT_NORMAL,
            SUCCESSFUL_CREATE,
            "Create",
            f"Created pod: {created.metadata.name}",
        )
        return created

    async def delete_pod(self, namespace: str, name: str, owner: Message) -> None:
        try:
            await self._client.delete(types_pb2.Pod, name, namespace)
        except ApiError as e:
            if not isinstance(e, NotFound):
                self._recorder.event(
                    owner, EVENT_WARNING, FAILED_DELETE, "Delete", f"Error deleting: {e.message}"
                )
            raise
        self._recorder.event(
            owner, EVENT_NORMAL, SUCCESSFUL_DELETE, "Delete", f"Deleted pod: {name}"
        )


async def slow_start_batch(
    count: int, initial_batch_size: int, fn: Callable[[], Awaitable[object]]
) -> int:
    """Calls `fn` `count` times in batches of 1, 2, 4, ... (each batch concurrently) and stops
    after the first batch with an error (upstream slowStartBatch): a request that fails for
    every pod fails once, not `count` times. Returns how many calls succeeded and re-raises
    the first error."""
    remaining = count
    successes = 0
    batch = min(remaining, initial_batch_size)
    while batch > 0:
        errors: list[ApiError] = []
        async with anyio.create_task_group() as tg:
            for _ in range(batch):
                tg.start_soon(_collect_errors, fn, errors)
        successes += batch - len(errors)
        if errors:
            raise _BatchError(successes, errors[0])
        remaining -= batch
        batch = min(2 * batch, remaining)
    return successes


async def _collect_errors(fn: Callable[[], Awaitable[object]], errors: list[ApiError]) -> None:
    try:
        await fn()
    except ApiError as e:
        errors.append(e)


class _BatchError(Exception):
    def __init__(self, successes: int, error: ApiError) -> None:
        super().__init__(str(error))
        self.successes = successes
        self.error = error


async def run_slow_start(
    count: int, fn: Callable[[], Awaitable[object]]
) -> tuple[int, ApiError | None]:
    """slow_start_batch from SLOW_START_INITIAL_BATCH_SIZE, as (successes, first error)."""
    try:
        return await slow_start_batch(count, SLOW_START_INITIAL_BATCH_SIZE, fn), None
    except _BatchError as e:
        return e.successes, e.error


# ---------------------------------------------------------------- pod states


def is_pod_active(pod: types_pb2.Pod) -> bool:
    """Not finished and not being deleted (upstream IsPodActive)."""
    return pod.status.phase not in ("Succeeded", "Failed") and not pod.metadata.HasField(
        "deletion_timestamp"
    )


def filter_active_pods(pods: Iterable[types_pb2.Pod]) -> list[types_pb2.Pod]:
    return [p for p in pods if is_pod_active(p)]


def _ready_condition(pod: types_pb2.Pod) -> types_pb2.PodCondition | None:
    for c in pod.status.conditions:
        if c.type == "Ready":
            return c
    return None


def _seconds(ts: Timestamp) -> float:
    return ts.seconds + ts.nanos / 1e9


def is_pod_available(pod: types_pb2.Pod, min_ready_seconds: int, now: float) -> bool:
    """Ready for at least minReadySeconds (upstream podutil.IsPodAvailable)."""
    c = _ready_condition(pod)
    if c is None or c.status != "True":
        return False
    if min_ready_seconds == 0:
        return True
    if not c.HasField("last_transition_time"):
        return False
    return _seconds(c.last_transition_time) + min_ready_seconds < now


# ---------------------------------------------------------------- deletion ranking

_PHASE_ORDINAL: Final = {"Pending": 0, "Unknown": 1, "Running": 2}


@dataclass(frozen=True)
class RankedPod:
    pod: types_pb2.Pod
    rank: int  # how many active related pods share its node


def _deletion_cost(pod: types_pb2.Pod) -> int:
    try:
        return int(pod.metadata.annotations.get(POD_DELETION_COST_ANNOTATION, "0"))
    except ValueError:
        return 0


def _ready_time(pod: types_pb2.Pod) -> float | None:
    c = _ready_condition(pod)
    if c is None or c.status != "True" or not c.HasField("last_transition_time"):
        return None
    return _seconds(c.last_transition_time)


def _after_or_zero(t1: float | None, t2: float | None) -> bool:
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def _log_rank_diff(t1: float, t2: float, now: float) -> int:
    """upstream logarithmicRankDiff: compares the ages' log2 buckets (in nanoseconds)."""

    def bucket(t: float) -> int:
        age = int((now - t) * 1e9)
        return int(math.log2(age)) if age > 0 else -1

    return bucket(t1) - bucket(t2)


def _time_less(a: RankedPod, b: RankedPod, t1: float | None, t2: float | None, now: float) -> bool:
    if t1 is None or t2 is None:
        return _after_or_zero(t1, t2)
    diff = _log_rank_diff(t1, t2, now)
    if diff == 0:
        return a.pod.metadata.uid < b.pod.metadata.uid
    return diff < 0


def _max_restarts(pod: types_pb2.Pod) -> tuple[int, int]:
    regular = max((c.restart_count for c in pod.status.container_statuses), default=0)
    sidecars = {
        c.name
        for c in pod.spec.init_containers
        if c.HasField("restart_policy") and c.restart_policy == "Always"
    }
    sidecar = max(
        (c.restart_count for c in pod.status.init_container_statuses if c.name in sidecars),
        default=0,
    )
    return regular, sidecar


def active_pods_with_ranks_less(a: RankedPod, b: RankedPod, now: float) -> bool:
    """upstream ActivePodsWithRanks.Less (PodDeletionCost and LogarithmicScaleDown on): True
    when `a` should be deleted before `b`."""
    pa, pb = a.pod, b.pod
    na, nb = pa.spec.node_name, pb.spec.node_name
    if na != nb and (not na or not nb):
        return not na  # 1. unassigned first
    oa, ob = _PHASE_ORDINAL.get(pa.status.phase, 0), _PHASE_ORDINAL.get(pb.status.phase, 0)
    if oa != ob:
        return oa < ob  # 2. Pending < Unknown < Running
    ra, rb = is_pod_ready(pa), is_pod_ready(pb)
    if ra != rb:
        return not ra  # 3. not ready first
    ca, cb = _deletion_cost(pa), _deletion_cost(pb)
    if ca != cb:
        return ca < cb  # 4. lower pod-deletion-cost first
    if a.rank != b.rank:
        return a.rank > b.rank  # 5. doubled up on a node first
    if ra and rb:
        ta, tb = _ready_time(pa), _ready_time(pb)
        if ta != tb:
            return _time_less(a, b, ta, tb, now)  # 6. ready for less time first
    (rega, sida), (regb, sidb) = _max_restarts(pa), _max_restarts(pb)
    if rega != regb:
        return rega > regb  # 7. more restarts first
    if sida != sidb:
        return sida > sidb
    cta = (
        _seconds(pa.metadata.creation_timestamp)
        if pa.metadata.HasField("creation_timestamp")
        else None
    )
    ctb = (
        _seconds(pb.metadata.creation_timestamp)
        if pb.metadata.HasField("creation_timestamp")
        else None
    )
    if cta != ctb:
        return _time_less(a, b, cta, ctb, now)  # 8. newer first
    return False


def rank_pods_for_deletion(
    pods: Sequence[types_pb2.Pod], related: Iterable[types_pb2.Pod], now: float
) -> list[types_pb2.Pod]:
    """`pods` in deletion order; a pod's rank is how many active `related` pods (the pods of
    every ReplicaSet of the same Deployment, upstream getIndirectlyRelatedPods) share its
    node (upstream getPodsRankedByRelatedPodsOnSameNode)."""
    on_node: dict[str, int] = {}
    for p in related:
        if is_pod_active(p):
            on_node[p.spec.node_name] = on_node.get(p.spec.node_name, 0) + 1
    ranked = [RankedPod(p, on_node.get(p.spec.node_name, 0)) for p in pods]

    def cmp(x: RankedPod, y: RankedPod) -> int:
        if active_pods_with_ranks_less(x, y, now):
            return -1
        if active_pods_with_ranks_less(y, x, now):
            return 1
        return 0

    ranked.sort(key=functools.cmp_to_key(cmp))
    return [r.pod for r in ranked]


def pods_to_delete(
    pods: Sequence[types_pb2.Pod], related: Iterable[types_pb2.Pod], diff: int, now: float
) -> list[types_pb2.Pod]:
    """upstream getPodsToDelete: the first `diff` pods of the deletion order."""
    if diff < len(pods):
        return rank_pods_for_deletion(pods, related, now)[:diff]
    return list(pods[:diff])


# ---------------------------------------------------------------- pods by node


POD_NODE_NAME_INDEX: Final = "spec.nodeName"


def index_pods_by_node_name(informer: Informer[types_pb2.Pod]) -> None:
    """Indexes a pod informer by spec.nodeName (POD_NODE_NAME_INDEX; unbound pods are not
    indexed), once however many controllers share the informer."""
    try:
        informer.add_indexer(POD_NODE_NAME_INDEX, _pod_node_name)
    except ValueError:
        pass  # another controller added it


def _pod_node_name(pod: types_pb2.Pod) -> list[str]:
    return [pod.spec.node_name] if pod.spec.node_name else []

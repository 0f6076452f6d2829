"""The disruption controller (upstream pkg/controller/disruption): keeps every
PodDisruptionBudget's status true, so that evictions and preemption can trust
status.disruptionsAllowed.

For one PDB, the pods are those of its namespace its selector matches (policy/v1: an absent
selector matches no pod, an empty one every pod). Then, as upstream:
- expectedPods and desiredHealthy: with minAvailable an integer, desiredHealthy is that integer
  and expectedPods the number of matching pods. With a percentage minAvailable or any
  maxUnavailable, upstream takes expectedPods from the scale of the pods' controllers
  (Deployment, ReplicaSet, StatefulSet, ...). kemu has no workload controllers and its pods no
  owners, so expectedPods is the number of matching pods there too (upstream counts pods
  without a controller as "unmanaged" and warns). A percentage is of expectedPods, rounded up:
  desiredHealthy = ceil(minAvailable% * expected), or expected - ceil(maxUnavailable% *
  expected) (at least 0). With neither field set, expectedPods and desiredHealthy are 0.
- currentHealthy: matching pods that are Ready (condition Ready=True), not being deleted
  (no deletionTimestamp) and not in status.disruptedPods.
- disruptedPods (written by the eviction handler) keeps an entry only while its pod exists,
  is not being deleted and was evicted less than DELETION_TIMEOUT ago; the PDB is synced again
  when the next entry expires.
- disruptionsAllowed = max(0, currentHealthy - desiredHealthy), and 0 while expectedPods is 0
  (so a PDB whose pods are just appearing is safe until synced).
- observedGeneration = metadata.generation; condition DisruptionAllowed: True/SufficientPods
  when disruptionsAllowed > 0, else False/InsufficientPods. A PDB whose status cannot be
  computed (an invalid selector or percentage) gets disruptionsAllowed 0 and
  False/SyncFailed (upstream's failSafe).

The status is written (update_status) only when it differs; a Conflict is retried at once on
a freshly read PDB, a few times, and then the key is requeued with backoff.

Events: PDB add/update/delete and pod add/update/delete enqueue the affected PDB keys on a
deduplicating work queue; one worker syncs them (as upstream); every PDB is also requeued each
`resync_period`. Differences from upstream: a pod event enqueues every PDB matching the pod
(upstream picks one arbitrarily) and, on update, those matching its old labels too; pod updates
that change nothing the status depends on are ignored; no Events are recorded; the stale
DisruptionTarget pod condition cleanup is not modelled.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from google.protobuf.timestamp_pb2 import Timestamp

from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from kemu.api.v1 import types_pb2
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery.apps import scaled_value
from kemu.machinery.convert import timestamp
from kemu.machinery.errors import ApiError, Conflict, Invalid, NotFound
from kemu.machinery.keys import object_key
from kemu.machinery.labels import Selector, selector_of
from kemu.machinery.pod_conditions import is_pod_ready

logger = logging.getLogger(__name__)

NAME: Final = "disruption"

DELETION_TIMEOUT: Final = 120.0
"""How long an entry of status.disruptedPods waits for its pod to be deleted (upstream 2m)."""

DEFAULT_RESYNC_PERIOD: Final = 30.0
STATUS_UPDATE_RETRIES: Final = 2

DISRUPTION_ALLOWED_CONDITION: Final = "DisruptionAllowed"
SUFFICIENT_PODS_REASON: Final = "SufficientPods"
INSUFFICIENT_PODS_REASON: Final = "InsufficientPods"
SYNC_FAILED_REASON: Final = "SyncFailed"

_PERCENT: Final = re.compile(r"^[+-]?[0-9]+%$")

PdbStatus = types_pb2.PodDisruptionBudgetStatus

# ---------------------------------------------------------------- the arithmetic (pure)


def is_terminating(pod: types_pb2.Pod) -> bool:
    return pod.metadata.HasField("deletion_timestamp")


def expected_and_desired(pdb: types_pb2.PodDisruptionBudget, matching: int) -> tuple[int, int]:
    """(expectedPods, desiredHealthy) for a PDB whose selector matches `matching` pods.

    kemu's pods have no controllers: the matching pod count stands for the controllers' scale
    (see the module docstring). ValueError for an invalid percentage.
    """
    spec = pdb.spec
    if spec.HasField("max_unavailable"):
        expected = matching
        return expected, max(
            0, expected - scaled_value(spec.max_unavailable, expected, round_up=True)
        )
    if spec.HasField("min_available"):
        return matching, scaled_value(spec.min_available, matching, round_up=True)
    return 0, 0


def _seconds(ts: Timestamp) -> float:
    return ts.ToMicroseconds() / 1_000_000


@dataclass
class Counts:
    """What the status of one PDB should say; `recheck_at` is the wall time at which an entry of
    `disrupted_pods` expires (the PDB must be synced again then), or None."""

    expected_pods: int
    desired_healthy: int
    current_healthy: int
    disruptions_allowed: int
    disrupted_pods: dict[str, Timestamp] = field(default_factory=dict)
    recheck_at: float | None = None


def build_disrupted_pod_map(
    pods: Iterable[types_pb2.Pod], disrupted: Mapping[str, Timestamp], now: float
) -> tuple[dict[str, Timestamp], float | None]:
    """The entries of status.disruptedPods to keep, and when the earliest of them expires.

    An entry is kept while its pod exists (among `pods`), has no deletionTimestamp and was
    evicted less than DELETION_TIMEOUT before `now`.
    """
    kept: dict[str, Timestamp] = {}
    recheck: float | None = None
    if not disrupted:
        return kept, recheck
    for pod in pods:
        name = pod.metadata.name
        if is_terminating(pod) or name not in disrupted:
            continue
        evicted = disrupted[name]
        expires = _seconds(evicted) + DELETION_TIMEOUT
        if expires <= now:
            logger.info(
                "pod %s/%s was expected to be deleted by now but was not; "
                "dropping it from the disrupted pods",
                pod.metadata.namespace,
                name,
            )
            continue
        kept[name] = evicted
        recheck = expires if recheck is None else min(recheck, expires)
    return kept, recheck


def count_healthy_pods(pods: Iterable[types_pb2.Pod], disrupted: Mapping[str, Timestamp]) -> int:
    """Ready pods that are neither being deleted nor (still) listed as disrupted."""
    return sum(
        1
        for pod in pods
        if not is_terminating(pod) and pod.metadata.name not in disrupted and is_pod_ready(pod)
    )


def compute_counts(
    pdb: types_pb2.PodDisruptionBudget, pods: list[types_pb2.Pod], now: float
) -> Counts:
    """The status numbers of `pdb` given the pods its selector matches, at wall time `now`.
    ValueError when the PDB's numbers cannot be computed (an invalid percentage)."""
    expected, desired = expected_and_desired(pdb, len(pods))
    disrupted, recheck = build_disrupted_pod_map(pods, pdb.status.disrupted_pods, now)
    healthy = count_healthy_pods(pods, disrupted)
    allowed = max(0, healthy - desired) if expected > 0 else 0
    return Counts(expected, desired, healthy, allowed, disrupted, recheck)


def _find_condition(status: PdbStatus, type_: str) -> types_pb2.Condition | None:
    for cond in status.conditions:
        if cond.type == type_:
            return cond
    return None


def set_condition(
    status: PdbStatus,
    type_: str,
    value: str,
    reason: str,
    message: str,
    observed_generation: int,
    now: float,
) -> None:
    """apimeta.SetStatusCondition: lastTransitionTime moves only when the status changes."""
    cond = _find_condition(status, type_)
    if cond is None:
        cond = status.conditions.add(type=type_)
        cond.last_transition_time.CopyFrom(timestamp(now))
    elif cond.status != value:
        cond.last_transition_time.CopyFrom(timestamp(now))
    cond.status = value
    cond.reason = reason
    cond.message = message
    cond.observed_generation = observed_generation


def _condition_up_to_date(pdb: types_pb2.PodDisruptionBudget) -> bool:
    """upstream pdbhelper.ConditionsAreUpToDate."""
    cond = _find_condition(pdb.status, DISRUPTION_ALLOWED_CONDITION)
    if cond is None or pdb.status.observed_generation != pdb.metadata.generation:
        return False
    if pdb.status.disruptions_allowed > 0:
        return cond.status == "True" and cond.reason == SUFFICIENT_PODS_REASON
    return cond.status == "False" and cond.reason == INSUFFICIENT_PODS_REASON


def _same_disrupted(a: Mapping[str, Timestamp], b: Mapping[str, Timestamp]) -> bool:
    return a.keys() == b.keys() and all(a[k] == b[k] for k in a)


def desired_status(
    pdb: types_pb2.PodDisruptionBudget, counts: Counts, now: float
) -> types_pb2.PodDisruptionBudget | None:
    """A copy of `pdb` with the status `counts` says, or None when its status already says it."""
    status = pdb.status
    if (
        status.current_healthy == counts.current_healthy
        and status.desired_healthy == counts.desired_healthy
        and status.expected_pods == counts.expected_pods
        and status.disruptions_allowed == counts.disruptions_allowed
        and _same_disrupted(status.disrupted_pods, counts.disrupted_pods)
        and _condition_up_to_date(pdb)
    ):
        return None
    new = types_pb2.PodDisruptionBudget()
    new.CopyFrom(pdb)
    st = new.status
    st.current_healthy = counts.current_healthy
    st.desired_healthy = counts.desired_healthy
    st.expected_pods = counts.expected_pods
    st.disruptions_allowed = counts.disruptions_allowed
    st.observed_generation = pdb.metadata.generation
    st.disrupted_pods.clear()
    for name, ts in counts.disrupted_pods.items():
        st.disrupted_pods[name].CopyFrom(ts)
    if counts.disruptions_allowed > 0:
        value, reason = "True", SUFFICIENT_PODS_REASON
    else:
        value, reason = "False", INSUFFICIENT_PODS_REASON
    set_condition(st, DISRUPTION_ALLOWED_CONDITION, value, reason, "", st.observed_generation, now)
    return new


def fail_safe_status(
    pdb: types_pb2.PodDisruptionBudget, error: str, now: float
) -> types_pb2.PodDisruptionBudget | None:
    """Upstream failSafe: no disruptions allowed, condition False/SyncFailed; None when the
    status already says so (so that a broken PDB is not written over and over)."""
    new = types_pb2.PodDisruptionBudget()
    new.CopyFrom(pdb)
    st = new.status
    st.disruptions_allowed = 0
    set_condition(
        st, DISRUPTION_ALLOWED_CONDITION, "False", SYNC_FAILED_REASON, error,
        st.observed_generation, now,
    )  # fmt: skip
    if new.status == pdb.status:
        return None
    return new


# ---------------------------------------------------------------- the controller


class DisruptionController:
    """Keeps PodDisruptionBudget statuses current; see the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        resync_period: float = DEFAULT_RESYNC_PERIOD,
    ) -> None:
        self._client = client
        self._clock = clock
        self.resync_period = resync_period
        self.queue = WorkQueue(clock, name=NAME)
        self._pdbs: Informer[types_pb2.PodDisruptionBudget] = informers.informer(
            types_pb2.PodDisruptionBudget
        )
        self._pods: Informer[types_pb2.Pod] = informers.informer(types_pb2.Pod)
        # PDB key -> (uid, generation, selector): selectors parsed once per spec.
        self._selectors: dict[str, tuple[str, int, Selector | Invalid]] = {}
        self.syncs = 0
        """How many syncs ran (for tests and logs)."""
        self._pdbs.add_event_handler(
            FuncHandler(self._on_pdb, lambda _old, new: self._on_pdb(new), self._on_pdb_delete)
        )
        self._pods.add_event_handler(
            FuncHandler(self._on_pod_add, self._on_pod_update, self._on_pod_add)
        )

    @property
    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ event handlers

    def _on_pdb(self, pdb: types_pb2.PodDisruptionBudget) -> None:
        self.queue.add(object_key(pdb))

    def _on_pdb_delete(self, pdb: types_pb2.PodDisruptionBudget) -> None:
        key = object_key(pdb)
        self._selectors.pop(key, None)
        self.queue.add(key)

    def _selector(self, pdb: types_pb2.PodDisruptionBudget) -> Selector:
        """The PDB's selector; Invalid when it is not a valid one."""
        key = object_key(pdb)
        meta = pdb.metadata
        cached = self._selectors.get(key)
        if cached is None or cached[0] != meta.uid or cached[1] != meta.generation:
            selector: Selector | Invalid
            try:
                selector = selector_of(pdb.spec, "selector")
            except Invalid as e:
                selector = e
            cached = (meta.uid, meta.generation, selector)
            self._selectors[key] = cached
        if isinstance(cached[2], Invalid):
            raise cached[2]
        return cached[2]

    def _matches(self, pdb: types_pb2.PodDisruptionBudget, pod: types_pb2.Pod) -> bool:
        try:
            return self._selector(pdb).matches(pod.metadata.labels)
        except Invalid:
            return False

    def _enqueue_for_pod(self, *pods: types_pb2.Pod) -> None:
        namespace = pods[0].metadata.namespace
        for pdb in self._pdbs.lister.list(namespace):
            if any(self._matches(pdb, pod) for pod in pods):
                self.queue.add(object_key(pdb))

    def _on_pod_add(self, pod: types_pb2.Pod) -> None:
        self._enqueue_for_pod(pod)

    def _on_pod_update(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        if (
            old.metadata.labels == new.metadata.labels
            and is_pod_ready(old) == is_pod_ready(new)
            and is_terminating(old) == is_terminating(new)
            and old.metadata.uid == new.metadata.uid
        ):
            return  # nothing a PDB status depends on changed
        self._enqueue_for_pod(old, new)

    # ------------------------------------------------------------ sync

    def pods_for(self, pdb: types_pb2.PodDisruptionBudget) -> list[types_pb2.Pod]:
        """The pods of the PDB's namespace its selector matches; Invalid for a bad selector."""
        selector = self._selector(pdb)
        return [
            pod
            for pod in self._pods.lister.list(pdb.metadata.namespace)
            if selector.matches(pod.metadata.labels)
        ]

    async def sync(self, key: str) -> None:
        """Brings the status of PDB `key` up to date; raises an ApiError to be retried later."""
        namespace, _, name = key.partition("/")
        pdb = self._pdbs.lister.get(name, namespace)
        if pdb is None:
            logger.debug("pdb %s has been deleted", key)
            return
        self.syncs += 1
        attempt = 0
        while True:
            try:
                await self._try_sync(key, pdb)
                return
            except Conflict:
                attempt += 1
                if attempt > STATUS_UPDATE_RETRIES:
                    raise
                logger.debug("pdb %s: conflict writing status, retrying on a fresh copy", key)
            try:
                pdb = await self._client.get(types_pb2.PodDisruptionBudget, name, namespace)
            except NotFound:
                return

    async def _try_sync(self, key: str, pdb: types_pb2.PodDisruptionBudget) -> None:
        now = self._clock.now()
        try:
            counts = compute_counts(pdb, self.pods_for(pdb), now)
        except (Invalid, ValueError) as e:
            error = e.message if isinstance(e, ApiError) else str(e)
            logger.warning("pdb %s: cannot compute its status: %s", key, error)
            failed = fail_safe_status(pdb, error, now)
            if failed is not None:
                await self._client.update_status(failed)
            return
        new = desired_status(pdb, counts, now)
        if new is not None:
            await self._client.update_status(new)
            logger.debug(
                "pdb %s: expected %d, healthy %d/%d, disruptions allowed %d",
                key,
                counts.expected_pods,
                counts.current_healthy,
                counts.desired_healthy,
                counts.disruptions_allowed,
            )
        if counts.recheck_at is not None:
            self.queue.add_after(key, max(0.0, counts.recheck_at - now))

    # ------------------------------------------------------------ workers

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "syncing pdb", logger)

    async def _resync(self) -> None:
        while True:
            await self._clock.sleep(self.resync_period)
            for key in self._pdbs.lister.keys():
                self.queue.add(key)

    async def run(self) -> None:
        """Syncs PDBs until cancelled; the informers must be running (and synced)."""
        await run_controller(
            "the disruption controller",
            logger,
            synced=(self._pdbs, self._pods),
            queues=(self.queue,),
            tasks=[("disruption resync", self._resync), *workers("disruption", 1, self._worker)],
        )


def new_controller(ctx: ControllerContext) -> DisruptionController:
    """The init function registered as "disruption"."""
    return DisruptionController(ctx.client, ctx.informers, ctx.clock)

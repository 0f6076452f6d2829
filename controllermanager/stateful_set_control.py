"""One StatefulSet's reconciliation (upstream pkg/controller/statefulset/stateful_set_control.go
UpdateStatefulSet, performUpdate and updateStatefulSet).

The pods of the set (claimed by the controller) are split into the replicas, ordinals in
[start, start + replicas), and the condemned, the others; a replica missing is a pod to create
at the current revision when its ordinal is below the RollingUpdate partition, else at the
update revision (newVersionedStatefulSetPod). Then, unless the set is being deleted:

1. every replica, in ordinal order: a failed or succeeded pod is deleted (and created again by
   a later sync); a missing one is created (its claims first) unless a claim still references
   an earlier pod (whenScaled Delete); a pending pod gets its missing claims; a pod whose
   identity, volumes or claims' references are off is updated. Under OrderedReady
   (monotonic) the sync stops after a creation and at the first pod terminating, not Running
   and Ready, or not available for minReadySeconds: ordinal N+1 is created only once 0..N
   are; Parallel processes them all at once (slow-start batches) and waits for none;
2. the condemned pods' claims get the retention policy's references (the pod as owner under
   whenScaled Delete, so that the garbage collector deletes them with the pod);
3. the condemned pods are deleted, the highest ordinal first; monotonic, one at a time, each
   only once every replica is available (the first unavailable pod excepted) and the previous
   one is gone;
4. OnDelete stops here; RollingUpdate deletes the highest-ordinal replica at or above the
   partition that is not at the update revision, one at a time, waiting for each replica
   above it to be available again (it is recreated at the update revision by step 1); with
   MaxUnavailableStatefulSet (beta from 1.35), as many at once as rollingUpdate.maxUnavailable
   (default 1) leaves room for, counting the replicas already unavailable.

The status (replicas: created pods; ready: Running and Ready; available: ready for
minReadySeconds; current and updated: of each revision; currentRevision, updateRevision,
collisionCount, observedGeneration) is returned for the controller to write.

Revisions: kemu keeps no ControllerRevision objects. The templates of the current and update
revisions are remembered in memory (`RevisionTemplates`), per set, as the controller sees
them; a controller restarted during a rollout finds the current revision's template again from
a live pod of that revision (its labels, annotations and spec without what the controller,
the scheduler and admission added), and, without one, creates the pod at the update
revision. Revision history (revisionHistoryLimit, `rollout undo`) is not modelled.

Not modelled: StatefulSet conditions.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from controllermanager import stateful_set_utils as ssu
from controllermanager.controller_utils import new_controller_ref, pod_from_template, run_slow_start
from controllermanager.stateful_pod_control import StatefulPodControl
from kemu.api.v1 import types_pb2
from kemu.component.clock import Clock
from kemu.machinery.errors import ApiError, NotFound
from kemu.machinery.keys import object_key

logger = logging.getLogger(__name__)

_IDENTITY_LABELS: Final = (ssu.POD_NAME_LABEL, ssu.POD_INDEX_LABEL_KEY, ssu.REVISION_LABEL)


class RevisionTemplates:
    """The pod templates of each set's current and update revisions, by revision name."""

    def __init__(self) -> None:
        self._by_set: dict[str, dict[str, types_pb2.PodTemplateSpec]] = {}

    def remember(self, uid: str, live: dict[str, types_pb2.PodTemplateSpec | None]) -> None:
        """Keeps the templates of the `live` revisions only (None: keep what is known)."""
        known = self._by_set.get(uid, {})
        kept: dict[str, types_pb2.PodTemplateSpec] = {}
        for name, template in live.items():
            if template is not None:
                kept[name] = template
            elif name in known:
                kept[name] = known[name]
        self._by_set[uid] = kept

    def template(self, uid: str, revision: str) -> types_pb2.PodTemplateSpec | None:
        return self._by_set.get(uid, {}).get(revision)

    def forget(self, uid: str) -> None:
        self._by_set.pop(uid, None)


def template_from_pod(pod: types_pb2.Pod) -> types_pb2.PodTemplateSpec:
    """The template a pod of the set was made from, as far as it can be told: the pod without
    its identity labels, hostname, subdomain, node and priority (the claim volumes are
    replaced when a pod is made from it)."""
    t = types_pb2.PodTemplateSpec()
    t.metadata.labels.update(pod.metadata.labels)
    for key in _IDENTITY_LABELS:
        t.metadata.labels.pop(key, None)
    t.metadata.annotations.update(pod.metadata.annotations)
    t.spec.CopyFrom(pod.spec)
    for name in ("node_name", "hostname", "subdomain", "priority"):
        t.spec.ClearField(name)
    return t


def new_stateful_set_pod(
    s: types_pb2.StatefulSet,
    template: types_pb2.PodTemplateSpec,
    ordinal: int,
    revision: str,
    options: ssu.StatefulSetOptions,
) -> types_pb2.Pod:
    """newStatefulSetPod with setPodRevision: the template's pod named `<set>-<ordinal>`, its
    hostname and subdomain, identity labels, claim volumes and revision label."""
    pod = pod_from_template(template, s, new_controller_ref(s))
    pod.metadata.ClearField("generate_name")
    pod.metadata.name = ssu.pod_name(s, ordinal)
    ssu.update_identity(s, pod, options)
    pod.spec.hostname = pod.metadata.name
    pod.spec.subdomain = s.spec.service_name
    ssu.update_storage(s, pod)
    pod.metadata.labels[ssu.REVISION_LABEL] = revision
    return pod


@dataclass
class _Sync:
    """What one updateStatefulSet works on."""

    s: types_pb2.StatefulSet
    status: types_pb2.StatefulSetStatus
    current_revision: str
    update_revision: str
    current_template: types_pb2.PodTemplateSpec
    monotonic: bool
    replicas: list[types_pb2.Pod] = field(default_factory=list)
    condemned: list[types_pb2.Pod] = field(default_factory=list)


class StatefulSetControl:
    """See the module docstring."""

    def __init__(
        self, pod_control: StatefulPodControl, clock: Clock, options: ssu.StatefulSetOptions
    ) -> None:
        self._pods = pod_control
        self._clock = clock
        self._options = options
        self.revisions = RevisionTemplates()

    def _revisions_of(
        self, s: types_pb2.StatefulSet, pods: Sequence[types_pb2.Pod]
    ) -> tuple[str, str, types_pb2.PodTemplateSpec]:
        """(current revision, update revision, the current revision's template)."""
        collision = s.status.collision_count if s.status.HasField("collision_count") else 0
        update = ssu.revision_name(s, collision)
        current = s.status.current_revision or update
        uid = s.metadata.uid
        template = self.revisions.template(uid, current)
        if current == update:
            template = s.spec.template
        elif template is None:
            for pod in pods:
                if ssu.pod_revision(pod) == current and not ssu.is_terminating(pod):
                    template = template_from_pod(pod)
                    break
        self.revisions.remember(uid, {update: s.spec.template, current: template})
        if template is None:
            logger.info(
                "statefulset %s: the template of current revision %s is unknown, pods below "
                "the partition are created at %s",
                object_key(s),
                current,
                update,
            )
            template = s.spec.template
        return current, update, template

    def _update_status(self, sync: _Sync, *lists: Sequence[types_pb2.Pod]) -> None:
        """updateStatus over `lists` of pods (computeReplicaStatus)."""
        status, s = sync.status, sync.s
        now = self._clock.now()
        mrs = s.spec.min_ready_seconds
        counts = [0, 0, 0, 0, 0]
        for pods in lists:
            for pod in pods:
                created = ssu.is_created(pod)
                counts[0] += created
                if ssu.is_running_and_ready(pod):
                    counts[1] += 1
                    counts[2] += ssu.is_running_and_available(pod, mrs, now)
                if created and not ssu.is_terminating(pod):
                    revision = ssu.pod_revision(pod)
                    counts[3] += revision == sync.current_revision
                    counts[4] += revision == sync.update_revision
        (
            status.replicas,
            status.ready_replicas,
            status.available_replicas,
            status.current_replicas,
            status.updated_replicas,
        ) = counts

    async def update_stateful_set(
        self, s: types_pb2.StatefulSet, pods: Sequence[types_pb2.Pod]
    ) -> tuple[types_pb2.StatefulSetStatus, ApiError | None]:
        """The status to write and the error of the sync (None: done for now)."""
        current, update, current_template = self._revisions_of(s, pods)
        status = types_pb2.StatefulSetStatus(
            observed_generation=s.metadata.generation,
            current_revision=current,
            update_revision=update,
            collision_count=s.status.collision_count if s.status.HasField("collision_count") else 0,
        )
        status.conditions.extend(s.status.conditions)
        sync = _Sync(s, status, current, update, current_template, not ssu.allows_burst(s))
        self._update_status(sync, pods)
        try:
            await self._update(sync, pods)
            error = None
        except ApiError as e:
            error = e
        self._update_status(sync, sync.replicas, sync.condemned)
        ssu.complete_rolling_update(s, status)
        return status, error

    async def _update(self, sync: _Sync, pods: Sequence[types_pb2.Pod]) -> None:
        s, opts = sync.s, self._options
        start, count = ssu.start_ordinal(s, opts), ssu.replicas(s)
        slots: list[types_pb2.Pod | None] = [None] * count
        for pod in pods:
            ordinal = ssu.ordinal_of(pod)
            if ssu.in_ordinal_range(pod, s, opts):
                slots[ordinal - start] = pod
            elif ordinal >= 0:
                sync.condemned.append(pod)
        for i, existing in enumerate(slots):
            if existing is None:
                ordinal = start + i
                below = ssu.is_rolling_update(s) and ordinal < start + ssu.partition(s)
                slots[i] = new_stateful_set_pod(
                    s,
                    sync.current_template if below else s.spec.template,
                    ordinal,
                    sync.current_revision if below else sync.update_revision,
                    opts,
                )
        sync.replicas = [p for p in slots if p is not None]
        sync.condemned = ssu.by_ordinal(sync.condemned, descending=True)
        now = self._clock.now()
        mrs = s.spec.min_ready_seconds
        first_unavailable: types_pb2.Pod | None = None
        for pod in [*sync.replicas, *reversed(sync.condemned)]:
            if ssu.is_unavailable(pod, mrs, now):
                first_unavailable = pod
                break
        if s.metadata.HasField("deletion_timestamp"):
            return
        replicas, condemned = sync.replicas, sync.condemned

        async def process_replica(i: int) -> bool:
            return await self._process_replica(sync, replicas[i])

        if await _run_for_all(len(replicas), process_replica, sync.monotonic):
            return

        async def fix_claims(i: int) -> bool:
            pod = condemned[i]
            if opts.retention_policy and not self._pods.claims_match_retention_policy(s, pod):
                await self._pods.update_pod_claims_for_retention_policy(s, pod)
            return False

        if await _run_for_all(len(condemned), fix_claims, sync.monotonic):
            return

        async def process_condemned(i: int) -> bool:
            return await self._process_condemned(sync, condemned[i], first_unavailable)

        if await _run_for_all(len(condemned), process_condemned, sync.monotonic):
            return
        if not ssu.is_rolling_update(s):
            return  # OnDelete: pods are updated when they are deleted
        if opts.max_unavailable:
            await self._rolling_update_max_unavailable(sync)
        else:
            await self._rolling_update(sync)

    async def _process_replica(self, sync: _Sync, pod: types_pb2.Pod) -> bool:
        """processReplica: True when the sync must stop here."""
        s, monotonic = sync.s, sync.monotonic
        if ssu.is_failed(pod) or ssu.is_succeeded(pod):
            if not ssu.is_terminating(pod):
                logger.info(
                    "statefulset %s: deleting pod %s in phase %s to recreate it",
                    object_key(s),
                    pod.metadata.name,
                    pod.status.phase,
                )
                await self._pods.delete_stateful_pod(s, pod)
            return True
        if not ssu.is_created(pod):
            if self._pods.pod_claim_is_stale(s, pod):
                return True  # the garbage collector deletes the claim first
            await self._pods.create_stateful_pod(s, pod)
            logger.info("statefulset %s: created pod %s", object_key(s), pod.metadata.name)
            if monotonic:
                return True
            return False
        if ssu.is_pending(pod):
            await self._pods.create_missing_claims(s, pod)
        now = self._clock.now()
        if monotonic and (
            ssu.is_terminating(pod)
            or not ssu.is_running_and_ready(pod)
            or not ssu.is_running_and_available(pod, s.spec.min_ready_seconds, now)
        ):
            return True
        retention_ok = (
            not self._options.retention_policy or self._pods.claims_match_retention_policy(s, pod)
        )
        if ssu.identity_matches(s, pod) and ssu.storage_matches(s, pod) and retention_ok:
            return False
        replica = types_pb2.Pod()
        replica.CopyFrom(pod)
        await self._pods.update_stateful_pod(s, replica)
        return False

    async def _process_condemned(
        self, sync: _Sync, pod: types_pb2.Pod, first_unavailable: types_pb2.Pod | None
    ) -> bool:
        """processCondemned: True when the sync must stop here."""
        s, monotonic = sync.s, sync.monotonic
        if ssu.is_terminating(pod):
            return monotonic
        now = self._clock.now()
        unhealthy = not ssu.is_running_and_ready(pod) or not ssu.is_running_and_available(
            pod, s.spec.min_ready_seconds, now
        )
        if monotonic and unhealthy and pod is not first_unavailable:
            return True
        logger.info(
            "statefulset %s: deleting pod %s for scale down", object_key(s), pod.metadata.name
        )
        await self._pods.delete_stateful_pod(s, pod)
        return True

    async def _rolling_update(self, sync: _Sync) -> None:
        """The highest-ordinal replica at or above the partition that is not at the update
        revision is deleted; a replica above it that is not available yet waits."""
        s, status = sync.s, sync.status
        now = self._clock.now()
        update_min = ssu.partition(s)
        for target in range(len(sync.replicas) - 1, update_min - 1, -1):
            pod = sync.replicas[target]
            if ssu.pod_revision(pod) != sync.update_revision and not ssu.is_terminating(pod):
                logger.info(
                    "statefulset %s: deleting pod %s for update to revision %s",
                    object_key(s),
                    pod.metadata.name,
                    sync.update_revision,
                )
                try:
                    await self._pods.delete_stateful_pod(s, pod)
                except NotFound:
                    pass
                status.current_replicas -= 1
                return
            if ssu.is_unavailable(pod, s.spec.min_ready_seconds, now):
                return

    async def _rolling_update_max_unavailable(self, sync: _Sync) -> None:
        """updateStatefulSetAfterInvariantEstablished (MaxUnavailableStatefulSet): with
        `unavailable` replicas not available, up to maxUnavailable - unavailable replicas at
        or above the partition that are not at the update revision are deleted, the highest
        ordinals first (none while more than maxUnavailable are unavailable)."""
        s, status = sync.s, sync.status
        now = self._clock.now()
        limit = ssu.max_unavailable(s)
        unavailable = sum(
            ssu.is_unavailable(p, s.spec.min_ready_seconds, now) for p in sync.replicas
        )
        if unavailable > limit:
            return
        budget = limit - unavailable
        for target in range(len(sync.replicas) - 1, ssu.partition(s) - 1, -1):
            if budget <= 0:
                return
            pod = sync.replicas[target]
            if ssu.pod_revision(pod) != sync.update_revision and not ssu.is_terminating(pod):
                logger.info(
                    "statefulset %s: deleting pod %s for update to revision %s",
                    object_key(s),
                    pod.metadata.name,
                    sync.update_revision,
                )
                try:
                    await self._pods.delete_stateful_pod(s, pod)
                except NotFound:
                    pass
                budget -= 1
                status.current_replicas -= 1


async def _run_for_all(count: int, fn: Callable[[int], Awaitable[bool]], monotonic: bool) -> bool:
    """runForAll: monotonic, `fn` on each index in order until one says stop (True); else all
    at once in slow-start batches. True when the sync must stop (an error is raised)."""
    if monotonic:
        for i in range(count):
            if await fn(i):
                return True
        return False
    indices = list(range(count))

    async def one() -> None:
        await fn(indices.pop(0))

    _, error = await run_slow_start(count, one)
    if error is not None:
        raise error
    return False

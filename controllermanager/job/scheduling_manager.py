"""The Job controller's Workload and PodGroup (KEP-5547, gate WorkloadWithJob; upstream
pkg/controller/job/job_scheduling_manager.go of 1.36, kubernetes/kubernetes PR #136976's
follow-up, read at the 1.36 text with scheduling.k8s.io/v1alpha2).

A Job eligible for gang scheduling (`is_gang_scheduling_eligible`: parallelism > 1, Indexed
completion mode, completions == parallelism, no spec.schedulingGroup in its pod template: the
user's opt-out) gets, before its first pod:
- a Workload `compute_workload_name(job)` in its namespace, controlled by the Job (owner
  reference controller=true, blockOwnerDeletion=true), spec.controllerRef {apiGroup batch,
  kind Job, name}, one PodGroupTemplate `<job>-worker-0` with a gang policy of minCount =
  parallelism; event Normal WorkloadCreated "Created Workload NAME with gang scheduling
  (minCount=N)";
- a PodGroup `compute_pod_group_name(workload, template)` controlled by the Job, with a second,
  non-controller owner reference to the Workload, spec.workloadRef {workloadName, templateName}
  and the template's scheduling policy; event Normal PodGroupCreated "Created PodGroup NAME for
  Workload NAME".
Its pods then name the PodGroup in spec.schedulingGroup.podGroupName. Both objects are found
again by their deterministic names (restarts, other syncs); a Job that already has pods gets
none created (a Job from before the gate was turned on keeps scheduling pod by pod), only
those found are used. A Workload found with other than one template falls back to pod-by-pod
scheduling with the Warning event UnsupportedWorkloadStructure. Changes to either object queue
the Job that owns them (owner reference batch/v1 Job). The garbage collector deletes both
with the Job (their owner references).

1.37: modelled as 1.36 (the same eligibility, names and template name), in 1.37's PodGroup
shape (spec.workloadRef). Upstream's 1.37 cycle rebuilt this file on the shared workloadbuilder
with Job.spec.scheduling (batch/v1 JobSchedulingConfiguration: every Job gets a Workload,
Basic by default, a template `<job>-pgt-0`, gang minCount following parallelism); that API
field is absent from kubernetes/api at v0.37.0-beta.0 and the only controller text of that
design in hand is newer than 1.37 (it uses a managed-by annotation 1.37's API does not have),
so which of the two designs 1.37.0 ships is not established here: kemu keeps 1.36's.

Names (upstream computeWorkloadName / computePodGroupName): the hash is FNV-1a 32 of, for the
Workload, hashutil.DeepHashObject's spew dump of the Job's types.UID (the bytes
`(types.UID)"<uid>"`), for the PodGroup the workload name then the template name; its decimal
value is passed through rand.SafeEncodeString. Prefixes are cut so that the whole name fits
a DNS-1123 subdomain (253).
"""

from __future__ import annotations

import logging
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.machinery import batch
from kemu.machinery.apps import fnv32a, safe_encode
from kemu.machinery.errors import AlreadyExists
from kemu.machinery.keys import object_key
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING, kind_of

logger = logging.getLogger(__name__)

DNS1123_SUBDOMAIN_MAX_LENGTH: Final = 253
WORKLOAD_CREATED: Final = "WorkloadCreated"
POD_GROUP_CREATED: Final = "PodGroupCreated"
UNSUPPORTED_WORKLOAD_STRUCTURE: Final = "UnsupportedWorkloadStructure"


def is_gang_scheduling_eligible(job: types_pb2.Job) -> bool:
    """isGangSchedulingEligible: parallelism > 1, Indexed, completions == parallelism, and
    no spec.schedulingGroup in the pod template (the opt-out)."""
    spec = job.spec
    if not spec.HasField("parallelism") or spec.parallelism <= 1:
        return False
    if spec.completion_mode != batch.INDEXED:
        return False
    if not spec.HasField("completions") or spec.completions != spec.parallelism:
        return False
    return not spec.template.spec.HasField("scheduling_group")


def compute_workload_name(job_name: str, job_uid: str) -> str:
    """computeWorkloadName: `<job name, cut>-<hash of the uid>`."""
    digest = safe_encode(str(fnv32a(f'(types.UID)"{job_uid}"'.encode())))
    prefix = job_name[: DNS1123_SUBDOMAIN_MAX_LENGTH - len(digest) - 1]
    return f"{prefix}-{digest}"


def compute_pod_group_name(workload_name: str, template_name: str) -> str:
    """computePodGroupName: `<workload>-<template>-<hash of both>`, the two names cut to fit:
    each keeps up to half the room, a short one leaves the rest to the other, and when both
    are long the workload name gets the odd character."""
    digest = safe_encode(str(fnv32a((workload_name + template_name).encode())))
    room = DNS1123_SUBDOMAIN_MAX_LENGTH - len(digest) - 2
    wl, tpl = workload_name, template_name
    if len(wl) + len(tpl) > room:
        half = room // 2
        if len(wl) <= half:
            tpl = tpl[: room - len(wl)]
        elif len(tpl) <= half:
            wl = wl[: room - len(tpl)]
        else:
            wl, tpl = wl[: room - half], tpl[:half]
    return f"{wl}-{tpl}-{digest}"


def build_pod_group_templates(job: types_pb2.Job) -> list[types_pb2.PodGroupTemplate]:
    """buildPodGroupTemplates: one template `<job>-worker-0`, gang with minCount =
    parallelism."""
    template = types_pb2.PodGroupTemplate(name=f"{job.metadata.name}-worker-0")
    template.scheduling_policy.gang.min_count = job.spec.parallelism
    return [template]


def new_workload(job: types_pb2.Job, owner: types_pb2.OwnerReference) -> types_pb2.Workload:
    """The Workload createWorkloadForJob creates."""
    wl = types_pb2.Workload()
    wl.metadata.name = compute_workload_name(job.metadata.name, job.metadata.uid)
    wl.metadata.namespace = job.metadata.namespace
    wl.metadata.owner_references.append(owner)
    ref = wl.spec.controller_ref
    ref.api_group, ref.kind, ref.name = "batch", "Job", job.metadata.name
    wl.spec.pod_group_templates.extend(build_pod_group_templates(job))
    return wl


def new_pod_group(
    job: types_pb2.Job, workload: types_pb2.Workload, owner: types_pb2.OwnerReference
) -> types_pb2.PodGroup:
    """The PodGroup createPodGroupForWorkload creates, for the Workload's first template."""
    template = workload.spec.pod_group_templates[0]
    pg = types_pb2.PodGroup()
    pg.metadata.name = compute_pod_group_name(workload.metadata.name, template.name)
    pg.metadata.namespace = job.metadata.namespace
    pg.metadata.owner_references.append(owner)
    pg.metadata.owner_references.add(
        api_version=kind_of(workload).api_version,
        kind="Workload",
        name=workload.metadata.name,
        uid=workload.metadata.uid,
    )
    pg.spec.workload_ref.workload_name = workload.metadata.name
    pg.spec.workload_ref.template_name = template.name
    pg.spec.scheduling_policy.CopyFrom(template.scheduling_policy)
    return pg


def owning_job_key(meta: types_pb2.ObjectMeta) -> str | None:
    """enqueueJobFromOwnerRef: the key of the batch/v1 Job among the owner references."""
    for ref in meta.owner_references:
        if ref.kind == "Job" and ref.api_version == "batch/v1":
            return f"{meta.namespace}/{ref.name}"
    return None


class JobSchedulingManager:
    """The Job controller's part above (upstream's Controller methods of the same file):
    built only with WorkloadWithJob on, when it adds the Workload and PodGroup informers."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        recorder: EventRecorder,
        queue: WorkQueue,
    ) -> None:
        self._client = client
        self._recorder = recorder
        self._queue = queue
        self.workloads: Informer[types_pb2.Workload] = informers.informer(types_pb2.Workload)
        self.pod_groups: Informer[types_pb2.PodGroup] = informers.informer(types_pb2.PodGroup)
        for informer in (self.workloads, self.pod_groups):
            informer.add_event_handler(
                FuncHandler(
                    lambda obj: self._enqueue_owner(obj.metadata),
                    lambda _old, new: self._enqueue_owner(new.metadata),
                    lambda obj: self._enqueue_owner(obj.metadata),
                )
            )

    def _enqueue_owner(self, meta: types_pb2.ObjectMeta) -> None:
        key = owning_job_key(meta)
        if key is not None:
            self._queue.add(key)

    async def ensure(
        self, job: types_pb2.Job, owner: types_pb2.OwnerReference, *, has_pods: bool
    ) -> types_pb2.PodGroup | None:
        """ensureWorkloadAndPodGroup: the Job's PodGroup, found or (before its first pod)
        created with its Workload; None: its pods are scheduled one by one. Raises an
        ApiError to be retried."""
        if not is_gang_scheduling_eligible(job):
            return None
        workload = await self._ensure_workload(job, owner, has_pods=has_pods)
        if workload is None:
            return None
        return await self._ensure_pod_group(job, workload, owner, has_pods=has_pods)

    def _find_workload(self, job: types_pb2.Job) -> types_pb2.Workload | None:
        name = compute_workload_name(job.metadata.name, job.metadata.uid)
        return self.workloads.lister.get(name, job.metadata.namespace)

    async def _ensure_workload(
        self, job: types_pb2.Job, owner: types_pb2.OwnerReference, *, has_pods: bool
    ) -> types_pb2.Workload | None:
        workload = self._find_workload(job)
        if workload is None:
            if has_pods:
                return None
            wanted = new_workload(job, owner)
            try:
                workload = await self._client.create(wanted)
            except AlreadyExists:
                # Created concurrently (or our informer is behind): read it.
                workload = await self._client.get(
                    types_pb2.Workload, wanted.metadata.name, wanted.metadata.namespace
                )
            else:
                self._recorder.event(
                    job,
                    EVENT_NORMAL,
                    WORKLOAD_CREATED,
                    "Create",
                    f"Created Workload {workload.metadata.name} with gang scheduling "
                    f"(minCount={job.spec.parallelism})",
                )
        count = len(workload.spec.pod_group_templates)
        if count != 1:
            self._recorder.event(
                job,
                EVENT_WARNING,
                UNSUPPORTED_WORKLOAD_STRUCTURE,
                "Create",
                f"Workload {workload.metadata.name} has {count} PodGroupTemplates "
                "(expected 1), falling back to normal scheduling",
            )
            return None
        return workload

    async def _ensure_pod_group(
        self,
        job: types_pb2.Job,
        workload: types_pb2.Workload,
        owner: types_pb2.OwnerReference,
        *,
        has_pods: bool,
    ) -> types_pb2.PodGroup | None:
        template = workload.spec.pod_group_templates[0]
        name = compute_pod_group_name(workload.metadata.name, template.name)
        pg = self.pod_groups.lister.get(name, job.metadata.namespace)
        if pg is not None or has_pods:
            return pg
        wanted = new_pod_group(job, workload, owner)
        try:
            pg = await self._client.create(wanted)
        except AlreadyExists:
            return await self._client.get(types_pb2.PodGroup, name, job.metadata.namespace)
        self._recorder.event(
            job,
            EVENT_NORMAL,
            POD_GROUP_CREATED,
            "Create",
            f"Created PodGroup {pg.metadata.name} for Workload {workload.metadata.name}",
        )
        logger.info("job %s: created Workload and PodGroup %s", object_key(job), name)
        return pg

"""The Job controller's Workload and PodGroup (KEP-5547, gate WorkloadWithJob; upstream
pkg/controller/job/job_scheduling_manager.go, read at its 1.36 text with
scheduling.k8s.io/v1alpha2 and its 1.37-cycle text on the workloadbuilder library).

A Job eligible for gang scheduling (`is_gang_scheduling_eligible`: parallelism > 1, Indexed
completion mode, completions == parallelism, no spec.schedulingGroup in its pod template: the
user's opt-out) gets, before its first pod:
- a Workload `compute_workload_name(name, uid)` in its namespace, controlled by the Job (owner
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

1.37 (VersionRules.job_workload_builder; upstream rebuilt this file on the shared
workloadbuilder library with the new Job.spec.scheduling, KEP-5547 as amended by
kubernetes/enhancements#6153 and the 1.37 release blog, kubernetes/website#56215):
- every Job whose pod template has no spec.schedulingGroup and that has no controller owner
  (`should_manage_workload_for_job`; a Job a CronJob or a JobSet controls is left to its
  parent) gets a Workload and a PodGroup, created only while the Job is new (`is_new_job`:
  no pods, no startTime, nothing succeeded or failed, no Suspended condition), otherwise only
  found again;
- the one template is `<job>-pgt-0`; its policy is spec.scheduling.schedulingPolicy, Basic
  when unset, a gang without minCount getting the Job's parallelism; schedulingConstraints,
  disruptionMode and resourceClaims are copied from spec.scheduling; the PodGroup copies the
  template (workloadRef, policy, constraints, disruption mode, claims);
- only objects the Job controls (owner reference) are used; a Workload with other than one
  template falls back to pod-by-pod scheduling (logged);
- a changed gang size (spec.scheduling's minCount, or parallelism when it is unset) is written
  to the Workload's template and the PodGroup (`syncGangMinCount`; minCount is mutable at
  1.37);
- events WorkloadCreated "Created Workload NAME for Job NAME" and PodGroupCreated "Created
  PodGroup NAME for Job NAME".
Not modelled at 1.37: the delegation of a PodGroup by a parent controller (the group-template
annotation), the pod template's priorityClassName on the template, the workloadbuilder's
validation of spec.scheduling (the apiserver's), the Workload/PodGroup informer indexes
(kemu looks the objects up by their deterministic names).

Names (upstream computeWorkloadName / computePodGroupName): the hash is FNV-1a 32 of, for the
Workload, hashutil.DeepHashObject's spew dump of the Job's types.UID (the bytes
`(types.UID)"<uid>"`), for the PodGroup the workload name then the template name; its decimal
value is passed through rand.SafeEncodeString. Prefixes are cut so that the whole name fits
a DNS-1123 subdomain (253).
"""

from __future__ import annotations

import logging
from typing import Final, TypeVar

from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.version_rules import VersionRules
from kemu.machinery import batch
from kemu.machinery.apps import fnv32a, safe_encode
from kemu.machinery.errors import AlreadyExists
from kemu.machinery.keys import object_key
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING, kind_of
from kemu.machinery.owners import controller_of
from kemu.machinery.validation.names import DNS1123_SUBDOMAIN_MAX_LENGTH

logger = logging.getLogger(__name__)

M = TypeVar("M", types_pb2.Workload, types_pb2.PodGroup)

POD_GROUP_TEMPLATE_SUFFIX_1_37: Final = "pgt-0"
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


def should_manage_workload_for_job(job: types_pb2.Job) -> bool:
    """1.37 shouldManageWorkloadForJob (the gate checked by the caller): no
    spec.schedulingGroup in the pod template (the user's own group) and no controller owner
    (a parent such as JobSet owns the Workload)."""
    if job.spec.template.spec.HasField("scheduling_group"):
        return False
    return controller_of(job) is None


def is_new_job(job: types_pb2.Job, has_pods: bool) -> bool:
    """1.37 isNewJob: the Job never started: no pods, no startTime, nothing succeeded or
    failed, and no Suspended condition."""
    status = job.status
    if has_pods or status.HasField("start_time") or status.succeeded or status.failed:
        return False
    return batch.find_condition(job, batch.SUSPENDED) is None


def gang_min_count(job: types_pb2.Job) -> int | None:
    """The gang size spec.scheduling asks for (minCount, else parallelism, else 1: 1.37's
    defaultMinCountForJob); None for a Basic Job."""
    policy = job.spec.scheduling.scheduling_policy
    if not policy.HasField("gang"):
        return None
    if policy.gang.HasField("min_count"):
        return policy.gang.min_count
    return job.spec.parallelism if job.spec.HasField("parallelism") else 1


def build_pod_group_template_1_37(job: types_pb2.Job) -> types_pb2.PodGroupTemplate:
    """1.37 buildWorkloadItem compiled: the one template `<job>-pgt-0` from spec.scheduling,
    Basic by default."""
    scheduling = job.spec.scheduling
    template = types_pb2.PodGroupTemplate(
        name=f"{job.metadata.name}-{POD_GROUP_TEMPLATE_SUFFIX_1_37}"
    )
    min_count = gang_min_count(job)
    if min_count is None:
        template.scheduling_policy.basic.SetInParent()
    else:
        template.scheduling_policy.gang.min_count = min_count
    if scheduling.HasField("scheduling_constraints"):
        for constraint in scheduling.scheduling_constraints.topology:
            template.scheduling_constraints.topology.add(key=constraint.key)
    if scheduling.HasField("disruption_mode"):
        if scheduling.disruption_mode.HasField("all"):
            template.disruption_mode.all.SetInParent()
        else:
            template.disruption_mode.single.SetInParent()
    for claim in scheduling.resource_claims:
        out = template.resource_claims.add(name=claim.name)
        if claim.HasField("resource_claim_name"):
            out.resource_claim_name = claim.resource_claim_name
        if claim.HasField("resource_claim_template_name"):
            out.resource_claim_template_name = claim.resource_claim_template_name
    return template


def new_workload(
    job: types_pb2.Job,
    owner: types_pb2.OwnerReference,
    templates: list[types_pb2.PodGroupTemplate] | None = None,
) -> types_pb2.Workload:
    """The Workload createWorkloadForJob creates (1.36's templates unless given)."""
    wl = types_pb2.Workload()
    wl.metadata.name = compute_workload_name(job.metadata.name, job.metadata.uid)
    wl.metadata.namespace = job.metadata.namespace
    wl.metadata.owner_references.append(owner)
    ref = wl.spec.controller_ref
    ref.api_group, ref.kind, ref.name = "batch", "Job", job.metadata.name
    wl.spec.pod_group_templates.extend(
        build_pod_group_templates(job) if templates is None else templates
    )
    return wl


def new_pod_group(
    job: types_pb2.Job,
    workload: types_pb2.Workload,
    owner: types_pb2.OwnerReference,
    workload_api_version: str = kind_of(types_pb2.Workload()).api_version,
) -> types_pb2.PodGroup:
    """The PodGroup createPodGroupForWorkload creates, for the Workload's first template; its
    reference to the Workload names the group version served at the emulated version (1.36
    scheduling.k8s.io/v1alpha2, 1.37 v1beta1)."""
    template = workload.spec.pod_group_templates[0]
    pg = types_pb2.PodGroup()
    pg.metadata.name = compute_pod_group_name(workload.metadata.name, template.name)
    pg.metadata.namespace = job.metadata.namespace
    pg.metadata.owner_references.append(owner)
    pg.metadata.owner_references.add(
        api_version=workload_api_version,
        kind="Workload",
        name=workload.metadata.name,
        uid=workload.metadata.uid,
    )
    pg.spec.workload_ref.workload_name = workload.metadata.name
    pg.spec.workload_ref.template_name = template.name
    pg.spec.scheduling_policy.CopyFrom(template.scheduling_policy)
    if template.HasField("scheduling_constraints"):
        pg.spec.scheduling_constraints.CopyFrom(template.scheduling_constraints)
    if template.HasField("disruption_mode"):
        pg.spec.disruption_mode.CopyFrom(template.disruption_mode)
    pg.spec.resource_claims.extend(template.resource_claims)
    return pg


def owning_job_key(meta: types_pb2.ObjectMeta) -> str | None:
    """enqueueJobFromOwnerRef: the key of the batch/v1 Job among the owner references."""
    for ref in meta.owner_references:
        if ref.kind == "Job" and ref.api_version == "batch/v1":
            return f"{meta.namespace}/{ref.name}"
    return None


def controlled_by(obj: types_pb2.Workload | types_pb2.PodGroup, job: types_pb2.Job) -> bool:
    """metav1.IsControlledBy: the controller owner reference is the Job (by uid)."""
    ref = controller_of(obj)
    return ref is not None and ref.uid == job.metadata.uid


class JobSchedulingManager:
    """The Job controller's part above (upstream's Controller methods of the same file):
    built only with WorkloadWithJob on, when it adds the Workload and PodGroup informers;
    `rules` says which version's design runs."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        recorder: EventRecorder,
        queue: WorkQueue,
        rules: VersionRules,
        workload_api_version: str,
    ) -> None:
        self._client = client
        self._workload_api_version = workload_api_version
        self._recorder = recorder
        self._queue = queue
        self._rules = rules
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
        created with its Workload; None: its pods are scheduled one by one. `job` is the
        stored Job (1.37's isNewJob reads its status). Raises an ApiError to be retried."""
        if self._rules.job_workload_builder:
            return await self._ensure_1_37(job, owner, has_pods=has_pods)
        if not is_gang_scheduling_eligible(job):
            return None
        workload = await self._ensure_workload(job, owner, has_pods=has_pods)
        if workload is None:
            return None
        return await self._ensure_pod_group(job, workload, owner, has_pods=has_pods)

    # ------------------------------------------------------------ 1.37

    async def _ensure_1_37(
        self, job: types_pb2.Job, owner: types_pb2.OwnerReference, *, has_pods: bool
    ) -> types_pb2.PodGroup | None:
        if not should_manage_workload_for_job(job):
            return None
        new = is_new_job(job, has_pods)
        workload = self._find_workload(job)
        if workload is not None and not controlled_by(workload, job):
            return None  # not ours (a user's object under the name): default scheduling
        if workload is None:
            if not new:
                return None
            wanted = new_workload(job, owner, [build_pod_group_template_1_37(job)])
            workload = await self._create(wanted)
            if workload is None:
                return None
            self._recorder.event(
                job,
                EVENT_NORMAL,
                WORKLOAD_CREATED,
                "Create",
                f"Created Workload {workload.metadata.name} for Job {job.metadata.name}",
            )
        if len(workload.spec.pod_group_templates) != 1:
            logger.info(
                "job %s: Workload %s has %d PodGroupTemplates, falling back to default scheduling",
                object_key(job),
                workload.metadata.name,
                len(workload.spec.pod_group_templates),
            )
            return None
        template = workload.spec.pod_group_templates[0]
        name = compute_pod_group_name(workload.metadata.name, template.name)
        pg = self.pod_groups.lister.get(name, job.metadata.namespace)
        if pg is not None and not controlled_by(pg, job):
            return None
        if pg is None and new:
            pg = await self._create(new_pod_group(job, workload, owner, self._workload_api_version))
            if pg is not None:
                self._recorder.event(
                    job,
                    EVENT_NORMAL,
                    POD_GROUP_CREATED,
                    "Create",
                    f"Created PodGroup {pg.metadata.name} for Job {job.metadata.name}",
                )
        if pg is not None:
            pg = await self._sync_gang_min_count(job, workload, pg)
        return pg

    async def _create(self, obj: M) -> M | None:
        """Creates `obj`; one created meanwhile (AlreadyExists) is read back, and used only
        when the same Job controls it."""
        try:
            return await self._client.create(obj)
        except AlreadyExists:
            found = await self._client.get(type(obj), obj.metadata.name, obj.metadata.namespace)
            ref = controller_of(obj)
            mine = ref is not None and controller_of(found) == ref
            return found if mine else None

    async def _sync_gang_min_count(
        self, job: types_pb2.Job, workload: types_pb2.Workload, pg: types_pb2.PodGroup
    ) -> types_pb2.PodGroup:
        """syncGangMinCount: the gang size the Job asks for now, written to its Workload's
        template and its PodGroup where it differs (a Basic Job: nothing)."""
        want = gang_min_count(job)
        if want is None:
            return pg
        template = workload.spec.pod_group_templates[0]
        if template.scheduling_policy.HasField("gang") and (
            template.scheduling_policy.gang.min_count != want
        ):
            new_wl = types_pb2.Workload()
            new_wl.CopyFrom(workload)
            new_wl.spec.pod_group_templates[0].scheduling_policy.gang.min_count = want
            await self._client.update(new_wl)
        if pg.spec.scheduling_policy.HasField("gang") and (
            pg.spec.scheduling_policy.gang.min_count != want
        ):
            new_pg = types_pb2.PodGroup()
            new_pg.CopyFrom(pg)
            new_pg.spec.scheduling_policy.gang.min_count = want
            return await self._client.update(new_pg)
        return pg

    # ------------------------------------------------------------ 1.36
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
        wanted = new_pod_group(job, workload, owner, self._workload_api_version)
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

"""Creating, updating and deleting a StatefulSet's pods and claims (upstream
pkg/controller/statefulset/stateful_pod_control.go).

- `create_stateful_pod`: the pod's claims first (each created when the claim informer does
  not have it; a claim being deleted is an error, so the pod waits for it to go), then the
  pod, then (StatefulSetAutoDeletePVC) the claims' ownerReferences after the retention policy.
- `update_stateful_pod`: restores a pod's identity labels and claim volumes (creating missing
  claims) and the claims' references.
- `delete_stateful_pod`, and the retention helpers the control loop calls for condemned
  pods: `claims_match_retention_policy`, `update_pod_claims_for_retention_policy`,
  `pod_claim_is_stale` (whenScaled Delete: a claim that still references an earlier pod of
  the ordinal blocks the new pod until the garbage collector has deleted the claim).

Events as upstream's recordPodEvent/recordClaimEvent: SuccessfulCreate "create Pod web-0 in
StatefulSet web successful", FailedCreate, SuccessfulDelete, SuccessfulUpdate, and for claims
"create Claim www-web-0 Pod web-0 in StatefulSet web success".
"""

from __future__ import annotations

import logging

from controllermanager import stateful_set_utils as ssu
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import Informer
from kemu.client.interface import ApiClient
from kemu.machinery.errors import AlreadyExists, ApiError, Invalid, NotFound
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING

logger = logging.getLogger(__name__)


def _pod_event(
    recorder: EventRecorder,
    verb: str,
    s: types_pb2.StatefulSet,
    pod: types_pb2.Pod,
    error: ApiError | None,
) -> None:
    name, set_name = pod.metadata.name, s.metadata.name
    if error is None:
        recorder.event(
            s,
            EVENT_NORMAL,
            f"Successful{verb.title()}",
            verb.title(),
            f"{verb} Pod {name} in StatefulSet {set_name} successful",
        )
    else:
        recorder.event(
            s,
            EVENT_WARNING,
            f"Failed{verb.title()}",
            verb.title(),
            f"{verb} Pod {name} in StatefulSet {set_name} failed error: {error.message}",
        )


class StatefulPodControl:
    """See the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        claims: Informer[types_pb2.PersistentVolumeClaim],
        recorder: EventRecorder,
        options: ssu.StatefulSetOptions,
    ) -> None:
        self._client = client
        self._claims = claims
        self._recorder = recorder
        self._options = options

    def _claim(self, namespace: str, name: str) -> types_pb2.PersistentVolumeClaim | None:
        return self._claims.lister.get(name, namespace)

    async def create_stateful_pod(self, s: types_pb2.StatefulSet, pod: types_pb2.Pod) -> None:
        try:
            await self.create_claims(s, pod)
        except ApiError as e:
            _pod_event(self._recorder, "create", s, pod, e)
            raise
        try:
            created = await self._client.create(pod)
        except AlreadyExists:
            raise  # no event: the informer is behind
        except ApiError as e:
            _pod_event(self._recorder, "create", s, pod, e)
            raise
        if self._options.retention_policy:
            try:
                await self.update_pod_claims_for_retention_policy(s, created)
            except ApiError as e:
                _pod_event(self._recorder, "update", s, created, e)
                raise
        _pod_event(self._recorder, "create", s, created, None)

    async def create_missing_claims(self, s: types_pb2.StatefulSet, pod: types_pb2.Pod) -> None:
        """createMissingPersistentVolumeClaims: for a pending pod whose claims went away."""
        await self.create_claims(s, pod)
        if self._options.retention_policy:
            try:
                await self.update_pod_claims_for_retention_policy(s, pod)
            except ApiError as e:
                _pod_event(self._recorder, "update", s, pod, e)
                raise

    async def update_stateful_pod(self, s: types_pb2.StatefulSet, pod: types_pb2.Pod) -> None:
        """UpdateStatefulPod (`pod` is the caller's copy). A Conflict is raised: the sync is
        retried from the informer's newer copy (upstream retries the same way in place)."""
        consistent = True
        if not ssu.identity_matches(s, pod):
            ssu.update_identity(s, pod, self._options)
            consistent = False
        try:
            if not ssu.storage_matches(s, pod):
                ssu.update_storage(s, pod)
                consistent = False
                await self.create_claims(s, pod)
            if self._options.retention_policy and not self.claims_match_retention_policy(s, pod):
                await self.update_pod_claims_for_retention_policy(s, pod)
                consistent = False
        except ApiError as e:
            _pod_event(self._recorder, "update", s, pod, e)
            raise
        if consistent:
            return
        try:
            await self._client.update(pod)
        except ApiError as e:
            _pod_event(self._recorder, "update", s, pod, e)
            raise
        _pod_event(self._recorder, "update", s, pod, None)

    async def delete_stateful_pod(self, s: types_pb2.StatefulSet, pod: types_pb2.Pod) -> None:
        try:
            await self._client.delete(types_pb2.Pod, pod.metadata.name, pod.metadata.namespace)
        except ApiError as e:
            _pod_event(self._recorder, "delete", s, pod, e)
            raise
        _pod_event(self._recorder, "delete", s, pod, None)

    # ------------------------------------------------------------ claims

    async def create_claims(self, s: types_pb2.StatefulSet, pod: types_pb2.Pod) -> None:
        """createPersistentVolumeClaims: every claim of the pod's ordinal the informer does
        not have is created; the first error is raised after every claim was tried."""
        errors: list[ApiError] = []
        for claim in ssu.claims_for(s, ssu.ordinal_of(pod)).values():
            existing = self._claim(claim.metadata.namespace, claim.metadata.name)
            if existing is not None:
                if existing.metadata.HasField("deletion_timestamp"):
                    errors.append(Invalid(f"pvc {claim.metadata.name} is being deleted"))
                continue
            try:
                await self._client.create(claim)
            except AlreadyExists:
                continue
            except ApiError as e:
                errors.append(e)
                self._recorder.event(
                    s,
                    EVENT_WARNING,
                    "FailedCreate",
                    "Create",
                    f"create Claim {claim.metadata.name} for Pod {pod.metadata.name} in "
                    f"StatefulSet {s.metadata.name} failed error: {e.message}",
                )
                continue
            logger.info(
                "statefulset %s/%s: created claim %s for pod %s",
                s.metadata.namespace,
                s.metadata.name,
                claim.metadata.name,
                pod.metadata.name,
            )
            self._recorder.event(
                s,
                EVENT_NORMAL,
                "SuccessfulCreate",
                "Create",
                f"create Claim {claim.metadata.name} Pod {pod.metadata.name} in StatefulSet "
                f"{s.metadata.name} success",
            )
        if errors:
            raise errors[0]

    def claims_match_retention_policy(self, s: types_pb2.StatefulSet, pod: types_pb2.Pod) -> bool:
        """ClaimsMatchRetentionPolicy: a missing claim is picked up later."""
        for template in s.spec.volume_claim_templates:
            name = ssu.claim_name(s, template, ssu.ordinal_of(pod))
            claim = self._claim(s.metadata.namespace, name)
            if claim is not None and not ssu.is_claim_owner_up_to_date(
                claim, s, pod, self._options
            ):
                return False
        return True

    async def update_pod_claims_for_retention_policy(
        self, s: types_pb2.StatefulSet, pod: types_pb2.Pod
    ) -> None:
        """UpdatePodClaimForRetentionPolicy: each claim's references rewritten (an update
        pinned to the informer's resourceVersion) where they do not follow the policy."""
        for template in s.spec.volume_claim_templates:
            name = ssu.claim_name(s, template, ssu.ordinal_of(pod))
            cached = self._claim(s.metadata.namespace, name)
            if cached is None or ssu.is_claim_owner_up_to_date(cached, s, pod, self._options):
                continue
            claim = types_pb2.PersistentVolumeClaim()
            claim.CopyFrom(cached)
            refs = ssu.updated_claim_owner_refs(claim, s, pod, self._options)
            del claim.metadata.owner_references[:]
            claim.metadata.owner_references.extend(refs)
            try:
                await self._client.update(claim)
            except NotFound:
                continue
            logger.info(
                "statefulset %s/%s: claim %s now owned by %s",
                s.metadata.namespace,
                s.metadata.name,
                name,
                ", ".join(f"{r.kind} {r.name}" for r in refs) or "nothing",
            )

    def pod_claim_is_stale(self, s: types_pb2.StatefulSet, pod: types_pb2.Pod) -> bool:
        """PodClaimIsStale: under whenScaled Delete, a claim that references an earlier pod of
        the ordinal (this pod not created yet has no uid) blocks the creation."""
        if ssu.retention_policy(s)[1] == ssu.RETAIN:
            return False
        for claim in ssu.claims_for(s, ssu.ordinal_of(pod)).values():
            existing = self._claim(claim.metadata.namespace, claim.metadata.name)
            if existing is not None and ssu.stale_pod_ref(existing, pod):
                return True
        return False

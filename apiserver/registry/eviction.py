"""pods/eviction: a DELETE of a pod that honours its PodDisruptionBudget (upstream
pkg/registry/core/pod/storage/eviction.go, EvictionREST.Create).

1. A pod that is Pending, has ended or is being deleted is deleted without looking at
   budgets (pinned to the resourceVersion read unless it ended or is being deleted).
2. Otherwise the one PDB matching it decides: none, delete; several, InternalError (500);
   an unready pod goes without taking a disruption when the PDB's unhealthyPodEvictionPolicy
   is AlwaysAllow, or (IfHealthyBudget, the default) the application is healthy enough, the
   DELETE then pinned to the resourceVersion read (a Conflict becomes 429: it may have turned
   ready); else the PDB's status must allow a disruption, which is taken (a CAS write of the
   PDB's status, retried on Conflict) before the delete.
3. The pod gets DisruptionTarget=True/EvictionByEvictionAPI when PodDisruptionConditions is
   on (beta, on by default, from 1.26; unconditional from 1.34), then the DELETE with the
   eviction's deleteOptions. A dry run checks everything and writes nothing.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Final

from google.protobuf.message import Message

from apiserver.admission.namespace_lifecycle import NamespaceLifecycle
from apiserver.registry.store import GenericStore
from kemu.api.v1 import api_pb2, types_pb2
from kemu.component.version_rules import VersionRules
from kemu.machinery import eviction as rules
from kemu.machinery.delete_options import check_delete_preconditions
from kemu.machinery.deletion import DeleteOptions, plan_delete
from kemu.machinery.errors import BadRequest, Conflict, Invalid, Timeout
from kemu.machinery.kinds import BY_KIND

logger = logging.getLogger(__name__)

_POD: Final = BY_KIND["Pod"]
_PDB: Final = BY_KIND["PodDisruptionBudget"]
_RETRIES: Final = 20  # upstream EvictionsRetry.Steps
DRY_RUN_ALL: Final = "All"

# Upstream changes no kemu gate models, by the version that turned them on by default.


@dataclasses.dataclass(frozen=True)
class EvictionOptions:
    delete: DeleteOptions
    dry_run: bool

    @classmethod
    def of(cls, eviction: api_pb2.Eviction) -> EvictionOptions:
        for value in eviction.dry_run:
            if value != DRY_RUN_ALL:
                raise Invalid.field(
                    "dryRun", f'Unsupported value: "{value}": supported values: "All"'
                )
        pre = eviction.preconditions
        options = DeleteOptions(
            grace_period=(
                eviction.grace_period_seconds if eviction.HasField("grace_period_seconds") else None
            ),
            uid=pre.uid if pre.HasField("uid") else None,
            resource_version=pre.resource_version if pre.HasField("resource_version") else None,
            propagation_policy=(
                eviction.propagation_policy if eviction.HasField("propagation_policy") else None
            ),
        )
        options.validate()
        return cls(options, bool(eviction.dry_run))


class EvictionREST:
    def __init__(
        self,
        store: GenericStore,
        lifecycle: NamespaceLifecycle,
        rules: VersionRules,
        *,
        disruption_conditions: bool,
    ) -> None:
        self._store = store
        self._lifecycle = lifecycle
        self._conditions = disruption_conditions
        self._honour_policy = rules.pdb_unhealthy_pod_eviction_policy

    async def create(self, eviction: api_pb2.Eviction) -> None:
        namespace = eviction.metadata.namespace or "default"
        name = eviction.metadata.name
        if not name:
            raise BadRequest("name in URL does not match name in Eviction object")
        options = EvictionOptions.of(eviction)
        # pods/eviction is a create: NamespaceLifecycle applies
        await self._lifecycle.admit_create("pods", name, namespace)
        pinned = options.delete.resource_version is not None
        pod: types_pb2.Pod | None = None
        for _ in range(_RETRIES):
            pod = await self._read_pod(namespace, name)
            if not rules.can_ignore_pdb(pod):
                break
            delete = options.delete
            if rules.should_enforce_resource_version(pod) and not pinned:
                delete = dataclasses.replace(delete, resource_version=pod.metadata.resource_version)
            try:
                await self._add_condition_and_delete(pod, delete, options.dry_run)
                return
            except Conflict:
                if pinned:
                    raise
        else:
            raise Conflict(f'Operation cannot be fulfilled on pods "{name}": too many conflicts')
        assert pod is not None
        pdb = rules.only_pdb(pod, self._pdbs(namespace))
        delete = options.delete
        unhealthy_goes = False
        if pdb is not None:
            unhealthy_goes = rules.unhealthy_pod_may_go(pod, pdb, honour_policy=self._honour_policy)
            if not unhealthy_goes:
                await self._take_disruption(pdb.metadata.name, pod, options.dry_run)
            else:
                # the pod must not have become ready since it was read
                delete = dataclasses.replace(delete, resource_version=pod.metadata.resource_version)
        try:
            await self._add_condition_and_delete(pod, delete, options.dry_run)
        except Conflict:
            if unhealthy_goes and not pinned and pdb is not None:
                raise rules.still_processing(pdb.metadata.name) from None
            raise

    async def _read_pod(self, namespace: str, name: str) -> types_pb2.Pod:
        pod = (await self._store.read(_POD, namespace, name)).obj
        assert isinstance(pod, types_pb2.Pod)
        return pod

    def _pdbs(self, namespace: str) -> list[types_pb2.PodDisruptionBudget]:
        return [
            co.obj
            for co in self._store.cache(_PDB).objects()
            if isinstance(co.obj, types_pb2.PodDisruptionBudget)
            and co.obj.metadata.namespace == namespace
        ]

    async def _take_disruption(self, pdb_name: str, pod: types_pb2.Pod, dry_run: bool) -> None:
        now = self._store.now()

        def mutate(obj: Message) -> Message:
            assert isinstance(obj, types_pb2.PodDisruptionBudget)
            rules.check_and_decrement(obj, pod.metadata.name, now, dry_run=dry_run)
            return obj

        if dry_run:
            current = (await self._store.read(_PDB, pod.metadata.namespace, pdb_name)).obj
            mutate(current)
            return
        try:
            await self._store.guaranteed_update(_PDB, pod.metadata.namespace, pdb_name, mutate)
        except Conflict:
            raise Timeout(
                f'Timeout: couldn\'t update PodDisruptionBudget "{pdb_name}" due to conflicts'
            ) from None

    async def _add_condition_and_delete(
        self, pod: types_pb2.Pod, options: DeleteOptions, dry_run: bool
    ) -> None:
        """The DisruptionTarget condition (a write of the latest pod, checked against the
        DELETE's preconditions), then the DELETE (upstream addConditionAndDeletePod)."""
        namespace, name = pod.metadata.namespace, pod.metadata.name
        if dry_run:
            current = await self._store.read(_POD, namespace, name)
            plan_delete(current.obj, options, self._store.now())  # its checks, no write
            return
        if self._conditions:
            now = self._store.now()

            def mutate(obj: Message) -> Message:
                assert isinstance(obj, types_pb2.Pod)
                check_delete_preconditions(
                    obj.metadata,
                    "Pod",
                    uid=options.uid or None,
                    resource_version=options.resource_version or None,
                )
                rules.add_disruption_target(obj, now)
                return obj

            written = await self._store.guaranteed_update(_POD, namespace, name, mutate)
            if options.resource_version is not None:
                # we wrote it: the DELETE is pinned to our write
                options = dataclasses.replace(
                    options,
                    resource_version=written.metadata.resource_version,  # type: ignore[attr-defined]
                )
        await self._store.delete(_POD, namespace, name, options)
        logger.info("pod %s/%s evicted", namespace, name)

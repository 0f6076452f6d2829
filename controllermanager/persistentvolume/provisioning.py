"""What the PersistentVolume controller does for an unbound claim no volume matches (upstream
pv_controller.go syncUnboundClaim's second half: assignDefaultStorageClass,
emitEventForUnboundDelayBindingClaim, provisionClaim with provisionClaimOperationExternal), and
what the emulated version changes in it.

kemu has no in-tree volume plugin: every provisioner is external (the simulated one included),
so provisioning is annotating the claim for its provisioner and recording ExternalProvisioning;
a class that does not exist, or an in-tree `kubernetes.io/` provisioner, is ProvisioningFailed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final

from controllermanager.persistentvolume.common import POD_PVC_INDEX
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import Lister
from kemu.client.interface import ApiClient
from kemu.component.featuregate import RETROACTIVE_DEFAULT_STORAGE_CLASS, FeatureGates
from kemu.component.version_rules import VersionRules
from kemu.machinery.keys import object_key
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING
from kemu.machinery.pod_strategy import TERMINAL_PHASES
from kemu.machinery.storage import (
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_STORAGE_PROVISIONER,
    claim_class,
    claim_has_class,
    default_class,
)
from kemu.scheduling.pv_helpers import binding_mode

logger = logging.getLogger(__name__)

WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"
WAIT_FOR_POD_SCHEDULED: Final = "WaitForPodScheduled"
EXTERNAL_PROVISIONING: Final = "ExternalProvisioning"
PROVISIONING_FAILED: Final = "ProvisioningFailed"


@dataclass(frozen=True)
class BinderBehaviour:
    """What the emulated version and its gates change in the controller (resolved once)."""

    retroactive_default_class: bool = True
    """RetroactiveDefaultStorageClass: a claim of no class gets the default class."""
    ga_provisioner_annotation: bool = True
    """Version rule storage_provisioner_annotation: the GA annotation beside the beta one."""
    external_provisioning_message_1_28: bool = True
    """Version rule external_provisioning_message_1_28: the ExternalProvisioning wording."""

    @classmethod
    def of(cls, gates: FeatureGates) -> BinderBehaviour:
        rules = VersionRules.at(gates.version)
        return cls(
            retroactive_default_class=gates.enabled(RETROACTIVE_DEFAULT_STORAGE_CLASS),
            ga_provisioner_annotation=rules.storage_provisioner_annotation,
            external_provisioning_message_1_28=rules.external_provisioning_message_1_28,
        )

    def external_provisioning_message(self, provisioner: str) -> str:
        if not self.external_provisioning_message_1_28:
            return (
                f'waiting for a volume to be created, either by external provisioner "{provisioner}" '
                "or manually created by system administrator"
            )
        return (
            f"Waiting for a volume to be created either by the external provisioner '{provisioner}' "
            "or manually by the system administrator. If volume creation is delayed, please "
            "verify that the provisioner is running and correctly registered."
        )


class ClaimProvisioning:
    """The controller's steps for a claim no volume matches; see the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        recorder: EventRecorder,
        classes: Lister[types_pb2.StorageClass],
        pods: Lister[types_pb2.Pod],
        behaviour: BinderBehaviour,
    ) -> None:
        self._client = client
        self._recorder = recorder
        self._classes = classes
        self._pods = pods
        self._behaviour = behaviour

    def is_delay_binding_mode(self, claim: types_pb2.PersistentVolumeClaim) -> bool:
        """IsDelayBindingMode: the claim's class exists and binds WaitForFirstConsumer."""
        name = claim_class(claim)
        cls = self._classes.get(name) if name else None
        return cls is not None and binding_mode(cls) == WAIT_FOR_FIRST_CONSUMER

    async def assign_default_class(self, claim: types_pb2.PersistentVolumeClaim) -> bool:
        """assignDefaultStorageClass (RetroactiveDefaultStorageClass): a claim that asked for
        no class gets the default one; True when the claim was updated."""
        if not self._behaviour.retroactive_default_class or claim_has_class(claim):
            return False
        cls = default_class(self._classes.list())
        if cls is None:
            return False
        new = types_pb2.PersistentVolumeClaim()
        new.CopyFrom(claim)
        new.spec.storage_class_name = cls.metadata.name
        await self._client.update(new)
        logger.info(
            "claim %s: assigned the default StorageClass %s", object_key(claim), cls.metadata.name
        )
        return True

    def emit_delay_binding_event(self, claim: types_pb2.PersistentVolumeClaim) -> None:
        """emitEventForUnboundDelayBindingClaim."""
        pods = [
            p.metadata.name
            for p in self._pods.by_index(POD_PVC_INDEX, object_key(claim))
            if p.status.phase not in TERMINAL_PHASES and not p.spec.node_name
        ]
        if not pods:
            reason, message = (
                WAIT_FOR_FIRST_CONSUMER,
                "waiting for first consumer to be created before binding",
            )
        elif len(pods) == 1:
            reason, message = WAIT_FOR_POD_SCHEDULED, f"waiting for pod {pods[0]} to be scheduled"
        else:
            reason = WAIT_FOR_POD_SCHEDULED
            message = f"waiting for pods {','.join(sorted(pods))} to be scheduled"
        self._recorder.event(claim, EVENT_NORMAL, reason, "", message)

    async def provision_claim(
        self, claim: types_pb2.PersistentVolumeClaim
    ) -> types_pb2.PersistentVolumeClaim:
        """provisionClaim with an external provisioner (provisionClaimOperationExternal): the
        claim is annotated with the class's provisioner, which creates the volume."""
        name = claim_class(claim)
        cls = self._classes.get(name) if name else None
        if cls is None:
            self._recorder.event(
                claim,
                EVENT_WARNING,
                PROVISIONING_FAILED,
                "",
                f'storageclass.storage.k8s.io "{claim_class(claim)}" not found',
            )
            return claim
        provisioner = cls.provisioner
        if provisioner.startswith("kubernetes.io/"):
            # kemu has no in-tree volume plugin (upstream's FindProvisionablePluginByName).
            self._recorder.event(
                claim,
                EVENT_WARNING,
                PROVISIONING_FAILED,
                "",
                f"no volume plugin matched name: {provisioner}",
            )
            return claim
        keys = [ANN_BETA_STORAGE_PROVISIONER]
        if self._behaviour.ga_provisioner_annotation:
            keys.append(ANN_STORAGE_PROVISIONER)
        if any(claim.metadata.annotations.get(k) != provisioner for k in keys):
            new = types_pb2.PersistentVolumeClaim()
            new.CopyFrom(claim)
            for k in keys:
                new.metadata.annotations[k] = provisioner
            claim = await self._client.update(new)
        self._recorder.event(
            claim,
            EVENT_NORMAL,
            EXTERNAL_PROVISIONING,
            "",
            self._behaviour.external_provisioning_message(provisioner),
        )
        return claim

"""The DefaultStorageClass admission plugin (upstream plugin/pkg/admission/storage/
storageclass/setdefault/admission.go), on by default at every emulated version: a new
PersistentVolumeClaim that asks for no class (no spec.storageClassName, not even "", and no
beta annotation) gets the default StorageClass's name in the create response, so the claim
never binds a class-less volume meant for claims of no class. With no default class the claim
is left alone. With several, from 1.26 the newest wins (VersionRules
newest_default_storage_class); before, the claim is refused."""

from __future__ import annotations

from collections.abc import Iterable

from kemu.api.v1 import types_pb2
from kemu.component.version_rules import VersionRules
from kemu.machinery.errors import Forbidden
from kemu.machinery.storage import claim_has_class, default_class, default_classes


def admit(
    claim: types_pb2.PersistentVolumeClaim,
    classes: Iterable[types_pb2.StorageClass],
    rules: VersionRules,
) -> None:
    """Sets the claim's class to the default one (see the module's docstring); Forbidden, with
    upstream's message, when several are default before 1.26."""
    if claim_has_class(claim):
        return
    candidates = default_classes(classes)
    if len(candidates) > 1 and not rules.newest_default_storage_class:
        raise Forbidden(
            f'persistentvolumeclaims "{claim.metadata.name}" is forbidden: Internal error '
            f"occurred: {len(candidates)} default StorageClasses were found"
        )
    chosen = default_class(candidates)
    if chosen is not None:
        claim.spec.storage_class_name = chosen.metadata.name

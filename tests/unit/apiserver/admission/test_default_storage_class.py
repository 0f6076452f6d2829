"""The DefaultStorageClass admission plugin (apiserver/admission/default_storage_class.py):
which claims get a class, which one, and the refusal before 1.26."""

from __future__ import annotations

import pytest

from apiserver.admission.default_storage_class import admit
from kemu.api.v1 import types_pb2
from kemu.component.version import Version
from kemu.component.version_rules import VersionRules
from kemu.machinery.errors import Forbidden
from kemu.machinery.storage import BETA_STORAGE_CLASS_ANNOTATION
from tests.unit.controllermanager.pv_objects import claim, storage_class

AT_1_37 = VersionRules.at(Version(1, 37))
AT_1_25 = VersionRules.at(Version(1, 25))


def classes(*named: tuple[str, bool, int]) -> list[types_pb2.StorageClass]:
    """(name, default, creation second) each."""
    out = []
    for name, default, created in named:
        sc = storage_class(name, default=default)
        sc.metadata.creation_timestamp.seconds = created
        out.append(sc)
    return out


def test_a_claim_of_no_class_gets_the_default_one() -> None:
    pvc = claim("c", "1Gi")
    admit(pvc, classes(("standard", True, 10), ("fast", False, 20)), AT_1_37)
    assert pvc.spec.storage_class_name == "standard"


def test_a_claim_that_asks_for_a_class_or_for_none_is_left_alone() -> None:
    default = classes(("standard", True, 10))
    empty = claim("empty", "1Gi", storage_class="")
    admit(empty, default, AT_1_37)
    assert empty.spec.HasField("storage_class_name") and empty.spec.storage_class_name == ""
    named = claim("named", "1Gi", storage_class="fast")
    admit(named, default, AT_1_37)
    assert named.spec.storage_class_name == "fast"
    beta = claim("beta", "1Gi")
    beta.metadata.annotations[BETA_STORAGE_CLASS_ANNOTATION] = "slow"
    admit(beta, default, AT_1_37)
    assert not beta.spec.HasField("storage_class_name")


def test_without_a_default_class_the_claim_keeps_no_class() -> None:
    pvc = claim("c", "1Gi")
    admit(pvc, classes(("fast", False, 10)), AT_1_37)
    assert not pvc.spec.HasField("storage_class_name")


def test_of_several_defaults_the_newest_wins_from_1_26_then_the_name() -> None:
    pvc = claim("c", "1Gi")
    admit(pvc, classes(("z-old", True, 10), ("a-new", True, 20)), AT_1_37)
    assert pvc.spec.storage_class_name == "a-new"
    tied = claim("t", "1Gi")
    admit(tied, classes(("a", True, 10), ("b", True, 10)), AT_1_37)
    assert tied.spec.storage_class_name == "b"


def test_before_1_26_several_defaults_refuse_the_claim() -> None:
    pvc = claim("data", "1Gi")
    with pytest.raises(Forbidden) as e:
        admit(pvc, classes(("a", True, 10), ("b", True, 20)), AT_1_25)
    assert str(e.value) == (
        'persistentvolumeclaims "data" is forbidden: Internal error occurred: '
        "2 default StorageClasses were found"
    )
    one = claim("one", "1Gi")
    admit(one, classes(("a", True, 10), ("b", False, 20)), AT_1_25)
    assert one.spec.storage_class_name == "a"

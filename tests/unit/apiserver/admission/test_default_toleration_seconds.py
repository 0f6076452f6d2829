"""The DefaultTolerationSeconds admission plugin."""

from __future__ import annotations

from apiserver.admission.default_toleration_seconds import admit_default_toleration_seconds
from kemu.api.v1 import types_pb2
from kemu.testing.builders import make_pod

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"


def _tolerations(pod: types_pb2.Pod) -> list[tuple[str, str, str, int | None]]:
    return [
        (
            t.key,
            t.operator,
            t.effect,
            t.toleration_seconds if t.HasField("toleration_seconds") else None,
        )
        for t in pod.spec.tolerations
    ]


def test_default_toleration_seconds_adds_both_noexecute_tolerations():
    pod = make_pod("p").obj()
    admit_default_toleration_seconds(pod)
    assert _tolerations(pod) == [
        (NOT_READY, "Exists", "NoExecute", 300),
        (UNREACHABLE, "Exists", "NoExecute", 300),
    ]
    admit_default_toleration_seconds(pod)  # idempotent: an update re-runs it
    assert len(pod.spec.tolerations) == 2


def test_default_toleration_seconds_keeps_the_pods_own_tolerations():
    pod = make_pod("p").obj()
    pod.spec.tolerations.add(
        key=UNREACHABLE, operator="Exists", effect="NoExecute", toleration_seconds=5
    )
    admit_default_toleration_seconds(pod)
    assert _tolerations(pod) == [
        (UNREACHABLE, "Exists", "NoExecute", 5),
        (NOT_READY, "Exists", "NoExecute", 300),
    ]
    everything = make_pod("q").obj()
    everything.spec.tolerations.add(operator="Exists")  # empty key and effect: every taint
    admit_default_toleration_seconds(everything)
    assert len(everything.spec.tolerations) == 1
    no_schedule_only = make_pod("r").obj()
    no_schedule_only.spec.tolerations.add(key=NOT_READY, operator="Exists", effect="NoSchedule")
    admit_default_toleration_seconds(no_schedule_only)
    assert len(no_schedule_only.spec.tolerations) == 3

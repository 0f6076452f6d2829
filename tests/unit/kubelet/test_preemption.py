"""The kubelet's preemption for critical pods (upstream pkg/kubelet/preemption): who is
critical, who may be preempted, which set of pods is chosen (QoS classes, distance), and the
admission that makes room or rejects with UnexpectedAdmissionError."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.pod_types import is_critical_pod, preemptable
from kemu.testing.builders import PodBuilder, make_pod
from kubelet.admission import InsufficientResource, admit_pod
from kubelet.preemption import (
    UNEXPECTED_ADMISSION_ERROR,
    Candidate,
    CriticalPodAdmissionHandler,
    NoVictims,
    pods_to_preempt,
)
from kubelet.runtime import PodState

CRITICAL = 2_000_000_000
GI = 1024**3


def pod(name: str, priority: int = 0) -> PodBuilder:
    return make_pod(name).uid(f"uid-{name}").priority(priority)


def best_effort(name: str) -> Candidate:
    return Candidate(pod(name).obj(), {})


def burstable(name: str, cpu: int, memory: int = 0) -> Candidate:
    p = pod(name).req(cpu=f"{cpu}m", memory=str(memory)).obj()
    return Candidate(p, {"cpu": cpu, "memory": memory})


def guaranteed(name: str, cpu: int, memory: int) -> Candidate:
    p = pod(name).req(cpu=f"{cpu}m", memory=str(memory)).lim(cpu=f"{cpu}m", memory=str(memory))
    return Candidate(p.obj(), {"cpu": cpu, "memory": memory})


def names(cs: list[Candidate]) -> list[str]:
    return [c.pod.metadata.name for c in cs]


def test_critical_pods_and_who_may_preempt_whom() -> None:
    critical = pod("c", CRITICAL).obj()
    mirror = pod("m").annotation("kubernetes.io/config.mirror", "x").obj()
    static = pod("s").annotation("kubernetes.io/config.source", "file").obj()
    api = pod("a").annotation("kubernetes.io/config.source", "api").obj()
    assert is_critical_pod(critical) and is_critical_pod(mirror) and is_critical_pod(static)
    assert not is_critical_pod(api) and not is_critical_pod(pod("p", CRITICAL - 1).obj())
    assert preemptable(critical, pod("low", 1000).obj())
    assert not preemptable(critical, pod("node-critical", CRITICAL + 1000).obj())
    assert preemptable(pod("n", CRITICAL + 1000).obj(), critical)
    # A mirror pod is critical: only a pod of higher priority, when both have one, may go.
    assert preemptable(critical, mirror)  # priority 0
    no_priority = make_pod("m2").annotation("kubernetes.io/config.mirror", "x").obj()
    assert not preemptable(critical, no_priority)


def test_best_effort_pods_go_before_burstable_ones_that_would_be_enough() -> None:
    """The pod-count requirement is met by a BestEffort pod; cpu needs a Burstable one."""
    cands = [burstable("b1", 500), best_effort("be"), burstable("b2", 300)]
    out = pods_to_preempt(pod("c", CRITICAL).obj(), cands, (("pods", 1),))
    assert names(out) == ["be"]
    out = pods_to_preempt(pod("c", CRITICAL).obj(), cands, (("cpu", 400),))
    assert names(out) == ["b1"]


def test_guaranteed_pods_only_when_the_others_are_not_enough() -> None:
    cands = [guaranteed("g", 1000, GI), burstable("b", 600)]
    out = pods_to_preempt(pod("c", CRITICAL).obj(), cands, (("cpu", 500),))
    assert names(out) == ["b"]
    out = pods_to_preempt(pod("c", CRITICAL).obj(), cands, (("cpu", 1000),))
    # The Guaranteed pod is needed even if the Burstable one goes; it alone is then enough.
    assert names(out) == ["g"]


def test_the_nearest_pod_first_and_the_smaller_one_on_a_tie() -> None:
    cands = [burstable("big", 2000), burstable("fit", 800), burstable("small", 300)]
    out = pods_to_preempt(pod("c", CRITICAL).obj(), cands, (("cpu", 700),))
    assert names(out) == ["fit"]  # distance 0 for both big and fit: the smaller request
    out = pods_to_preempt(pod("c", CRITICAL).obj(), cands, (("cpu", 3000),))
    assert sorted(names(out)) == ["big", "fit", "small"]


def test_critical_and_higher_priority_pods_are_never_candidates() -> None:
    cands = [Candidate(pod("other-critical", CRITICAL).req(cpu="1").obj(), {"cpu": 1000})]
    with pytest.raises(NoVictims, match=r"\(res: cpu, q: 500\)"):
        pods_to_preempt(pod("c", CRITICAL).obj(), cands, (("cpu", 500),))


def test_admission_makes_room_for_a_critical_pod_and_starts_it_after_its_victims() -> None:
    node = {"cpu": 2000, "memory": 4 * GI, "pods": 10}
    victims = [burstable("low", 1500)]
    killed: list[str] = []

    def kill(p: types_pb2.Pod) -> float:
        killed.append(p.metadata.name)
        return 130.0

    handler = CriticalPodAdmissionHandler(lambda: victims, kill)
    critical = pod("crit", CRITICAL).req(cpu="1").obj()
    rt = admit_pod(
        critical, [{"cpu": 1500}], node, now=100.0, startup_delay=0.5, on_failure=handler
    )
    assert rt.state == PodState.STARTING and killed == ["low"]
    assert rt.start_at == 130.0
    # A pod that is not critical is rejected as before, and kills nothing.
    plain = pod("plain", 1000).req(cpu="1").obj()
    rt = admit_pod(plain, [{"cpu": 1500}], node, now=100.0, startup_delay=0.5, on_failure=handler)
    assert rt.state == PodState.REJECTED and rt.reason == "OutOfcpu" and killed == ["low"]


def test_admission_rejects_a_critical_pod_when_no_set_of_pods_frees_enough() -> None:
    node = {"cpu": 2000, "memory": 4 * GI, "pods": 10}
    handler = CriticalPodAdmissionHandler(lambda: [burstable("low", 500)], lambda p: 0.0)
    critical = pod("crit", CRITICAL).req(cpu="3").obj()
    rt = admit_pod(critical, [{"cpu": 500}], node, now=1.0, startup_delay=0.5, on_failure=handler)
    assert rt.state == PodState.REJECTED
    assert rt.reason == UNEXPECTED_ADMISSION_ERROR
    assert rt.message == (
        "Unexpected error while attempting to recover from admission failure: preemption: "
        "error finding a set of pods to preempt: no set of running pods found to reclaim "
        "resources: [(res: cpu, q: 1000), ]"
    )


def test_every_insufficient_resource_is_a_requirement() -> None:
    assert InsufficientResource("cpu", 1000, 1500, 2000).amount == 500
    assert InsufficientResource("pods", 1, 10, 10).amount == 1

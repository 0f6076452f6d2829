"""The nominator rules of pkg/scheduler/backend/queue/nominator.go."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.scheduling.nominator import Nominator
from kemu.scheduling.types import PodInfo
from kemu.testing.builders import make_pod


class FakeLister:
    def __init__(self, *pods: types_pb2.Pod) -> None:
        self.pods = {(p.metadata.namespace, p.metadata.name): p for p in pods}

    def get(self, name: str, namespace: str = "") -> types_pb2.Pod | None:
        return self.pods.get((namespace or "default", name))


def _pod(name: str, nnn: str = "") -> types_pb2.Pod:
    b = make_pod(name).uid(f"uid-{name}")
    if nnn:
        b.nominated(nnn)
    return b.obj()


def _names(n: Nominator, node: str) -> list[str]:
    return [pi.pod.metadata.name for pi in n.nominated_pods_for_node(node)]


def test_api_nomination_comes_from_status_nominated_node_name() -> None:
    n = Nominator()
    n.add_nominated_pod(PodInfo(_pod("a", "n1")), None)
    n.add_nominated_pod(PodInfo(_pod("b")), None)
    assert _names(n, "n1") == ["a"]
    assert n.nominated_node_name("uid-b") is None


def test_scheduler_nomination_overrides_and_empty_clears() -> None:
    n = Nominator()
    pi = PodInfo(_pod("a", "n1"))
    n.add_nominated_pod(pi, "n2")
    assert _names(n, "n1") == [] and _names(n, "n2") == ["a"]
    n.add_nominated_pod(pi, "")
    assert _names(n, "n2") == [] and n.nominated_node_name("uid-a") is None


def test_in_memory_nomination_kept_when_old_and_new_have_no_nnn() -> None:
    n = Nominator()
    old, new = _pod("a"), _pod("a")
    new.metadata.labels["x"] = "y"
    n.add_nominated_pod(PodInfo(old), "n1")  # the scheduler nominated; the PATCH has not arrived
    n.update_nominated_pod(old, PodInfo(new))
    (pi,) = n.nominated_pods_for_node("n1")
    assert pi.pod is new  # the pod pointer follows the update


def test_nominator_follows_the_api_when_nnn_changes_or_is_removed() -> None:
    n = Nominator()
    n.add_nominated_pod(PodInfo(_pod("a", "n1")), None)
    n.update_nominated_pod(_pod("a", "n1"), PodInfo(_pod("a", "n2")))
    assert _names(n, "n1") == [] and _names(n, "n2") == ["a"]
    n.update_nominated_pod(_pod("a", "n2"), PodInfo(_pod("a")))
    assert _names(n, "n2") == [] and n.nominated_node_name("uid-a") is None


def test_nnn_added_by_the_api_over_an_in_memory_one_wins() -> None:
    n = Nominator()
    n.add_nominated_pod(PodInfo(_pod("a")), "n1")
    n.update_nominated_pod(_pod("a"), PodInfo(_pod("a", "n2")))
    assert _names(n, "n1") == [] and _names(n, "n2") == ["a"]


def test_delete_removes_the_nomination() -> None:
    n = Nominator()
    n.add_nominated_pod(PodInfo(_pod("a", "n1")), None)
    n.add_nominated_pod(PodInfo(_pod("b", "n1")), None)
    n.delete_nominated_pod_if_exists(_pod("a"))
    n.delete_nominated_pod_if_exists(_pod("zzz"))
    assert _names(n, "n1") == ["b"]


def test_pods_missing_from_the_lister_or_bound_are_not_nominated() -> None:
    bound = make_pod("bound").uid("uid-bound").node("n9").obj()
    lister = FakeLister(_pod("alive", "n1"), bound)
    n = Nominator(lister)
    n.add_nominated_pod(PodInfo(_pod("alive", "n1")), None)
    n.add_nominated_pod(PodInfo(_pod("gone", "n1")), None)
    n.add_nominated_pod(PodInfo(_pod("bound", "n1")), None)
    assert _names(n, "n1") == ["alive"]


def test_nomination_to_a_node_that_does_not_exist_is_kept() -> None:
    n = Nominator()
    n.add_nominated_pod(PodInfo(_pod("a", "no-such-node")), None)
    assert _names(n, "no-such-node") == ["a"]


def test_renominating_a_pod_keeps_one_entry() -> None:
    n = Nominator()
    pi = PodInfo(_pod("a", "n1"))
    n.add_nominated_pod(pi, None)
    n.add_nominated_pod(pi, None)
    assert _names(n, "n1") == ["a"]

"""kemuctl why's reading of who set and cleared a pod's nominatedNodeName, from the scheduler's
attempts and the pod as it is now."""

from __future__ import annotations

from typing import Any

from kemu.ctl.why import BY_APISERVER, BY_BINDING_START, BY_PREEMPTION, nominations
from kemu.testing.builders import make_pod


def attempt(t: float, **kw: Any) -> dict[str, Any]:
    return {"time": t, **kw}


def who(pod: Any, attempts: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(n["action"], n["node"], n["by"]) for n in nominations(pod, attempts)]


def test_preemption_then_binding_then_the_apiserver_clears_it() -> None:
    bound = make_pod("p").node("n1").obj()
    attempts = [
        attempt(1.0, preemption={"nominatedNodeName": "n1"}),
        attempt(2.0, expectedNodeName="n1"),  # the same node: no new entry
    ]
    assert who(bound, attempts) == [("set", "n1", BY_PREEMPTION), ("cleared", "n1", BY_APISERVER)]
    kept = make_pod("p").node("n1").obj()
    kept.status.nominated_node_name = "n1"  # the apiserver's gate off: NNN stays
    assert who(kept, attempts) == [("set", "n1", BY_PREEMPTION)]


def test_preemption_not_helpful_clears_and_binding_start_sets() -> None:
    pending = make_pod("p").obj()
    attempts = [
        attempt(1.0, preemption={"nominatedNodeName": "n1"}),
        attempt(2.0, preemption={"nominatedNodeName": None}),
        attempt(3.0, expectedNodeName="n2"),
    ]
    assert who(pending, attempts) == [
        ("set", "n1", BY_PREEMPTION),
        ("cleared", "n1", BY_PREEMPTION),
        ("set", "n2", BY_BINDING_START),
    ]
    assert nominations(pending, [])[:1] == []

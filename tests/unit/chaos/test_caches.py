"""kemu.chaos.caches: a process's comparison result becomes violations naming the process, the
cache, the object and what differed."""

from __future__ import annotations

from kemu.chaos.caches import Comparison, violations_of
from kemu.client.comparer import APISERVER, INFORMERS, MISSING, STALE, Difference


def test_each_difference_and_each_failed_comparison_is_a_violation() -> None:
    result: Comparison = {
        "trigger": 1,
        "caches": [],
        "differences": [
            Difference("informer pods", APISERVER, "chaos/p1", STALE, "10", "12").to_dict(),
            Difference("scheduler cache nodes", INFORMERS, "n1", MISSING, "", "7").to_dict(),
        ],
        "errors": ["informer nodes: ServiceUnavailable: the apiserver is away"],
    }
    assert violations_of("scheduler-a", result) == [
        "scheduler-a: cache mismatch: informer pods: chaos/p1 is stale "
        "(resourceVersion 10, the apiserver's 12)",
        "scheduler-a: cache mismatch: scheduler cache nodes: n1 is missing "
        "(the informers' is at resourceVersion 7)",
        "scheduler-a: cache comparison failed: informer nodes: ServiceUnavailable: "
        "the apiserver is away",
    ]


def test_a_clean_comparison_is_no_violation() -> None:
    assert (
        violations_of(
            "controllermanager", {"trigger": 1, "caches": [], "differences": [], "errors": []}
        )
        == []
    )

"""bench.fuzz: the catalog is deterministic per seed and covers every edge; outcomes are judged
as the rule says (a refusal naming the problem, never a server error, a drop or a hang)."""

from __future__ import annotations

import random

import pytest

from bench.fuzz import cases, driver
from bench.fuzz.cases import Case, Grpc, Http, Raw
from bench.fuzz.send import DROPPED, HUNG, Outcome


def test_every_family_builds_the_same_requests_from_the_same_seed() -> None:
    for family in cases.FAMILIES:
        first = [cases.make(family, random.Random(7)) for _ in range(3)]
        again = [cases.make(family, random.Random(7)) for _ in range(3)]
        assert first == again, family
        for _ in range(40):
            case = cases.make(family, random.Random(random.randrange(2**32)))
            assert isinstance(case.request, Http | Raw | Grpc)
            assert case.describe()


def test_a_batch_covers_every_edge_and_family() -> None:
    batch = driver.generate(10_000, seed=1)
    assert len(batch) == 10_000
    assert {c.edge for c in batch} == set(cases.EDGES)
    assert {c.family for c in batch} == set(cases.FAMILIES)


def _case(edge: str = cases.REST_JSON) -> Case:
    return Case(edge, "f", Http("GET", "/"))


@pytest.mark.parametrize(
    ("edge", "status", "message", "bad"),
    [
        (cases.REST_JSON, "400", "invalid value for limit", False),
        (cases.REST_JSON, "413", "Request entity too large", False),
        (cases.REST_JSON, "400", "", True),  # names nothing
        (cases.REST_JSON, "500", "internal error", True),
        (cases.REST_JSON, "504", "Too large resource version", True),
        (cases.REST_JSON, "201", "created", True),  # a malformed request accepted
        (cases.REST_JSON, DROPPED, "", True),
        (cases.REST_JSON, HUNG, "", True),
        (cases.GRPC_API, "INVALID_ARGUMENT", "the request is not a valid", False),
        (cases.GRPC_API, "UNKNOWN", "Unexpected DecodeError", True),
        (cases.GRPC_API, "INTERNAL", "internal error", True),
        (cases.GRPC_API, "OK", "", True),
        (cases.GRPC_API, "RESOURCE_EXHAUSTED/grpc", "metadata size exceeds", True),
        (cases.GRPC_API, "RESOURCE_EXHAUSTED/TooManyRequests", "too many requests", False),
        (cases.HEALTH, "200", "ok", False),
        (cases.HEALTH, "431", "request header fields too large", False),
        (cases.HEALTH, "503", "[-]etcd failed\nreadyz check failed", False),
        (cases.HEALTH, "500", "", True),
    ],
)
def test_outcomes_are_judged_by_the_rule(edge: str, status: str, message: str, bad: bool) -> None:
    assert Outcome(_case(edge), status, message).bad is bad


def test_changed_lists_every_difference() -> None:
    assert driver.changed({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"}) == [
        "b: 2 -> 3",
        "c: None -> 4",
    ]

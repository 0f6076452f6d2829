"""bench.fuzz: the catalog is deterministic per seed and covers every edge; outcomes are judged
as the rule says (a refusal naming the problem, never a server error, a drop or a hang)."""

from __future__ import annotations

import random

import pytest

from bench.fuzz import cases, driver, secured
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


# ------------------------------------------------------------------ with security on (secured.py)


def _caller(expect: str, edge: str, kind: str = secured.UNPRIVILEGED) -> secured.Caller:
    return secured.Caller("c", kind, edge, expect, "jane")


_FORBIDDEN = 'pods is forbidden: User "jane" cannot create resource "pods" in API group ""'
_REST, _GRPC = secured.REST, secured.GRPC


@pytest.mark.parametrize(
    ("expect", "edge", "status", "message", "right"),
    [
        (secured.UNAUTHORIZED, _REST, "401", "Unauthorized", True),
        (secured.UNAUTHORIZED, _REST, "403", _FORBIDDEN, False),
        (secured.UNAUTHORIZED, _REST, "400", "Got more than 8190 bytes", False),
        (secured.UNAUTHORIZED, _REST, "500", "internal error", False),
        (secured.UNAUTHORIZED, _GRPC, "UNAUTHENTICATED", "Unauthorized", True),
        (secured.UNAUTHORIZED, _GRPC, "INVALID_ARGUMENT", "the request is not a valid x", False),
        (secured.UNAUTHORIZED, _GRPC, "UNIMPLEMENTED", "Method not found!", True),
        (secured.FORBIDDEN, _REST, "403", _FORBIDDEN, True),
        (secured.FORBIDDEN, _REST, "403", _FORBIDDEN.replace("jane", "joe"), False),
        (secured.FORBIDDEN, _REST, "400", "the body is not JSON", False),  # decoded first
        (secured.FORBIDDEN, _REST, "201", "", False),
        (secured.FORBIDDEN, _GRPC, "PERMISSION_DENIED", _FORBIDDEN, True),
        (
            secured.FORBIDDEN,
            _GRPC,
            "INVALID_ARGUMENT",
            "the request is not a valid kemu.api.v1.CreateRequest: Wire format was corrupt",
            True,
        ),
        (secured.FORBIDDEN, _GRPC, "INVALID_ARGUMENT", "invalid label selector", False),
        (secured.FORBIDDEN, _GRPC, "PERMISSION_DENIED", 'pods "xxxx... (1000123 bytes)', True),
        (secured.FORBIDDEN, _GRPC, "INTERNAL", "internal error", False),
        (secured.FORBIDDEN, _GRPC, "OK", "", False),
        (secured.HANDSHAKE, _REST, DROPPED, "ServerDisconnectedError", True),
        (secured.HANDSHAKE, _REST, "401", "Unauthorized", False),
        (secured.PROBLEM, _REST, "400", "invalid value for limit", True),
        (secured.PROBLEM, _REST, "201", "created", False),
        (secured.PROBLEM, _REST, "500", "internal error", False),
        (secured.PROBLEM, _GRPC, "OK", "", False),
    ],
)
def test_a_secured_callers_answers_are_judged_as_upstreams(
    expect: str, edge: str, status: str, message: str, right: bool
) -> None:
    caller = _caller(expect, edge)
    case = _case(cases.GRPC_API if edge == _GRPC else cases.REST_JSON)
    assert (caller.judge(case, Outcome(case, status, message)) == "") is right


def test_well_formed_writes_go_to_callers_without_the_right_only() -> None:
    callers = [_caller(secured.PROBLEM, edge, secured.PRIVILEGED) for edge in (_REST, _GRPC)] + [
        _caller(secured.FORBIDDEN, edge) for edge in (_REST, _GRPC)
    ]
    rng = random.Random(5)
    drawn = [secured.pair(callers, secured.WELL_FORMED, rng) for _ in range(200)]
    assert all(d is not None and d[0].kind != secured.PRIVILEGED for d in drawn)
    assert {d[0].edge for d in drawn if d is not None} == {_REST, _GRPC}
    assert secured.pair(callers, "rest_framing", rng) is None  # (no caller sends raw bytes)

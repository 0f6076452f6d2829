"""Property: with security on, bad input from any caller is refused as upstream refuses it and
changes nothing (issue #60 item 5).

Three real apiservers on one etcd (TLS with the cluster's client CA, ServiceAccount tokens,
`--authorization-mode Node,RBAC`, `--anonymous-auth` both ways: bench/fuzz/secured.py) get
bench/fuzz's malformed requests, well-formed writes and random pods and merge patches from
anonymous, bad-credential (garbage, expired and wrong-audience tokens; a certificate of
another CA), unprivileged (a ServiceAccount without a RoleBinding, a certificate without
grants) and privileged callers: 401 `Unauthorized` for a bad credential (and no credential
with --anonymous-auth=false), upstream's 403 for an unprivileged caller whatever the body,
never a 5xx, INTERNAL or UNKNOWN, and the stored objects as they were.
`python -m bench fuzz --security` throws 10,000 of them.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.fuzz import cases, secured
from bench.fuzz.cases import Case, Grpc, Http
from bench.fuzz.driver import changed
from bench.fuzz.secured import Caller, Callers, Secured
from tests.integration.apiserver.test_apiserver_fuzz import patches, pods

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.anyio]

FEW = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    with secured.secured_cluster(tmp_path_factory.mktemp("fuzz-secured")) as s:
        yield s


@pytest.fixture(scope="module")
async def callers(cluster: Secured) -> AsyncIterator[Callers]:
    async with secured.callers(cluster) as c:
        yield c


def _named(callers: Callers, kind: str, edge: str) -> list[Caller]:
    return [c for c in callers.all if c.kind == kind and c.edge == edge]


async def _judged(callers: Callers, caller: Caller, case: Case) -> None:
    """`caller` sends `case`: its answer as upstream's, nothing stored changed."""
    before = await secured.snapshot(callers.admin)
    outcome = await caller.throw(case)
    problem = caller.judge(case, outcome)
    assert not problem, f"{caller.name} ({caller.edge}): {problem}: {outcome.line()}"
    assert changed(before, await secured.snapshot(callers.admin)) == [], outcome.line()


@FEW
@given(
    family=st.sampled_from(secured.FAMILIES),
    seed=st.integers(0, 2**32 - 1),
    which=st.integers(0, 2**16),
)
async def test_malformed_requests_from_any_caller_are_refused_as_upstream(
    callers: Callers, family: str, seed: int, which: int
) -> None:
    drawn = secured.pair(callers.all, family, random.Random(seed))
    if drawn is None:
        return  # (a framing case: the HTTP parser's, before authentication)
    caller, case = drawn
    await _judged(callers, caller, case)


_NOT_PRIVILEGED = [k for k in secured.KINDS if k != secured.PRIVILEGED]


@FEW
@given(manifest=pods, kind=st.sampled_from(_NOT_PRIVILEGED), which=st.integers(0, 16))
async def test_random_pods_from_callers_without_the_right_change_nothing(
    callers: Callers, manifest: dict[str, object], kind: str, which: int
) -> None:
    mine = _named(callers, kind, secured.REST)
    caller = mine[which % len(mine)]
    body = dict(manifest, apiVersion="v1", kind="Pod")
    case = Case(
        cases.REST_JSON,
        "random pod",
        Http(
            "POST",
            f"/api/v1/namespaces/{cases.NS}/pods",
            json.dumps(body).encode(),
            "application/json",
        ),
    )
    await _judged(callers, caller, case)


@FEW
@given(
    patch=patches,
    subresource=st.sampled_from(["", "/status", "/resize"]),
    kind=st.sampled_from(_NOT_PRIVILEGED),
    which=st.integers(0, 16),
)
async def test_random_merge_patches_from_callers_without_the_right_change_nothing(
    callers: Callers, patch: object, subresource: str, kind: str, which: int
) -> None:
    mine = _named(callers, kind, secured.REST)
    caller = mine[which % len(mine)]
    path = f"/api/v1/namespaces/{cases.NS}/pods/{cases.PODS[0]}{subresource}"
    case = Case(
        cases.REST_JSON,
        "random patch",
        Http("PATCH", path, json.dumps(patch).encode(), cases.MERGE),
    )
    await _judged(callers, caller, case)


_ESCALATION = Http(
    "POST",
    "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    json.dumps(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "fuzz-escalation"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin",
            },
            "subjects": [
                {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Group",
                    "name": "system:authenticated",
                }
            ],
        }
    ).encode(),
    cases.JSON_TYPE,
)


@pytest.mark.parametrize("kind", _NOT_PRIVILEGED)
async def test_each_caller_without_the_right_is_refused_a_binding_to_cluster_admin(
    callers: Callers, kind: str
) -> None:
    for caller in _named(callers, kind, secured.REST):
        await _judged(callers, caller, Case(cases.REST_JSON, "escalation", _ESCALATION))


# ------------------------------------------------------------------ what the fuzz found


_GARBAGE = Grpc(cases.API + "Create", b"\x0f\x00\xff")
"""A Create whose bytes are no CreateRequest."""


@pytest.mark.parametrize("method", ["Create", "Watch"])
async def test_a_bad_credential_is_unauthenticated_before_its_request_is_decoded(
    callers: Callers, method: str
) -> None:
    """gRPC authenticates before it decodes, as upstream's chain authenticates before its
    handler reads a body: a bad token (or none, with --anonymous-auth=false) with bytes that
    are no request is UNAUTHENTICATED (the fuzz found INVALID_ARGUMENT)."""
    case = Case(
        cases.GRPC_API, "garbage", Grpc(cases.API + method, _GARBAGE.body, stream=method == "Watch")
    )
    refused = [
        c for c in callers.all if c.edge == secured.GRPC and c.expect == secured.UNAUTHORIZED
    ]
    assert {c.kind for c in refused} == {secured.ANONYMOUS, secured.BAD_CREDENTIAL}
    for caller in refused:
        outcome = await caller.throw(case)
        assert (outcome.status, outcome.message) == ("UNAUTHENTICATED", "Unauthorized"), (
            outcome.line()
        )
    admin = _named(callers, secured.PRIVILEGED, secured.GRPC)[0]
    outcome = await admin.throw(case)
    assert outcome.status == "INVALID_ARGUMENT" and "is not a valid kemu.api.v1." in outcome.message


async def test_a_long_request_line_reaches_authentication(callers: Callers) -> None:
    """A request line up to upstream's MaxHeaderBytes (1 MiB) is served: a 20 KB label
    selector is 401 for a bad token and listed for the admin (the fuzz found aiohttp's 400,
    "Got more than 8190 bytes", before authentication)."""
    selector = "app+in+(" + ",".join(f"v{i}" for i in range(4000)) + ")"
    path = f"/api/v1/namespaces/{cases.NS}/pods?labelSelector={selector}"
    case = Case(cases.REST_JSON, "long", Http("GET", path))
    assert len(selector) > 20_000
    for caller in _named(callers, secured.BAD_CREDENTIAL, secured.REST):
        if caller.expect == secured.UNAUTHORIZED:
            outcome = await caller.throw(case)
            assert (outcome.status, outcome.message) == ("401", "Unauthorized"), outcome.line()
    admin = _named(callers, secured.PRIVILEGED, secured.REST)[0]
    assert admin.session is not None
    async with admin.session.get(admin.rest_url + path) as answer:
        assert answer.status == 200, await answer.text()
        assert (await answer.json())["kind"] == "PodList"


async def test_a_refusal_on_rest_is_upstreams_status(callers: Callers) -> None:
    """401 and 403 answer a Status (kind, code, reason) as upstream's responsewriters do;
    the 403 names the resource it refused (details)."""
    path = f"/api/v1/namespaces/{cases.NS}/pods/{cases.PODS[0]}"
    for caller in callers.all:
        if caller.edge != secured.REST or caller.expect not in (
            secured.UNAUTHORIZED,
            secured.FORBIDDEN,
        ):
            continue
        assert caller.session is not None
        async with caller.session.get(caller.rest_url + path) as answer:
            status = await answer.json()
        assert status["kind"] == "Status" and status["status"] == "Failure", status
        if caller.expect == secured.UNAUTHORIZED:
            assert (answer.status, status["code"], status["reason"]) == (401, 401, "Unauthorized")
        else:
            assert (answer.status, status["code"], status["reason"]) == (403, 403, "Forbidden")
            assert status["details"] == {"name": cases.PODS[0], "kind": "pods"}, status
            assert caller.forbids(status["message"]), status

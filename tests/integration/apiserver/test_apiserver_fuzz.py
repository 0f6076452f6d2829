"""Property: random objects, merge patches and malformed requests never hurt the apiserver.

Every answer is either success or a typed client error (Invalid, BadRequest, Conflict, ...),
never an internal error, and the server stays healthy. Malformed requests (bench/fuzz's
catalog, on the REST edge with JSON and protobuf bodies, the gRPC Api and the health server)
are all refused with a 4xx or a gRPC refusal naming the problem, and the stored objects stay
as they were (issue #28). The seed hypothesis prints on failure replays the case;
`python -m bench fuzz` throws 10,000 of them at every edge.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import AsyncIterator, Awaitable, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.fuzz import cases
from bench.fuzz.cases import Case, Grpc, Http
from bench.fuzz.driver import Target, changed, connect, fuzz_cluster
from kemu.api.v1 import api_pb2, types_pb2
from kemu.client.client import Client
from kemu.machinery import convert, kinds
from kemu.machinery.errors import ApiError, InternalError
from kemu.testing import Cluster, make_pod
from kemu.testing.namespaces import ensure_namespace
from kemu.testing.processes import url_ok

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.anyio]

NS = "fuzz-random"  # (bench.fuzz's objects live in cases.NS)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["500m", "1Gi", "-1", "1e3", "0.5", "abc", "", "Never", "NoSchedule"]),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
names = st.one_of(st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True), st.text(max_size=12))
quantities = st.one_of(
    st.sampled_from(["100m", "1", "2Gi", "-5", "1.5", "x", "", "9" * 30, "1e400"]),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
)
resources = st.dictionaries(
    st.sampled_from(["cpu", "memory", "pods", "example.com/gpu", "Bad Name", ""]),
    quantities,
    max_size=3,
)
containers = st.lists(
    st.fixed_dictionaries(
        {"name": names},
        optional={
            "resources": st.fixed_dictionaries(
                {}, optional={"requests": resources, "limits": resources}
            ),
            "resizePolicy": st.lists(
                st.fixed_dictionaries(
                    {
                        "resourceName": st.sampled_from(["cpu", "memory", "gpu"]),
                        "restartPolicy": st.sampled_from(["NotRequired", "RestartContainer", "x"]),
                    }
                ),
                max_size=2,
            ),
            "junk": json_values,
        },
    ),
    max_size=3,
)
pod_specs = st.fixed_dictionaries(
    {"containers": containers},
    optional={
        "priority": st.integers(min_value=-(2**31), max_value=2**31 - 1),
        "priorityClassName": st.sampled_from(["", "system-node-critical", "nope"]),
        "preemptionPolicy": st.sampled_from(["Never", "PreemptLowerPriority", "Sometimes"]),
        "terminationGracePeriodSeconds": st.integers(min_value=-100, max_value=10**6),
        "nodeSelector": st.dictionaries(names, st.text(max_size=10), max_size=2),
        "tolerations": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "key": names,
                    "operator": st.sampled_from(["Exists", "Equal", "Maybe"]),
                    "value": st.text(max_size=5),
                    "effect": st.sampled_from(["NoSchedule", "NoExecute", "Bad"]),
                },
            ),
            max_size=2,
        ),
        "schedulingGates": st.lists(st.fixed_dictionaries({"name": names}), max_size=2),
        "nodeName": names,
    },
)
pods = st.fixed_dictionaries(
    {
        "metadata": st.fixed_dictionaries(
            {"name": names},
            optional={
                "labels": st.dictionaries(names, st.text(max_size=10), max_size=3),
                "annotations": st.dictionaries(
                    st.text(max_size=10), st.text(max_size=10), max_size=2
                ),
            },
        ),
        "spec": pod_specs,
    },
    optional={
        "status": st.dictionaries(st.sampled_from(["phase", "nominatedNodeName"]), json_values)
    },
)
patches = st.one_of(
    st.fixed_dictionaries(
        {}, optional={"spec": pod_specs, "metadata": json_values, "status": json_values}
    ),
    st.dictionaries(st.text(max_size=8), json_values, max_size=3),
    json_values,
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with fuzz_cluster(tmp_path_factory.mktemp("fuzz"), cloud=False) as c:
        yield c


@pytest.fixture(scope="module")
async def target(cluster: Cluster) -> AsyncIterator[Target]:
    async with connect(cluster, cloud=False) as t:
        yield t


@pytest.fixture(scope="module")
async def client(cluster: Cluster) -> AsyncIterator[Client]:
    async with Client(cluster.server, timeout=10.0) as c:
        await ensure_namespace(c, NS)
        await c.create(make_pod("target").namespace(NS).obj())
        yield c


async def _outcome(call: Awaitable[object]) -> str:
    try:
        await call
    except InternalError as e:
        raise AssertionError(f"the server failed internally: {e}") from e
    except ApiError as e:
        return e.reason
    return "ok"


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(manifest=pods)
async def test_random_pods_are_created_or_refused_never_crash(cluster, client, manifest):
    manifest = json.loads(json.dumps(manifest))
    manifest.setdefault("metadata", {})["namespace"] = NS
    try:
        pod = convert.from_dict(kinds.BY_KIND["Pod"], manifest)
        assert isinstance(pod, types_pb2.Pod)
    except ApiError:
        return  # refused client-side already: nothing reaches the server
    outcome = await _outcome(client.create(pod))
    assert outcome in {"ok", "Invalid", "AlreadyExists", "BadRequest"}
    if outcome == "ok":
        await _outcome(client.delete(types_pb2.Pod, pod.metadata.name, NS))
    assert url_ok(cluster.component("apiserver").healthz_url)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(patch=patches, subresource=st.sampled_from(["", "status", "resize"]))
async def test_random_merge_patches_are_applied_or_refused_never_crash(client, patch, subresource):
    before = await client.get(types_pb2.Pod, "target", NS)
    text = json.dumps(patch)
    outcome = await _outcome(
        client.patch(types_pb2.Pod, "target", text, NS, subresource=subresource)
    )
    assert outcome in {"ok", "Invalid", "BadRequest", "Conflict"}
    after = await client.get(types_pb2.Pod, "target", NS)
    if outcome != "ok":
        assert after.metadata.resource_version == before.metadata.resource_version
    assert after.metadata.uid == before.metadata.uid


# ------------------------------------------------------------------ malformed requests

FAMILIES = sorted(name for name, (edge, _) in cases.FAMILIES.items() if edge != cases.CLOUD_GRPC)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(family=st.sampled_from(FAMILIES), seed=st.integers(0, 2**32 - 1))
async def test_malformed_requests_are_refused_naming_the_problem_and_change_nothing(
    target: Target, family: str, seed: int
) -> None:
    case = cases.make(family, random.Random(seed))
    before = await target.snapshot()
    outcome = await target.send(case)
    assert not outcome.bad, outcome.line()
    if case.edge != cases.HEALTH:  # (the health server answers the GETs it understands)
        assert outcome.status.isdigit() or outcome.status != "OK", outcome.line()
        assert not outcome.status.isdigit() or 400 <= int(outcome.status) < 500, outcome.line()
    assert changed(before, await target.snapshot()) == [], outcome.line()
    assert target.healthy()


def _pod_path(name: str = cases.PODS[0], query: str = "") -> str:
    return f"/api/v1/namespaces/{cases.NS}/pods/{name}" + (f"?{query}" if query else "")


_PB_DELETE = cases.envelope(
    b"meta.k8s.io/v1", b"DeleteOptions", cases.field(1, 0) + cases.field(4, b"Background")
)
_POD = json.dumps(
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": cases.NEW}, "spec": {}}
).encode()


# The measured failures of issue #28, each once: (request, status, words of the message).
MEASURED: dict[str, tuple[cases.Request, str, str]] = {
    "deeply nested JSON": (
        Http(
            "POST",
            f"/api/v1/namespaces/{cases.NS}/pods",
            b"[" * 5000 + b"]" * 5000,
            "application/json",
        ),
        "400",
        "nested too deeply",
    ),
    "invalid UTF-8 in a patch": (
        Http("PATCH", _pod_path(), b'{"metadata":{"labels":{"a":"\xff"}}}', cases.MERGE),
        "400",
        "the patch is not valid UTF-8",
    ),
    "invalid UTF-8 in a protobuf string": (
        Http(
            "POST",
            f"/api/v1/namespaces/{cases.NS}/pods",
            cases.envelope(b"v1", b"P\xff", b""),
            cases.PROTOBUF_TYPE,
        ),
        "400",
        "typeMeta.kind that is not valid UTF-8",
    ),
    "type-confused protobuf in the k8s envelope": (
        Http(
            "POST",
            f"/api/v1/namespaces/{cases.NS}/pods",
            b"k8s\x00\n\x09\n\x02v1\x12\x03Pod\x12\x02\x08\x05",
            cases.PROTOBUF_TYPE,
        ),
        "400",
        "Pod.metadata of the wrong wire type",
    ),
    "limit beyond int64": (
        Http("GET", f"/api/v1/pods?limit={2**63}"),
        "400",
        "invalid value for limit",
    ),
    "a body between 1 and 3 MiB": (
        Http(
            "POST",
            f"/api/v1/namespaces/{cases.NS}/pods",
            _POD[:-1] + b',"x":"' + b"x" * (2 * cases.MiB) + b'"}',
            "application/json",
        ),
        "201-or-4xx",
        "",
    ),
    "a body over 3 MiB": (
        Http(
            "POST",
            f"/api/v1/namespaces/{cases.NS}/pods",
            b" " * (cases.BODY_LIMIT + 1) + _POD,
            "application/json",
        ),
        "413",
        "Request entity too large: limit is 3145728",
    ),
    "a resourceVersion beyond uint64 (list)": (
        Http("GET", f"/api/v1/pods?resourceVersion={2**64}"),
        "400",
        "invalid resourceVersion",
    ),
    "a resourceVersion beyond uint64 (watch)": (
        Http("GET", f"/api/v1/pods?watch=1&resourceVersion={2**64}"),
        "400",
        "invalid resourceVersion",
    ),
    "DELETE gracePeriodSeconds beyond int64": (
        Http("DELETE", _pod_path(query="gracePeriodSeconds=99999999999999999999999")),
        "400",
        "gracePeriodSeconds",
    ),
    "DELETE orphanDependents=x": (
        Http("DELETE", _pod_path(query="orphanDependents=x")),
        "400",
        "orphanDependents",
    ),
    "DELETE options of the wrong type": (
        Http("DELETE", _pod_path(), b'{"dryRun":"All"}', "application/json"),
        "400",
        "dryRun: expected an array of strings",
    ),
    "DELETE options of another kind": (
        Http("DELETE", _pod_path(), _POD, "application/json"),
        "400",
        "must be a DeleteOptions",
    ),
    "DELETE with truncated protobuf options": (
        Http("DELETE", _pod_path(), _PB_DELETE[:-3], cases.PROTOBUF_TYPE),
        "400",
        "truncated",
    ),
    "a gRPC request that does not decode": (
        Grpc(cases.API + "Get", b"\x0a\x09pods"),
        "INVALID_ARGUMENT",
        "not a valid kemu.api.v1.GetRequest",
    ),
    "a gRPC string that is not UTF-8": (
        Grpc(cases.API + "Delete", b"\x0a\x04pods\x32\x02\xff\xfe"),
        "INVALID_ARGUMENT",
        "not a valid kemu.api.v1.DeleteRequest",
    ),
    "a gRPC patch nested too deeply": (
        Grpc(
            cases.API + "Patch",
            api_pb2.PatchRequest(
                resource="pods",
                namespace=cases.NS,
                name=cases.PODS[0],
                patch="[" * 3000 + "]" * 3000,
            ).SerializeToString(),
        ),
        "INVALID_ARGUMENT",
        "nested too deeply",
    ),
    "a gRPC error that echoes a large input": (
        Grpc(
            cases.API + "Get",
            api_pb2.GetRequest(resource="x" * 100_000, name="p").SerializeToString(),
        ),
        "INVALID_ARGUMENT",
        "bytes)",
    ),
}


@pytest.mark.parametrize("what", MEASURED)
async def test_each_measured_failure_of_issue_28_is_a_clear_refusal(
    target: Target, what: str
) -> None:
    request, status, words = MEASURED[what]
    case = Case(cases.GRPC_API if isinstance(request, Grpc) else cases.REST_JSON, what, request)
    before = await target.snapshot()
    start = time.monotonic()
    outcome = await target.send(case)
    assert time.monotonic() - start < 2.0, outcome.line()  # (a future resourceVersion waits 3 s)
    if status == "201-or-4xx":  # kemu stores it (etcd takes 1.5 MiB): created, or refused
        assert outcome.status == "201" or not outcome.bad, outcome.line()
        if outcome.status == "201":
            await target.client.delete(types_pb2.Pod, cases.NEW, cases.NS, grace_period_seconds=0)
            return
    else:
        assert (outcome.status, not outcome.bad) == (status, True), outcome.line()
        assert words in outcome.message, outcome.line()
    assert changed(before, await target.snapshot()) == []

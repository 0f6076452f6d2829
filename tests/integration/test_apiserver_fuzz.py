"""Property: random objects and merge patches never crash the apiserver.

Every answer is either success or a typed client error (Invalid, BadRequest, Conflict, ...),
never an internal error, and the server stays healthy. The seed hypothesis prints on failure
replays the case.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery import convert, kinds
from kemu.machinery.errors import ApiError, InternalError
from kemu.testing import Cluster, make_pod
from kemu.testing.namespaces import ensure_namespace
from kemu.testing.processes import url_ok

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.anyio]

NS = "fuzz"

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
    with Cluster(tmp_path_factory.mktemp("fuzz")) as c:
        c.start_etcd()
        c.start_apiserver()
        yield c


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

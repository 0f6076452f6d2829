"""The subresource table both apiserver edges and the fake client read."""

from __future__ import annotations

import pytest

from kemu.machinery import subresources
from kemu.machinery.errors import BadRequest, NotFound
from kemu.machinery.kinds import BY_KIND

POD = BY_KIND["Pod"]
NAMESPACE = BY_KIND["Namespace"]
DEPLOYMENT = BY_KIND["Deployment"]
PRIORITY_CLASS = BY_KIND["PriorityClass"]


def test_each_kind_has_upstreams_subresources() -> None:
    names = {k: [s.name for s in subresources.of_kind(BY_KIND[k])] for k in BY_KIND}
    assert names["Pod"] == [
        *("status", "binding", "eviction", "resize", "log"),
        *("exec", "attach", "portforward"),
    ]
    assert names["Namespace"] == ["status", "finalize"]
    assert names["Deployment"] == ["status", "scale"]
    assert names["ReplicaSet"] == ["status", "scale"]
    assert names["PriorityClass"] == []  # no status
    assert names["Node"] == ["status"]


def test_the_main_resource_is_no_subresource() -> None:
    assert subresources.check(POD, "", subresources.PATCH) is None


@pytest.mark.parametrize(
    ("kind", "name", "verb", "error", "message"),
    [
        (POD, "widget", "patch", BadRequest, 'unknown subresource "widget"'),
        (
            PRIORITY_CLASS,
            "status",
            "update",
            NotFound,
            "the server could not find the requested resource (priorityclasses/status)",
        ),
        (
            DEPLOYMENT,
            "finalize",
            "patch",
            NotFound,
            "the server could not find the requested resource (deployments/finalize)",
        ),
        (POD, "binding", "patch", BadRequest, "pods/binding does not serve patch"),
        (POD, "eviction", "update", BadRequest, "pods/eviction does not serve update"),
        (NAMESPACE, "finalize", "get", BadRequest, "namespaces/finalize does not serve get"),
    ],
)
def test_a_request_the_table_does_not_serve_names_what_it_lacks(
    kind: object, name: str, verb: str, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        subresources.check(kind, name, verb)  # type: ignore[arg-type]


def test_a_served_verb_gives_the_subresource() -> None:
    assert subresources.check(POD, "status", subresources.PATCH) is subresources.STATUS
    assert subresources.check(POD, "resize", subresources.UPDATE) is subresources.RESIZE
    assert subresources.check(NAMESPACE, "finalize", subresources.UPDATE) is subresources.FINALIZE
    assert subresources.check(DEPLOYMENT, "scale", subresources.GET) is subresources.SCALE


def test_pods_log_is_read_only() -> None:
    assert subresources.check(POD, "log", subresources.GET) is subresources.LOG
    with pytest.raises(BadRequest, match="pods/log does not serve patch"):
        subresources.check(POD, "log", subresources.PATCH)

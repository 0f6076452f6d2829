from __future__ import annotations

import pytest

from kemu.ctl import jsonpath

DATA = {
    "metadata": {"name": "p", "labels": {"app.kubernetes.io/name": "web", "a.b": "dotted"}},
    "spec": {
        "containers": [{"name": "c0"}, {"name": "c1", "resources": {"requests": {"cpu": "1"}}}]
    },
    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
}


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("{.status.phase}", "Running"),
        ("{.spec.containers[1].name}", "c1"),
        ("{.spec.containers[-1].resources.requests.cpu}", "1"),
        ("{.status.conditions[0].type}", "Ready"),
        (".metadata.name", "p"),
        ("metadata.name", "p"),
        ("{.metadata.labels['app.kubernetes.io/name']}", "web"),
        (r"{.metadata.labels.a\.b}", "dotted"),
        ("{.spec.containers[0]}", {"name": "c0"}),
        ("{}", DATA),
    ],
)
def test_paths_find_their_values(expr: str, expected: object) -> None:
    assert jsonpath.parse(expr).find(DATA) == expected


@pytest.mark.parametrize(
    "expr", ["{.status.reason}", "{.spec.containers[5].name}", "{.status.phase.x}", "{.spec[0]}"]
)
def test_absent_paths_are_missing(expr: str) -> None:
    assert jsonpath.parse(expr).find(DATA) is jsonpath.MISSING


@pytest.mark.parametrize(
    "expr", ["{.a..b}", "{.items[*].name}", "{.a}{.b}", "{.a", "{.a[?(@.x)]}", "{.a.}"]
)
def test_unsupported_expressions_are_errors(expr: str) -> None:
    with pytest.raises(jsonpath.JsonPathError):
        jsonpath.parse(expr)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{.status.phase}=Running", ("{.status.phase}", "Running")),
        ("{.status.phase}", ("{.status.phase}", None)),
        ("{.metadata.annotations.x}=a=b", ("{.metadata.annotations.x}", "a=b")),
        (".status.phase=Running", (".status.phase", "Running")),
    ],
)
def test_split_condition(text: str, expected: tuple[str, str | None]) -> None:
    assert jsonpath.split_condition(text) == expected

from __future__ import annotations

import pytest

from kemu.chaos.workload import Workload, WorkloadError, parse_workload


def test_an_empty_document_is_the_default_workload() -> None:
    assert parse_workload("") == Workload()


def test_fields_are_read() -> None:
    w = parse_workload(
        "nodes: {count: 2, cpu: '8'}\n"
        "pods: {total: 10, rate: 1, priorities: [1, 2], slowPreBind: {delay: 3s}}\n"
    )
    assert (w.nodes.count, w.nodes.cpu) == (2, "8")
    assert (w.pods.total, w.pods.rate, w.pods.priorities) == (10, 1.0, (1, 2))
    assert w.pods.slowPreBind.delay == "3s"
    assert w.pods.slowPreBind.fraction == 0.2


def test_a_pods_lifetime_is_read_and_none_keeps_them() -> None:
    assert parse_workload("pods: {lifetime: 20s}").pods.lifetime_seconds() == 20.0
    assert parse_workload("").pods.lifetime_seconds() is None


def test_the_scaling_phase_is_read() -> None:
    w = parse_workload("scaling: {waves: 3, maxSize: 6, provisionDelay: 2s}\n")
    assert (w.scaling.waves, w.scaling.maxSize, w.scaling.minSize) == (3, 6, 1)
    assert w.scaling.provisionDelay == "2s"
    assert parse_workload("").scaling.waves == 0  # off unless asked for


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("nodes: {cnt: 1}", "nodes.cnt: unknown field"),
        ("nodes: {count: 0}", "nodes.count: must be at least 1"),
        ("nodes: {count: two}", "nodes.count: must be an integer"),
        ("pods: {cpu: lots}", "pods.cpu:"),
        ("pods: {rate: 0}", "pods.rate: must be > 0"),
        ("pods: {priorities: []}", "pods.priorities: must be a non-empty list"),
        ("pods: {priorities: [1, x]}", "pods.priorities[1]: must be an integer"),
        ("pods: {deleteFraction: 1.5}", "pods.deleteFraction: must be in [0, 1]"),
        ("pods: {slowPreBind: {delay: soon}}", "pods.slowPreBind.delay:"),
        ("pods: {lifetime: forever}", "pods.lifetime:"),
        ("pods: {slowPreBind: {speed: 1}}", "pods.slowPreBind.speed: unknown field"),
        ("pods: [1]", "pods: must be a mapping"),
        ("scaling: {waves: -1}", "scaling.waves: must be >= 0"),
        ("scaling: {minSize: 3, maxSize: 2}", "scaling.maxSize: must be >= minSize"),
        ("scaling: {cpu: many}", "scaling.cpu:"),
        ("scaling: {provisionDelay: later}", "scaling.provisionDelay:"),
        ("scaling: {nodes: 1}", "scaling.nodes: unknown field"),
        ("[1]", "workload: must be a mapping"),
        ("a: [", "workload: not YAML"),
    ],
)
def test_errors_name_the_field(text: str, field: str) -> None:
    with pytest.raises(WorkloadError) as e:
        parse_workload(text)
    assert str(e.value).startswith(field), str(e.value)

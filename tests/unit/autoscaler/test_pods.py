"""Which pods the autoscaler counts and where, by emulated version (autoscaler/pods.py)."""

from __future__ import annotations

import pytest

from autoscaler.pods import is_unschedulable, sort_pods
from kemu.api.v1 import types_pb2
from kemu.component.version import Version
from kemu.component.version_rules import VersionRules
from kemu.testing.builders import make_pod


def pending(name: str, *, priority: int = 0, nnn: str = "") -> types_pb2.Pod:
    b = make_pod(name).priority(priority).condition("PodScheduled", "False", "Unschedulable")
    return (b.nominated(nnn) if nnn else b).obj()


def test_unschedulable_is_podscheduled_false_unschedulable_unbound_and_not_deleting() -> None:
    assert is_unschedulable(pending("p"))
    assert not is_unschedulable(make_pod("new").obj())
    gated = make_pod("g").condition("PodScheduled", "False", "SchedulingGated").obj()
    assert not is_unschedulable(gated)
    bound = pending("b")
    bound.spec.node_name = "n1"
    assert not is_unschedulable(bound)
    deleting = pending("d")
    deleting.metadata.deletion_timestamp.seconds = 1
    assert not is_unschedulable(deleting)


def names(pods: list[types_pb2.Pod]) -> list[str]:
    return [p.metadata.name for p in pods]


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_sorting_by_version(version: str) -> None:
    pods = [
        make_pod("running").node("n1").phase("Running").obj(),
        make_pod("done").node("n1").phase("Succeeded").obj(),
        pending("plain"),
        pending("low", priority=-20),
        pending("low-nominated", priority=-20, nnn="n1"),
        pending("nominated", nnn="n1"),
        pending("nominated-gone", nnn="gone"),
        make_pod("binding").nominated("n1").obj(),  # KEP-5278: NNN, not unschedulable
        pending("leaving", nnn="n1"),
    ]
    pods[-1].metadata.deletion_timestamp.seconds = 1  # being deleted
    out = sort_pods(
        pods,
        {"n1"},
        rules=VersionRules.at(Version.parse(version)),
        expendable_cutoff=-10,
        now=0.0,
        new_pod_scale_up_delay=0.0,
    )
    assert names(out.scheduled) == ["running"]
    nominated = [p.metadata.name for p, _ in out.nominated]
    if version == "1.36":
        assert names(out.unschedulable) == ["plain", "nominated-gone"]
        assert names(out.expendable) == ["low", "low-nominated"]
        assert nominated == ["nominated"]
        assert out.nominated_elsewhere == []
    else:
        # kubernetes/autoscaler#9607 filters the expendable and terminating pods out first.
        assert names(out.unschedulable) == ["plain"]
        assert names(out.expendable) == ["low", "low-nominated"]
        assert nominated == ["nominated", "binding"]
        assert names(out.nominated_elsewhere) == ["nominated-gone"]

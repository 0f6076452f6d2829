"""The pod rules of the registry that need no storage: the resize skew rule
(pod_resize.py) and PodObservedGenerationTracking's status field dropping."""

from __future__ import annotations

import pytest

from apiserver.registry.pod_resize import resize_pod
from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Invalid
from kemu.machinery.pod_strategy import drop_disabled_pod_status_fields
from kemu.testing.builders import make_pod


def _running(resources: bool) -> types_pb2.Pod:
    pod = make_pod("p").req(cpu="1").node("n1").obj()
    cs = pod.status.container_statuses.add(name="c")
    cs.state.running.SetInParent()
    if resources:
        cs.resources.requests["cpu"] = "1"
    return pod


def test_a_running_pod_whose_kubelet_reports_no_resources_cannot_be_resized():
    desired = make_pod("p").req(cpu="2").node("n1").obj()
    with pytest.raises(Invalid) as e:
        resize_pod(_running(resources=False), desired)
    assert e.value.causes[0].field == "spec"
    assert "Pod running on node without support for resize" in str(e.value)
    assert resize_pod(_running(resources=True), desired).metadata.generation == 1
    pending = make_pod("p").req(cpu="1").node("n1").obj()  # no running container: allowed
    assert resize_pod(pending, desired).spec.containers[0].resources.requests["cpu"] == "2"


def test_observed_generation_is_dropped_without_the_gate_unless_in_use():
    old = make_pod("p").obj()
    new = make_pod("p").obj()
    new.status.observed_generation = 3
    new.status.conditions.add(type="Ready", status="True", observed_generation=3)
    kept = types_pb2.Pod()
    kept.CopyFrom(new)
    drop_disabled_pod_status_fields(kept, old, observed_generation=True)
    assert kept.status.observed_generation == 3
    drop_disabled_pod_status_fields(new, old, observed_generation=False)
    assert new.status.observed_generation == 0 and new.status.conditions[0].observed_generation == 0
    in_use = make_pod("p").obj()
    in_use.status.observed_generation = 1
    again = types_pb2.Pod()
    again.CopyFrom(kept)
    drop_disabled_pod_status_fields(again, in_use, observed_generation=False)
    assert again.status.observed_generation == 3


def test_host_ips_are_dropped_without_pod_host_ips_unless_in_use():
    """dropDisabledPodStatusFields for PodHostIPs (KEP-2681, before 1.29 by default)."""
    old = make_pod("p").obj()
    new = make_pod("p").obj()
    new.status.host_ip = "172.18.0.2"
    new.status.host_ips.add(ip="172.18.0.2")
    drop_disabled_pod_status_fields(new, old, observed_generation=True, host_ips=False)
    assert new.status.host_ip == "172.18.0.2" and not new.status.host_ips
    old.status.host_ips.add(ip="172.18.0.2")
    new.status.host_ips.add(ip="172.18.0.2")
    drop_disabled_pod_status_fields(new, old, observed_generation=True, host_ips=False)
    assert [i.ip for i in new.status.host_ips] == ["172.18.0.2"]

"""NodePorts: cases after upstream's TestNodePorts, TestPreFilterDisabled and the queueing
hint tests of nodeports/node_ports_test.go."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.scheduling.events import ActionType, EventResource, QueueingHint
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import node_ports
from kemu.scheduling.status import Code
from kemu.scheduling.types import HostPortInfo, NodeInfo, get_host_ports
from kemu.testing.builders import PodBuilder, make_node, make_pod
from tests.unit.scheduling.deferred_builders import with_deferral
from tests.unit.scheduling.plugins.fakes import FakeHandle


def with_ports(name: str, *ports: str) -> PodBuilder:
    """Ports as upstream's tests write them: "protocol/hostIP/hostPort"."""
    b = make_pod(name).uid(name)
    for spec in ports:
        protocol, ip, port = spec.split("/")
        b.port(int(port), int(port), protocol=protocol, host_ip=ip)
    return b


def node_with(*pods: types_pb2.Pod) -> NodeInfo:
    n = NodeInfo(make_node("n").obj())
    for p in pods:
        n.add_pod(p)
    return n


def run(pod: types_pb2.Pod, node: NodeInfo) -> Code:
    pl = node_ports.new({}, FakeHandle())
    state = CycleState()
    _, status = pl.pre_filter(state, pod, [node])
    if status.code == Code.SKIP:
        return Code.SUCCESS
    return pl.filter(state, pod, node).code


@pytest.mark.parametrize(
    ("pod", "existing", "want"),
    [
        ("", [], Code.SUCCESS),
        ("UDP/127.0.0.1/8080", ["UDP/127.0.0.1/9090"], Code.SUCCESS),
        ("UDP/127.0.0.1/8080", ["UDP/127.0.0.1/8080"], Code.UNSCHEDULABLE),
        ("TCP/127.0.0.1/8080", ["TCP/127.0.0.1/8080"], Code.UNSCHEDULABLE),
        # Another protocol or another IP is no conflict.
        ("TCP/127.0.0.1/8080", ["UDP/127.0.0.1/8080"], Code.SUCCESS),
        ("TCP/127.0.0.1/8080", ["TCP/127.0.0.2/8080"], Code.SUCCESS),
        # 0.0.0.0 (or no hostIP) conflicts with the same protocol/port on any IP, both ways.
        ("TCP/0.0.0.0/8001", ["TCP/127.0.0.1/8001"], Code.UNSCHEDULABLE),
        ("TCP/127.0.0.1/8001", ["TCP/0.0.0.0/8001"], Code.UNSCHEDULABLE),
        ("TCP//8001", ["TCP/10.0.0.1/8001"], Code.UNSCHEDULABLE),
        ("UDP/0.0.0.0/8001", ["TCP/0.0.0.0/8001"], Code.SUCCESS),
    ],
)
def test_filter(pod: str, existing: list[str], want: Code) -> None:
    p = with_ports("p", pod).obj() if pod else make_pod("p").obj()
    others = [with_ports(f"o{i}", e).obj() for i, e in enumerate(existing)]
    node = node_with(*others)
    assert run(p, node) == want
    if want == Code.UNSCHEDULABLE:
        pl = node_ports.new({}, FakeHandle())
        state = CycleState()
        pl.pre_filter(state, p, [node])
        assert pl.filter(state, p, node).message() == node_ports.ERR_REASON


def test_pre_filter_skips_a_pod_without_host_ports() -> None:
    pl = node_ports.new({}, FakeHandle())
    # A containerPort alone holds nothing on the node.
    pod = make_pod("p").port(80).obj()
    _, status = pl.pre_filter(CycleState(), pod, [])
    assert status.code == Code.SKIP


def test_filter_without_pre_filter_state_is_an_error() -> None:
    pl = node_ports.new({}, FakeHandle())
    status = pl.filter(CycleState(), with_ports("p", "TCP//80").obj(), node_with())
    assert status.code == Code.ERROR


def test_sidecar_ports_count_and_plain_init_container_ports_do_not() -> None:
    pod = (
        make_pod("p")
        .init_container("init")
        .port(81, 81)
        .init_container("side", restart_policy="Always")
        .port(82, 82)
        .obj()
    )
    assert get_host_ports(pod) == (("0.0.0.0", "TCP", 82),)


def test_node_info_gives_ports_back_on_removal_and_clones_them() -> None:
    a, b = with_ports("a", "TCP//80").obj(), with_ports("b", "TCP//80").obj()
    node = node_with(a, b)
    want = with_ports("w", "TCP//80").obj()
    clone = node.clone()
    node.remove_pod(a)
    assert run(want, node) == Code.UNSCHEDULABLE  # b still holds it
    node.remove_pod(b)
    assert run(want, node) == Code.SUCCESS
    assert run(want, clone) == Code.UNSCHEDULABLE  # the clone kept its own count
    assert not node.used_ports and len(clone.used_ports) == 1


def test_host_port_info_conflicts() -> None:
    info = HostPortInfo()
    info.add(("10.0.0.1", "TCP", 80))
    assert info.check_conflict(("0.0.0.0", "TCP", 80))
    assert info.check_conflict(("10.0.0.1", "TCP", 80))
    assert not info.check_conflict(("10.0.0.2", "TCP", 80))
    assert not info.check_conflict(("10.0.0.1", "UDP", 80))
    info.remove(("10.0.0.1", "TCP", 80))
    assert not info.check_conflict(("0.0.0.0", "TCP", 80))


def test_deferred_resize_pod_skips_when_resize_preemption_is_on() -> None:
    pod = with_deferral(with_ports("p", "TCP//80").node("n").obj())
    _, status = node_ports.NodePorts(skip_deferred=True).pre_filter(CycleState(), pod, [])
    assert status.code == Code.SKIP
    _, status = node_ports.NodePorts(skip_deferred=False).pre_filter(CycleState(), pod, [])
    assert status.code == Code.SUCCESS


def test_events_to_register() -> None:
    pl = node_ports.new({}, FakeHandle())
    events = {(e.event.resource, e.event.action) for e in pl.events_to_register()}
    assert events == {
        (EventResource.POD, ActionType.DELETE),
        (EventResource.NODE, ActionType.ADD),
    }


@pytest.mark.parametrize(
    ("deleted", "want"),
    [
        # Placed and held the wanted port.
        (with_ports("d", "TCP//8080").node("n").obj(), QueueingHint.QUEUE),
        (with_ports("d", "TCP//8080").nominated("n").obj(), QueueingHint.QUEUE),
        # Neither bound nor nominated: it held nothing.
        (with_ports("d", "TCP//8080").obj(), QueueingHint.SKIP),
        # No host ports, or other ones.
        (make_pod("d").node("n").obj(), QueueingHint.SKIP),
        (with_ports("d", "TCP//9090").node("n").obj(), QueueingHint.SKIP),
        (with_ports("d", "UDP//8080").node("n").obj(), QueueingHint.SKIP),
    ],
)
def test_is_schedulable_after_pod_deleted(deleted: types_pb2.Pod, want: QueueingHint) -> None:
    pl = node_ports.new({}, FakeHandle())
    pod = with_ports("p", "TCP//8080").obj()
    assert pl.is_schedulable_after_pod_deleted(pod, deleted, None) == want

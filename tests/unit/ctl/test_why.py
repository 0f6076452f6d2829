"""kemuctl why's reading of who set and cleared a pod's nominatedNodeName, from the scheduler's
attempts and the pod as it is now."""

from __future__ import annotations

import io
from typing import Any

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.ctl.common import Context
from kemu.ctl.why import (
    BY_APISERVER,
    BY_BINDING_START,
    BY_PREEMPTION,
    attempt_lines,
    claim_entry,
    nominations,
    pod_story,
    print_pod_story,
)
from kemu.testing.builders import make_pod


def attempt(t: float, **kw: Any) -> dict[str, Any]:
    return {"time": t, **kw}


def who(pod: Any, attempts: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(n["action"], n["node"], n["by"]) for n in nominations(pod, attempts)]


def test_preemption_then_binding_then_the_apiserver_clears_it() -> None:
    bound = make_pod("p").node("n1").obj()
    attempts = [
        attempt(1.0, preemption={"nominatedNodeName": "n1"}),
        attempt(2.0, expectedNodeName="n1"),  # the same node: no new entry
    ]
    assert who(bound, attempts) == [("set", "n1", BY_PREEMPTION), ("cleared", "n1", BY_APISERVER)]
    kept = make_pod("p").node("n1").obj()
    kept.status.nominated_node_name = "n1"  # the apiserver's gate off: NNN stays
    assert who(kept, attempts) == [("set", "n1", BY_PREEMPTION)]


def test_preemption_not_helpful_clears_and_binding_start_sets() -> None:
    pending = make_pod("p").obj()
    attempts = [
        attempt(1.0, preemption={"nominatedNodeName": "n1"}),
        attempt(2.0, preemption={"nominatedNodeName": None}),
        attempt(3.0, expectedNodeName="n2"),
    ]
    assert who(pending, attempts) == [
        ("set", "n1", BY_PREEMPTION),
        ("cleared", "n1", BY_PREEMPTION),
        ("set", "n2", BY_BINDING_START),
    ]
    assert nominations(pending, [])[:1] == []


def test_an_attempts_lines_tell_the_scores_the_phases_and_the_preemption() -> None:
    scheduled = {
        "cycle": "schedule",
        "profile": "default-scheduler",
        "result": "scheduled",
        "node": "n2",
        "bound": True,
        "nodes": 10,
        "preFilterNodes": 4,
        "evaluatedNodes": 4,
        "feasibleNodes": 2,
        "candidates": [
            {"node": "n2", "total": 150, "scores": {"NodeResourcesFit": 100, "ImageLocality": 50}},
            {"node": "n3", "total": 120, "scores": {"NodeResourcesFit": 90, "ImageLocality": 30}},
        ],
        "phases": [
            {"point": "Reserve", "code": "Success", "seconds": 0.0001},
            {"point": "PreBind", "code": "Success", "seconds": 2.5},
        ],
    }
    assert attempt_lines(1, scheduled) == [
        "attempt 1 (schedule, profile default-scheduler): scheduled on n2 (4 of 10 nodes "
        "evaluated, 2 feasible), bound",
        "  PreFilter left 4 of 10 nodes",
        "  chosen: n2 score 150 (NodeResourcesFit 100, ImageLocality 50)",
        "  next: n3 score 120 (NodeResourcesFit 90, ImageLocality 30)",
        "  Reserve Success in 0.1 ms, PreBind Success in 2500.0 ms",
    ]
    preempting = {
        "cycle": "schedule",
        "profile": "default-scheduler",
        "result": "unschedulable",
        "message": "0/2 nodes are available: 2 Insufficient cpu.",
        "rejectedBy": {"NodeResourcesFit": 2},
        "preemption": {
            "nominatedNodeName": "n1",
            "victims": [{"pod": "ns/low", "priority": 1, "pdbs": ["ns/web"]}],
            "pdbViolations": 1,
            "candidates": 2,
            "criterion": "lowestHighestPriorityVictim",
            "clearedNominations": ["ns/lower"],
        },
    }
    assert attempt_lines(2, preempting)[1:] == [
        "  nodes rejected by: NodeResourcesFit 2",
        "  preemption: node n1 (lowest highest-priority victim, of 2 candidate node(s)), "
        "victims: ns/low (priority 1, breaks PDB ns/web), 1 PDB violation(s)",
        "  nominations of lower priority to that node cleared: ns/lower",
    ]


def test_a_gang_members_story_tells_its_hold_and_its_groups_cycle() -> None:
    member = {
        "cycle": "pod-group",
        "profile": "default-scheduler",
        "result": "unschedulable",
        "message": "waiting for minCount pods from a gang to be scheduled",
        "podGroup": {
            "group": "ns/trainer",
            "members": 3,
            "result": "unschedulable",
            "message": "pod group is unschedulable",
        },
    }
    assert attempt_lines(1, member) == [
        "attempt 1 (pod-group, profile default-scheduler): unschedulable: waiting for "
        "minCount pods from a gang to be scheduled",
        "  one of 3 members tried together in the pod-group cycle of ns/trainer: the group "
        "unschedulable: pod group is unschedulable",
    ]
    pod = make_pod("a").obj()
    held = {"since": 0.0, "plugin": "GangScheduling", "message": "waiting for minCount"}
    story = pod_story(pod, [], [], held)
    assert story["gated"] == {**held, "since": "1970-01-01T00:00:00.000Z"}
    out = io.StringIO()
    print_pod_story(Context(client=FakeClient(), out=out), story)
    assert "held at PreEnqueue by GangScheduling: waiting for minCount" in out.getvalue()


def test_a_story_sorts_second_and_millisecond_times_as_times() -> None:
    # The pod was created at :22 (the API's second), held at :22.137 (the record's ms).
    pod = make_pod("a").obj()
    pod.metadata.creation_timestamp.FromSeconds(22)
    held = {"since": 22.137, "plugin": "GangScheduling", "message": "waiting"}
    out = io.StringIO()
    print_pod_story(Context(client=FakeClient(), out=out), pod_story(pod, [], [], held))
    lines = out.getvalue().splitlines()
    assert "created" in lines[1] and "held at PreEnqueue" in lines[2], lines


def test_a_members_try_that_waits_on_workload_aware_preemption() -> None:
    member = {
        "cycle": "pod-group",
        "profile": "default-scheduler",
        "result": "unschedulable",
        "message": "0/3 nodes are available: 1 Insufficient cpu.",
        "podGroup": {
            "group": "ns/urgent",
            "members": 2,
            "result": "waiting_on_preemption",
            "message": "pod group is waiting for preemption to complete",
        },
        "preemption": {"nominatedNodeName": "node-c", "victims": [], "pdbViolations": 0},
    }
    assert attempt_lines(1, member)[1:] == [
        "  one of 2 members tried together in the pod-group cycle of ns/urgent: the group "
        "waiting_on_preemption: pod group is waiting for preemption to complete",
        "  workload-aware preemption (KEP-5710): nominated to node-c while the victims go",
    ]
    pod = make_pod("urgent-0").obj()
    assert who(pod, [attempt(1.0, **member)]) == [("set", "node-c", BY_PREEMPTION)]


def test_the_pods_claims_and_their_allocation() -> None:
    """`why pod/NAME` lists the pod's claims: the devices DynamicResources' PreBind wrote, the
    node selector, who the claim is reserved for; a template's claim not created yet."""
    pod = make_pod("p").namespace("ns").obj()
    named = pod.spec.resource_claims.add(name="gpu", resource_claim_name="c1")
    templated = pod.spec.resource_claims.add(name="t", resource_claim_template_name="tmpl")
    claim = types_pb2.ResourceClaim()
    claim.metadata.name = "c1"
    claim.status.allocation.devices.results.add(
        request="req-0", driver="gpu.example.com", pool="n1", device="gpu-0"
    )
    term = claim.status.allocation.node_selector.node_selector_terms.add()
    term.match_fields.add(key="metadata.name", operator="In", values=["n1"])
    claim.status.reserved_for.add(resource="pods", name="p", uid="u")
    entries = [
        claim_entry(named, "ns", "c1", claim),
        claim_entry(templated, "ns", None, None, 'pod "ns/p": ResourceClaim not created yet'),
    ]
    assert entries[0]["devices"] == ["req-0: gpu.example.com/n1/gpu-0"]
    out = io.StringIO()
    print_pod_story(Context(client=FakeClient(), out=out), pod_story(pod, [], [], None, entries))
    text = out.getvalue()
    assert (
        "claim gpu: ResourceClaim ns/c1 allocated: req-0: gpu.example.com/n1/gpu-0 "
        "(nodes: metadata.name In ['n1']); reserved for p"
    ) in text, text
    assert 'claim t: (none): pod "ns/p": ResourceClaim not created yet' in text


def test_an_unallocated_claim_names_its_class_and_requests() -> None:
    """S-DRA-WALK-2: a pod no node can take for its claim: `why` names, for the claim that is
    not allocated, each request with its DeviceClass, count and CEL selectors (a firstAvailable
    request: each subrequest), so the story says what no device satisfied."""
    pod = make_pod("training").namespace("ns").obj()
    ref = pod.spec.resource_claims.add(name="gpu", resource_claim_name="big-gpu")
    claim = types_pb2.ResourceClaim()
    claim.metadata.name = "big-gpu"
    big = claim.spec.devices.requests.add(name="gpu")
    big.exactly.device_class_name = "gpu.example.com"
    big.exactly.count = 2
    big.exactly.selectors.add().cel.expression = (
        'device.attributes["gpu.example.com"].model == "B200"'
    )
    anyone = claim.spec.devices.requests.add(name="nic")
    anyone.first_available.add(name="fast", device_class_name="nic.example.com")
    anyone.first_available.add(
        name="any", device_class_name="nic.example.com", allocation_mode="All"
    )
    entry = claim_entry(ref, "ns", "big-gpu", claim)
    assert entry["requests"] == [
        'gpu: class gpu.example.com, 2 devices, where device.attributes["gpu.example.com"].model == "B200"',
        "nic: first of fast (class nic.example.com, 1 device) | any (class nic.example.com, all devices)",
    ]
    out = io.StringIO()
    print_pod_story(Context(client=FakeClient(), out=out), pod_story(pod, [], [], None, [entry]))
    assert (
        "claim gpu: ResourceClaim ns/big-gpu not allocated; request gpu: class gpu.example.com, "
        '2 devices, where device.attributes["gpu.example.com"].model == "B200"; request nic: '
        "first of fast"
    ) in out.getvalue(), out.getvalue()


def test_a_phase_whose_calls_waited_on_the_rate_limiter_says_how_long() -> None:
    bound = {
        "cycle": "schedule",
        "profile": "default-scheduler",
        "result": "scheduled",
        "node": "n1",
        "bound": True,
        "nodes": 1,
        "evaluatedNodes": 1,
        "feasibleNodes": 1,
        "phases": [{"point": "Bind", "code": "Success", "seconds": 0.52, "throttledSeconds": 0.5}],
    }
    assert attempt_lines(1, bound)[-1] == (
        "  Bind Success in 520.0 ms (500.0 ms of it throttled by the client's rate limiter)"
    )

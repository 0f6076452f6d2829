"""The pool walk's shortcut (`QueueOptions(skip_unhinted=)`: a pod rejected only by plugins
without a hint for the event is passed over without per-pod work) changes no outcome: on random
pools and random event sequences, the queue with it and the queue without it make the same
moves, in the same order, call the same hints with the same pods, and end with the same
metrics (hypothesis)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.scheduling.events import (
    ASSIGNED_POD_DELETE,
    FORCE_ACTIVATE,
    NODE_ADD,
    UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
    QueueingHintFn,
)
from kemu.scheduling.status import SUCCESS, Status, unschedulable
from kemu.testing.builders import make_node, make_pod
from scheduler.queue import PriorityQueue, QueueMetrics, QueueOptions, build_queueing_hint_map

PROFILES = ("default-scheduler", "other")
PLUGINS = ("Fit", "Ports", "Taints", "Gate", "NoEvents")
NODE_LABEL = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL, "NodeLabel")
EVENTS = (ASSIGNED_POD_DELETE, NODE_ADD, NODE_LABEL, UNSCHEDULABLE_TIMEOUT, FORCE_ACTIVATE)


class Recorder:
    """Hints that answer from a fixed table and log every call."""

    def __init__(self, answers: dict[tuple[str, str, str], bool]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, str, str]] = []

    def hint(self, plugin: str) -> QueueingHintFn:
        def fn(pod: types_pb2.Pod, old: Any, new: Any) -> QueueingHint:
            obj = new if new is not None else old
            what = obj.metadata.name if obj is not None else ""
            call = (plugin, pod.metadata.name, what)
            self.calls.append(call)
            queue = self.answers.get(call, hash(call) % 2 == 0)
            return QueueingHint.QUEUE if queue else QueueingHint.SKIP

        return fn


def registrations(rec: Recorder, profile: str) -> dict[str, list[ClusterEventWithHint]]:
    ext: dict[str, list[ClusterEventWithHint]] = {
        "Fit": [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE), rec.hint("Fit")
            ),
            ClusterEventWithHint(NODE_ADD, rec.hint("Fit")),
        ],
        "Ports": [
            ClusterEventWithHint(
                ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE), rec.hint("Ports")
            )
        ],
        "Taints": [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                rec.hint("Taints"),
            )
        ],
        "Gate": [ClusterEventWithHint(NODE_ADD, rec.hint("Gate"))],
    }
    if profile == "other":
        del ext["Ports"]  # profiles differ in what they register
    return ext


pod_specs = st.lists(
    st.tuples(
        st.sampled_from(PROFILES),
        st.frozensets(st.sampled_from(PLUGINS), max_size=3),  # unschedulable plugins
        st.frozensets(st.sampled_from(PLUGINS), max_size=1),  # pending plugins
        st.booleans(),  # gated by "Gate" at PreEnqueue while `gate_open` is False
    ),
    min_size=1,
    max_size=25,
)
event_specs = st.lists(
    st.tuples(st.integers(0, len(EVENTS) - 1), st.integers(0, 30), st.booleans()),
    min_size=1,
    max_size=12,
)


def run(
    pods: list[tuple[str, frozenset[str], frozenset[str], bool]],
    events: list[tuple[int, int, bool]],
    answers: dict[tuple[str, str, str], bool],
    skip_unhinted: bool,
) -> tuple[list[Any], list[tuple[str, str, str]], list[tuple[str, Any, float]]]:
    rec = Recorder(answers)
    hint_maps = {p: build_queueing_hint_map(registrations(rec, p)) for p in PROFILES}
    gated = {f"p{i}" for i, spec in enumerate(pods) if spec[3]}
    state = {"open": False}

    def pre_enqueue(pod: types_pb2.Pod) -> Status:
        if pod.metadata.name in gated and not state["open"]:
            return unschedulable("gated", plugin="Gate")
        return SUCCESS

    registry = CollectorRegistry()
    clock = FakeClock()
    q = PriorityQueue(
        clock=clock,
        pre_enqueue=pre_enqueue,
        queueing_hint_map=hint_maps,
        metrics=QueueMetrics(registry),
        options=QueueOptions(skip_unhinted=skip_unhinted),
    )
    snapshots: list[Any] = []

    async def fill() -> None:
        for i, (profile, rejectors, pending, _) in enumerate(pods):
            p = make_pod(f"p{i}").uid(f"u{i}").scheduler_name(profile).obj()
            q.add(p)
            if len(q.pods_in_active_q()) == 0:
                continue  # gated: it stays in the pool as it is
            with anyio.fail_after(1):
                qpi = await q.pop()
            assert qpi is not None
            qpi.unschedulable_plugins.update(rejectors)
            qpi.pending_plugins.update(pending)
            q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())
        for kind, n, open_gate in events:
            state["open"] = open_gate
            clock.advance(float(n))
            event = EVENTS[kind]
            obj_name = f"x{n}"
            if event.resource == EventResource.NODE:
                q.move_all_to_active_or_backoff_queue(event, None, make_node(obj_name).obj())
            elif event == FORCE_ACTIVATE:
                target = make_pod(f"p{n % len(pods)}").uid(f"u{n % len(pods)}").obj()
                q.move_all_to_active_or_backoff_queue(event, None, target)
            elif event == UNSCHEDULABLE_TIMEOUT:
                q.move_all_to_active_or_backoff_queue(event)
            else:
                gone = make_pod(obj_name).uid(obj_name).node("n0").obj()
                q.move_all_to_active_or_backoff_queue(event, gone, None)
            snapshots.append(
                (
                    [p.metadata.name for p in q.pods_in_active_q()],
                    [p.metadata.name for p in q.pods_in_backoff_q()],
                    [p.metadata.name for p in q.unschedulable_pods()],
                    q.len_gated(),
                )
            )

    anyio.run(fill)
    metrics = sorted(
        (s.name, tuple(sorted(s.labels.items())), s.value)
        for family in registry.collect()
        for s in family.samples
        if not s.name.endswith("_created")
    )
    return snapshots, rec.calls, metrics


@settings(max_examples=60, deadline=None)
@given(
    pods=pod_specs,
    events=event_specs,
    answers=st.dictionaries(
        st.tuples(
            st.sampled_from(PLUGINS),
            st.sampled_from([f"p{i}" for i in range(25)]),
            st.sampled_from([f"x{i}" for i in range(31)] + [""]),
        ),
        st.booleans(),
        max_size=40,
    ),
)
def test_the_walk_shortcut_changes_no_move_hint_call_or_metric(
    pods: list[tuple[str, frozenset[str], frozenset[str], bool]],
    events: list[tuple[int, int, bool]],
    answers: dict[tuple[str, str, str], bool],
) -> None:
    fast = run(pods, events, answers, skip_unhinted=True)
    full = run(pods, events, answers, skip_unhinted=False)
    assert fast == full


def test_the_shortcut_passes_over_pods_no_hint_can_move(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pod rejected only by a plugin with no hint for the event is not looked at (it would
    not be moved either way); a pod rejected by a hinted plugin is."""
    pods: list[tuple[str, frozenset[str], frozenset[str], bool]] = [
        ("default-scheduler", frozenset({"NoEvents"}), frozenset(), False),
        ("default-scheduler", frozenset({"Fit"}), frozenset(), False),
    ]
    calls: list[tuple[str, str]] = []
    orig = PriorityQueue._is_pod_worth_requeuing

    def spy(self: PriorityQueue, qpi: Any, event: Any, old: Any, new: Any) -> Any:
        calls.append((qpi.pod.metadata.name, str(event)))
        return orig(self, qpi, event, old, new)

    monkeypatch.setattr(PriorityQueue, "_is_pod_worth_requeuing", spy)
    run(pods, [(0, 1, False)], {}, skip_unhinted=True)
    assert [name for name, _ in calls] == ["p1"]

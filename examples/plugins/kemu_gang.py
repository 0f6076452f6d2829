"""Gang: the pods of a group are scheduled all or none (the idea of scheduler-plugins'
Coscheduling, reduced to its core), an out-of-tree plugin for kemu.

A pod joins a gang with two labels: `scheduling.example.com/gang` (the gang's name, within
the pod's namespace) and `scheduling.example.com/gang-size` (how many pods the gang needs).

- PreFilter: a gang with fewer pods than its size cannot run; its pods are
  UnschedulableAndUnresolvable ("gang train: 2 of 3 pods exist"). The cluster autoscaler's
  simulations run PreFilter too, so an incomplete gang asks for no new node. Once the gang is
  complete, the first member through PreFilter activates the members this plugin turned away
  (the scheduler has no event for "a pod of my gang was created"); once each, so that two
  members that do not fit for another reason do not wake each other in turn.
- Permit: a gang member waits (up to `permitWaitingTime` seconds, pluginConfig args; default
  60) until the gang's pods that are bound, or waiting at Permit, reach its size; the last
  one in allows the others, and they bind together.

Pods without the labels are none of its business (Skip, Success).
"""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2
from kemu.scheduling.interface import (
    SCHEDULER_POD_FIELD_SELECTOR,
    CycleState,
    Handle,
    ObjectLister,
    PluginArgs,
    PreFilterExtensions,
)
from kemu.scheduling.status import SKIP, SUCCESS, Status, unresolvable, wait
from kemu.scheduling.types import NodeInfo, PreFilterResult

NAME: Final = "Gang"
GANG_LABEL: Final = "scheduling.example.com/gang"
SIZE_LABEL: Final = "scheduling.example.com/gang-size"
DEFAULT_WAIT: Final = 60.0


def gang_of(pod: types_pb2.Pod) -> tuple[str, int] | None:
    """The pod's gang and its size; None for a pod in no gang (or with a size that is not a
    positive integer: such a pod is scheduled alone)."""
    labels = pod.metadata.labels
    name, size = labels.get(GANG_LABEL, ""), labels.get(SIZE_LABEL, "")
    if not name or not size.isdigit() or int(size) < 1:
        return None
    return name, int(size)


class Gang:
    NAME = NAME

    def __init__(self, args: PluginArgs, handle: Handle) -> None:
        unknown = sorted(set(args) - {"permitWaitingTime"})
        if unknown:
            raise ValueError(f"unknown field {unknown[0]!r} (known: permitWaitingTime)")
        timeout = args.get("permitWaitingTime", DEFAULT_WAIT)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"permitWaitingTime: must be a positive number, not {timeout!r}")
        self._timeout = float(timeout)
        self._handle = handle
        self._turned_away: set[str] = set()
        """uids of the pods PreFilter turned away because their gang was incomplete."""
        factory = handle.informer_factory()
        if factory is None:
            raise ValueError("Gang needs the pods: run it with an informer factory")
        self._pods: ObjectLister[types_pb2.Pod] = factory.informer(
            types_pb2.Pod, field_selector=SCHEDULER_POD_FIELD_SELECTOR
        ).lister

    def name(self) -> str:
        return NAME

    def _members(self, pod: types_pb2.Pod, gang: str) -> list[types_pb2.Pod]:
        namespace = pod.metadata.namespace
        return [
            p
            for p in self._pods.list(namespace)
            if p.metadata.labels.get(GANG_LABEL) == gang
            and not p.metadata.HasField("deletion_timestamp")
        ]

    # ------------------------------------------------------------ PreFilter

    def pre_filter(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        gang = gang_of(pod)
        if gang is None:
            return None, SKIP
        name, size = gang
        members = self._members(pod, name)
        if len(members) < size:
            self._turned_away.add(pod.metadata.uid)
            reason = f"gang {name}: {len(members)} of {size} pods exist"
            return None, unresolvable(reason, plugin=NAME)
        # The gang is complete: its members this plugin turned away wait in the unschedulable
        # pool for an event; bring them back now (Coscheduling's ActivateSiblings), once.
        self._turned_away.discard(pod.metadata.uid)
        waiting = [
            p for p in members if not p.spec.node_name and p.metadata.uid in self._turned_away
        ]
        self._turned_away.difference_update(p.metadata.uid for p in waiting)
        if waiting:
            self._handle.activate(waiting)
        return None, SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    # ------------------------------------------------------------ Permit

    def permit(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> tuple[Status, float]:
        gang = gang_of(pod)
        if gang is None:
            return SUCCESS, 0.0
        name, size = gang
        namespace = pod.metadata.namespace
        waiting = [
            w
            for w in self._handle.iterate_over_waiting_pods()
            if w.pod.metadata.namespace == namespace
            and w.pod.metadata.labels.get(GANG_LABEL) == name
            and w.pod.metadata.uid != pod.metadata.uid
        ]
        bound = sum(1 for p in self._members(pod, name) if p.spec.node_name)
        if bound + len(waiting) + 1 < size:
            ready = bound + len(waiting) + 1
            return wait(f"gang {name}: {ready} of {size} pods placed", plugin=NAME), self._timeout
        for member in waiting:
            member.allow(NAME)
        return SUCCESS, 0.0


def new(args: PluginArgs, handle: Handle) -> Gang:
    return Gang(args, handle)

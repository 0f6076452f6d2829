"""How many nodes of a group the pods need (upstream estimator/binpacking_estimator.go,
BinpackingNodeEstimator): pods, largest first (their cpu and memory requests relative to the
template's allocatable), go on the first new node they fit, in simulation; a pod that fits none
opens a new template node (with the template's daemon pods) while the limit allows. The count is the number of new nodes that got
pods."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from autoscaler.templates import TemplateNodeInfo
from kemu.api.v1 import types_pb2
from kemu.scheduling.simulator import ClusterSnapshot, PredicateChecker
from kemu.scheduling.status import Code
from kemu.scheduling.types import NodeInfo


@dataclass(frozen=True)
class Estimate:
    node_count: int
    pods: list[types_pb2.Pod]
    """The pods that the new nodes take."""


def _score(pod: types_pb2.Pod, snapshot: ClusterSnapshot, template: NodeInfo) -> float:
    req = snapshot.pod_info(pod).requests
    score = 0.0
    for name in ("cpu", "memory"):
        alloc = template.allocatable.get(name)
        if alloc > 0:
            score += req.get(name) / alloc
    return score


def estimate(
    checker: PredicateChecker,
    snapshot: ClusterSnapshot,
    template: TemplateNodeInfo,
    pods: Sequence[types_pb2.Pod],
    *,
    max_nodes: int,
) -> Estimate:
    """Bin-packs `pods` onto at most `max_nodes` copies of `template` (each with its daemon
    pods) added to a fork of `snapshot` (named `<template name>-<i>`)."""
    sim = snapshot.fork()
    template_info = NodeInfo(template.node)
    ordered = sorted(pods, key=lambda p: _score(p, snapshot, template_info), reverse=True)
    new_nodes: list[str] = []
    new_set: set[str] = set()
    used: set[str] = set()

    def is_new(ni: NodeInfo) -> bool:
        return ni.name in new_set

    placed: list[types_pb2.Pod] = []
    for pod in ordered:
        node, _ = checker.schedule_pod_on_any_node_matching(sim, pod, is_new)
        if node is None:
            if len(new_nodes) >= max_nodes:
                continue
            # A new node helps only if the pod fits an empty one; an unused empty node is
            # reused by the next pod rather than added again.
            empty = next((n for n in new_nodes if n not in used), None)
            if empty is None:
                empty = f"{template.name}-{len(new_nodes)}"
                template.add_copy(sim, empty)
                new_nodes.append(empty)
                new_set.add(empty)
            if checker.schedule_pod(sim, pod, empty).code is not Code.SUCCESS:
                continue
            node = empty
        used.add(node)
        placed.append(pod)
    return Estimate(len(used), placed)

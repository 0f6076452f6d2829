"""PrioritySort: the default QueueSort plugin (upstream queuesort/priority_sort.go).

activeQ pops the pod with the highest spec.priority first; among equals, the one queued
earliest (QueuedPodInfo.timestamp).
"""

from __future__ import annotations

from typing import Final

from kemu.scheduling.interface import Handle, PluginArgs, QueuedPodInfo, QueueSortPlugin
from kemu.scheduling.types import pod_priority

NAME: Final = "PrioritySort"


class PrioritySort(QueueSortPlugin):
    NAME = NAME

    def name(self) -> str:
        return NAME

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = pod_priority(a.pod), pod_priority(b.pod)
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)


def new(args: PluginArgs, handle: Handle) -> PrioritySort:
    return PrioritySort()

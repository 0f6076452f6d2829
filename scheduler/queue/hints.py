"""Which plugin's queueing hints run for which cluster event (upstream QueueingHintMap).

The queue moves a pod out of the unschedulable pool only when an event comes that one of the
plugins that rejected it registered (EnqueueExtensions.events_to_register), and that plugin's
hint says Queue. The map is per profile (the pod's spec.schedulerName):

    {profile: {registered ClusterEvent: [QueueingHintFunction(plugin, hint), ...]}}

`build_queueing_hint_map` builds one profile's map from what its plugins registered, as
upstream's buildQueueingHintMap does from the framework's enqueue extensions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kemu.scheduling.events import (
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHintFn,
    queue_always,
)


@dataclass(frozen=True, slots=True)
class QueueingHintFunction:
    plugin_name: str
    hint_fn: QueueingHintFn


QueueingHintMap = dict[ClusterEvent, list[QueueingHintFunction]]
QueueingHintMapPerProfile = dict[str, QueueingHintMap]


def build_queueing_hint_map(
    extensions: Mapping[str, Iterable[ClusterEventWithHint]],
) -> QueueingHintMap:
    """One profile's map from its plugins' registrations, {plugin name: events_to_register()}
    (the framework's enqueue_extensions()). A registration without a hint always queues. A
    plugin that registers nothing is left out: pods it rejects move only on their own update,
    a wildcard event or the 5-minute flush, as upstream."""
    hint_map: QueueingHintMap = {}
    for name, registrations in extensions.items():
        for reg in registrations:
            fn = QueueingHintFunction(name, reg.hint or queue_always)
            hint_map.setdefault(reg.event, []).append(fn)
    return hint_map


def plugin_events(hint_maps: QueueingHintMapPerProfile) -> dict[str, list[ClusterEvent]]:
    """The events each plugin registered, over all profiles (upstream buildEventMap)."""
    out: dict[str, list[ClusterEvent]] = {}
    for hint_map in hint_maps.values():
        for event, fns in hint_map.items():
            for fn in fns:
                out.setdefault(fn.plugin_name, []).append(event)
    return out

"""WaitingPermit: an emulation plugin that holds matching pods at Permit until they are
released or time out, for the binding-cycle scenarios of KEP-5278 (a pod waiting on Permit
gets its nominatedNodeName while later pods keep being scheduled).

A pod asks for it with the annotation `scheduling.kemu.io/permit-wait`: the longest wait, a Go
duration ("30s", "10m"), or "" for the plugin's default. Args (pluginConfig), both optional:
- `timeout`: the default wait (default "10m"; the runtime caps Permit waits as upstream does);
- `podSelector`: a label selector; matching pods wait too, for `timeout`.

Permit answers Wait with that timeout. The annotation `scheduling.kemu.io/permit` releases the
pod: "allow" lets it go on to PreBind, "reject" sends it back to the queue as Unschedulable
("rejected by annotation"). The plugin watches pod updates through the handle's informer
factory and calls `handle.get_waiting_pod(uid).allow(NAME)` / `.reject(NAME, ...)`; a decision
that arrives before the pod reaches Permit is remembered and applied at Permit. Without an
informer factory (simulations) only a direct `get_waiting_pod(uid).allow(NAME)` releases pods.
A timeout is the runtime's business (the pod is rejected as Unschedulable).

Pods without the annotation, and not matching podSelector, get Success.
"""

from __future__ import annotations

import logging
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.duration import parse_duration
from kemu.machinery.keys import object_key
from kemu.machinery.labels import Selector
from kemu.scheduling.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from kemu.scheduling.interface import (
    SCHEDULER_POD_FIELD_SELECTOR,
    CycleState,
    EnqueueExtensions,
    Handle,
    InformerFactory,
    PermitPlugin,
    PluginArgs,
)
from kemu.scheduling.plugins.helpers import check_arg_keys, label_selector_from_args
from kemu.scheduling.status import SUCCESS, Status, as_error, unschedulable, wait

logger = logging.getLogger(__name__)

NAME: Final = "WaitingPermit"

ANNOTATION_WAIT: Final = "scheduling.kemu.io/permit-wait"
ANNOTATION_DECISION: Final = "scheduling.kemu.io/permit"
ALLOW: Final = "allow"
REJECT: Final = "reject"
REJECT_MESSAGE: Final = "rejected by annotation"

DEFAULT_TIMEOUT: Final = 600.0

# The scheduler's pod informer: asking the factory for the same key shares its watch instead of
# opening a second one over every pod.
POD_INFORMER_FIELD_SELECTOR: Final = SCHEDULER_POD_FIELD_SELECTOR


class WaitingPermit(PermitPlugin, EnqueueExtensions):
    NAME = NAME

    def __init__(
        self,
        handle: Handle,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        pod_selector: Selector | None = None,
    ) -> None:
        self._handle = handle
        self._timeout = timeout
        self._pod_selector = pod_selector
        # uid -> "allow"/"reject" last seen on a taking-part pod: a release that arrives
        # before the pod waits (the cycle's copy of the pod may predate it).
        self._decisions: dict[str, str] = {}

    def name(self) -> str:
        return NAME

    def takes_part(self, pod: types_pb2.Pod) -> bool:
        if ANNOTATION_WAIT in pod.metadata.annotations:
            return True
        return self._pod_selector is not None and self._pod_selector.matches(pod.metadata.labels)

    def _decision(self, pod: types_pb2.Pod) -> str:
        seen = self._decisions.get(pod.metadata.uid)
        if seen is not None:
            return seen
        value = pod.metadata.annotations.get(ANNOTATION_DECISION, "")
        return value if value in (ALLOW, REJECT) else ""

    # ------------------------------------------------------------ permit

    def permit(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> tuple[Status, float]:
        if not self.takes_part(pod):
            return SUCCESS, 0.0
        decision = self._decision(pod)
        if decision == ALLOW:
            return SUCCESS, 0.0
        if decision == REJECT:
            return unschedulable(REJECT_MESSAGE), 0.0
        timeout = self._timeout
        text = pod.metadata.annotations.get(ANNOTATION_WAIT, "")
        if text.strip():
            try:
                timeout = parse_duration(text)
            except ValueError as e:
                return as_error(f"annotation {ANNOTATION_WAIT}: {e}"), 0.0
        logger.debug(
            "pod %s waits at Permit on %s for up to %.1fs", object_key(pod), node_name, timeout
        )
        return wait(f"waiting for annotation {ANNOTATION_DECISION}"), timeout

    # ------------------------------------------------------------ releases

    def watch(self, factory: InformerFactory) -> None:
        """Receives pod updates from `factory`'s pod informer (before it starts)."""
        factory.informer(
            types_pb2.Pod, field_selector=POD_INFORMER_FIELD_SELECTOR
        ).add_event_handler(self)

    def on_add(self, pod: types_pb2.Pod) -> None:
        self._observe(pod)

    def on_update(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        self._observe(new)

    def on_delete(self, pod: types_pb2.Pod) -> None:
        self._decisions.pop(pod.metadata.uid, None)

    def _observe(self, pod: types_pb2.Pod) -> None:
        uid = pod.metadata.uid
        value = pod.metadata.annotations.get(ANNOTATION_DECISION, "")
        if value not in (ALLOW, REJECT) or not self.takes_part(pod):
            self._decisions.pop(uid, None)
            return
        if self._decisions.get(uid) == value:
            return
        self._decisions[uid] = value
        waiting = self._handle.get_waiting_pod(uid)
        if waiting is None:
            return
        if value == ALLOW:
            logger.info("pod %s allowed at Permit by annotation", object_key(pod))
            waiting.allow(NAME)
        else:
            logger.info("pod %s rejected at Permit by annotation", object_key(pod))
            waiting.reject(NAME, REJECT_MESSAGE)

    # ------------------------------------------------------------ queueing hints

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A pod rejected by annotation comes back when the annotation changes (an annotation
        # change is an "other" pod update).
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_OTHER),
                self.is_schedulable_after_pod_update,
            )
        ]

    def is_schedulable_after_pod_update(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        if not isinstance(new, types_pb2.Pod) or new.metadata.uid != pod.metadata.uid:
            return QueueingHint.SKIP
        if new.metadata.annotations.get(ANNOTATION_DECISION, "") == REJECT:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE


def new(args: PluginArgs, handle: Handle) -> WaitingPermit:
    check_arg_keys(args, ("timeout", "podSelector"), NAME)
    timeout = DEFAULT_TIMEOUT
    if args.get("timeout") is not None:
        text = args["timeout"]
        if not isinstance(text, str):
            raise ValueError(f"{NAME} args: timeout: expected a duration string")
        try:
            timeout = parse_duration(text)
        except ValueError as e:
            raise ValueError(f"{NAME} args: timeout: {e}") from None
    selector = None
    if args.get("podSelector") is not None:
        try:
            selector = label_selector_from_args(args["podSelector"], "podSelector")
        except ValueError as e:
            raise ValueError(f"{NAME} args: {e}") from None
    plugin = WaitingPermit(handle, timeout=timeout, pod_selector=selector)
    factory = handle.informer_factory()
    if factory is not None:
        plugin.watch(factory)
    return plugin

"""SlowPreBind: an emulation plugin whose PreBind takes time, as volume provisioning does in
VolumeBinding, for the binding-cycle scenarios of KEP-5278 (the scheduler sets the pod's
nominatedNodeName before PreBind work it knows of).

A pod asks for it through annotations:
- `scheduling.kemu.io/prebind-delay`: how long PreBind takes, a Go duration ("500ms", "2s",
  "1m30s") or "forever" (PreBind waits until it is cancelled, i.e. until the scheduler stops).
- `scheduling.kemu.io/prebind-fail: "N"`: the first N PreBind attempts for this pod (counted by
  uid, in this plugin instance) return an Error status after the delay; later ones succeed.
- `scheduling.kemu.io/prebind-fail-status: Unschedulable`: those failures are Unschedulable
  instead (as upstream's integration-test PreBind plugin returns), for the scheduler's rule
  that nothing after Permit makes a pod unschedulable: it backs off all the same. The plugin
  registers no cluster event (none resolves an injected failure).

Args (pluginConfig), both optional:
- `podSelector`: a label selector; matching pods take part even without annotations.
- `defaultDelay`: the delay of a taking-part pod without the delay annotation (default "0s";
  "forever" allowed).

PreBindPreFlight answers Success for a pod that takes part (it has either annotation or
matches podSelector), so the scheduler knows PreBind will do work, and Skip for every other
pod; PreBind does nothing for those. An annotation that does not parse is an Error at
PreBindPreFlight (the binding cycle fails and the pod is retried, which the user can see).
Waiting goes through the handle's clock, so tests drive it with a FakeClock.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Final

import anyio

from kemu.api.v1 import types_pb2
from kemu.machinery.duration import parse_duration
from kemu.machinery.keys import object_key
from kemu.machinery.labels import Selector
from kemu.scheduling.events import ClusterEventWithHint
from kemu.scheduling.interface import (
    CycleState,
    EnqueueExtensions,
    Handle,
    PluginArgs,
    PreBindPlugin,
)
from kemu.scheduling.plugins.helpers import check_arg_keys, label_selector_from_args
from kemu.scheduling.status import SKIP, SUCCESS, Code, Status, as_error

logger = logging.getLogger(__name__)

NAME: Final = "SlowPreBind"

ANNOTATION_DELAY: Final = "scheduling.kemu.io/prebind-delay"
ANNOTATION_FAIL: Final = "scheduling.kemu.io/prebind-fail"
ANNOTATION_FAIL_STATUS: Final = "scheduling.kemu.io/prebind-fail-status"
FOREVER: Final = "forever"


def parse_delay(text: str) -> float:
    """Seconds, math.inf for "forever"; ValueError otherwise."""
    if text.strip() == FOREVER:
        return math.inf
    return parse_duration(text)


@dataclass(frozen=True, slots=True)
class _Plan:
    delay: float  # seconds; math.inf: until cancelled
    failures: int  # how many attempts fail


class SlowPreBind(PreBindPlugin, EnqueueExtensions):
    NAME = NAME

    def __init__(
        self, handle: Handle, *, default_delay: float = 0.0, pod_selector: Selector | None = None
    ) -> None:
        self._handle = handle
        self._default_delay = default_delay
        self._pod_selector = pod_selector
        # uid -> PreBind attempts that finished their delay (for prebind-fail).
        self._attempts: dict[str, int] = {}

    def name(self) -> str:
        return NAME

    def takes_part(self, pod: types_pb2.Pod) -> bool:
        annotations = pod.metadata.annotations
        if ANNOTATION_DELAY in annotations or ANNOTATION_FAIL in annotations:
            return True
        return self._pod_selector is not None and self._pod_selector.matches(pod.metadata.labels)

    def _plan(self, pod: types_pb2.Pod) -> _Plan:
        """What PreBind does for a taking-part pod; ValueError names a bad annotation."""
        annotations = pod.metadata.annotations
        delay = self._default_delay
        if ANNOTATION_DELAY in annotations:
            try:
                delay = parse_delay(annotations[ANNOTATION_DELAY])
            except ValueError as e:
                raise ValueError(f"annotation {ANNOTATION_DELAY}: {e}") from None
        failures = 0
        if ANNOTATION_FAIL in annotations:
            text = annotations[ANNOTATION_FAIL]
            try:
                failures = int(text.strip(), 10)
            except ValueError:
                failures = -1
            if failures < 0:
                raise ValueError(
                    f'annotation {ANNOTATION_FAIL}: "{text}" is not a non-negative integer'
                )
        return _Plan(delay, failures)

    def pre_bind_pre_flight(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        if not self.takes_part(pod):
            return SKIP
        try:
            self._plan(pod)
        except ValueError as e:
            return as_error(e)
        return SUCCESS

    async def pre_bind(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        if not self.takes_part(pod):
            return SUCCESS
        try:
            plan = self._plan(pod)
        except ValueError as e:
            return as_error(e)
        if plan.delay == math.inf:
            logger.info("PreBind of %s on %s waits until cancelled", object_key(pod), node_name)
            await anyio.sleep_forever()
        elif plan.delay > 0:
            logger.debug("PreBind of %s on %s takes %.3fs", object_key(pod), node_name, plan.delay)
            await self._handle.clock.sleep(plan.delay)
        uid = pod.metadata.uid
        attempt = self._attempts.get(uid, 0) + 1
        self._attempts[uid] = attempt
        if attempt <= plan.failures:
            logger.info(
                "PreBind of %s on %s fails as asked (attempt %d of %d failing)",
                object_key(pod),
                node_name,
                attempt,
                plan.failures,
            )
            message = f"injected PreBind failure {attempt}/{plan.failures} ({ANNOTATION_FAIL})"
            if pod.metadata.annotations.get(ANNOTATION_FAIL_STATUS) == "Unschedulable":
                return Status(Code.UNSCHEDULABLE, (message,), NAME)
            return as_error(message)
        return SUCCESS

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """No cluster event resolves an injected failure (they are counted per pod), so none
        is registered: a pod this plugin rejected is retried only after its backoff."""
        return []

    def attempts(self, uid: str) -> int:
        """PreBind attempts that finished their delay for the pod with `uid` (for tests)."""
        return self._attempts.get(uid, 0)


def new(args: PluginArgs, handle: Handle) -> SlowPreBind:
    check_arg_keys(args, ("defaultDelay", "podSelector"), NAME)
    default_delay = 0.0
    if args.get("defaultDelay") is not None:
        text = args["defaultDelay"]
        if not isinstance(text, str):
            raise ValueError(f"{NAME} args: defaultDelay: expected a duration string")
        try:
            default_delay = parse_delay(text)
        except ValueError as e:
            raise ValueError(f"{NAME} args: defaultDelay: {e}") from None
    selector = None
    if args.get("podSelector") is not None:
        try:
            selector = label_selector_from_args(args["podSelector"], "podSelector")
        except ValueError as e:
            raise ValueError(f"{NAME} args: {e}") from None
    return SlowPreBind(handle, default_delay=default_delay, pod_selector=selector)

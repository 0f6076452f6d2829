"""The DefaultTolerationSeconds admission plugin
(plugin/pkg/admission/defaulttolerationseconds/admission.go), on create and update of a pod."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.taints import TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE

DEFAULT_TOLERATION_SECONDS: Final = 300
"""Upstream's --default-not-ready-toleration-seconds and --default-unreachable-toleration-seconds."""


@dataclass(frozen=True)
class DefaultTolerationSeconds:
    """The DefaultTolerationSeconds plugin's settings (upstream's apiserver flags
    --default-not-ready-toleration-seconds and --default-unreachable-toleration-seconds)."""

    not_ready: int = DEFAULT_TOLERATION_SECONDS
    unreachable: int = DEFAULT_TOLERATION_SECONDS


DEFAULT_TOLERATIONS: Final = DefaultTolerationSeconds()


def admit_default_toleration_seconds(
    pod: types_pb2.Pod, settings: DefaultTolerationSeconds = DEFAULT_TOLERATIONS
) -> None:
    """DefaultTolerationSeconds: a pod that does not tolerate the NoExecute taints
    node.kubernetes.io/not-ready and node.kubernetes.io/unreachable gets a toleration of each
    (operator Exists, effect NoExecute) for the configured seconds, so that the taint manager evicts it
    that long after its node went not ready or unreachable. A toleration with an empty key
    (every taint) or an empty effect (every effect) already tolerates them."""
    for key, seconds in (
        (TAINT_NODE_NOT_READY, settings.not_ready),
        (TAINT_NODE_UNREACHABLE, settings.unreachable),
    ):
        if not any(
            t.key in ("", key) and t.effect in ("", "NoExecute") for t in pod.spec.tolerations
        ):
            pod.spec.tolerations.add(
                key=key, operator="Exists", effect="NoExecute", toleration_seconds=seconds
            )

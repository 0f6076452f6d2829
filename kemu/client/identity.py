"""Component identity leases: how a component tells the apiserver (and so `kemuctl version`)
which emulated version, binary version and feature gates it runs with.

Like upstream's apiserver identity leases (kube-system/apiserver-<id>, renewed every 10s,
expired after an hour of silence), but for every component: the Version RPC reports the
leases (in any namespace) labelled `kemu.io/component` whose renewTime + leaseDurationSeconds
has not passed, reading the identity from the label and annotations `ComponentIdentity.stamp`
writes. A kubelet keeps no lease of its own in kube-system (the Node authorizer allows a
node only its own kube-node-lease/<node>): its node Lease carries the stamp
(kubelet/node_status.py).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.client.interface import ApiClient
from kemu.component.clock import Clock, RealClock
from kemu.component.virtual_clock import sleep_jittered
from kemu.machinery.convert import timestamp
from kemu.machinery.errors import AlreadyExists, ApiError, Conflict, NotFound

logger = logging.getLogger(__name__)

IDENTITY_NAMESPACE: Final = "kube-system"
COMPONENT_LABEL: Final = "kemu.io/component"
EMULATED_VERSION_ANNOTATION: Final = "kemu.io/emulated-version"
BINARY_VERSION_ANNOTATION: Final = "kemu.io/binary-version"
FEATURE_GATES_ANNOTATION: Final = "kemu.io/feature-gates"

_RETRY_MIN: Final = 0.5
RENEW_JITTER: Final = 0.04
"""Upstream's lease controller (k8s.io/component-helpers/apimachinery/lease, controller.go,
behind the apiserver identity leases) renews with wait.JitterUntil(sync, renewInterval, 0.04):
each wait up to 4% longer. On the virtual clock that range is the timer's slack, so that the
event-driven clock serves several processes' renewals with one jump."""


def identity_lease_name(component: str, identity: str) -> str:
    """`<component>-<identity>` made a DNS subdomain (lowercase; `_` and the like become `-`).
    The lease's holderIdentity keeps the identity as it is."""
    return re.sub(r"[^a-z0-9.-]", "-", f"{component}-{identity}".lower())


GateState = tuple[str, bool, str, bool]
"""(name, enabled, stage, locked)."""


def gates_annotation(gates: Sequence[GateState]) -> str:
    """(name, enabled, stage, locked) tuples as the JSON the annotation carries."""
    return json.dumps(
        [
            {"name": name, "enabled": enabled, "stage": stage, "locked": locked}
            for name, enabled, stage, locked in gates
        ],
        separators=(",", ":"),
    )


@dataclass(frozen=True)
class ComponentIdentity:
    """What the Version RPC reports of a component: its name and versions, its gates."""

    component: str
    emulated_version: str
    binary_version: str
    gates: tuple[GateState, ...]

    def annotations(self) -> dict[str, str]:
        return {
            EMULATED_VERSION_ANNOTATION: self.emulated_version,
            BINARY_VERSION_ANNOTATION: self.binary_version,
            FEATURE_GATES_ANNOTATION: gates_annotation(self.gates),
        }

    def stamp(self, meta: types_pb2.ObjectMeta) -> None:
        """Marks a lease's metadata as this component's identity (the label and the
        annotations the Version RPC reads)."""
        meta.labels[COMPONENT_LABEL] = self.component
        meta.annotations.update(self.annotations())


def _desired(
    lease: types_pb2.Lease,
    component: str,
    identity: str,
    annotations: dict[str, str],
    duration: int,
    now: float,
) -> None:
    lease.metadata.labels[COMPONENT_LABEL] = component
    lease.metadata.annotations.update(annotations)
    lease.spec.holder_identity = identity
    lease.spec.lease_duration_seconds = duration
    lease.spec.renew_time.CopyFrom(timestamp(now))
    if not lease.spec.HasField("acquire_time"):
        lease.spec.acquire_time.CopyFrom(timestamp(now))


async def heartbeat_once(
    client: ApiClient,
    component: str,
    identity: str,
    annotations: dict[str, str],
    duration: int,
    clock: Clock,
    namespace: str = IDENTITY_NAMESPACE,
) -> types_pb2.Lease:
    """Creates or renews the identity lease once; ApiError on failure."""
    name = identity_lease_name(component, identity)
    try:
        lease = await client.get(types_pb2.Lease, name, namespace)
    except NotFound:
        lease = types_pb2.Lease(metadata=types_pb2.ObjectMeta(name=name, namespace=namespace))
        _desired(lease, component, identity, annotations, duration, clock.now())
        return await client.create(lease)
    _desired(lease, component, identity, annotations, duration, clock.now())
    return await client.update(lease)


async def run_identity_heartbeat(
    client: ApiClient,
    component: str,
    identity: str,
    emulated_version: str,
    binary_version: str,
    gates: Sequence[GateState],
    *,
    interval: float = 10.0,
    duration: int = 30,
    clock: Clock | None = None,
    namespace: str = IDENTITY_NAMESPACE,
) -> None:
    """Keeps kube-system/<component>-<identity> renewed every `interval` until cancelled.

    Never raises an ApiError: while the server is down it retries (sooner than `interval`,
    with backoff up to it) and logs.
    """
    clock = clock or RealClock()
    annotations = ComponentIdentity(
        component, emulated_version, binary_version, tuple(gates)
    ).annotations()
    name = identity_lease_name(component, identity)
    retry = _RETRY_MIN
    failing = False
    races = 0
    while True:
        error: ApiError | None = None
        try:
            await heartbeat_once(
                client, component, identity, annotations, duration, clock, namespace
            )
        except (Conflict, AlreadyExists) as e:
            # A race with a previous incarnation of this component: retry at once, a few times.
            races += 1
            if races <= 3:
                await clock.sleep(0)
                continue
            error = e
        except ApiError as e:
            error = e
        races = 0
        if error is not None:
            if not failing:
                logger.warning("identity lease %s/%s not renewed: %s", namespace, name, error)
            failing = True
            await clock.sleep(min(retry, interval))
            retry = min(retry * 2, interval)
            continue
        if failing:
            logger.info("identity lease %s/%s renewed again", namespace, name)
        failing = False
        retry = _RETRY_MIN
        await sleep_jittered(clock, interval, RENEW_JITTER)

"""Waiting until a component has seen an object: its informer of the object's kind holds it at
the object's resourceVersion or newer (GET /debug/informers, kemu.client.comparer). Upstream's
integration tests do the same where a component must act on an object another watch brought
first (test/integration/scheduler/preemption: waitCachedPDBsStable, before the preemptor is
created): separate watches give no order between kinds, upstream's or kemu's."""

from __future__ import annotations

from typing import Final

import anyio.to_thread
from google.protobuf.message import Message

from kemu.client.comparer import INFORMERS_HANDLER
from kemu.machinery import kinds
from kemu.machinery.keys import object_key, object_meta
from kemu.testing.cluster import Component
from kemu.testing.eventually import eventually

DEFAULT_TIMEOUT: Final = 30.0


async def wait_cached(
    component: Component,
    obj: Message,
    *,
    timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109
) -> None:
    """Until an informer of `obj`'s kind in `component` holds `obj` at its resourceVersion or
    a newer one."""
    resource = kinds.kind_of(obj).resource
    key = object_key(obj)
    wanted = int(object_meta(obj).resource_version)
    query = {"resource": resource, "key": key}

    async def held() -> bool:
        report = await anyio.to_thread.run_sync(component.debug, INFORMERS_HANDLER, query)
        cached = [row["cached"] for row in report["informers"] if row["cached"]]
        assert any(int(rv) >= wanted for rv in cached), (
            f"{component.name}: its {resource} informers hold {key} at {cached or 'nothing'}, "
            f"not yet at resourceVersion {wanted}"
        )
        return True

    await eventually(held, timeout=timeout, interval=0.05)

"""The APF bootstrap ensurer (issue #58 item 3): upstream's post-start hook
priority-and-fairness-config-producer (pkg/registry/flowcontrol/rest/storage_flowcontrol.go,
pkg/registry/flowcontrol/ensurer): creates the mandatory and suggested FlowSchemas and
PriorityLevelConfigurations at start, then every minute restores the mandatory ones and the
suggested ones whose `apf.kubernetes.io/autoupdate-spec` allows it
(kemu.machinery.flowcontrol.ensured). It also writes each FlowSchema's Dangling condition, as
upstream's APF configuration controller does (apiserver/pkg/util/flowcontrol/apf_controller.go)."""

from __future__ import annotations

from typing import Final

from google.protobuf.message import Message

from apiserver.registry.registry import Registry
from kemu.api.v1 import types_pb2
from kemu.machinery import flowcontrol
from kemu.machinery.convert import timestamp
from kemu.machinery.errors import AlreadyExists, Conflict, NotFound
from kemu.machinery.kinds import BY_KIND, Kind

ENSURE_INTERVAL: Final = 60.0
"""Seconds between ensurer passes (the hook's wait.PollImmediateUntil(time.Minute, ...))."""
_FLOW_SCHEMA: Final = BY_KIND["FlowSchema"]
_PRIORITY_LEVEL: Final = BY_KIND["PriorityLevelConfiguration"]


def served(registry: Registry) -> bool:
    return registry.served.serves(_FLOW_SCHEMA) and registry.served.serves(_PRIORITY_LEVEL)


async def ensure(registry: Registry) -> None:
    """One pass: each bootstrap object created, or updated as the ensurer's rule says, the
    levels before the schemas that reference them; then every FlowSchema's Dangling condition
    (the pass's own objects are fresher than the watch cache, which may not hold what it just
    created)."""
    seen: dict[tuple[str, str], Message] = {}
    for level, mandatory in flowcontrol.bootstrap_priority_levels():
        await _ensure_one(registry, _PRIORITY_LEVEL, level, mandatory, seen)
    for schema, mandatory in flowcontrol.bootstrap_flow_schemas():
        await _ensure_one(registry, _FLOW_SCHEMA, schema, mandatory, seen)
    await write_dangling(registry, seen)


async def _ensure_one(
    registry: Registry,
    kind: Kind,
    wanted: flowcontrol.B,
    mandatory: bool,
    seen: dict[tuple[str, str], Message],
) -> None:
    key = (kind.kind, wanted.metadata.name)
    try:
        current = (await registry.read(kind, "", wanted.metadata.name)).obj
    except NotFound:
        try:
            seen[key] = await registry.create(flowcontrol.for_create(wanted))
        except AlreadyExists:
            pass  # (another apiserver of the cluster; the next pass compares)
        return
    assert isinstance(current, type(wanted))
    seen[key] = current
    update = flowcontrol.ensured(wanted, current, mandatory=mandatory)
    if update is not None:
        try:
            seen[key] = await registry.update(update)
        except (Conflict, NotFound):
            pass  # (changed meanwhile: the next pass)


def _objects(registry: Registry, kind: Kind, seen: dict[tuple[str, str], Message]) -> list[Message]:
    """The kind's objects: the watch cache's, each replaced by the pass's copy when it has one."""
    out = {co.obj.metadata.name: co.obj for co in registry.store.cache(kind).objects()}  # type: ignore[attr-defined]
    out.update({name: obj for (k, name), obj in seen.items() if k == kind.kind})
    return list(out.values())


async def write_dangling(registry: Registry, seen: dict[tuple[str, str], Message]) -> None:
    """Each FlowSchema's Dangling condition where it changed (apf_controller.go's digest)."""
    levels = {o.metadata.name for o in _objects(registry, _PRIORITY_LEVEL, seen)}  # type: ignore[attr-defined]
    for fs in _objects(registry, _FLOW_SCHEMA, seen):
        assert isinstance(fs, types_pb2.FlowSchema)
        out = flowcontrol.with_dangling(fs, levels, timestamp(registry.now()))
        if out is None:
            continue
        try:
            await registry.update(out, subresource="status")
        except (Conflict, NotFound):
            pass  # (the next pass)

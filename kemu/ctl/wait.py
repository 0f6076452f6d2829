"""`kemuctl wait KIND/NAME --for=condition=X[=V] | --for=jsonpath={...}[=V] | --for=delete
| --for=create --timeout 30s`: an initial get, then a watch until the object satisfies it."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Final

import anyio
from google.protobuf.message import Message

from kemu.client.interface import BOOKMARK, DELETED
from kemu.ctl import jsonpath
from kemu.ctl.common import Context, CtlError, namespace_for, plain, ref, split_targets
from kemu.machinery import convert, kinds
from kemu.machinery.duration import DurationError, parse_duration
from kemu.machinery.errors import Gone, NotFound
from kemu.machinery.keys import object_meta

WAIT_FOREVER: Final = 7 * 24 * 3600.0
"""What a negative --timeout means: a week, as kubectl wait."""


def parse_timeout(text: str) -> float:
    """kubectl wait's --timeout: a Go duration (a unit is required except for 0); zero checks
    once, a negative one waits for a week."""
    try:
        seconds = parse_duration(text, allow_negative=True)
    except DurationError as e:
        raise CtlError(f'invalid argument "{text}" for "--timeout" flag: {e}') from None
    return WAIT_FOREVER if seconds < 0 else seconds


@dataclass(frozen=True)
class Condition:
    mode: str  # delete, create, condition, jsonpath
    name: str = ""  # the condition type
    value: str | None = None
    path: jsonpath.JsonPath | None = None

    def met(self, obj: Message) -> bool:
        if self.mode == "create":
            return True
        if self.mode == "delete":
            return False
        data = convert.to_dict(obj)
        if self.mode == "condition":
            status = data.get("status")
            listed = status.get("conditions") if isinstance(status, dict) else None
            conditions = listed if isinstance(listed, list) else []
            wanted = (self.value or "True").lower()
            return any(
                isinstance(c, dict)
                and str(c.get("type", "")).lower() == self.name.lower()
                and str(c.get("status", "")).lower() == wanted
                for c in conditions
            )
        assert self.path is not None
        found = self.path.find(data)
        if found is jsonpath.MISSING or found is None:
            return False
        if self.value is None:
            return True
        return plain(found) == self.value


def parse_for(text: str) -> Condition:
    if text == "delete":
        return Condition("delete")
    if text == "create":
        return Condition("create")
    if text.startswith("condition="):
        rest = text.removeprefix("condition=")
        name, sep, value = rest.partition("=")
        if not name:
            raise CtlError("--for=condition=NAME needs a condition name")
        return Condition("condition", name=name, value=value if sep else None)
    if text.startswith("jsonpath="):
        try:
            expr, wanted = jsonpath.split_condition(text.removeprefix("jsonpath="))
            path = jsonpath.parse(expr)
        except jsonpath.JsonPathError as e:
            raise CtlError(f"unrecognized --for jsonpath: {e}") from None
        return Condition("jsonpath", value=wanted, path=path)
    raise CtlError(
        f'unrecognized condition: "{text}" (expected delete, create, condition=NAME[=VALUE] '
        "or jsonpath={.path}[=VALUE])"
    )


async def _current(
    ctx: Context, kind: kinds.Kind, name: str, ns: str
) -> tuple[Message | None, str]:
    """The object (None if absent) and a resourceVersion to watch from."""
    try:
        obj = await ctx.client.get(kind.message, name, ns)
        return obj, object_meta(obj).resource_version
    except NotFound:
        listed = await ctx.client.list(kind.message, ns, limit=1)
        return None, listed.resource_version


async def _relist(ctx: Context, kind: kinds.Kind, name: str, ns: str) -> tuple[Message | None, str]:
    """As _current, with a fresh resourceVersion (the object's own one was compacted)."""
    listed = await ctx.client.list_all(kind.message, ns)
    obj = next((o for o in listed.items if object_meta(o).name == name), None)
    return obj, listed.resource_version


async def wait_for(
    ctx: Context,
    kind: kinds.Kind,
    name: str,
    ns: str,
    cond: Condition,
    timeout: float,  # noqa: ASYNC109
) -> bool:
    """True once `cond` holds for the object, False at the timeout. An object that does not
    exist (or is deleted while waiting) is NotFound, unless waiting for create or delete."""
    with anyio.move_on_after(timeout):
        obj, rv = await _current(ctx, kind, name, ns)
        while True:
            if obj is None:
                if cond.mode == "delete":
                    return True
                if cond.mode != "create":
                    raise NotFound(f'{kind.resource} "{name}" not found')
            elif cond.met(obj):
                return True
            try:
                async with ctx.client.watch(kind.message, ns, resource_version=rv) as events:
                    async for event in events:
                        rv = object_meta(event.object).resource_version or rv
                        if event.type == BOOKMARK or object_meta(event.object).name != name:
                            continue
                        if event.type == DELETED:
                            if cond.mode == "delete":
                                return True
                            if cond.mode != "create":
                                raise CtlError(f"{kind.resource}/{name} was deleted while waiting")
                            continue
                        if cond.met(event.object):
                            return True
                # The server ended the stream: look again and resume.
                obj, rv = await _current(ctx, kind, name, ns)
            except Gone:
                obj, rv = await _relist(ctx, kind, name, ns)
    return False


async def wait_deleted(
    ctx: Context,
    kind: kinds.Kind,
    name: str,
    ns: str,
    timeout: float,  # noqa: ASYNC109
) -> bool:
    return await wait_for(ctx, kind, name, ns, Condition("delete"), timeout)


async def cmd_wait(ctx: Context, args: argparse.Namespace) -> int:
    if not args.for_:
        raise CtlError("--for must be given: delete, create, condition=NAME or jsonpath=...")
    cond = parse_for(args.for_)
    timeout = parse_timeout(args.timeout)
    targets = split_targets(args.targets, require_name=False)
    todo: list[tuple[kinds.Kind, str, str]] = []
    for kind, name in targets:
        if name is not None:
            todo.append((kind, name, namespace_for(ctx, kind)))
            continue
        if not (args.all or args.selector):
            raise CtlError("resource name may not be empty: give NAME, --all or -l SELECTOR")
        ns = "" if args.all_namespaces else namespace_for(ctx, kind)
        listed = await ctx.client.list_all(kind.message, ns, label_selector=args.selector or "")
        todo.extend((kind, object_meta(o).name, object_meta(o).namespace) for o in listed.items)
    if not todo:
        raise CtlError("no matching resources found")
    for kind, name, ns in todo:
        if not await wait_for(ctx, kind, name, ns, cond, timeout):
            raise CtlError(f"timed out waiting for the condition on {kind.resource}/{name}")
        ctx.print(f"{ref(kind, name)} condition met")
    return 0

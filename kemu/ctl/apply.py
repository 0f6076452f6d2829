"""`apply -f`, `create -f` and `delete`: the commands that create and remove objects."""

from __future__ import annotations

import argparse
from typing import Final

from google.protobuf.message import Message

from kemu.ctl import manifests
from kemu.ctl.common import (
    Context,
    CtlError,
    format_api_error,
    namespace_for,
    qualified,
    ref,
    split_targets,
)
from kemu.ctl.manifests import Manifest
from kemu.ctl.wait import parse_timeout, wait_deleted
from kemu.machinery import convert, kinds
from kemu.machinery import patch as patches
from kemu.machinery.defaults import set_defaults
from kemu.machinery.delete_options import BACKGROUND, FOREGROUND, ORPHAN
from kemu.machinery.errors import ApiError, BadRequest, NotFound
from kemu.machinery.jsonvalue import JSON, JSONObject
from kemu.machinery.keys import object_meta
from kemu.machinery.labels import parse_selector
from kemu.machinery.namespaces import new_namespace


def _placed(ctx: Context, m: Manifest) -> tuple[Message, str]:
    """The manifest's object with its namespace resolved (copy), and that namespace."""
    obj = type(m.obj)()
    obj.CopyFrom(m.obj)
    if not m.kind.namespaced:
        object_meta(obj).namespace = ""
        return obj, ""
    given = object_meta(obj).namespace
    if given and ctx.namespace_explicit and given != ctx.namespace:
        raise CtlError(
            f'the namespace from the provided object "{given}" does not match the namespace '
            f"\"{ctx.namespace}\". You must pass '--namespace={given}' to perform this operation."
        )
    ns = given or ctx.namespace
    object_meta(obj).namespace = ns
    return obj, ns


def _read(ctx: Context, args: argparse.Namespace) -> list[tuple[Manifest, Message, str]]:
    """Every object of the files, placed, before anything is sent."""
    return [(m, *_placed(ctx, m)) for m in manifests.read(args.filename, ctx.stdin)]


def apply_patch(obj: Message) -> JSONObject:
    """What apply merges over the live object: the manifest's fields, without status."""
    data = convert.to_dict(obj)
    for key in ("apiVersion", "kind", "status"):
        data.pop(key, None)
    return data


def _defaulted(kind: kinds.Kind, merged: JSON) -> JSON:
    """The merged object as the server would store it, with the defaults its manifest leaves
    out (the merge replaces whole lists such as containers)."""
    try:
        obj = convert.from_dict(kind, merged)
    except ApiError:
        return merged  # the server will say what is wrong
    set_defaults(obj)
    return convert.to_dict(obj)


async def apply_one(ctx: Context, kind: kinds.Kind, obj: Message, ns: str) -> str:
    """Creates the object or merges it over the live one; returns what happened."""
    name = object_meta(obj).name
    try:
        live = await ctx.client.get(kind.message, name, ns)
    except NotFound:
        await ctx.client.create(obj)
        return "created"
    patch = apply_patch(obj)
    current = convert.to_dict(live)
    merged = patches.apply(patches.STRATEGIC, current, patch, kind)
    if _defaulted(kind, merged) == _defaulted(kind, current):
        return "unchanged"
    assert isinstance(merged, dict)
    await ctx.client.patch(kind.message, name, _as_merge_patch(patch, merged), ns)
    return "configured"


def _as_merge_patch(patch: JSONObject, merged: JSONObject) -> JSONObject:
    """The strategic merge of the manifest over the live object (kubectl apply's: lists such
    as containers and volumes merged by their keys, so that what the server added to the
    live object, e.g. ServiceAccount admission's token volume and its mounts, is kept) as
    the JSON merge patch the API takes: each of the manifest's fields as merged, its
    metadata as given."""
    return {k: (v if k == "metadata" else merged.get(k)) for k, v in patch.items()}


def _selected(
    placed: list[tuple[Manifest, Message, str]], selector_text: str | None, verb: str = "apply"
) -> list[tuple[Manifest, Message, str]]:
    """The objects of the files whose labels match `-l` (kubectl's --selector with -f), all
    without one."""
    if not selector_text:
        return placed
    try:
        selector = parse_selector(selector_text)
    except BadRequest as e:
        raise CtlError(e.message) from None
    chosen = [p for p in placed if selector.matches(object_meta(p[1]).labels)]
    if not chosen:
        raise CtlError(f"no objects passed to {verb}")
    return chosen


async def cmd_apply(ctx: Context, args: argparse.Namespace) -> int:
    placed = _selected(_read(ctx, args), args.selector)
    for m, _, _ in placed:
        if not m.name:
            raise CtlError(
                f"{manifests.where(m.source, m.index)} ({m.kind.kind}): "
                "cannot use generate name with apply"
            )
    failed = False
    for m, obj, ns in placed:
        try:
            outcome = await apply_one(ctx, m.kind, obj, ns)
        except ApiError as e:
            failed = True
            ctx.warn(f'error: error when applying "{m.source}": {format_api_error(e)}')
            continue
        ctx.print(f"{ref(m.kind, m.name)} {outcome}")
    return 1 if failed else 0


async def cmd_create(ctx: Context, args: argparse.Namespace) -> int:
    if args.targets:
        if args.filename:
            raise CtlError("when -f is given, no resource type or name may be given")
        return await _create_namespace(ctx, args.targets)
    if not args.filename:
        raise CtlError("must specify one of -f or a subcommand (namespace NAME)")
    placed = _read(ctx, args)
    failed = False
    for m, obj, _ in placed:
        try:
            created = await ctx.client.create(obj)
        except ApiError as e:
            failed = True
            ctx.warn(f'error: error when creating "{m.source}": {format_api_error(e)}')
            continue
        ctx.print(f"{ref(m.kind, object_meta(created).name)} created")
    return 1 if failed else 0


async def _create_namespace(ctx: Context, targets: list[str]) -> int:
    """`kemuctl create namespace NAME` (kubectl create namespace)."""
    if targets[0] not in ("namespace", "ns"):
        raise CtlError(f'unknown subcommand "{targets[0]}" for "create": only namespace NAME')
    if len(targets) != 2:
        raise CtlError("exactly one NAME is required, got " + str(len(targets) - 1))
    created = await ctx.client.create(new_namespace(targets[1]))
    ctx.print(f"namespace/{object_meta(created).name} created")
    return 0


def grace_period(args: argparse.Namespace) -> int | None:
    """kubectl's rules: --now is 1 second; 0 needs --force (else it becomes 1); --force alone
    is 0; -1 (the default) leaves it to the server."""
    grace: int = args.grace_period
    if args.now:
        if grace >= 0:
            raise CtlError("--now and --grace-period cannot be specified together")
        grace = 1
    if args.force and grace < 0:
        grace = 0
    if grace == 0 and not args.force:
        grace = 1
    return None if grace < 0 else grace


_CASCADE: Final = {"background": BACKGROUND, "foreground": FOREGROUND, "orphan": ORPHAN}
_TRUE: Final = ("1", "t", "T", "TRUE", "true", "True")
_FALSE: Final = ("0", "f", "F", "FALSE", "false", "False")


def cascading_strategy(ctx: Context, value: str) -> str:
    """kubectl's --cascade: background, foreground or orphan -> the propagationPolicy; the
    deprecated booleans (Go's ParseBool spellings) map to background and orphan, with
    kubectl's warning."""
    if value in _TRUE or value in _FALSE:
        replacement = "background" if value in _TRUE else "orphan"
        ctx.warn(
            f"warning: --cascade={str(value in _TRUE).lower()} is deprecated (boolean value) "
            f"and can be replaced with --cascade={replacement}."
        )
        value = replacement
    policy = _CASCADE.get(value)
    if policy is None:
        raise CtlError(
            f'invalid cascade value ({value}). Must be "background", "foreground", or "orphan"'
        )
    return policy


async def cmd_delete(ctx: Context, args: argparse.Namespace) -> int:
    grace = grace_period(args)
    propagation = cascading_strategy(ctx, args.cascade)
    timeout = parse_timeout(args.timeout) if args.wait else 0.0
    todo: list[tuple[kinds.Kind, str, str]] = []
    if args.filename:
        if args.targets:
            raise CtlError("when -f is given, no resource type or name may be given")
        for m, _, ns in _selected(_read(ctx, args), args.selector, "delete"):
            todo.append((m.kind, m.name, ns))
    else:
        targets = split_targets(args.targets, require_name=False)
        for kind, name in targets:
            if name is not None:
                if args.all or args.selector:
                    raise CtlError("names cannot be provided when a selector or --all is given")
                todo.append((kind, name, namespace_for(ctx, kind)))
                continue
            if not (args.all or args.selector):
                raise CtlError(
                    "resource(s) were provided, but no name was specified; "
                    "use --all to delete every object of the type"
                )
            ns = "" if args.all_namespaces else namespace_for(ctx, kind)
            found = await ctx.client.list_all(kind.message, ns, label_selector=args.selector or "")
            todo.extend((kind, object_meta(o).name, object_meta(o).namespace) for o in found.items)
            if not found.items:
                ctx.warn("No resources found")
    if args.force:
        ctx.warn(
            "Warning: Immediate deletion does not wait for confirmation that the running "
            "resource has been terminated. The resource may continue to run on the cluster "
            "indefinitely."
        )
    failed = False
    deleted: list[tuple[kinds.Kind, str, str]] = []
    for kind, name, ns in todo:
        try:
            await ctx.client.delete(
                kind.message, name, ns, grace_period_seconds=grace, propagation_policy=propagation
            )
        except NotFound as e:
            if not args.ignore_not_found:
                failed = True
                ctx.warn(f"error: {format_api_error(e)}")
            continue
        except ApiError as e:
            failed = True
            ctx.warn(f"error: {format_api_error(e)}")
            continue
        word = "force deleted" if args.force and grace == 0 else "deleted"
        ctx.print(f'{qualified(kind)} "{name}" {word}')
        deleted.append((kind, name, ns))
    if args.wait and deleted:
        for kind, name, ns in deleted:
            if not await wait_deleted(ctx, kind, name, ns, timeout):
                ctx.warn(f"error: timed out waiting for the deletion of {kind.resource}/{name}")
                failed = True
    return 1 if failed else 0

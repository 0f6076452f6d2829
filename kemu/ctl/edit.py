"""`kemuctl patch` (JSON merge patches) and `kemuctl resize` (pods/resize)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from kemu.api.v1 import types_pb2
from kemu.ctl.common import Context, CtlError, namespace_for, ref, split_targets
from kemu.ctl.manifests import yaml_problem
from kemu.machinery import kinds
from kemu.machinery.keys import object_meta
from kemu.machinery.quantity import parse_capacity_flag

SUBRESOURCES = ("status", "resize")


def _one_target(args: list[str], command: str) -> tuple[kinds.Kind, str]:
    targets = split_targets(args, require_name=True)
    if len(targets) != 1:
        raise CtlError(f"{command} takes exactly one object: KIND NAME or KIND/NAME")
    kind, name = targets[0]
    assert name is not None
    return kind, name


def _read_file(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as e:
        raise CtlError(f'the path "{path}" cannot be read: {e.strerror or e}') from None


def read_patch(text: str, source: str) -> dict[str, object]:
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise CtlError(f"unable to parse the patch in {source}: {yaml_problem(e)}") from None
    if not isinstance(data, dict):
        raise CtlError(f"the patch in {source} must be a JSON object, as a merge patch is")
    return data


async def cmd_patch(ctx: Context, args: argparse.Namespace) -> int:
    if args.type != "merge":
        raise CtlError(
            f'--type {args.type} is not supported by kemu: only JSON merge patches ("--type merge")'
        )
    if args.subresource and args.subresource not in SUBRESOURCES:
        raise CtlError(
            f'invalid subresource "{args.subresource}": must be one of {", ".join(SUBRESOURCES)}'
        )
    if (args.patch is None) == (args.patch_file is None):
        raise CtlError("exactly one of -p/--patch or --patch-file is required")
    if args.patch_file is not None:
        patch = read_patch(_read_file(args.patch_file), args.patch_file)
    else:
        patch = read_patch(args.patch, "--patch")
    kind, name = _one_target(args.targets, "patch")
    ns = namespace_for(ctx, kind)
    before = await ctx.client.get(kind.message, name, ns)
    after = await ctx.client.patch(kind.message, name, patch, ns, subresource=args.subresource)
    unchanged = object_meta(after).resource_version == object_meta(before).resource_version
    ctx.print(f"{ref(kind, name)} patched" + (" (no change)" if unchanged else ""))
    return 0


def _resources(flag: str | None, what: str) -> dict[str, str]:
    if flag is None:
        return {}
    try:
        return parse_capacity_flag(flag)
    except ValueError as e:
        raise CtlError(f"--{what}: {e}") from None


async def cmd_resize(ctx: Context, args: argparse.Namespace) -> int:
    kind, name = _one_target(args.targets, "resize")
    if kind.kind != "Pod":
        raise CtlError(f"resize works on pods, not {kind.resource}")
    requests = _resources(args.requests, "requests")
    limits = _resources(args.limits, "limits")
    if not requests and not limits:
        raise CtlError("nothing to resize: give --requests and/or --limits")
    pod = await ctx.client.get(types_pb2.Pod, name, namespace_for(ctx, kind))
    container = build_resize(pod, args.container, requests, limits)
    await ctx.client.resize(pod)
    ctx.print(f"{ref(kind, name)} resized (container {container})")
    return 0


def build_resize(
    pod: types_pb2.Pod,
    container: str | None,
    requests: dict[str, str],
    limits: dict[str, str],
) -> str:
    """Sets the requests and limits of one container of `pod` (default: its first);
    returns the container's name."""
    candidates = [*pod.spec.containers, *pod.spec.init_containers]
    if container is None:
        if not pod.spec.containers:
            raise CtlError(f'pod "{pod.metadata.name}" has no containers')
        target = pod.spec.containers[0]
    else:
        found = next((c for c in candidates if c.name == container), None)
        if found is None:
            names = ", ".join(c.name for c in candidates)
            raise CtlError(
                f'container "{container}" not found in pod "{pod.metadata.name}" '
                f"(containers: {names})"
            )
        target = found
    target.resources.requests.update(requests)
    target.resources.limits.update(limits)
    return target.name

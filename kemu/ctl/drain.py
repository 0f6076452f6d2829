"""kemuctl cordon, uncordon and drain: kubectl's (staging/src/k8s.io/kubectl/pkg/drain and
pkg/cmd/drain), with its filters, refusals and messages.

drain cordons the node, lists the pods bound to it, refuses (or, with a flag, warns about)
pods without a controller, DaemonSet-managed pods and pods with emptyDir volumes, then evicts
every other pod through pods/eviction, retrying a 429 (a PodDisruptionBudget that allows no
disruption now) every 5 s, and waits for each pod to be gone.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import anyio

from kemu.api.v1 import types_pb2
from kemu.ctl.common import Context, CtlError
from kemu.machinery.duration import DurationError, parse_duration
from kemu.machinery.errors import ApiError, NotFound, TooManyRequests
from kemu.machinery.keys import object_key
from kemu.machinery.owners import controller_of
from kemu.machinery.pod_strategy import TERMINAL_PHASES
from kemu.machinery.pod_types import is_mirror_pod

EVICTION_RETRY: Final = 5.0  # kubectl waits 5 s after a 429
DELETE_POLL: Final = 1.0  # kubectl polls for the pod's deletion every second

DAEMONSET_FATAL: Final = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
DAEMONSET_WARNING: Final = "ignoring DaemonSet-managed Pods"
LOCAL_STORAGE_FATAL: Final = (
    "cannot delete Pods with local storage (use --delete-emptydir-data to override)"
)
LOCAL_STORAGE_WARNING: Final = "deleting Pods with local storage"
UNMANAGED_FATAL: Final = "cannot delete Pods that declare no controller (use --force to override)"
UNMANAGED_WARNING: Final = "deleting Pods that declare no controller"

DRY_RUN_MODES: Final = ("none", "client", "server")


def _suffix(dry_run: str) -> str:
    return {"client": " (dry run)", "server": " (server dry run)"}.get(dry_run, "")


def _dry_run(args: argparse.Namespace) -> str:
    mode = getattr(args, "dry_run", "none") or "none"
    if mode not in DRY_RUN_MODES:
        raise CtlError(f'Invalid dry-run value ({mode}). Must be "none", "server", or "client".')
    return str(mode)


# ---------------------------------------------------------------- cordon, uncordon


async def _set_unschedulable(ctx: Context, name: str, unschedulable: bool, dry_run: str) -> None:
    node = await ctx.client.get(types_pb2.Node, name)
    verb = "cordoned" if unschedulable else "uncordoned"
    if node.spec.unschedulable == unschedulable:
        ctx.print(f"node/{name} already {verb}")
        return
    if dry_run == "none":
        await ctx.client.patch(types_pb2.Node, name, {"spec": {"unschedulable": unschedulable}})
    ctx.print(f"node/{name} {verb}{_suffix(dry_run)}")


def _nodes(args: argparse.Namespace, verb: str) -> list[str]:
    if not args.nodes:
        raise CtlError(f"USAGE: {verb} NODE [flags]")
    return list(args.nodes)


async def cmd_cordon(ctx: Context, args: argparse.Namespace) -> int:
    dry_run = _dry_run(args)
    for name in _nodes(args, "cordon"):
        await _set_unschedulable(ctx, name, True, dry_run)
    return 0


async def cmd_uncordon(ctx: Context, args: argparse.Namespace) -> int:
    dry_run = _dry_run(args)
    for name in _nodes(args, "uncordon"):
        await _set_unschedulable(ctx, name, False, dry_run)
    return 0


# ---------------------------------------------------------------- which pods go


@dataclass
class PodsForDeletion:
    """What the filters made of the node's pods: those to evict, the warnings and the
    refusals, each a message with the pods it names (kubectl's podDeleteList)."""

    pods: list[types_pb2.Pod] = field(default_factory=list)
    warnings: dict[str, list[str]] = field(default_factory=dict)
    errors: dict[str, list[str]] = field(default_factory=dict)

    def warning_text(self) -> str:
        return "; ".join(f"{m}: {', '.join(p)}" for m, p in self.warnings.items())

    def error_text(self) -> str:
        texts = [f"{m}: {', '.join(p)}" for m, p in self.errors.items()]
        return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


@dataclass(frozen=True)
class Filters:
    force: bool = False
    ignore_daemonsets: bool = False
    delete_emptydir_data: bool = False


def _finished(pod: types_pb2.Pod) -> bool:
    return pod.status.phase in TERMINAL_PHASES


# A filter says: (delete?, message or "", fatal?)
Verdict = tuple[bool, str, bool]


def _daemonset(pod: types_pb2.Pod, f: Filters) -> Verdict:
    ref = controller_of(pod)
    if ref is None or ref.kind != "DaemonSet" or _finished(pod):
        return True, "", False
    if not f.ignore_daemonsets:
        return False, DAEMONSET_FATAL, True
    return False, DAEMONSET_WARNING, False


def _mirror(pod: types_pb2.Pod, f: Filters) -> Verdict:
    return not is_mirror_pod(pod), "", False


def _local_storage(pod: types_pb2.Pod, f: Filters) -> Verdict:
    if not any(v.HasField("empty_dir") for v in pod.spec.volumes) or _finished(pod):
        return True, "", False
    if not f.delete_emptydir_data:
        return False, LOCAL_STORAGE_FATAL, True
    return True, LOCAL_STORAGE_WARNING, False


def _unreplicated(pod: types_pb2.Pod, f: Filters) -> Verdict:
    if _finished(pod) or controller_of(pod) is not None:
        return True, "", False
    if f.force:
        return True, UNMANAGED_WARNING, False
    return False, UNMANAGED_FATAL, True


FILTERS: Final[tuple[Callable[[types_pb2.Pod, Filters], Verdict], ...]] = (
    _daemonset,
    _mirror,
    _local_storage,
    _unreplicated,
)


def pods_for_deletion(pods: list[types_pb2.Pod], f: Filters) -> PodsForDeletion:
    """kubectl's GetPodsForDeletion: every filter runs on every pod, in order; a pod is
    deleted only if all agree, a filter that says no stops the chain for that pod."""
    out = PodsForDeletion()
    for pod in pods:
        key = object_key(pod)
        delete = True
        for check in FILTERS:
            ok, message, fatal = check(pod, f)
            if message:
                (out.errors if fatal else out.warnings).setdefault(message, []).append(key)
            if not ok:
                delete = False
                break
        if delete:
            out.pods.append(pod)
    return out


# ---------------------------------------------------------------- drain


def _grace(args: argparse.Namespace) -> int | None:
    grace: int = args.grace_period
    return None if grace < 0 else grace


def _timeout(args: argparse.Namespace) -> float:
    try:
        seconds = parse_duration(args.timeout) if args.timeout else 0.0
    except DurationError as e:
        raise CtlError(f"invalid --timeout: {e}") from None
    return seconds if seconds > 0 else float("inf")


async def cmd_drain(ctx: Context, args: argparse.Namespace) -> int:
    dry_run = _dry_run(args)
    filters = Filters(args.force, args.ignore_daemonsets, args.delete_emptydir_data)
    timeout = _timeout(args)
    remaining: list[str] = []
    fatal: str | None = None
    for name in _nodes(args, "drain"):
        await _set_unschedulable(ctx, name, True, dry_run)
        try:
            await _drain_node(ctx, args, name, filters, dry_run, timeout)
        except CtlError as e:
            ctx.warn(
                f'error: unable to drain node "{name}" due to error: {e}, continuing command...'
            )
            remaining.append(name)
            fatal = str(e)
            continue
        ctx.print(f"node/{name} drained{_suffix(dry_run)}")
    if fatal is not None:
        ctx.warn("There are pending nodes to be drained:")
        for name in remaining:
            ctx.warn(f" {name}")
        raise CtlError(fatal)
    return 0


async def _drain_node(
    ctx: Context,
    args: argparse.Namespace,
    node: str,
    filters: Filters,
    dry_run: str,
    limit: float,
) -> None:
    listed = await ctx.client.list_all(
        types_pb2.Pod,
        "",
        label_selector=args.pod_selector or "",
        field_selector=f"spec.nodeName={node}",
    )
    found = pods_for_deletion(list(listed.items), filters)
    if found.errors:
        raise CtlError(found.error_text())
    if found.warnings:
        ctx.warn(f"Warning: {found.warning_text()}")
    if dry_run == "client":
        for pod in found.pods:
            ctx.print(f"evicting pod {pod.metadata.namespace}/{pod.metadata.name} (dry run)")
        return
    errors: list[str] = []
    with anyio.move_on_after(limit) as scope:
        async with anyio.create_task_group() as tg:
            for pod in found.pods:
                tg.start_soon(_evict_and_wait, ctx, args, pod, dry_run, errors)
    if scope.cancelled_caught:
        raise CtlError(f"drain did not complete within {args.timeout}")
    if errors:
        raise CtlError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")


async def _evict_and_wait(
    ctx: Context, args: argparse.Namespace, pod: types_pb2.Pod, dry_run: str, errors: list[str]
) -> None:
    ns, name = pod.metadata.namespace, pod.metadata.name
    grace = _grace(args)
    verb = "deleted" if args.disable_eviction else "evicted"
    while True:
        try:
            if args.disable_eviction:
                if dry_run == "none":
                    await ctx.client.delete(types_pb2.Pod, name, ns, grace_period_seconds=grace)
            else:
                ctx.print(f"evicting pod {ns}/{name}")
                await ctx.client.evict(
                    ns, name, grace_period_seconds=grace, dry_run=dry_run == "server"
                )
            break
        except NotFound:
            break  # already gone
        except TooManyRequests as e:
            ctx.warn(
                f'error when evicting pods/"{name}" -n "{ns}" (will retry after 5s): {e.message}'
            )
            await ctx.clock.sleep(EVICTION_RETRY)
        except ApiError as e:
            what = "deleting" if args.disable_eviction else "evicting"
            errors.append(f'error when {what} pods/"{name}" -n "{ns}": {e.message}')
            return
    if dry_run == "none":
        await _wait_for_delete(ctx, pod)
    ctx.print(f"pod/{name} {verb}{_suffix(dry_run)}")


async def _wait_for_delete(ctx: Context, pod: types_pb2.Pod) -> None:
    """Until the pod is gone or replaced by another of the same name (kubectl's
    waitForDelete)."""
    while True:
        try:
            live = await ctx.client.get(types_pb2.Pod, pod.metadata.name, pod.metadata.namespace)
        except NotFound:
            return
        if live.metadata.uid != pod.metadata.uid:
            return
        await ctx.clock.sleep(DELETE_POLL)

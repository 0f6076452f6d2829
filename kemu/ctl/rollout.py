"""`scale` and `rollout status|history|undo|restart|pause|resume`: kubectl's workload verbs
for Deployments (scale also for ReplicaSets), with kubectl's messages."""

from __future__ import annotations

import argparse
from typing import Final

import anyio

from kemu.api.v1 import types_pb2
from kemu.client.interface import BOOKMARK, DELETED
from kemu.ctl.common import Context, CtlError, namespace_for, ref, split_targets
from kemu.ctl.tabwriter import align
from kemu.ctl.wait import parse_timeout
from kemu.machinery import apps, kinds
from kemu.machinery.convert import format_time, timestamp
from kemu.machinery.errors import Gone, NotFound
from kemu.machinery.labels import selector_of

ACTIONS: Final = ("status", "history", "undo", "restart", "pause", "resume")
_SKIP_ANNOTATIONS: Final = frozenset(
    {
        apps.LAST_APPLIED_ANNOTATION,
        apps.REVISION_ANNOTATION,
        apps.REVISION_HISTORY_ANNOTATION,
        apps.DESIRED_REPLICAS_ANNOTATION,
        apps.MAX_REPLICAS_ANNOTATION,
        "deprecated.deployment.rollback.to",
    }
)
_TIMED_OUT: Final = "ProgressDeadlineExceeded"
_FOREVER: Final = 7 * 24 * 3600.0


def _targets(args: list[str], command: str) -> list[tuple[kinds.Kind, str]]:
    out = []
    for kind, name in split_targets(args, require_name=True):
        assert name is not None
        out.append((kind, name))
    if not out:
        raise CtlError(f"{command}: a resource is required")
    return out


def _deployment_only(kind: kinds.Kind, what: str) -> None:
    if kind.kind != "Deployment":
        raise CtlError(f'no {what} has been implemented for {kind.kind} (only "deployments")')


# ---------------------------------------------------------------- scale


async def cmd_scale(ctx: Context, args: argparse.Namespace) -> int:
    if args.replicas is None:
        raise CtlError("--replicas is required (the new number of replicas)")
    if args.replicas < 0:
        raise CtlError(
            "The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0"
        )
    for kind, name in _targets(args.targets, "scale"):
        if kind.kind not in ("Deployment", "ReplicaSet"):
            raise CtlError(f"cannot scale {kind.resource}: only deployments and replicasets")
        ns = namespace_for(ctx, kind)
        if args.current_replicas is not None:
            live = await ctx.client.get(kind.message, name, ns)
            if live.spec.replicas != args.current_replicas:  # type: ignore[attr-defined]
                raise CtlError(
                    f"Expected replicas to be {args.current_replicas}, was {live.spec.replicas}"  # type: ignore[attr-defined]
                )
        await ctx.client.patch(kind.message, name, {"spec": {"replicas": args.replicas}}, ns)
        ctx.print(f"{ref(kind, name)} scaled")
    return 0


# ---------------------------------------------------------------- rollout status


def status_message(d: types_pb2.Deployment) -> tuple[str, bool]:
    """kubectl's DeploymentStatusViewer: the line to print and whether the rollout is done.
    CtlError when the rollout exceeded its progress deadline."""
    name = d.metadata.name
    st = d.status
    if d.metadata.generation > st.observed_generation:
        return "Waiting for deployment spec update to be observed...", False
    for cond in st.conditions:
        if cond.type == "Progressing" and cond.reason == _TIMED_OUT:
            raise CtlError(f'deployment "{name}" exceeded its progress deadline')
    replicas = d.spec.replicas
    if st.updated_replicas < replicas:
        return (
            f'Waiting for deployment "{name}" rollout to finish: {st.updated_replicas} out of '
            f"{replicas} new replicas have been updated...",
            False,
        )
    if st.replicas > st.updated_replicas:
        return (
            f'Waiting for deployment "{name}" rollout to finish: '
            f"{st.replicas - st.updated_replicas} old replicas are pending termination...",
            False,
        )
    if st.available_replicas < st.updated_replicas:
        return (
            f'Waiting for deployment "{name}" rollout to finish: {st.available_replicas} of '
            f"{st.updated_replicas} updated replicas are available...",
            False,
        )
    return f'deployment "{name}" successfully rolled out', True


async def _rollout_status(ctx: Context, name: str, ns: str, args: argparse.Namespace) -> int:
    # kubectl: --timeout 0 (the default) waits forever.
    timeout = parse_timeout(args.timeout) if args.timeout else 0.0
    if timeout <= 0:
        timeout = _FOREVER
    last = ""

    def show(d: types_pb2.Deployment) -> bool:
        nonlocal last
        message, done = status_message(d)
        if message != last:
            ctx.print(message)
            last = message
        return done

    with anyio.move_on_after(timeout):
        d = await ctx.client.get(types_pb2.Deployment, name, ns)
        if show(d) or not args.watch:
            return 0
        while True:
            try:
                async with ctx.client.watch(
                    types_pb2.Deployment, ns, field_selector=f"metadata.name={name}"
                ) as events:
                    async for event in events:
                        if event.type == BOOKMARK:
                            continue
                        if event.type == DELETED:
                            raise CtlError(f'deployment "{name}" was deleted')
                        if show(event.object):
                            return 0
            except Gone:
                continue
    raise CtlError("timed out waiting for the condition")


# ---------------------------------------------------------------- history and undo


async def _replica_sets(ctx: Context, d: types_pb2.Deployment) -> list[types_pb2.ReplicaSet]:
    """The ReplicaSets the Deployment controls (kubectl's GetAllReplicaSets)."""
    selector = selector_of(d.spec, "selector")
    listed = await ctx.client.list_all(types_pb2.ReplicaSet, d.metadata.namespace)
    return [
        rs
        for rs in listed.items
        if selector.matches(rs.metadata.labels)
        and any(r.controller and r.uid == d.metadata.uid for r in rs.metadata.owner_references)
    ]


async def _history(ctx: Context, kind: kinds.Kind, d: types_pb2.Deployment, revision: int) -> int:
    by_revision: dict[int, types_pb2.ReplicaSet] = {}
    for rs in await _replica_sets(ctx, d):
        rev = apps.revision_of(rs.metadata)
        if rev > 0:
            by_revision[rev] = rs
    if revision:
        found = by_revision.get(revision)
        if found is None:
            raise CtlError(f"unable to find the specified revision {revision}")
        ctx.print(f"{ref(kind, d.metadata.name)} with revision #{revision}")
        ctx.print("Pod Template:")
        t = found.spec.template
        labels = ",".join(f"{k}={v}" for k, v in sorted(t.metadata.labels.items()))
        ctx.print(f"  Labels:\t{labels or '<none>'}")
        ctx.print("  Containers:")
        for c in t.spec.containers:
            ctx.print(f"   {c.name}:")
            ctx.print(f"    Image:\t{c.image}")
        return 0
    ctx.print(f"{ref(kind, d.metadata.name)} ")
    rows = [["REVISION", "CHANGE-CAUSE"]]
    for rev in sorted(by_revision):
        cause = by_revision[rev].metadata.annotations.get(apps.CHANGE_CAUSE_ANNOTATION, "<none>")
        rows.append([str(rev), cause])
    for line in align(rows):
        ctx.print(line)
    ctx.print()
    return 0


async def _undo(ctx: Context, kind: kinds.Kind, d: types_pb2.Deployment, to_revision: int) -> int:
    """kubectl's DeploymentRollbacker: the old ReplicaSet's template (without its hash label)
    and annotations go back into the Deployment; the controller does the rest."""
    name = d.metadata.name
    if d.spec.paused:
        raise CtlError(
            "you cannot rollback a paused deployment; resume it first with "
            "'kemuctl rollout resume' and try again"
        )
    latest: tuple[int, types_pb2.ReplicaSet] | None = None
    previous: tuple[int, types_pb2.ReplicaSet] | None = None
    target: types_pb2.ReplicaSet | None = None
    for rs in await _replica_sets(ctx, d):
        rev = apps.revision_of(rs.metadata)
        if not rev:
            continue
        if to_revision:
            if rev == to_revision:
                target = rs
            continue
        if latest is None or rev > latest[0]:
            previous, latest = latest, (rev, rs)
        elif previous is None or rev > previous[0]:
            previous = (rev, rs)
    if to_revision and target is None:
        raise CtlError(f"unable to find specified revision {to_revision} in history")
    if not to_revision:
        if previous is None:
            raise CtlError(f'no rollout history found for deployment "{name}"')
        to_revision, target = previous
    assert target is not None
    if apps.equal_ignore_hash(target.spec.template, d.spec.template):
        ctx.print(
            f"{ref(kind, name)} skipped rollback (current template already matches revision "
            f"{to_revision})"
        )
        return 0
    annotations = {k: v for k, v in d.metadata.annotations.items() if k in _SKIP_ANNOTATIONS}
    annotations.update(
        {k: v for k, v in target.metadata.annotations.items() if k not in _SKIP_ANNOTATIONS}
    )
    updated = types_pb2.Deployment()
    updated.CopyFrom(d)
    updated.spec.template.CopyFrom(apps.template_without_hash(target.spec.template))
    updated.metadata.annotations.clear()
    updated.metadata.annotations.update(annotations)
    await ctx.client.update(updated)
    ctx.print(f"{ref(kind, name)} rolled back")
    return 0


# ---------------------------------------------------------------- restart, pause, resume


async def _restart(ctx: Context, kind: kinds.Kind, d: types_pb2.Deployment) -> int:
    if d.spec.paused:
        raise CtlError(
            f'deployments.apps "{d.metadata.name}" can\'t restart paused deployment '
            "(run rollout resume first)"
        )
    now = format_time(timestamp(int(ctx.clock.now())))
    patch = {
        "spec": {"template": {"metadata": {"annotations": {apps.RESTARTED_AT_ANNOTATION: now}}}}
    }
    await ctx.client.patch(types_pb2.Deployment, d.metadata.name, patch, d.metadata.namespace)
    ctx.print(f"{ref(kind, d.metadata.name)} restarted")
    return 0


async def _set_paused(ctx: Context, kind: kinds.Kind, d: types_pb2.Deployment, paused: bool) -> int:
    word = "paused" if paused else "resumed"
    if d.spec.paused == paused:
        raise CtlError(f"{ref(kind, d.metadata.name)} is already {word}")
    await ctx.client.patch(
        types_pb2.Deployment, d.metadata.name, {"spec": {"paused": paused}}, d.metadata.namespace
    )
    ctx.print(f"{ref(kind, d.metadata.name)} {word}")
    return 0


async def cmd_rollout(ctx: Context, args: argparse.Namespace) -> int:
    if args.action not in ACTIONS:
        raise CtlError(f'unknown rollout command "{args.action}" (one of {", ".join(ACTIONS)})')
    rc = 0
    for kind, name in _targets(args.targets, f"rollout {args.action}"):
        _deployment_only(
            kind, "rollout " + ("status viewer" if args.action == "status" else args.action)
        )
        ns = namespace_for(ctx, kind)
        if args.action == "status":
            rc |= await _rollout_status(ctx, name, ns, args)
            continue
        try:
            d = await ctx.client.get(types_pb2.Deployment, name, ns)
        except NotFound:
            raise CtlError(f'deployments.apps "{name}" not found') from None
        if args.action == "history":
            rc |= await _history(ctx, kind, d, args.revision)
        elif args.action == "undo":
            rc |= await _undo(ctx, kind, d, args.to_revision)
        elif args.action == "restart":
            rc |= await _restart(ctx, kind, d)
        else:
            rc |= await _set_paused(ctx, kind, d, args.action == "pause")
    return rc

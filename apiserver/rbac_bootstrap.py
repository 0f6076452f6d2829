"""The RBAC post-start hook rbac/bootstrap-roles (issue #60 item 3; upstream's
pkg/registry/rbac/rest/storage_rbac.go PostStartHook and EnsureRBACPolicy): at start the
apiserver reconciles upstream's bootstrap policy (apiserver/authorization/bootstrap_policy.py)
into the store, as apiserver/authorization/reconcile.py decides, and is not ready until it has.

Each object is reconciled against a fresh read and written with its resourceVersion: another
apiserver of the cluster reconciling the same object at the same time makes the write a
Conflict (or the create AlreadyExists), and the object is read and reconciled again (upstream:
retry.RetryOnConflict around each)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, Final

import anyio
from google.protobuf.message import Message

from apiserver.authorization.bootstrap_policy import BootstrapPolicy, bootstrap_policy
from apiserver.authorization.reconcile import (
    Operation,
    Result,
    reconcile_binding,
    reconcile_role,
)
from apiserver.registry.registry import Registry
from apiserver.registry.store import copy_of, object_key
from kemu.api.v1 import types_pb2
from kemu.component.runner import ComponentContext, retry_until_ready
from kemu.component.version_rules import VersionRules
from kemu.machinery.errors import AlreadyExists, ApiError, Conflict, NotFound
from kemu.machinery.kinds import BY_KIND, Kind, kind_of

logger = logging.getLogger(__name__)

ATTEMPTS: Final = 5
"""Reads and writes of one object before the pass gives up on it (retry.DefaultBackoff's 5
steps: another apiserver keeps winning the race; the next start tries again)."""
_KINDS: Final = ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


async def ensure_rbac_policy(registry: Registry, policy: BootstrapPolicy) -> int:
    """EnsureRBACPolicy's one pass: every object of `policy` reconciled in order (cluster
    roles, cluster role bindings, roles, role bindings). Returns the number of writes."""
    writes = 0
    for role in (*policy.cluster_roles, *policy.roles):
        writes += await _ensure(registry, role, reconcile_role)
    for binding in (*policy.cluster_role_bindings, *policy.role_bindings):
        writes += await _ensure(registry, binding, reconcile_binding)
    return writes


async def _ensure(
    registry: Registry, expected: Message, reconcile: Callable[[Any, Any], Result]
) -> int:
    kind = kind_of(expected)
    meta: types_pb2.ObjectMeta = expected.metadata  # type: ignore[attr-defined]
    what = f"{kind.kind} {meta.namespace + '/' if meta.namespace else ''}{meta.name}"
    for attempt in range(ATTEMPTS):
        existing: Message | None
        listed, existing = (
            _cached(registry, kind, meta.namespace, meta.name) if attempt == 0 else (False, None)
        )
        if not listed:
            try:
                existing = (await registry.read(kind, meta.namespace, meta.name)).obj
            except NotFound:
                existing = None
        result: Result = reconcile(expected, existing)
        if result.protected and result.operation is not Operation.NONE:
            logger.info("skipped reconcile-protected %s (autoupdate false)", what)
            return 0
        try:
            if result.operation is Operation.NONE:
                return 0
            if result.operation is Operation.CREATE:
                await registry.create(result.obj)
            elif result.operation is Operation.UPDATE:
                await registry.update(result.obj)
            else:
                assert existing is not None
                old: types_pb2.ObjectMeta = existing.metadata  # type: ignore[attr-defined]
                await registry.delete(
                    kind.resource,
                    meta.namespace,
                    meta.name,
                    grace_period=None,
                    uid=old.uid,
                    resource_version=old.resource_version,
                )
                fresh = copy_of(result.obj)
                fresh_meta: types_pb2.ObjectMeta = fresh.metadata
                for field in ("resource_version", "uid", "creation_timestamp", "managed_fields"):
                    fresh_meta.ClearField(field)
                await registry.create(fresh)
        except (Conflict, AlreadyExists, NotFound):
            # (another apiserver wrote it meanwhile, or the cache was behind: read it from
            # etcd and reconcile again)
            continue
        logger.info("%s %s", "created" if result.operation is Operation.CREATE else "updated", what)
        return 1
    logger.warning("gave up reconciling %s after %d conflicts", what, ATTEMPTS)
    return 0


def _cached(
    registry: Registry, kind: Kind, namespace: str, name: str
) -> tuple[bool, Message | None]:
    """The first guess: (True, the object as the kind's watch cache holds it, None when not
    there), or (False, None) when the cache has not listed yet. A guess only: every write is a compare-and-swap,
    a stale copy's update is a Conflict and a create of one the cache missed AlreadyExists,
    and the object is then read from etcd. On a restart this makes the pass a few cache
    lookups instead of a read per object."""
    try:
        cache = registry.store.cache(kind)
    except KeyError:
        return False, None
    if not cache.ready:
        return False, None
    found = cache.get(object_key(kind, namespace, name))
    return True, (None if found is None else found.obj)


HOOK: Final = "poststarthook/rbac/bootstrap-roles"
"""The readiness check that fails until the first pass is done (upstream's /readyz lists
the hook so)."""


def served(registry: Registry) -> bool:
    """The hook runs where the RBAC kinds are served (upstream's RBAC storage provider adds
    it, whatever --authorization-mode says; --runtime-config
    rbac.authorization.k8s.io/v1=false drops both)."""
    return all(registry.served.serves(BY_KIND[k]) for k in _KINDS)


async def post_start_hook(registry: Registry, ctx: ComponentContext) -> None:
    """The hook: one pass, retried on any error until it is through (upstream polls every
    second and logs; an etcd Timeout under load must not leave the cluster without its
    policy).

    Upstream runs it once the server serves, its /readyz failing until the pass is through;
    kemu awaits it before it serves (as the APF ensurer's first pass): a component would
    otherwise find the policy half written, and in virtual time the hook's writes would
    interleave with the components' by chance. Its readiness check is there all the same."""
    done = anyio.Event()
    ctx.add_readiness_check(HOOK, done.is_set)
    policy = bootstrap_policy(ctx.gates, VersionRules.at(ctx.options.version))
    start = ctx.clock.monotonic()
    writes = await retry_until_ready(
        "the RBAC bootstrap policy",
        functools.partial(ensure_rbac_policy, registry, policy),
        clock=ctx.clock,
        initial=1.0,
        retry_on=(ApiError,),
    )
    logger.info(
        "RBAC bootstrap policy reconciled: %d writes in %.3fs",
        writes,
        ctx.clock.monotonic() - start,
    )
    done.set()  # (after the line: a reader of the log that saw /readyz finds it)

"""The ClusterRole aggregation controller (upstream pkg/controller/clusterroleaggregation/
clusterroleaggregation_controller.go): a ClusterRole with an aggregationRule has as its rules
the union of the rules of the ClusterRoles its selectors match (itself excepted), in the
order of their names, each rule once. This is how the bootstrap roles admin, edit and view
(apiserver/authorization/bootstrap_policy.py) get their rules, from
system:aggregate-to-{admin,edit,view} and from any ClusterRole a user labels
rbac.authorization.k8s.io/aggregate-to-view "true" (edit aggregates view, admin edit).

Any ClusterRole added, changed or deleted queues every aggregated ClusterRole, as upstream's
enqueue: a label or rule of any role may change any aggregation."""

from __future__ import annotations

import logging
from typing import Final

from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from controllermanager.names import CLUSTER_ROLE_AGGREGATION
from kemu.api.v1 import types_pb2
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery.convert import message_to_dict
from kemu.machinery.labels import matches_label_selector

logger = logging.getLogger(__name__)

NAME: Final = CLUSTER_ROLE_AGGREGATION
WORKERS: Final = 5
"""startClusterRoleAggregationController: Run(ctx, 5)."""


def aggregated_rules(
    role: types_pb2.ClusterRole, roles: list[types_pb2.ClusterRole]
) -> list[types_pb2.PolicyRule]:
    """syncClusterRole's rules: those of every other role a selector matches, by the roles'
    names, without repeats (ruleExists: an equal rule)."""
    out: list[types_pb2.PolicyRule] = []
    matched: dict[str, types_pb2.ClusterRole] = {}
    for selector in role.aggregation_rule.cluster_role_selectors:
        for other in roles:
            if other.metadata.name == role.metadata.name:
                continue
            # (an empty selector matches every role, as labels.Everything)
            if matches_label_selector(selector, other.metadata.labels):
                matched[other.metadata.name] = other
    for name in sorted(matched):
        for rule in matched[name].rules:
            if rule not in out:
                out.append(rule)
    return out


class ClusterRoleAggregationController:
    """See the module docstring."""

    def __init__(self, client: ApiClient, informers: InformerFactory, clock: Clock) -> None:
        self._client = client
        self.queue = WorkQueue(clock, name=NAME)
        self._roles: Informer[types_pb2.ClusterRole] = informers.informer(types_pb2.ClusterRole)
        self._roles.add_event_handler(
            FuncHandler(
                lambda _role: self._enqueue(),
                lambda _old, _new: self._enqueue(),
                lambda _role: self._enqueue(),
            )
        )

    @property
    def name(self) -> str:
        return NAME

    def _enqueue(self) -> None:
        for role in self._roles.lister.list():
            if role.HasField("aggregation_rule"):
                self.queue.add(role.metadata.name)

    async def sync(self, name: str) -> None:
        role = self._roles.lister.get(name)
        if role is None or not role.HasField("aggregation_rule"):
            return
        rules = aggregated_rules(role, self._roles.lister.list())
        if list(role.rules) == rules:
            return
        # (upstream applies the rules server-side, forcing its field manager's ownership; a
        # merge patch replaces the list the same way, with no resourceVersion to conflict on)
        await self._client.patch(
            types_pb2.ClusterRole, name, {"rules": [message_to_dict(r) for r in rules]}
        )

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "syncing ClusterRole", logger)

    async def run(self) -> None:
        await run_controller(
            "ClusterRoleAggregator",
            logger,
            synced=(self._roles,),
            queues=(self.queue,),
            tasks=workers(NAME, WORKERS, self._worker),
        )


def new_controller(ctx: ControllerContext) -> ClusterRoleAggregationController:
    """The init function registered as "clusterrole-aggregation"."""
    return ClusterRoleAggregationController(ctx.client, ctx.informers, ctx.clock)

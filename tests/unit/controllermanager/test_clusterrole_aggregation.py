"""The clusterrole-aggregation controller (upstream pkg/controller/clusterroleaggregation)
against the fake client: upstream's bootstrap admin, edit and view filled from their sources,
a user's aggregate-to-view role added and taken away again."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import pytest

from apiserver.authorization.bootstrap_policy import bootstrap_policy, cluster_role, rule
from controllermanager.clusterrole_aggregation import (
    ClusterRoleAggregationController,
    aggregated_rules,
)
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.component.featuregate import FeatureGates
from kemu.component.version_rules import VersionRules
from kemu.testing.eventually import eventually

pytestmark = pytest.mark.anyio

VIEW_LABEL = "rbac.authorization.k8s.io/aggregate-to-view"


def test_the_rules_of_the_matching_roles_by_name_each_once_itself_excepted() -> None:
    a = rule(("get",), ("",), ("pods",))
    b = rule(("list",), ("",), ("pods",))
    view = cluster_role("view", [b], aggregate_from=VIEW_LABEL)
    view.metadata.labels[VIEW_LABEL] = "true"  # (matches itself: passed over)
    second = cluster_role("b-role", [a, b], labels={VIEW_LABEL: "true"})
    first = cluster_role("a-role", [b], labels={VIEW_LABEL: "true"})
    other = cluster_role("other", [rule(("*",), ("*",), ("*",))])
    assert aggregated_rules(view, [view, second, other, first]) == [b, a]


@asynccontextmanager
async def running(fake: FakeClient, clock: FakeClock) -> AsyncIterator[None]:
    informers = InformerFactory(fake, clock=clock)
    controller = ClusterRoleAggregationController(fake, informers, clock)
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(controller.run)
        yield
        tg.cancel_scope.cancel()


async def test_admin_edit_and_view_aggregate_the_bootstrap_and_a_users_roles() -> None:
    clock = FakeClock()
    policy = bootstrap_policy(FeatureGates.default(), VersionRules.default())
    fake = FakeClient(*policy.cluster_roles, clock=clock)
    source = next(r for r in policy.cluster_roles if r.metadata.name == "system:aggregate-to-view")

    async def rules_of(name: str) -> list[types_pb2.PolicyRule]:
        return list((await fake.get(types_pb2.ClusterRole, name)).rules)

    async def wait_for(
        condition: Callable[[dict[str, list[types_pb2.PolicyRule]]], bool],
    ) -> None:
        async def check() -> bool:
            return condition({n: await rules_of(n) for n in ("view", "edit", "admin")})

        await eventually(check, timeout=10, interval=0.001)

    async with running(fake, clock):
        await wait_for(
            lambda rules: (
                rules["view"] == list(source.rules)
                and all(r in rules["edit"] for r in rules["view"])
                and all(r in rules["admin"] for r in rules["edit"])
            )
        )
        assert await rules_of("view") == list(source.rules)
        edit = await rules_of("edit")
        assert all(r in edit for r in source.rules)
        admin = await rules_of("admin")
        assert all(r in admin for r in edit)
        widgets = rule(("get",), ("example.com",), ("widgets",))
        await fake.create(cluster_role("widgets", [widgets], labels={VIEW_LABEL: "true"}))
        await wait_for(lambda rules: all(widgets in rules[n] for n in rules))
        assert await rules_of("view") == [*source.rules, widgets]
        await fake.delete(types_pb2.ClusterRole, "widgets")
        await wait_for(lambda rules: all(widgets not in rules[n] for n in rules))
        assert await rules_of("view") == list(source.rules)

"""Upstream's bootstrap RBAC policy on real processes (issue #60 item 3; docs/security.md,
"Bootstrap policy"): the apiserver's rbac/bootstrap-roles hook writes it at start and
reconciles it at each start (a deleted role back, a missing rule back, an extra one kept, an
object annotated autoupdate "false" left as the user made it), several apiservers starting at
once write it once, and the controller-manager's clusterrole-aggregation controller fills
admin, edit and view, a user's aggregate-to-view role included.

The kubectl checks are skipped when kubectl is not on PATH (it is on every machine of kemu's
CI); the rest runs with kemu's client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from apiserver.authorization.bootstrap_policy import bootstrap_policy, rule
from apiserver.authorization.reconcile import uncovered
from apiserver.rbac_bootstrap import HOOK
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.component.featuregate import FeatureGates
from kemu.component.version_rules import VersionRules
from kemu.testing import eventually
from kemu.testing.cluster import Cluster, Component
from kemu.testing.eventually import eventually_sync
from kemu.testing.processes import ManagedProcess, url_ok
from tests.integration.cli.kubectl_env import KUBECTL, Kubectl

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

POLICY = bootstrap_policy(FeatureGates.default(), VersionRules.default())


def hook_done(proc: ManagedProcess) -> None:
    """The hook's first pass is through: its own readiness check passes (asked by name: the
    apiserver's /readyz can pass before the checks of its serving are registered)."""
    assert isinstance(proc, Component)
    url = f"{proc.readyz_url}/{HOOK}"
    eventually_sync(lambda: url_ok(url), timeout=30, message=url)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("rbac-bootstrap")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        hook_done(c.start_apiserver(rest=True))
        c.write_kubeconfig()
        c.start_controllermanager(extra_args=["--controllers", "clusterrole-aggregation"])
        yield c


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[Client]:
    async with Client(cluster.server, timeout=10.0) as client:
        yield client


def _rules(role: types_pb2.ClusterRole | types_pb2.Role) -> list[types_pb2.PolicyRule]:
    return list(role.rules)


@needs_kubectl
async def test_rbac_boot_1_kubectl_lists_upstreams_roles_labels_and_annotations(
    cluster: Cluster,
) -> None:
    kubectl = Kubectl(cluster)
    listed = kubectl.json("get", "clusterroles")["items"]
    by_name = {r["metadata"]["name"]: r for r in listed}
    assert {r.metadata.name for r in POLICY.cluster_roles} <= by_name.keys()
    view = by_name["view"]
    assert view["metadata"]["labels"] == {
        "kubernetes.io/bootstrapping": "rbac-defaults",
        "rbac.authorization.k8s.io/aggregate-to-edit": "true",
    }
    assert view["metadata"]["annotations"] == {
        "rbac.authorization.kubernetes.io/autoupdate": "true"
    }
    assert view["aggregationRule"] == {
        "clusterRoleSelectors": [
            {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}
        ]
    }
    scheduler = by_name["system:kube-scheduler"]
    assert {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "resourceNames": ["kube-scheduler"],
        "verbs": ["get", "update"],
    } in scheduler["rules"]
    names = kubectl.run("get", "clusterrolebindings", "-o", "name").stdout.split()
    assert "clusterrolebinding.rbac.authorization.k8s.io/cluster-admin" in names
    assert "clusterrolebinding.rbac.authorization.k8s.io/system:controller:job-controller" in names
    binding = kubectl.json("get", "clusterrolebinding", "cluster-admin")
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"}
    ]
    roles = kubectl.run("get", "roles", "-n", "kube-system", "-o", "name").stdout.split()
    assert "role.rbac.authorization.k8s.io/system::leader-locking-kube-scheduler" in roles
    assert "role.rbac.authorization.k8s.io/extension-apiserver-authentication-reader" in roles
    out = kubectl.run("get", "rolebindings", "-n", "kube-public").stdout
    assert "system:controller:bootstrap-signer" in out and "Role/system:controller:" in out


async def test_rbac_boot_2_aggregation_fills_admin_edit_view_and_adds_a_users_role(
    client: Client,
) -> None:
    """view gets system:aggregate-to-view's rules, edit view's and its own, admin edit's;
    a ClusterRole labelled aggregate-to-view adds its rules to all three; unlabelled, they
    go again."""
    source = await client.get(types_pb2.ClusterRole, "system:aggregate-to-view")

    async def view_has_the_bootstrap_rules() -> bool:
        view = await client.get(types_pb2.ClusterRole, "view")
        assert _rules(view) == _rules(source)
        edit = await client.get(types_pb2.ClusterRole, "edit")
        assert all(r in edit.rules for r in source.rules)
        admin = await client.get(types_pb2.ClusterRole, "admin")
        assert all(r in admin.rules for r in edit.rules)
        return True

    await eventually(view_has_the_bootstrap_rules, timeout=20)
    widgets = rule(("get", "list", "watch"), ("example.com",), ("widgets",))
    mine = types_pb2.ClusterRole(rules=[widgets])
    mine.metadata.name = "widget-viewer"
    mine.metadata.labels["rbac.authorization.k8s.io/aggregate-to-view"] = "true"
    await client.create(mine)

    async def everywhere() -> bool:
        for name in ("view", "edit", "admin"):
            assert widgets in (await client.get(types_pb2.ClusterRole, name)).rules, name
        return True

    await eventually(everywhere, timeout=20)
    view = await client.get(types_pb2.ClusterRole, "view")
    assert _rules(view) == [*source.rules, widgets]  # (by the sources' names)
    await client.delete(types_pb2.ClusterRole, "widget-viewer")

    async def gone() -> bool:
        for name in ("view", "edit", "admin"):
            assert widgets not in (await client.get(types_pb2.ClusterRole, name)).rules, name
        return True

    await eventually(gone, timeout=20)


async def test_rbac_boot_3_a_restart_restores_deleted_and_missing_and_keeps_user_edits(
    cluster: Cluster, client: Client
) -> None:
    await client.delete(types_pb2.ClusterRole, "system:heapster")
    await client.delete(
        types_pb2.RoleBinding, "system::leader-locking-kube-scheduler", "kube-system"
    )
    # autoupdate "true": a missing rule comes back, the user's extra rule stays
    proxier = await client.get(types_pb2.ClusterRole, "system:node-proxier")
    expected_proxier = _rules(proxier)
    extra = rule(("get",), ("",), ("configmaps",))
    del proxier.rules[0]
    proxier.rules.append(extra)
    await client.update(proxier)
    # autoupdate "false": the user's role stays as it is, rules and all
    dns = await client.get(types_pb2.ClusterRole, "system:kube-dns")
    dns.metadata.annotations["rbac.authorization.kubernetes.io/autoupdate"] = "false"
    dns.ClearField("rules")
    dns.rules.append(extra)
    dns = await client.update(dns)
    binding = await client.get(types_pb2.ClusterRoleBinding, "system:kube-dns")
    binding.metadata.annotations["rbac.authorization.kubernetes.io/autoupdate"] = "false"
    binding.ClearField("subjects")
    binding = await client.update(binding)

    cluster.restart("apiserver")
    hook_done(cluster.processes["apiserver"])

    async with Client(cluster.server, timeout=10.0) as c:
        heapster = await c.get(types_pb2.ClusterRole, "system:heapster")
        assert heapster.metadata.labels["kubernetes.io/bootstrapping"] == "rbac-defaults"
        locking = await c.get(
            types_pb2.RoleBinding, "system::leader-locking-kube-scheduler", "kube-system"
        )
        assert [s.name for s in locking.subjects] == ["system:kube-scheduler", "kube-scheduler"]
        proxier = await c.get(types_pb2.ClusterRole, "system:node-proxier")
        assert extra in proxier.rules
        assert not uncovered(proxier.rules, expected_proxier)
        after = await c.get(types_pb2.ClusterRole, "system:kube-dns")
        assert after == dns  # (not written: same resourceVersion)
        after_binding = await c.get(types_pb2.ClusterRoleBinding, "system:kube-dns")
        assert after_binding == binding


async def test_rbac_boot_4_apiservers_starting_together_write_the_policy_once(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Three apiservers on one fresh etcd reconcile the same objects at the same moment: each
    gets through (conflicts read again), and every object is as the policy says, no rule
    appended twice."""
    with Cluster(tmp_path_factory.mktemp("rbac-race")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        servers = [c.start_apiserver(name=f"apiserver-{i}", wait=False) for i in range(3)]
        for s in servers:
            s.wait_ready(timeout=60)
            hook_done(s)
        async with Client(c.server, timeout=10.0) as client:
            stored = {r.metadata.name: r for r in (await client.list(types_pb2.ClusterRole)).items}
            for want in POLICY.cluster_roles:
                got = stored[want.metadata.name]
                assert _rules(got) == _rules(want), want.metadata.name
                assert dict(got.metadata.labels) == dict(want.metadata.labels)
            bindings = (await client.list(types_pb2.ClusterRoleBinding)).items
            assert len(bindings) == len(POLICY.cluster_role_bindings)
            roles = (await client.list(types_pb2.Role, namespace="kube-system")).items
            assert len(roles) == sum(r.metadata.namespace == "kube-system" for r in POLICY.roles)
        logs = [s.logs() for s in servers]
        assert all("RBAC bootstrap policy reconciled" in log for log in logs)
        assert not any("gave up reconciling" in log for log in logs)


@needs_kubectl
async def test_rbac_boot_5_without_the_rbac_group_no_policy_is_written(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """--runtime-config rbac.authorization.k8s.io/v1=false: the kinds are not served and the
    hook does not run (upstream adds it with the RBAC storage)."""
    with Cluster(tmp_path_factory.mktemp("rbac-off")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(rest=True, runtime_config={"rbac.authorization.k8s.io/v1": "false"})
        c.write_kubeconfig()
        proc = Kubectl(c).run("get", "clusterroles", check=False)
        assert proc.returncode != 0
        assert "the server doesn't have a resource type" in proc.stderr, proc.stderr
        assert "RBAC bootstrap policy" not in c.processes["apiserver"].logs()

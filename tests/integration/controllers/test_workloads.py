"""Deployments and ReplicaSets on real processes: etcd, an apiserver, the scheduler, three
kubelets and the controller-manager's replicaset and deployment controllers.

Rolling-update bounds are checked on every recorded version: a watch records every pod and
ReplicaSet of the Deployment, and the bounds are checked after each event. The surge bound is
upstream's (its e2e framework's WaitForDeploymentComplete): Σ spec.replicas of the
Deployment's ReplicaSets <= replicas + maxSurge. The number of active pods may exceed it for a
moment, upstream as here: the Deployment lowers an old ReplicaSet's replicas and raises the new
one's at once, while the old pods are deleted by the ReplicaSet controller a little later. What
must never happen is a ReplicaSet with more active pods than it ever asked for (a surplus, e.g.
from expectations lost in a restart): that is checked per ReplicaSet."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import pytest
from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.interface import DELETED
from kemu.ctl.main import run as kemuctl
from kemu.machinery import apps
from kemu.testing import Cluster, eventually, make_deployment, make_pod, make_priority_class
from kemu.testing.names import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

NODES = ("wl-a", "wl-b", "wl-c")
NS = "default"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("workloads")) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_scheduler()
        for node in NODES:
            c.start_kubelet(
                node,
                capacity={"cpu": "8", "memory": "16Gi", "pods": "110"},
                extra_args=["--pod-startup-delay", "100ms", "--node-labels", f"wl={node}"],
            )
        c.start_controllermanager(extra_args=["--controllers", "replicaset,deployment"], name="kcm")
        yield c


def _active(pod: types_pb2.Pod) -> bool:
    return pod.status.phase not in ("Succeeded", "Failed") and not pod.metadata.HasField(
        "deletion_timestamp"
    )


def _ready(pod: types_pb2.Pod) -> bool:
    return _active(pod) and any(
        c.type == "Ready" and c.status == "True" for c in pod.status.conditions
    )


@dataclass
class History:
    """Every version of a Deployment's pods and ReplicaSets, and a check run after each."""

    pods: dict[str, types_pb2.Pod] = field(default_factory=dict)
    rss: dict[str, types_pb2.ReplicaSet] = field(default_factory=dict)
    events: int = 0
    violations: list[str] = field(default_factory=list)
    max_active: int = 0
    max_spec_sum: int = 0
    max_spec: dict[str, int] = field(default_factory=dict)  # rs uid -> largest spec.replicas
    # Every event of both watches with its resourceVersion (an etcd revision): the two watches
    # are separate streams, so a pod the ReplicaSet controller made after a scale-up can arrive
    # before the ReplicaSet's new spec. Surplus is judged in revision order (`surplus`).
    log: list[tuple[int, str, str, Message]] = field(default_factory=list)
    min_ready_after_complete: int | None = None
    deployment: types_pb2.Deployment | None = None
    complete: bool = False

    def apply(self, kind: str, typ: str, obj: Message, check: Callable[[History], None]) -> None:
        if isinstance(obj, types_pb2.Deployment):
            self.deployment = obj
            check(self)
            return
        store = self.pods if kind == "pod" else self.rss
        uid = obj.metadata.uid  # type: ignore[attr-defined]
        if typ == DELETED:
            store.pop(uid, None)
        else:
            store[uid] = obj  # type: ignore[assignment]
            if isinstance(obj, types_pb2.ReplicaSet):
                self.max_spec[uid] = max(self.max_spec.get(uid, 0), obj.spec.replicas)
        self.events += 1
        rv = int(obj.metadata.resource_version)  # type: ignore[attr-defined]
        self.log.append((rv, kind, typ, obj))
        active = sum(1 for p in self.pods.values() if _active(p))
        self.max_active = max(self.max_active, active)
        self.max_spec_sum = max(self.max_spec_sum, sum(r.spec.replicas for r in self.rss.values()))
        check(self)

    def ready(self) -> int:
        return sum(1 for p in self.pods.values() if _ready(p))

    @property
    def surplus(self) -> list[str]:
        """Each moment, in revision order, at which a ReplicaSet had more active pods than it
        had ever asked for."""
        pods: dict[str, types_pb2.Pod] = {}
        max_spec: dict[str, int] = {}
        found: list[str] = []
        for _, kind, typ, obj in sorted(self.log, key=lambda e: e[0]):
            uid = obj.metadata.uid  # type: ignore[attr-defined]
            if isinstance(obj, types_pb2.ReplicaSet):
                if typ != DELETED:
                    max_spec[uid] = max(max_spec.get(uid, 0), obj.spec.replicas)
                continue
            assert isinstance(obj, types_pb2.Pod), kind
            if typ == DELETED:
                pods.pop(uid, None)
            else:
                pods[uid] = obj
            owned: dict[str, int] = {}
            for p in pods.values():
                if _active(p) and p.metadata.owner_references:
                    ref = p.metadata.owner_references[0].uid
                    owned[ref] = owned.get(ref, 0) + 1
            for rs_uid, n in owned.items():
                if rs_uid in max_spec and n > max_spec[rs_uid]:
                    found.append(
                        f"{n} active pods of a ReplicaSet that asked for at most {max_spec[rs_uid]}"
                    )
        return found


@asynccontextmanager
async def recording(
    c: Client, app: str, check: Callable[[History], None] = lambda h: None
) -> AsyncIterator[History]:
    history = History()
    started = anyio.Event()
    ready = [0]

    async def watch(kind: type[Message], name: str) -> None:
        async with c.watch(kind, NS, label_selector=f"app={app}") as events:
            ready[0] += 1
            if ready[0] == 3:
                started.set()
            async for ev in events:
                history.apply(name, ev.type, ev.object, check)

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch, types_pb2.Pod, "pod")
        tg.start_soon(watch, types_pb2.ReplicaSet, "rs")
        tg.start_soon(watch, types_pb2.Deployment, "deployment")
        with anyio.fail_after(10):
            await started.wait()
        yield history
        tg.cancel_scope.cancel()


async def _deployment(c: Client, name: str) -> types_pb2.Deployment:
    return await c.get(types_pb2.Deployment, name, NS)


def _complete(name: str, c: Client, replicas: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        d = await _deployment(c, name)
        st = d.status
        assert st.observed_generation == d.metadata.generation, st
        assert (st.replicas, st.updated_replicas, st.available_replicas, st.ready_replicas) == (
            replicas,
            replicas,
            replicas,
            replicas,
        ), st
        conds = {x.type: (x.status, x.reason) for x in st.conditions}
        assert conds.get("Available") == ("True", "MinimumReplicasAvailable"), conds
        assert conds.get("Progressing") == ("True", "NewReplicaSetAvailable"), conds
        return True

    return check


async def _pods_of(c: Client, app: str) -> list[types_pb2.Pod]:
    return list((await c.list(types_pb2.Pod, NS, label_selector=f"app={app}")).items)


async def ctl(cluster: Cluster, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = await kemuctl(list(argv), out=out, err=err, environ={"KEMU_SERVER": cluster.server})
    return rc, out.getvalue(), err.getvalue()


async def test_a_deployment_of_20_rolls_out_on_three_kubelets_and_reports_available(cluster):
    name = unique_name("web")
    async with Client(cluster.server, timeout=10.0) as c:
        created = await c.create(make_deployment(name).replicas(20).req(cpu="10m").obj())
        assert created.spec.strategy.rolling_update.max_surge.str_val == "25%"  # defaulted
        await eventually(_complete(name, c, 20), timeout=60)
        (rs,) = (await c.list(types_pb2.ReplicaSet, NS, label_selector=f"app={name}")).items
        pod_hash = rs.spec.template.metadata.labels[apps.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY]
        assert rs.metadata.name == f"{name}-{pod_hash}"
        assert rs.metadata.annotations[apps.REVISION_ANNOTATION] == "1"
        (ref,) = rs.metadata.owner_references
        assert (ref.kind, ref.uid, ref.controller, ref.block_owner_deletion) == (
            "Deployment",
            created.metadata.uid,
            True,
            True,
        )
        pods = await _pods_of(c, name)
        assert len(pods) == 20
        for pod in pods:
            assert pod.metadata.name.startswith(f"{rs.metadata.name}-")
            (pref,) = pod.metadata.owner_references
            assert (pref.kind, pref.uid, pref.controller, pref.block_owner_deletion) == (
                "ReplicaSet",
                rs.metadata.uid,
                True,
                True,
            )
        assert {p.spec.node_name for p in pods} == set(NODES)
        d = await _deployment(c, name)
        assert d.metadata.annotations[apps.REVISION_ANNOTATION] == "1"
        rc, out, _ = await ctl(cluster, "get", "deploy", name)
        assert rc == 0 and out.splitlines()[1].split()[:4] == [name, "20/20", "20", "20"], out
        rc, out, _ = await ctl(cluster, "rollout", "status", f"deployment/{name}", "--timeout=5s")
        assert (rc, out) == (0, f'deployment "{name}" successfully rolled out\n')


async def test_a_deleted_pod_is_replaced(cluster):
    name = unique_name("del")
    async with Client(cluster.server, timeout=10.0) as c:
        await c.create(make_deployment(name).replicas(3).obj())
        await eventually(_complete(name, c, 3), timeout=30)
        victim = (await _pods_of(c, name))[0]
        await c.delete(types_pb2.Pod, victim.metadata.name, NS, grace_period_seconds=0)

        async def replaced() -> bool:
            pods = [p for p in await _pods_of(c, name) if _ready(p)]
            assert len(pods) == 3
            assert victim.metadata.uid not in {p.metadata.uid for p in pods}
            return True

        await eventually(replaced, timeout=30)
        await eventually(_complete(name, c, 3), timeout=30)


async def test_a_preempted_pod_is_replaced(cluster):
    name = unique_name("pre")
    high = unique_name("high")
    async with Client(cluster.server, timeout=10.0) as c:
        await c.create(make_priority_class(high, 1000).obj())
        d = make_deployment(name).replicas(2).req(cpu="3").grace(1).obj()
        d.spec.template.spec.node_selector["wl"] = "wl-c"
        await c.create(d)
        await eventually(_complete(name, c, 2), timeout=30)
        before = {p.metadata.uid for p in await _pods_of(c, name)}
        # wl-c has 8 cpu, 6 held by the Deployment: a 5-cpu high-priority pod preempts.
        pod = make_pod(unique_name("preemptor")).req(cpu="5").priority_class(high).obj()
        pod.spec.node_selector["wl"] = "wl-c"
        await c.create(pod)

        async def replaced() -> bool:
            pods = [p for p in await _pods_of(c, name) if _active(p)]
            assert len(pods) == 2
            assert before - {p.metadata.uid for p in pods}  # victims, replaced
            return True

        await eventually(replaced, timeout=30)
        await c.delete(types_pb2.Pod, pod.metadata.name, NS, grace_period_seconds=0)
        await eventually(_complete(name, c, 2), timeout=30)


async def test_a_rolling_update_respects_max_surge_and_max_unavailable(cluster):
    """At every recorded version: Σ spec.replicas of the ReplicaSets ≤ replicas + maxSurge, and
    the Deployment's status.availableReplicas ≥ replicas - maxUnavailable, the two bounds
    upstream's controller keeps (reconcileNewReplicaSet, scaleDownOldReplicaSetsForRollingUpdate)
    and its e2e framework checks. Ready pods may dip below the second bound for a moment: the
    controller counts an old ReplicaSet's availableReplicas before the ReplicaSet controller has
    seen its pods go, as upstream's does."""
    name = unique_name("roll")
    replicas, surge, unavailable = 10, 3, 2

    def bounds(h: History) -> None:
        if h.max_spec_sum > replicas + surge:
            h.violations.append(
                f"Σ spec.replicas {h.max_spec_sum} > {replicas + surge}: "
                + str(
                    {
                        r.metadata.name: (r.spec.replicas, r.metadata.resource_version)
                        for r in h.rss.values()
                    }
                )
            )
        d = h.deployment
        if h.complete and d is not None and d.status.available_replicas < replicas - unavailable:
            h.violations.append(
                f"status.availableReplicas {d.status.available_replicas} < "
                f"{replicas - unavailable} at resourceVersion {d.metadata.resource_version}"
            )

    async with Client(cluster.server, timeout=10.0) as c:
        await c.create(
            make_deployment(name).replicas(replicas).rolling_update(surge, unavailable).obj()
        )
        await eventually(_complete(name, c, replicas), timeout=60)
        async with recording(c, name, bounds) as history:

            async def replayed() -> bool:
                assert history.ready() == replicas  # the watch's initial events are in
                return True

            await eventually(replayed, timeout=10, interval=0.01)
            history.complete = True
            await c.patch(
                types_pb2.Deployment,
                name,
                {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "v2"}]}}}},
                NS,
            )

            async def rolled() -> bool:
                d = await _deployment(c, name)
                assert d.metadata.annotations[apps.REVISION_ANNOTATION] == "2"
                await _complete(name, c, replicas)()
                pods = [p for p in await _pods_of(c, name) if _active(p)]
                assert {p.spec.containers[0].image for p in pods} == {"v2"}
                return True

            await eventually(rolled, timeout=60)
        assert history.violations == [], history.violations[:5]
        assert history.surplus == [], history.surplus[:5]
        assert history.events > 2 * replicas  # the rollout was recorded
        assert history.max_spec_sum == replicas + surge  # the surge was used


async def test_recreate_never_overlaps(cluster):
    name = unique_name("rec")
    overlaps: list[str] = []

    def no_overlap(h: History) -> None:
        images = {
            p.spec.containers[0].image
            for p in h.pods.values()
            if p.status.phase not in ("Succeeded", "Failed")
        }
        if len(images) > 1:
            overlaps.append(f"pods of both templates exist: {sorted(images)}")

    async with Client(cluster.server, timeout=10.0) as c:
        # (a 1 s grace period: the old pods must be gone before the new ones are created)
        await c.create(make_deployment(name).replicas(4).recreate().grace(1).obj())
        await eventually(_complete(name, c, 4), timeout=30)
        async with recording(c, name, no_overlap):
            await c.patch(
                types_pb2.Deployment,
                name,
                {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "v2"}]}}}},
                NS,
            )

            async def rolled() -> bool:
                await _complete(name, c, 4)()
                assert {p.spec.containers[0].image for p in await _pods_of(c, name)} == {"v2"}
                return True

            await eventually(rolled, timeout=60)
        assert overlaps == []


async def test_scale_to_zero_and_back(cluster):
    name = unique_name("scale")
    async with Client(cluster.server, timeout=10.0) as c:
        await c.create(make_deployment(name).replicas(3).obj())
        await eventually(_complete(name, c, 3), timeout=30)
        rc, out, err = await ctl(cluster, "scale", f"deployment/{name}", "--replicas=0")
        assert (rc, out) == (0, f"deployment.apps/{name} scaled\n"), err

        async def none_left() -> bool:
            assert [p.metadata.name for p in await _pods_of(c, name) if _active(p)] == []
            d = await _deployment(c, name)
            assert (d.status.replicas, d.status.observed_generation) == (0, d.metadata.generation)
            return True

        await eventually(none_left, timeout=30)
        rc, _, err = await ctl(cluster, "scale", "deploy", name, "--replicas", "5")
        assert rc == 0, err
        await eventually(_complete(name, c, 5), timeout=30)
        (rs,) = (await c.list(types_pb2.ReplicaSet, NS, label_selector=f"app={name}")).items
        assert rs.metadata.annotations[apps.REVISION_ANNOTATION] == "1"  # no new revision


async def test_rollout_undo_restores_the_old_template(cluster):
    name = unique_name("undo")
    async with Client(cluster.server, timeout=10.0) as c:
        await c.create(make_deployment(name).replicas(2).image("v1").obj())
        await eventually(_complete(name, c, 2), timeout=30)
        rc, _, err = await ctl(
            cluster, "patch", "deploy", name, "-p",
            '{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"v2"}]}}}}',
        )  # fmt: skip
        assert rc == 0, err

        async def at_revision(rev: str, image: str) -> Callable[[], Awaitable[bool]]:
            async def check() -> bool:
                d = await _deployment(c, name)
                assert d.metadata.annotations.get(apps.REVISION_ANNOTATION) == rev
                assert d.spec.template.spec.containers[0].image == image
                await _complete(name, c, 2)()
                pods = [p for p in await _pods_of(c, name) if _active(p)]
                assert {p.spec.containers[0].image for p in pods} == {image}
                return True

            return check

        await eventually(await at_revision("2", "v2"), timeout=30)
        rc, out, _ = await ctl(cluster, "rollout", "history", f"deployment/{name}")
        assert rc == 0 and [ln.split()[0] for ln in out.splitlines()[2:] if ln.strip()] == [
            "1",
            "2",
        ], out
        rc, out, err = await ctl(cluster, "rollout", "undo", f"deployment/{name}")
        assert (rc, out) == (0, f"deployment.apps/{name} rolled back\n"), err
        await eventually(await at_revision("3", "v1"), timeout=30)
        rss = (await c.list(types_pb2.ReplicaSet, NS, label_selector=f"app={name}")).items
        assert len(rss) == 2  # the old ReplicaSet came back, no third one
        old = next(r for r in rss if r.spec.template.spec.containers[0].image == "v1")
        assert old.metadata.annotations[apps.REVISION_HISTORY_ANNOTATION] == "1"


async def test_controller_manager_sigkill_mid_rollout_creates_no_surplus_pods(cluster):
    name = unique_name("kill")
    replicas, surge = 12, 2

    async with Client(cluster.server, timeout=10.0) as c:
        await c.create(make_deployment(name).replicas(replicas).rolling_update(surge, 1).obj())
        await eventually(_complete(name, c, replicas), timeout=60)
        async with recording(c, name) as history:
            await c.patch(
                types_pb2.Deployment,
                name,
                {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "v2"}]}}}},
                NS,
            )

            async def mid_rollout() -> bool:
                assert len(history.rss) == 2 and history.events > 5
                return True

            await eventually(mid_rollout, timeout=30, interval=0.01)
            cluster.kill("kcm")
            cluster.restart("kcm")

            async def rolled() -> bool:
                await _complete(name, c, replicas)()
                pods = [p for p in await _pods_of(c, name) if _active(p)]
                assert {p.spec.containers[0].image for p in pods} == {"v2"}
                return True

            await eventually(rolled, timeout=90)
        assert history.surplus == [], history.surplus[:5]
        assert history.max_spec_sum <= replicas + surge


async def test_the_example_manifest_applies_rolls_out_and_describes(cluster):
    from pathlib import Path

    from kemu.machinery.errors import Invalid

    example = Path(__file__).parents[3] / "examples" / "deployment.yaml"
    rc, out, err = await ctl(cluster, "apply", "-f", str(example))
    assert (rc, out) == (0, "deployment.apps/nginx created\n"), err
    rc, out, err = await ctl(cluster, "rollout", "status", "deployment/nginx", "--timeout=60s")
    assert rc == 0 and out.endswith('deployment "nginx" successfully rolled out\n'), (out, err)
    rc, out, _ = await ctl(cluster, "apply", "-f", str(example))
    assert out == "deployment.apps/nginx unchanged\n"
    rc, out, _ = await ctl(cluster, "describe", "deploy", "nginx")
    assert rc == 0 and "Name:" in out and "nginx:1.27.3" in out, out
    rc, out, _ = await ctl(cluster, "get", "rs", "-l", "app=nginx", "-o", "wide")
    assert out.splitlines()[1].split()[1:4] == ["3", "3", "3"], out
    async with Client(cluster.server, timeout=10.0) as c:
        bad = make_deployment(unique_name("bad")).obj()
        bad.spec.template.metadata.labels["app"] = "other"
        with pytest.raises(Invalid) as caught:
            await c.create(bad)
        assert [x.field for x in caught.value.causes] == ["spec.template.metadata.labels"]
    rc, _, _ = await ctl(cluster, "delete", "deploy", "nginx")
    assert rc == 0

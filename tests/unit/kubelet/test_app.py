"""The kubelet's flags and the process wiring (on the fake client)."""

from __future__ import annotations

import functools
from pathlib import Path

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.identity import COMPONENT_LABEL, EMULATED_VERSION_ANNOTATION
from kemu.component.clock import FakeClock
from kemu.component.options import ComponentOptions
from kemu.component.runner import ComponentContext, run_component_async
from kemu.machinery.pki import COMPONENTS, kubelet_user, write_cluster_pki
from kemu.testing.builders import make_pod
from kemu.testing.fake_time import wait_until
from kubelet import app, options
from kubelet.app import renewal_offsets
from kubelet.node_status import build_node
from kubelet.settings import KubeletSettings

from .helpers import advance

pytestmark = pytest.mark.anyio


def settings(*argv: str) -> KubeletSettings:
    args = options.build_parser().parse_args(list(argv))
    return options.settings_from_args(args, "v1.37.0")


def test_single_node_flags():
    s = settings(
        "--node-name", "n1",
        "--capacity", "cpu=4,memory=8Gi",
        "--system-reserved", "cpu=500m",
        "--node-labels", "zone=a,disk=ssd",
        "--register-with-taints", "dedicated=batch:NoSchedule",
        "--node-lease-renew-interval", "2s",
        "--pod-startup-delay", "100ms",
        "--root-dir", "",
    )  # fmt: skip
    (node,) = s.nodes
    assert node.name == "n1"
    assert dict(node.capacity) == {"cpu": "4", "memory": "8Gi", "pods": "110"}
    assert dict(node.allocatable) == {"cpu": "3500m", "memory": "8Gi", "pods": "110"}
    assert dict(node.labels) == {"zone": "a", "disk": "ssd"}
    assert node.kubelet_version == "v1.37.0"
    assert s.timing.lease_renew_interval == 2.0
    assert s.pods.startup_delay == pytest.approx(0.1)
    assert s.root_dir is None


def test_provider_id_is_set_on_the_registered_node():
    (config,) = settings("--node-name", "n1", "--provider-id", "kemu://pool/n1").nodes
    assert config.provider_id == "kemu://pool/n1"
    assert build_node(config, 0.0).spec.provider_id == "kemu://pool/n1"
    (plain,) = settings("--node-name", "n2").nodes
    assert build_node(plain, 0.0).spec.provider_id == ""


def test_hollow_flags_name_the_nodes():
    s = settings("--nodes", "3", "--node-name-prefix", "hollow")
    assert [n.name for n in s.nodes] == ["hollow-0", "hollow-1", "hollow-2"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nodes", "2", "--node-name", "x"], "mutually exclusive"),
        (["--nodes", "2", "--provider-id", "kemu://g/i"], "--provider-id and --nodes"),
        (["--nodes", "0"], "--nodes: 0 must be at least 1"),
        (["--capacity", "cpu=lots"], "--capacity: invalid quantity 'lots' for cpu"),
        (["--register-with-taints", "a=b"], "--register-with-taints: invalid taint"),
        (["--node-lease-renew-interval", "0s"], "--node-lease-renew-interval: must be positive"),
    ],
)
def test_bad_flags_exit_1_with_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        app.main(argv)
    assert exc.value.code == 1
    assert message in capsys.readouterr().err


def test_parser_defaults():
    args = options.build_parser().parse_args([])
    assert args.metrics_port == 10255
    assert args.node_lease_renew_interval is None
    assert args.node_status_update_frequency == 10.0


@pytest.mark.parametrize(
    ("argv", "renew", "duration"),
    [
        ((), 10.0, 40),  # upstream's defaults
        (("--node-lease-duration-seconds", "240"), 60.0, 240),  # a quarter of the duration
        (("--node-lease-duration-seconds", "240", "--node-lease-renew-interval", "5s"), 5.0, 240),
    ],
)
def test_the_lease_is_renewed_at_a_quarter_of_its_duration_unless_told(argv, renew, duration):
    s = settings("--node-name", "n1", *argv)
    assert s.timing.lease_renew_interval == renew
    assert s.timing.lease_duration_seconds == duration


async def test_a_hollow_kubelet_registers_its_nodes_and_runs_their_pods(tmp_path):
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    s = settings("--nodes", "3", "--node-name-prefix", "h", "--root-dir", str(tmp_path))
    options = ComponentOptions.for_tests("kubelet", shutdown_grace_period=5)
    ctx_box: list[ComponentContext] = []

    async with anyio.create_task_group() as tg:

        async def body(ctx: ComponentContext) -> None:
            ctx_box.append(ctx)
            await app.serve(fake, s, ctx)

        tg.start_soon(
            functools.partial(
                run_component_async, "kubelet", options, body, clock=clock, handle_signals=False
            )
        )
        await wait_until(lambda: ctx_box)
        ctx = ctx_box[0]

        async def nodes() -> int:
            return len((await fake.list(types_pb2.Node)).items)

        assert not ctx.checks.is_ready()
        for _ in range(200):
            if await nodes() == 3:
                break
            await advance(clock, 0.01, step=0.01)
        assert await nodes() == 3
        await wait_until(ctx.checks.is_ready)
        await fake.create(make_pod("p").req(cpu="1").node("h-1").obj())
        await advance(clock, 1)
        pod = await fake.get(types_pb2.Pod, "p")
        assert pod.status.phase == "Running"
        await advance(clock, 10)
        leases = (await fake.list(types_pb2.Lease, "kube-node-lease")).items
        assert sorted(lease.metadata.name for lease in leases) == ["h-0", "h-1", "h-2"]
        # the process's identity (the Version RPC's) on its first node's Lease, none in
        # kube-system (the Node authorizer allows a node its own node Lease only)
        stamped = {
            lease.metadata.name: lease.metadata.annotations
            for lease in leases
            if lease.metadata.labels.get(COMPONENT_LABEL) == "kubelet"
        }
        assert list(stamped) == ["h-0"]
        assert stamped["h-0"][EMULATED_VERSION_ANNOTATION] == str(ctx.options.version)
        assert not (await fake.list(types_pb2.Lease, "kube-system")).items
        ctx.request_stop()
    assert (tmp_path / "checkpoints" / "h-1.json").exists()


async def test_hollow_nodes_hold_only_their_own_pods_and_nodes(tmp_path):
    # Another process's node and pods arrive on the same watches (spec.nodeName!= and every
    # Node): this process's informers drop them before storing them.
    clock = FakeClock()
    theirs = build_node(settings("--node-name", "other-0").nodes[0], 0.0)
    fake = FakeClient(
        theirs,
        make_pod("theirs-before").node("other-0").obj(),
        clock=clock,
    )
    s = settings("--nodes", "2", "--node-name-prefix", "h", "--root-dir", str(tmp_path))
    options = ComponentOptions.for_tests("kubelet", shutdown_grace_period=5)
    box: list[app.Kubelet] = []

    async with anyio.create_task_group() as tg:

        async def body(ctx: ComponentContext) -> None:
            kubelet = app.Kubelet(fake, s, ctx)
            box.append(kubelet)
            ctx.add_readiness_check("kubelet", kubelet.ready)
            await kubelet.run()

        tg.start_soon(
            functools.partial(
                run_component_async, "kubelet", options, body, clock=clock, handle_signals=False
            )
        )
        await wait_until(lambda: box)
        kubelet = box[0]
        for _ in range(200):
            if len(kubelet.node_informer.lister) == 2:
                break
            await advance(clock, 0.01, step=0.01)
        await wait_until(lambda: kubelet.pod_informer.has_synced())
        await fake.create(make_pod("theirs-after").node("other-0").obj())
        await fake.create(make_pod("mine").req(cpu="1").node("h-1").obj())
        await advance(clock, 1)
        assert (await fake.get(types_pb2.Pod, "mine")).status.phase == "Running"
        assert kubelet.pod_informer.lister.keys() == ["default/mine"]
        assert sorted(kubelet.node_informer.lister.keys()) == ["h-0", "h-1"]
        assert kubelet.pod_informer.dropped >= 2
        # theirs are untouched: no status written
        assert (await fake.get(types_pb2.Pod, "theirs-after")).status.phase == ""
        tg.cancel_scope.cancel()


def test_a_hollow_kubelets_nodes_renew_in_phases_of_at_most_a_hundred() -> None:
    # One phase for a hundred nodes: the event-driven clock serves them in one jump.
    assert set(renewal_offsets(100, 10.0)) == {0.0}
    offsets = renewal_offsets(250, 10.0)
    assert offsets[:100] == [0.0] * 100 and offsets[100:200] == [10 / 3] * 100
    assert offsets[200:] == [20 / 3] * 50
    assert renewal_offsets(0, 10.0) == []


def test_a_one_node_kubelet_with_a_nodes_certificate_claims_no_user(tmp_path: Path) -> None:
    """Its certificate's user is its user (upstream's); without one, or with one that names
    no node (the cloud's instance kubelets), it claims its node's, and a hollow process its
    nodes' (impersonating them with one certificate)."""
    pki = write_cluster_pki(
        tmp_path,
        rest_url="https://127.0.0.1:6445",
        grpc_server="127.0.0.1:6443",
        users={"kubelet-n1": kubelet_user("n1"), "cloud": COMPONENTS["cloud"]},
    )
    node = str(pki.kubeconfig("kubelet-n1"))
    assert not app.claims_node_users(settings("--kubeconfig", node, "--node-name", "n1"))
    # another node's certificate: that node's user, claiming nothing
    assert not app.claims_node_users(settings("--kubeconfig", node, "--node-name", "n3"))
    assert app.claims_node_users(settings("--node-name", "n1"))
    assert app.claims_node_users(settings("--kubeconfig", node, "--nodes", "2"))
    cloud = str(pki.kubeconfig("cloud"))
    assert app.claims_node_users(settings("--kubeconfig", cloud, "--node-name", "n1"))

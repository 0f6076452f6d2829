"""--dra-slice-file: reading the file (kemu.machinery.dra_slice_file) and publishing the nodes' slices
(kubelet.resourceslice_controller), on the fake client (S-DRA-NODE-1, S-DRA-NODE-2)."""

from __future__ import annotations

import functools
import textwrap
from pathlib import Path
from typing import Final

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.component.options import ComponentOptions
from kemu.component.runner import ComponentContext, run_component_async
from kemu.machinery.dra_slice_file import parse_slice_file, slices_for_node
from kemu.testing.fake_time import wait_until
from kubelet import app, options
from kubelet.resourceslice_controller import ResourceSlicePublisher
from kubelet.settings import KubeletSettings

from .helpers import advance

pytestmark = pytest.mark.anyio

GPU = textwrap.dedent(
    """\
    apiVersion: resource.k8s.io/v1
    kind: ResourceSlice
    metadata:
      annotations:
        kubelet.kemu.io/prepare-delay: 2s
        kubelet.kemu.io/binding-delay: 500ms
        kubelet.kemu.io/binding-failure-devices: gpu-1
    spec:
      driver: gpu.example.com
      devices:
      - name: gpu-0
        attributes:
          model: {string: a100}
        capacity:
          memory: {value: 40Gi}
        bindingConditions: [Attached]
        bindingFailureConditions: [AttachFailed]
      - name: gpu-1
        bindingConditions: [Attached]
        bindingFailureConditions: [AttachFailed]
    ---
    - apiVersion: resource.k8s.io/v1
      kind: ResourceSlice
      spec:
        driver: nic.example.com
        devices:
        - name: nic-0
    - apiVersion: resource.k8s.io/v1
      kind: ResourceSlice
      spec:
        driver: nic.example.com
        sharedCounters:
        - name: bw
          counters:
            gbps: {value: "100"}
    """
)


def test_the_file_names_its_drivers_and_their_behaviour():
    drivers = parse_slice_file(GPU)
    assert [d.driver for d in drivers.drivers] == ["gpu.example.com", "nic.example.com"]
    gpu = drivers.driver("gpu.example.com")
    assert gpu is not None
    assert gpu.prepare_delay == 2.0
    assert gpu.binding("gpu-0").delay == 0.5 and not gpu.binding("gpu-0").fails
    assert gpu.binding("gpu-1").fails
    # kemu's own annotations are not published
    assert not gpu.slices[0].metadata.annotations
    nic = drivers.driver("nic.example.com")
    assert nic is not None and len(nic.slices) == 2 and nic.prepare_delay == 0


def test_the_node_fills_in_node_name_pool_and_owner():
    nic = parse_slice_file(GPU).driver("nic.example.com")
    assert nic is not None
    out = slices_for_node(nic, "n1", node_uid="uid-1", generation=3)
    assert len(out) == 2
    for s in out:
        assert s.spec.node_name == "n1"
        assert (s.spec.pool.name, s.spec.pool.generation, s.spec.pool.resource_slice_count) == (
            "n1",
            3,
            2,
        )
        assert s.metadata.generate_name == "n1-nic.example.com-"
        (ref,) = s.metadata.owner_references
        assert (ref.api_version, ref.kind, ref.name, ref.uid, ref.controller) == (
            "v1",
            "Node",
            "n1",
            "uid-1",
            True,
        )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [", "not YAML"),
        ("", "no ResourceSlice in the file"),
        (
            "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nspec: {driver: d, nodeName: x,"
            " devices: [{name: a}]}",
            "document 1: spec.nodeName: must not be set: the kubelet sets it",
        ),
        (
            "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nspec: {driver: d, pool: {name: "
            "p}, devices: [{name: a}]}",
            "document 1: spec.pool: must not be set",
        ),
        (
            "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nspec: {devices: [{name: a}]}",
            "document 1: spec.driver: Required value",
        ),
        (
            "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nspec: {driver: d, devices: "
            "[{name: a, bogus: 1}]}",
            "document 1: spec.devices[0].bogus",
        ),
        (
            "- apiVersion: resource.k8s.io/v1\n  kind: ResourceSlice\n  metadata: {annotations: "
            "{kubelet.kemu.io/prepare-delay: soon}}\n  spec: {driver: d, devices: [{name: a}]}",
            "document 1[0]: metadata.annotations[kubelet.kemu.io/prepare-delay]: 'soon' is not "
            "a duration",
        ),
        (
            "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {annotations: "
            "{kubelet.kemu.io/binding-failure-devices: b}}\nspec: {driver: d, devices: "
            "[{name: a}]}",
            "no device 'b' in this slice",
        ),
        (
            "apiVersion: v1\nkind: ResourceSlice\nspec: {driver: d, devices: [{name: a}]}",
            'apiVersion: "v1" does not serve kind ResourceSlice',
        ),
    ],
)
def test_a_bad_file_is_one_error_naming_the_field(text, message):
    with pytest.raises(ValueError, match=None) as exc:
        parse_slice_file(text)
    assert message in str(exc.value)


def test_a_bad_file_exits_1_with_one_line_naming_the_flag(tmp_path, capsys):
    path = tmp_path / "slices.yaml"
    path.write_text("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nspec: {driver: d}\n")
    with pytest.raises(SystemExit) as exc:
        app.main(["--dra-slice-file", str(path)])
    assert exc.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert f"--dra-slice-file: {path}: document 1: spec.devices: Required value" in err[0]
    with pytest.raises(SystemExit):
        app.main(["--dra-slice-file", str(tmp_path / "missing.yaml")])
    assert "cannot read it" in capsys.readouterr().err


def _settings(path: Path, *argv: str) -> KubeletSettings:
    args = options.build_parser().parse_args(["--dra-slice-file", str(path), *argv])
    return options.settings_from_args(args, "v1.37.0")


async def test_hollow_nodes_publish_their_pools_and_again_for_a_new_node(tmp_path):
    """S-DRA-NODE-1: each node's pools once its Node exists; a Node created again (new uid)
    gets its pool at the next generation, owned by the new Node; an unchanged pool is not
    written again."""
    path = tmp_path / "slices.yaml"
    path.write_text(GPU)
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    s = _settings(path, "--nodes", "2", "--node-name-prefix", "h", "--root-dir", "")
    opts = ComponentOptions.for_tests("kubelet", shutdown_grace_period=5)
    ctx_box: list[ComponentContext] = []

    async def slices(node: str) -> list[types_pb2.ResourceSlice]:
        items = (await fake.list(types_pb2.ResourceSlice)).items
        return [x for x in items if x.spec.node_name == node]

    async with anyio.create_task_group() as tg:

        async def body(ctx: ComponentContext) -> None:
            ctx_box.append(ctx)
            await app.serve(fake, s, ctx)

        tg.start_soon(
            functools.partial(
                run_component_async, "kubelet", opts, body, clock=clock, handle_signals=False
            )
        )
        await wait_until(lambda: ctx_box)
        ctx = ctx_box[0]
        for _ in range(300):
            if len(await slices("h-0")) == 3 and len(await slices("h-1")) == 3:
                break
            await advance(clock, 0.01, step=0.01)
        for name in ("h-0", "h-1"):
            got = await slices(name)
            assert sorted(x.spec.driver for x in got) == [
                "gpu.example.com",
                "nic.example.com",
                "nic.example.com",
            ]
            assert {x.spec.pool.name for x in got} == {name}
            assert {x.spec.pool.generation for x in got} == {1}
        node = await fake.get(types_pb2.Node, "h-0")
        old_uid = node.metadata.uid
        # The Node is deleted and created again (the kubelet does not re-register by itself,
        # as upstream's): a new uid.
        await fake.delete(types_pb2.Node, "h-0")
        again = types_pb2.Node()
        again.metadata.name = "h-0"
        await fake.create(again)
        for _ in range(300):
            got = await slices("h-0")
            n = await fake.list(types_pb2.Node)
            uids = {x.metadata.uid for x in n.items if x.metadata.name == "h-0"}
            if (
                uids
                and old_uid not in uids
                and all(x.metadata.owner_references[0].uid in uids for x in got)
            ):
                break
            await advance(clock, 0.1, step=0.1)
        got = await slices("h-0")
        assert {x.spec.pool.generation for x in got} == {2}
        assert len(got) == 3
        assert {x.spec.pool.generation for x in await slices("h-1")} == {1}
        ctx.request_stop()


async def _published(
    fake: FakeClient, clock: FakeClock, text: str, node: types_pb2.Node
) -> list[types_pb2.ResourceSlice]:
    """One publisher's sync of `node` for the drivers of `text` (a kubelet (re)starting)."""
    informers = InformerFactory(fake, clock=clock)
    slices = informers.informer(types_pb2.ResourceSlice)
    publisher = ResourceSlicePublisher(
        lambda _node: fake, parse_slice_file(text), slices, clock=clock
    )
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        publisher.node_changed(node)
        await publisher.sync(node.metadata.name)
        tg.cancel_scope.cancel()
    return list((await fake.list(types_pb2.ResourceSlice)).items)


async def test_a_restarted_kubelet_rewrites_a_pool_only_when_it_changed():
    """S-DRA-NODE-1: the same file again writes nothing; a changed one rewrites the pool at
    the next generation, in place, and deletes the slices it no longer has; a driver the file
    no longer names loses its slices."""
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    node = types_pb2.Node()
    node.metadata.name = "n1"
    node = await fake.create(node)
    first = await _published(fake, clock, GPU, node)
    assert len(first) == 3
    again = await _published(fake, clock, GPU, node)
    assert {(s.metadata.name, s.metadata.resource_version) for s in again} == {
        (s.metadata.name, s.metadata.resource_version) for s in first
    }
    changed = GPU.replace("name: gpu-1", "name: gpu-9").replace(
        "kubelet.kemu.io/binding-failure-devices: gpu-1",
        "kubelet.kemu.io/binding-failure-devices: gpu-9",
    )
    nic_gone = changed.split("---")[0]
    after = await _published(fake, clock, nic_gone, node)
    assert [s.spec.driver for s in after] == ["gpu.example.com"]
    (gpu,) = after
    assert gpu.metadata.name in {s.metadata.name for s in first}  # updated in place
    assert gpu.spec.pool.generation == 2
    assert [d.name for d in gpu.spec.devices] == ["gpu-0", "gpu-9"]


NIC: Final = textwrap.dedent(
    """\
    apiVersion: resource.k8s.io/v1
    kind: ResourceSlice
    spec:
      driver: nic.example.com
      devices:
      - name: nic-0
    """
)


async def _watches(path: Path, *argv: str) -> list[str]:
    """The informers a kubelet with the file of `path` opens (their names: resource and
    selectors)."""
    opts = ComponentOptions.for_tests("kubelet", shutdown_grace_period=5)
    names: list[str] = []

    async def body(ctx: ComponentContext) -> None:
        kubelet = app.Kubelet(FakeClient(clock=FakeClock()), _settings(path, *argv), ctx)
        names.extend(inf.name for inf in kubelet.informers.informers())

    await run_component_async("kubelet", opts, body, clock=FakeClock(), handle_signals=False)
    return names


@pytest.mark.parametrize(
    ("text", "claims"),
    [(NIC, []), (GPU, ["resourceclaims"])],
    ids=["no-binding-conditions", "binding-conditions"],
)
async def test_a_kubelet_watches_what_the_node_authorizer_allows_a_node(tmp_path, text, claims):
    """Issue #60: its pods and slices by spec.nodeName, its Node by name (upstream's kubelet's
    and ResourceSlice controller's selectors); no claim (the DRA manager gets each one)
    unless a device has bindingConditions, which the drivers' controller answers."""
    path = tmp_path / "slices.yaml"
    path.write_text(text)
    assert await _watches(path, "--node-name", "n1", "--root-dir", "") == [
        "pods [spec.nodeName=n1]",
        "nodes [metadata.name=n1]",
        "resourceslices [spec.nodeName=n1]",
        *claims,
    ]

"""patch and resize."""

from __future__ import annotations

import json

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause, Invalid
from kemu.testing.builders import make_pod

from .helpers import ctl, fake


@pytest.mark.anyio
async def test_patch_sends_a_merge_patch_to_the_subresource() -> None:
    client = fake(make_pod("p").obj())
    result = await ctl(client, "patch", "pod", "p", "-p", '{"metadata":{"labels":{"a":"b"}}}')
    assert (result.rc, result.out) == (0, "pod/p patched\n")
    status = await ctl(
        client,
        "patch",
        "pod/p",
        "--subresource",
        "status",
        "--type",
        "merge",
        "-p",
        '{"status":{"nominatedNodeName":"n1"}}',
    )
    assert status.rc == 0, status.err
    assert client.actions[-1].subresource == "status"
    assert json.loads(client.actions[-1].patch) == {"status": {"nominatedNodeName": "n1"}}
    pod = await client.get(types_pb2.Pod, "p")
    assert (pod.metadata.labels["a"], pod.status.nominated_node_name) == ("b", "n1")


@pytest.mark.anyio
async def test_patch_with_a_stale_resource_version_is_a_conflict() -> None:
    client = fake(make_pod("p").obj())
    result = await ctl(
        client,
        "patch",
        "pod",
        "p",
        "-p",
        '{"metadata":{"resourceVersion":"999","labels":{"a":"b"}}}',
    )
    assert result.rc == 1
    assert result.err.startswith('error: Operation cannot be fulfilled on pods "p"')
    assert result.err.count("\n") == 1


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--type", "json", "-p", "[]"], "--type json is not supported by kemu"),
        (["--type", "strategic", "-p", "{}"], "--type strategic is not supported by kemu"),
        (["-p", "[1, 2]"], "must be a JSON object"),
        (["-p", "{nope"], "unable to parse the patch"),
        ([], "exactly one of -p/--patch or --patch-file"),
        (["-p", "{}", "--subresource", "scale"], 'invalid subresource "scale"'),
    ],
)
async def test_bad_patches_are_refused_before_sending(argv: list[str], message: str) -> None:
    client = fake(make_pod("p").obj())
    result = await ctl(client, "patch", "pod", "p", *argv)
    assert result.rc == 1
    assert result.err.startswith("error: ") and message in result.err
    assert result.err.count("\n") == 1
    assert client.actions == []


@pytest.mark.anyio
async def test_server_validation_errors_carry_their_field_causes() -> None:
    client = fake(make_pod("p").obj())
    client.fail(
        "patch",
        Invalid(
            'Pod "p" is invalid',
            [
                Cause(
                    "spec.containers[0].resources.requests.cpu",
                    "must be less than or equal to cpu limit",
                )
            ],
        ),
    )
    result = await ctl(client, "patch", "pod", "p", "-p", "{}")
    assert result.err == (
        'error: Pod "p" is invalid; spec.containers[0].resources.requests.cpu: '
        "must be less than or equal to cpu limit\n"
    )


@pytest.mark.anyio
async def test_resize_sets_the_first_containers_resources_and_calls_pods_resize() -> None:
    pod = (
        make_pod("p")
        .req(cpu="1", memory="1Gi")
        .lim(memory="2Gi")
        .container("side")
        .req(cpu="100m")
        .obj()
    )
    client = fake(pod)
    result = await ctl(
        client, "resize", "pod", "p", "--requests", "cpu=2,memory=1536Mi", "--limits", "cpu=3"
    )
    assert result.rc == 0, result.err
    assert result.out == "pod/p resized (container c)\n"
    action = client.actions[-1]
    assert (action.verb, action.subresource, action.name) == ("resize", "resize", "p")
    sent = action.object
    assert isinstance(sent, types_pb2.Pod)
    assert dict(sent.spec.containers[0].resources.requests) == {"cpu": "2", "memory": "1536Mi"}
    assert dict(sent.spec.containers[0].resources.limits) == {"cpu": "3", "memory": "2Gi"}
    assert dict(sent.spec.containers[1].resources.requests) == {"cpu": "100m"}


@pytest.mark.anyio
async def test_resize_a_named_container() -> None:
    client = fake(make_pod("p").req(cpu="1").container("side").req(cpu="100m").obj())
    result = await ctl(client, "resize", "pod/p", "-c", "side", "--requests", "cpu=200m")
    assert result.rc == 0, result.err
    pod = await client.get(types_pb2.Pod, "p")
    assert [c.resources.requests["cpu"] for c in pod.spec.containers] == ["1", "200m"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["pod", "p", "-c", "nope", "--requests", "cpu=1"],
            'container "nope" not found in pod "p"',
        ),
        (["pod", "p", "--requests", "cpu=lots"], "--requests: invalid quantity 'lots' for cpu"),
        (["pod", "p"], "nothing to resize"),
        (["node", "p", "--requests", "cpu=1"], "resize works on pods"),
        (["pod", "gone", "--requests", "cpu=1"], 'pods "gone" not found'),
    ],
)
async def test_resize_errors(argv: list[str], message: str) -> None:
    client = fake(make_pod("p").obj())
    result = await ctl(client, "resize", *argv)
    assert result.rc == 1
    assert message in result.err and result.err.count("\n") == 1
    assert "resize" not in client.verbs()

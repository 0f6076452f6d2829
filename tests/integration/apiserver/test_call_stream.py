"""The Api's unary calls on the Calls stream (issue #59 item 1, docs/research/streams.md): the
same calls give the same answers and the same errors whether each is one gRPC call
(Transport.UNARY) or a frame on the channel's stream (Transport.STREAM)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client, Transport
from kemu.machinery.errors import ApiError
from kemu.testing import Cluster, make_pod
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(Path(tmp_path_factory.mktemp("streams"))) as c:
        c.start_etcd()
        c.start_apiserver()
        yield c


def _outcome(value: object) -> object:
    """What a call's answer or error says, without what differs from one run to another (uids,
    resource versions, timestamps)."""
    if isinstance(value, ApiError):
        return (type(value).__name__, value.message, [(c.field, c.message) for c in value.causes])
    if isinstance(value, types_pb2.Pod):
        return ("Pod", value.metadata.name, value.spec.node_name, value.status.phase)
    return type(value).__name__


async def _script(client: Client, ns: str) -> list[object]:
    """Calls of every kind, successful and refused, and what each gave."""
    steps: list[Callable[[], Awaitable[Any]]] = [
        lambda: client.create(make_pod("a").namespace(ns).obj()),
        lambda: client.create(make_pod("a").namespace(ns).obj()),  # AlreadyExists
        lambda: client.create(make_pod("b").namespace(ns).req(cpu="-1").obj()),  # Invalid
        lambda: client.create(make_pod("c").namespace("no-such-namespace").obj()),  # NotFound
        lambda: client.get(types_pb2.Pod, "a", ns),
        lambda: client.get(types_pb2.Pod, "missing", ns),  # NotFound
        lambda: client.bind(ns, "a", "node-1"),
        lambda: client.get(types_pb2.Pod, "a", ns),
        lambda: client.delete(types_pb2.Pod, "a", ns, grace_period_seconds=0),
        lambda: client.delete(types_pb2.Pod, "a", ns),  # NotFound
    ]
    out: list[object] = []
    for step in steps:
        try:
            out.append(_outcome(await step()))
        except ApiError as e:
            out.append(_outcome(e))
    return out


async def test_the_same_calls_give_the_same_answers_and_errors_on_both_transports(
    cluster: Cluster,
) -> None:
    outcomes = {}
    for transport in (Transport.UNARY, Transport.STREAM):
        async with Client(cluster.server, transport=transport) as client:
            ns = await create_namespace(client, transport.value)
            outcomes[transport] = [
                o
                if not isinstance(o, tuple) or o[0] == "Pod"
                else (o[0], o[1].replace(ns, "NS"), o[2])
                for o in await _script(client, ns)
            ]
    assert outcomes[Transport.STREAM] == outcomes[Transport.UNARY]
    assert [o[0] if isinstance(o, tuple) else o for o in outcomes[Transport.STREAM]] == [
        "Pod",
        "AlreadyExists",
        "Invalid",
        "NotFound",
        "Pod",
        "NotFound",
        "NoneType",
        "Pod",
        "Pod",
        "NotFound",
    ]


async def test_calls_made_together_on_the_stream_are_served_concurrently(
    cluster: Cluster,
) -> None:
    async with Client(cluster.server, transport=Transport.STREAM) as client:
        ns = await create_namespace(client, "together")
        names = [f"p{i}" for i in range(64)]
        async with anyio.create_task_group() as tg:
            for name in names:
                tg.start_soon(client.create, make_pod(name).namespace(ns).obj())
        listed = await client.list(types_pb2.Pod, ns)
        assert sorted(p.metadata.name for p in listed.items) == sorted(names)

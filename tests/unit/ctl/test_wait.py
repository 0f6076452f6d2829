"""wait: conditions, jsonpath, delete, timeouts."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.ctl.wait import parse_timeout
from kemu.testing.builders import make_pod
from kemu.testing.eventually import eventually

from .helpers import Result, ctl, fake


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("1m30s", 90), ("500ms", 0.5), ("2h", 7200), ("0", 0), ("-1s", 604800)],
)
def test_timeouts_are_go_durations_and_negative_means_a_week(text: str, seconds: float) -> None:
    assert parse_timeout(text) == seconds


@pytest.mark.anyio
async def test_a_timeout_without_a_unit_is_refused_as_kubectl_does() -> None:
    result = await ctl(
        fake(make_pod("p").obj()), "wait", "pod/p", "--for=delete", "--timeout", "10"
    )
    assert (result.rc, result.err) == (
        1,
        'error: invalid argument "10" for "--timeout" flag: time: missing unit in duration "10"\n',
    )


@pytest.mark.anyio
async def test_a_condition_already_met_needs_no_watch() -> None:
    client = fake(make_pod("p").condition("Ready", "True").obj())
    result = await ctl(client, "wait", "pod/p", "--for=condition=Ready", "--timeout", "5s")
    assert (result.rc, result.out) == (0, "pod/p condition met\n")
    assert "watch" not in client.verbs()
    negated = await ctl(client, "wait", "pod/p", "--for=condition=ready=false", "--timeout", "0s")
    assert negated.err == "error: timed out waiting for the condition on pods/p\n"


async def _wait_then(
    client: FakeClient, argv: list[str], change: Callable[[], Awaitable[None]]
) -> Result:
    """Runs `kemuctl wait` and, once it watches, makes the change."""
    results: list[Result] = []

    async def waiter() -> None:
        results.append(await ctl(client, *argv))

    async def watching() -> bool:
        return client.open_watches > 0

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await eventually(watching, timeout=5)
        await change()
    return results[0]


@pytest.mark.anyio
async def test_wait_for_a_condition_through_the_watch() -> None:
    client = fake(make_pod("p").obj(), make_pod("other").obj())

    async def ready() -> None:
        await client.patch(
            types_pb2.Pod,
            "other",
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
            subresource="status",
        )
        await client.patch(
            types_pb2.Pod,
            "p",
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
            subresource="status",
        )

    result = await _wait_then(client, ["wait", "pods", "p", "--for", "condition=Ready"], ready)
    assert (result.rc, result.out, result.err) == (0, "pod/p condition met\n", "")
    assert client.verbs("pods")[:2] == ["get", "watch"]


@pytest.mark.anyio
async def test_wait_for_a_jsonpath_value() -> None:
    client = fake(make_pod("p").phase("Pending").obj())

    async def running() -> None:
        await client.patch(
            types_pb2.Pod, "p", {"status": {"phase": "Running"}}, subresource="status"
        )

    result = await _wait_then(
        client, ["wait", "pod/p", "--for=jsonpath={.status.phase}=Running"], running
    )
    assert result.out == "pod/p condition met\n"


@pytest.mark.anyio
async def test_wait_for_delete() -> None:
    client = fake(make_pod("p").obj())

    async def delete() -> None:
        await client.delete(types_pb2.Pod, "p")

    result = await _wait_then(client, ["wait", "pod/p", "--for=delete", "--timeout", "5s"], delete)
    assert result.out == "pod/p condition met\n"
    gone = await ctl(client, "wait", "pod/p", "--for=delete")
    assert gone.out == "pod/p condition met\n"


@pytest.mark.anyio
async def test_timeouts_and_bad_conditions_are_one_line_errors() -> None:
    client = fake(make_pod("p").obj())
    timed_out = await ctl(
        client, "wait", "pod/p", "--for=jsonpath={.status.phase}=Running", "--timeout", "50ms"
    )
    assert (timed_out.rc, timed_out.err) == (
        1,
        "error: timed out waiting for the condition on pods/p\n",
    )
    assert client.open_watches == 0
    missing = await ctl(client, "wait", "pod/nope", "--for=condition=Ready")
    assert (missing.rc, missing.err) == (1, 'error: pods "nope" not found\n')
    bad = await ctl(client, "wait", "pod/p", "--for=ready")
    assert bad.rc == 1 and bad.err.startswith('error: unrecognized condition: "ready"')


@pytest.mark.anyio
async def test_delete_wait_reads_its_timeout_as_a_duration() -> None:
    client = fake(make_pod("p").obj(), make_pod("q").obj())
    result = await ctl(client, "delete", "pod", "p", "--wait", "--timeout", "5s")
    assert (result.rc, result.out) == (0, 'pod "p" deleted\n')
    refused = await ctl(client, "delete", "pod", "q", "--wait", "--timeout", "5")
    assert refused.rc == 1 and "missing unit in duration" in refused.err
    assert (await client.get(types_pb2.Pod, "q")).metadata.name == "q"  # refused before deleting

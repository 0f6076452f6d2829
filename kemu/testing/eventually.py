"""Wait for a condition with a deadline instead of sleeping and hoping.

    pod = await eventually(lambda: client.get_pod("ns", "p"), timeout=5)

    async def bound() -> Pod:
        pod = await client.get_pod("ns", "p")
        assert pod.spec.node_name == "n1", pod.status
        return pod
    await eventually(bound)

The check is retried while it raises AssertionError or returns a false value (None, False, "",
0, an empty container); its first truthy result is returned. A check that only asserts must
therefore end with `return True`. Any other exception is a bug in the test and propagates at
once. The check itself is not cancelled at the deadline (a gRPC call should carry its own
`timeout=`): the deadline is checked between attempts, and one last attempt is made at it.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar, cast, overload

import anyio

from kemu.machinery.errors import Conflict

T = TypeVar("T")


class _Attempts:
    def __init__(self, timeout: float, message: str) -> None:
        self.timeout = timeout
        self.message = message
        self.count = 0
        self.last_error: AssertionError | None = None
        self.last_value: object = None

    def failure(self) -> AssertionError:
        prefix = f"{self.message}: " if self.message else ""
        if self.last_error is not None:
            last = f"last error: {self.last_error}" if str(self.last_error) else "assertion failed"
        else:
            last = f"the check last returned {self.last_value!r}"
            if self.last_value is None:
                last += " (a check that only asserts must return True)"
        return AssertionError(
            f"{prefix}condition not met within {self.timeout:g}s ({self.count} attempts); {last}"
        )


@overload
async def eventually(
    check: Callable[[], Awaitable[T]],
    *,
    timeout: float = ...,  # noqa: ASYNC109
    interval: float = ...,
    message: str = ...,
) -> T: ...


@overload
async def eventually(
    check: Callable[[], T],
    *,
    timeout: float = ...,  # noqa: ASYNC109
    interval: float = ...,
    message: str = ...,
) -> T: ...


async def eventually(
    check: Callable[[], Awaitable[T] | T],
    *,
    # A deadline between attempts, not a cancel scope: see the module docstring.
    timeout: float = 10.0,  # noqa: ASYNC109
    interval: float = 0.05,
    message: str = "",
) -> T:
    """Call `check` (sync or async) until it returns a truthy value; return that value.

    Raises AssertionError naming `timeout`, `message` and the last failure, chained to the
    last AssertionError of the check.
    """
    attempts = _Attempts(timeout, message)
    deadline = time.monotonic() + timeout
    while True:
        attempts.count += 1
        try:
            result = check()
            if inspect.isawaitable(result):
                result = await result
            if result:
                return cast(T, result)
            attempts.last_error, attempts.last_value = None, result
        except AssertionError as e:
            attempts.last_error = e
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise attempts.failure() from attempts.last_error
        await anyio.sleep(min(interval, remaining))


def eventually_sync(
    check: Callable[[], T],
    *,
    timeout: float = 10.0,
    interval: float = 0.05,
    message: str = "",
) -> T:
    """The synchronous twin of `eventually`, for sync fixtures and tests."""
    attempts = _Attempts(timeout, message)
    deadline = time.monotonic() + timeout
    while True:
        attempts.count += 1
        try:
            result = check()
            if result:
                return result
            attempts.last_error, attempts.last_value = None, result
        except AssertionError as e:
            attempts.last_error = e
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise attempts.failure() from attempts.last_error
        time.sleep(min(interval, remaining))


def retrying_conflicts(step: Callable[[], Awaitable[object]]) -> Callable[[], Awaitable[bool]]:
    """A read-modify-write `step` as a check for `eventually`: its Conflict (another writer
    got in between its read and its write) is a failed attempt, read again next time, as
    client-go's retry.RetryOnConflict (k8s.io/client-go/util/retry/util.go)."""

    async def attempt() -> bool:
        try:
            await step()
        except Conflict as e:
            raise AssertionError(f"conflict, read again: {e}") from e
        return True

    return attempt

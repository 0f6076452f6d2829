"""What an apiserver is doing, for the event-driven virtual clock (rate max; kemu only, see
apiserver/server/clock.py): the cluster is quiescent only when no request is being served, no
watch event waits to be sent, and every event sent to a component has been received by it.

The gRPC edge counts its requests (but the clock's own) and the watch events it sends on the
watches of each component in virtual time (tagged with the component's identity, the
`kemu-clock-identity` metadata kemu.client sets once it has a clock session). `epoch` moves
with every change, so that a quiescence seen twice with the same epoch saw nothing between.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

import anyio


class Activity:
    def __init__(self) -> None:
        self.requests = 0
        """Requests being served (neither watches nor the clock's own calls)."""
        self.sending = 0
        """Watch streams holding events they have not handed to the transport yet."""
        self.sent: defaultdict[str, int] = defaultdict(int)
        """Watch events sent per component identity."""
        self.epoch = 0
        self._changed = anyio.Event()

    def _bump(self) -> None:
        self.epoch += 1
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    def next_change(self) -> anyio.Event:
        return self._changed

    @contextmanager
    def request(self) -> Iterator[None]:
        self.requests += 1
        self._bump()
        try:
            yield
        finally:
            self.requests -= 1
            self._bump()

    @contextmanager
    def sending_events(self, identity: str, count: int) -> Iterator[Batch]:
        """Around the send of a batch of watch events to `identity` ("": an untagged watch);
        `count` of them unless the batch's count is set meanwhile."""
        self.sending += 1
        self._bump()
        batch = Batch(count)
        try:
            yield batch
            if identity:
                self.sent[identity] += batch.count
        finally:
            self.sending -= 1
            self._bump()


class Batch:
    __slots__ = ("count",)

    def __init__(self, count: int) -> None:
        self.count = count

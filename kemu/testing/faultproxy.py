"""A TCP fault proxy on loopback: the network faults of a test cluster without root.

Every link is a listener of its own that forwards each connection to one target; the
`Cluster` puts one between a component and each address it dials (an apiserver, an etcd
client URL, an etcd peer URL), so a link is a directed edge `src -> dst` between two named
processes. Faults are `Rule`s on those edges, matched by name (None matches any):

- `Mode.CUT`: a partition. The matching connections are closed at once, and new ones are
  closed as soon as they are accepted, before anything is sent on (the dialer sees its
  connection fail and retries, as across a network that refuses it).
- `Mode.DELAY`: every chunk read in either direction is written on `delay` seconds later
  (latency, in order; not a throughput limit). A round trip gets twice the delay. With a
  `latency` distribution (kemu.machinery.latency: the chaos fault `latency`), each chunk
  waits a draw of it more, from a generator of the rule's own seeded with `seed` (a chunk
  never overtakes the one before it: the link keeps its order, as tc-netem's does with a
  rate or without reordering).

Removing a rule heals: new connections pass again (connections cut stay closed: the dialers
reconnect). Rules apply to connections already open as well as new ones.

A link's source may be unknown until the connection speaks: etcd members all dial one
advertised peer URL per member, so a peer link learns who dials from what it sends (an
`Identify` function on each chunk from the dialer: a request head's X-Server-From,
etcd.peer_source); until then, and if it cannot tell, the source is None and only rules with
src None match it.

The proxy runs its own event loop in a thread (a blocking portal), so that the synchronous
Cluster and a fault injector thread can drive it; every method is thread-safe.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from types import TracebackType
from typing import Final

import anyio
import anyio.abc
from anyio.abc import SocketAttribute, SocketStream, TaskStatus
from anyio.from_thread import BlockingPortal, start_blocking_portal
from anyio.streams.memory import MemoryObjectReceiveStream

from kemu.machinery.latency import NO_LATENCY, Latency
from kemu.testing.ports import LOOPBACK

logger = logging.getLogger(__name__)

Identify = Callable[[bytes], str | None]
"""The source of a connection from a chunk it sends; None: this chunk does not tell."""

CHUNK: Final = 65536
QUEUED_CHUNKS: Final = 256
"""Chunks in flight per direction of a delayed connection (back-pressure beyond)."""


class Mode(StrEnum):
    CUT = "cut"
    DELAY = "delay"


@dataclass(frozen=True)
class Rule:
    """A fault on the connections from `src` to `dst` (None matches any name)."""

    mode: Mode
    src: str | None = None
    dst: str | None = None
    delay: float = 0.0
    """Seconds added to each direction (Mode.DELAY)."""
    latency: Latency = NO_LATENCY
    """Drawn for each chunk and added to `delay` (Mode.DELAY)."""
    seed: int = 0
    """Of `latency`'s draws."""

    def __post_init__(self) -> None:
        if self.delay < 0:
            raise ValueError(f"delay: must be >= 0, not {self.delay}")
        if self.mode is Mode.DELAY and self.delay == 0 and self.latency.none:
            raise ValueError("delay: a DELAY rule needs a delay > 0 or a latency")

    def matches(self, src: str | None, dst: str) -> bool:
        return (self.src is None or self.src == src) and (self.dst is None or self.dst == dst)


@dataclass(frozen=True)
class Link:
    src: str | Identify
    dst: str
    target: tuple[str, int]


@dataclass(eq=False)
class _Connection:
    link: Link
    src: str | None
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)


class FaultProxy:
    """Links and rules (see the module docstring). `start()` (or `with`) runs the loop;
    `close()` ends every link and connection."""

    def __init__(self, host: str = LOOPBACK) -> None:
        self.host = host
        self._stack = contextlib.ExitStack()
        self._portal: BlockingPortal | None = None
        self._links: dict[tuple[object, str, tuple[str, int]], str] = {}
        self._rules: list[Rule] = []
        self._draws: dict[Rule, random.Random] = {}
        """The generator of each rule in force that has a latency."""
        self._live: set[_Connection] = set()

    def __enter__(self) -> FaultProxy:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def start(self) -> None:
        if self._portal is None:
            self._portal = self._stack.enter_context(start_blocking_portal())

    def close(self) -> None:
        if self._portal is not None:
            self._portal.call(self._portal.stop, True)
            self._portal = None
            self._stack.close()
            self._links.clear()

    @property
    def portal(self) -> BlockingPortal:
        if self._portal is None:
            raise RuntimeError("the fault proxy is not running: call start() first")
        return self._portal

    # ------------------------------------------------------------ links

    def link(self, src: str | Identify, dst: str, target: str) -> str:
        """HOST:PORT of a listener whose connections go on to `target` (HOST:PORT), as the
        edge src -> dst; the same link again for the same arguments."""
        host, sep, port = target.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"target: expected HOST:PORT, not {target!r}")
        link = Link(src, dst, (host, int(port)))
        key = (src, dst, link.target)
        if key not in self._links:
            _, bound = self.portal.start_task(self._serve, link, name=f"faultproxy {dst}")
            self._links[key] = f"{self.host}:{bound}"
        return self._links[key]

    # ------------------------------------------------------------ rules

    def add(self, rule: Rule) -> None:
        """Apply `rule` (to open connections too: a CUT closes the matching ones now)."""
        self.portal.call(self._add, rule)

    def remove(self, rule: Rule) -> None:
        """Heal what `rule` did (a rule not in force: nothing happens)."""
        self.portal.call(self._remove, rule)

    def heal(self) -> None:
        """Remove every rule."""
        self.portal.call(self._rules.clear)

    @property
    def rules(self) -> list[Rule]:
        return self.portal.call(list, self._rules)

    def connections(self, src: str | None = None, dst: str | None = None) -> int:
        """How many connections are open now from `src` to `dst` (None: any)."""
        probe = Rule(Mode.CUT, src, dst)
        return self.portal.call(
            lambda: sum(1 for c in self._live if probe.matches(c.src, c.link.dst))
        )

    def _add(self, rule: Rule) -> None:
        self._rules.append(rule)
        if not rule.latency.none:
            self._draws.setdefault(rule, random.Random(rule.seed))
        for conn in list(self._live):
            if self._cut(conn.src, conn.link.dst):
                conn.scope.cancel()
                self._live.discard(conn)  # nothing passes from now on

    def _remove(self, rule: Rule) -> None:
        with contextlib.suppress(ValueError):
            self._rules.remove(rule)
        if rule not in self._rules:
            self._draws.pop(rule, None)

    def _cut(self, src: str | None, dst: str) -> bool:
        return any(r.mode is Mode.CUT and r.matches(src, dst) for r in self._rules)

    def _delay(self, conn: _Connection) -> float:
        return max(
            (
                r.delay + (r.latency.draw(self._draws[r]) if r in self._draws else 0.0)
                for r in self._rules
                if r.mode is Mode.DELAY and r.matches(conn.src, conn.link.dst)
            ),
            default=0.0,
        )

    # ------------------------------------------------------------ the loop's side

    async def _serve(self, link: Link, *, task_status: TaskStatus[int]) -> None:
        listener = await anyio.create_tcp_listener(local_host=self.host, local_port=0)
        async with listener:
            task_status.started(listener.extra(SocketAttribute.local_port))
            await listener.serve(lambda client: self._handle(link, client))

    async def _handle(self, link: Link, client: SocketStream) -> None:
        async with client:
            # Live (so that a rule added from now on cuts it) before the check and the
            # connect: a rule added while it connects must not miss it.
            conn = _Connection(link, link.src if isinstance(link.src, str) else None)
            self._live.add(conn)
            identify = None if isinstance(link.src, str) else link.src
            try:
                with conn.scope:
                    if self._cut(conn.src, link.dst):
                        return
                    # A dead target: the dialer sees its connection fail (OSError below).
                    upstream = await anyio.connect_tcp(*link.target)
                    async with upstream, anyio.create_task_group() as tg:
                        tg.start_soon(self._pump, client, upstream, conn, identify)
                        tg.start_soon(self._pump, upstream, client, conn, None)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass
            finally:
                self._live.discard(conn)

    async def _pump(
        self,
        reader: SocketStream,
        writer: SocketStream,
        conn: _Connection,
        identify: Identify | None,
    ) -> None:
        """One direction: chunks are queued with the time they are due, a writer sends them
        then, in order; the reader's EOF is passed on as a half-close. With `identify`, every
        chunk may tell who sends (a kept-alive HTTP connection can carry requests that say
        and requests that do not): a source it names is checked against the rules before the
        chunk goes on."""
        send, receive = anyio.create_memory_object_stream[tuple[float, bytes]](QUEUED_CHUNKS)
        due = 0.0
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._write, receive, writer, conn)
            async with send:
                while True:
                    try:
                        data = await reader.receive(CHUNK)
                    except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                        break
                    except anyio.ClosedResourceError:
                        break
                    if identify is not None:
                        src = identify(data)
                        if src is not None and src != conn.src:
                            conn.src = src
                            if self._cut(src, conn.link.dst):
                                self._live.discard(conn)
                                conn.scope.cancel()
                                return
                    # (never before the chunk ahead of it: the link keeps its order)
                    due = max(due, time.monotonic() + self._delay(conn))
                    await send.send((due, data))

    async def _write(
        self,
        receive: MemoryObjectReceiveStream[tuple[float, bytes]],
        writer: SocketStream,
        conn: _Connection,
    ) -> None:
        async with receive:
            try:
                async for due, data in receive:
                    wait = due - time.monotonic()
                    if wait > 0:
                        await anyio.sleep(wait)
                    await writer.send(data)
                await writer.send_eof()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                conn.scope.cancel()  # the other side is gone: so is the connection

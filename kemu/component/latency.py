"""Latency a process adds to its calls, on its own clock (issue #58 item 4: "what if the
apiserver answers in 200 ms"; the syntax is kemu.machinery.latency's).

- A component's `--apiserver-latency` (declared beside --server, kemu.client.endpoints):
  every unary call of its client (kemu.client.client; not the watches, not the cluster clock's
  own calls) waits a drawn latency before it is sent, so its effect on the apiserver (a write,
  a binding) happens that much later and its answer comes then, as from an apiserver that
  takes that long to serve it.
- The apiserver's `--etcd-latency`: every etcd round trip of the API's reads and writes
  (apiserver/storage/etcd.py; not the cluster clock's key, not the watch streams) waits so
  before it is sent.

The wait is a timer of the process's clock, not a call in flight: in virtual time the clock
knows it, and at rate max jumps to it, so a run stays event-driven and repeatable (the draws
come from `seed`, in the order the process makes its calls). Watch streams are not delayed: a
watch event is not an answer; the `latency` chaos fault (the fault proxy, real time) delays
them with the rest of a link's bytes.

It loads no gRPC: the processes' options modules declare its flags.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass, field

from kemu.component.clock import Clock
from kemu.machinery.latency import NO_LATENCY, SYNTAX, Latency, LatencyError


@dataclass(frozen=True)
class CallLatency:
    """What every call of a client waits before it is sent: `latency`, drawn from a
    random.Random seeded with `seed`."""

    latency: Latency = NO_LATENCY
    seed: int = 0

    def on(self, clock: Clock) -> CallDelay | None:
        """The waits on `clock` (None: no latency, nothing to wait)."""
        return (
            None if self.latency.none else CallDelay(self.latency, clock, random.Random(self.seed))
        )


@dataclass
class CallDelay:
    latency: Latency
    clock: Clock
    rng: random.Random = field(repr=False)

    waiting: int = 0
    """Waits pending now: a process booting while some of its calls wait here is waiting
    on the clock (kemu.client.clock: the event-driven clock must not hold for its boot)."""

    async def wait(self) -> None:
        self.waiting += 1
        try:
            await self.clock.sleep(self.latency.draw(self.rng))
        finally:
            self.waiting -= 1


def latency_flag(text: str) -> Latency:
    """argparse `type=` for a latency flag (argparse names the flag in the error)."""
    try:
        return Latency.parse(text)
    except LatencyError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_apiserver_latency_flags(parser: argparse.ArgumentParser) -> None:
    """--apiserver-latency and its seed, beside --server (kemu.client.endpoints)."""
    parser.add_argument(
        "--apiserver-latency",
        type=latency_flag,
        default=NO_LATENCY,
        metavar="LATENCY",
        help=f"kemu only: every call to the apiserver waits this long on the component's clock "
        f"(virtual in virtual time) before it is sent: {SYNTAX} (default 0: none)",
    )
    parser.add_argument(
        "--apiserver-latency-seed",
        type=int,
        default=0,
        metavar="N",
        help="kemu only: the seed of --apiserver-latency's draws (default 0)",
    )


def apiserver_latency(args: argparse.Namespace) -> CallLatency:
    return CallLatency(args.apiserver_latency, args.apiserver_latency_seed)

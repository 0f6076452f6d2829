"""`--node-control stdin`: a hollow kubelet whose nodes its parent adds and removes at run time.

The emulated cloud can run the instances of a node group as the nodes of one hollow kubelet
process (`python -m cloud --kubelet-processes node-group`) rather than a process per instance:
at a few hundred instances the processes' own upkeep (each its Lease, its status, its answer to
the virtual clock) would cost more than the nodes' work. The parent writes one command a line
(kemu.machinery.node_control): `add NAME PROVIDER_ID` starts a node (its Node registered with
that providerID, its checkpoint restored, its pods listed), `remove NAME` stops it (its Lease
and status no longer kept, its pods forgotten, its checkpoint kept) and is answered
`removed NAME` on stdout once it is stopped.

Commands run one after the other, in order. `add` of a running node and `remove` of an unknown
one do nothing (`remove` is answered all the same). A line that does not parse is logged and
skipped. At the end of stdin (the parent is gone) the process stops, as a machine's kubelet
goes with its machine. Logs go to stderr; stdout carries the answers only.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from typing import BinaryIO, Final, Protocol

import anyio

from kemu.machinery.errors import ApiError
from kemu.machinery.node_control import ADD, parse_command, removed_line

logger = logging.getLogger(__name__)

_READ_SIZE: Final = 65536
_RETRY_INITIAL: Final = 0.2
_RETRY_MAX: Final = 5.0
"""Wall seconds between two tries of an `add` whose calls failed (the machine's own time)."""


class NodeRunner(Protocol):
    """What the commands act on (kubelet.app.Kubelet)."""

    async def add_node(self, name: str, provider_id: str) -> None: ...

    async def remove_node(self, name: str) -> None: ...


async def serve_node_control(
    runner: NodeRunner,
    *,
    on_end: Callable[[], None],
    stdin: int | None = None,
    stdout: BinaryIO | None = None,
) -> None:
    """Runs the commands read from `stdin` (a file descriptor; the process's by default) until
    its end, then calls `on_end`."""
    fd = sys.stdin.fileno() if stdin is None else stdin
    out = sys.stdout.buffer if stdout is None else stdout
    os.set_blocking(fd, False)
    pending = b""
    while True:
        await anyio.wait_readable(fd)
        try:
            data = os.read(fd, _READ_SIZE)
        except BlockingIOError:
            continue
        if not data:
            break
        *lines, pending = (pending + data).split(b"\n")
        for raw in lines:
            await _run(runner, raw.decode(errors="replace"), out)
    if pending.strip():
        await _run(runner, pending.decode(errors="replace"), out)
    logger.info("node control: end of stdin (the parent is gone), stopping")
    on_end()


async def _run(runner: NodeRunner, line: str, out: BinaryIO) -> None:
    try:
        command, name, provider_id = parse_command(line)
    except ValueError as e:
        logger.error("node control: skipping a line: %s", e)
        return
    if command == ADD:
        delay = _RETRY_INITIAL
        while True:
            try:
                await runner.add_node(name, provider_id)
                return
            except ApiError as e:  # the apiserver not there (yet): the node waits for it
                logger.warning("node %s: cannot start it yet (%s), retrying in %gs", name, e, delay)
                await anyio.sleep(delay)
                delay = min(delay * 2, _RETRY_MAX)
    await runner.remove_node(name)
    out.write(removed_line(name).encode())
    out.flush()

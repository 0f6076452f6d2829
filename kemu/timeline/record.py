"""Recording a Timeline from a live cluster: informers of every pod, every node and the Events
a timeline reads (kemu.timeline.model.EVENT_REASONS, filtered on arrival: the others are
neither kept nor looked at), their changes handed to the timeline as they arrive.

    timeline = Timeline("my run")
    async with record_timeline(client, timeline):
        ...  # the run
    Path("run.html").write_text(render_page([timeline]))

The informers list first (what exists is seen at the start) and then watch, resuming or
relisting after a broken watch as every informer does (kemu.client.informer); a pod deleted
during a relist's gap is seen deleted at the relist. They cost one watch of each kind and a
cache of the live pods and nodes, in the recording process only.

The timeline is on the cluster's clock: the objects date what they can (kemu.timeline.dating),
the rest is dated by the cluster's time when it was seen (kemu.testing.cluster_time's
ClusterClock: the wall clock in real time, the followed segment in virtual time).
"""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio

from kemu.api.v1 import types_pb2
from kemu.client.informer import FuncHandler, Informer
from kemu.client.interface import ApiClient
from kemu.testing.cluster_time import ClusterClock, cluster_clock
from kemu.timeline.model import EVENT_REASONS, Timeline


@asynccontextmanager
async def record_timeline(
    client: ApiClient, timeline: Timeline, clock: ClusterClock | None = None
) -> AsyncIterator[Timeline]:
    """Feeds `timeline` while the block runs (every informer has listed when it starts) and
    finishes it when the block ends. The record begins on the cluster's clock (`clock`, or
    one followed while the block runs), at its time now. Notes the cluster's clock then."""
    async with AsyncExitStack() as stack:
        if clock is None:
            clock = await stack.enter_async_context(cluster_clock(client))
        timeline.begin(clock.now)
        at = datetime.datetime.fromtimestamp(timeline.start, datetime.UTC)
        mode = "virtual" if clock.virtual else "real"
        timeline.notes.append(f"cluster clock ({mode}) at the start: {at:%Y-%m-%d %H:%M:%S} UTC")
        async with _informers(client, timeline):
            yield timeline


@asynccontextmanager
async def _informers(client: ApiClient, timeline: Timeline) -> AsyncIterator[None]:
    pods = Informer(client, types_pb2.Pod)
    pods.add_event_handler(
        FuncHandler(timeline.pod_added, timeline.pod_updated, timeline.pod_deleted)
    )
    nodes = Informer(client, types_pb2.Node)
    nodes.add_event_handler(
        FuncHandler(timeline.node_added, timeline.node_updated, timeline.node_deleted)
    )
    events = Informer(client, types_pb2.Event, keep=lambda e: e.reason in EVENT_REASONS)
    # (the timeline tells an occurrence from another change by the Event's count)
    events.add_event_handler(
        FuncHandler(timeline.event_seen, lambda old, new: timeline.event_seen(new))
    )
    failure: BaseException | None = None
    async with anyio.create_task_group() as tg:
        for informer in (nodes, pods, events):
            await tg.start(informer.run)
        try:
            yield
        except BaseException as e:
            # Re-raised below as it is, not wrapped in the task group's ExceptionGroup.
            failure = e
        finally:
            tg.cancel_scope.cancel()
            timeline.finish()
    if failure is not None:
        raise failure

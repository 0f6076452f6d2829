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
"""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from kemu.api.v1 import types_pb2
from kemu.client.informer import FuncHandler, Informer
from kemu.client.interface import ApiClient
from kemu.timeline.model import EVENT_REASONS, Timeline


@asynccontextmanager
async def record_timeline(client: ApiClient, timeline: Timeline) -> AsyncIterator[Timeline]:
    """Feeds `timeline` while the block runs (every informer has listed when it starts) and
    finishes it when the block ends. Notes the cluster's clock at the start."""
    status = await client.clock_status()
    at = datetime.datetime.fromtimestamp(status.now, datetime.UTC)
    timeline.notes.append(
        f"cluster clock ({status.mode or 'real'}) at the start: {at:%Y-%m-%d %H:%M:%S} UTC"
    )
    pods = Informer(client, types_pb2.Pod)
    pods.add_event_handler(
        FuncHandler(timeline.pod_added, timeline.pod_updated, timeline.pod_deleted)
    )
    nodes = Informer(client, types_pb2.Node)
    nodes.add_event_handler(
        FuncHandler(timeline.node_added, timeline.node_updated, timeline.node_deleted)
    )
    events = Informer(client, types_pb2.Event, keep=lambda e: e.reason in EVENT_REASONS)

    def event_updated(old: types_pb2.Event, new: types_pb2.Event) -> None:
        if new.count != old.count or new.metadata.uid != old.metadata.uid:
            timeline.event_seen(new)  # it happened again

    events.add_event_handler(FuncHandler(timeline.event_seen, event_updated))
    failure: BaseException | None = None
    async with anyio.create_task_group() as tg:
        for informer in (nodes, pods, events):
            await tg.start(informer.run)
        try:
            yield timeline
        except BaseException as e:
            # Re-raised below as it is, not wrapped in the task group's ExceptionGroup.
            failure = e
        finally:
            tg.cancel_scope.cancel()
            timeline.finish()
    if failure is not None:
        raise failure

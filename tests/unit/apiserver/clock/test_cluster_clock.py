"""The event-driven clock's quiescence check (apiserver/clock/), without etcd: probes
go out on the sessions, answers come back; a busy, lagging or dead session is no quiescence,
nor is a call or an event between two processes that one side counted and the other not."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import AsyncIterator, Callable, Iterable

import anyio
import anyio.lowlevel
import pytest

from apiserver.clock.activity import Activity
from apiserver.clock.cluster_clock import ClusterClock
from apiserver.clock.segment_store import encode
from apiserver.clock.sessions import Session
from apiserver.storage.etcd import KeyValue, StorageEvent
from kemu.api.v1 import clock_pb2
from kemu.component.virtual_clock import VirtualClock
from kemu.machinery.errors import BadRequest, Gone, InternalError, Invalid, Unavailable
from kemu.machinery.virtual_time import ClockSegment

pytestmark = pytest.mark.anyio

START = 1_800_000_000.0


def _cluster_clock(wall: Callable[[], float] = time.time) -> ClusterClock:
    clock = VirtualClock()
    clock.set_segment(
        ClockSegment(base_wall=time.time(), base_virtual=START, rate=0.0, event_driven=True)
    )
    return ClusterClock(None, clock, wall=wall)  # type: ignore[arg-type]  # (reads no etcd)


async def _answering(
    cc: ClusterClock,
    identity: str,
    *,
    idle: bool,
    received: int,
    deadline: float,
    sent: int = 0,
    abandoned: int = 0,
    in_flight: int = 0,
    on_probe: Callable[[], None] = lambda: None,
) -> None:
    """A component's session that answers every probe so (`sent`: the calls it says it made,
    `abandoned` of them given up on; `on_probe` runs before each answer)."""
    send, receive = anyio.create_memory_object_stream[clock_pb2.ClockUpdate](8)
    session = cc.sessions.live[len(cc.sessions.live)] = Session(send, identity=identity)
    async with receive:
        async for update in receive:
            if not update.probe:
                continue  # a segment
            on_probe()
            report = clock_pb2.ClockReport(
                identity=identity,
                probe=update.probe,
                idle=idle,
                events_received=received,
                requests_sent=sent,
                requests_abandoned=abandoned,
                requests_in_flight=in_flight,
                timers=1,
                next_deadline=deadline,
            )
            cc.sessions.answer(session, report)


async def test_idle_sessions_that_received_everything_give_the_earliest_timer() -> None:
    cc = _cluster_clock()
    cc.activity.sent["a"] = 3
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: _answering(cc, "a", idle=True, received=3, deadline=START + 7))
        tg.start_soon(lambda: _answering(cc, "b", idle=True, received=0, deadline=START + 2))
        await anyio.wait_all_tasks_blocked()
        with anyio.fail_after(5):
            assert await cc.driver.quiescence() == (True, START + 2)
        tg.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("idle", "received"), [(False, 3), (True, 2)], ids=["busy", "events on their way"]
)
async def test_a_busy_or_lagging_session_is_no_quiescence(idle: bool, received: int) -> None:
    cc = _cluster_clock()
    cc.activity.sent["a"] = 3
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: _answering(cc, "a", idle=idle, received=received, deadline=START))
        await anyio.wait_all_tasks_blocked()
        with anyio.fail_after(5):
            assert await cc.driver.quiescence() == (False, None)
        tg.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("sent", "received"),
    [(4, 3), (3, 4)],
    ids=["a call on its way to the apiserver", "a call made after the answer"],
)
async def test_a_call_one_side_counted_and_the_other_not_is_no_quiescence(
    sent: int, received: int
) -> None:
    cc = _cluster_clock()
    _receive(cc, "a", range(1, received + 1))
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: _answering(cc, "a", idle=True, received=0, sent=sent, deadline=START + 1)
        )
        await anyio.wait_all_tasks_blocked()
        with anyio.fail_after(5):
            assert await cc.driver.quiescence() == (False, None)
        cc.activity = cc.driver.activity = Activity()
        _receive(cc, "a", range(1, sent + 1))  # every call received, none since: quiescent
        with anyio.fail_after(5):
            assert await cc.driver.quiescence() == (True, START + 1)
        tg.cancel_scope.cancel()


async def test_a_call_in_flight_squares_only_while_the_apiserver_holds_it_on_a_timer() -> None:
    """--etcd-latency in virtual time (issue #58 item 4): a component idle with a call in
    flight is quiescent only when the apiserver serves that call held on a timer of its clock
    (Activity.parked); served and answered, its answer on the way, it is not."""
    cc = _cluster_clock()
    _receive(cc, "a", range(1, 3))
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: _answering(
                cc, "a", idle=True, received=0, sent=3, in_flight=1, deadline=START + 1
            )
        )
        await anyio.wait_all_tasks_blocked()
        with cc.activity.request("a", 3), cc.activity.parked() as wait:
            assert wait and cc.activity.serving == 0 and cc.activity.parked_calls["a"] == 1
            with anyio.fail_after(5):
                assert await cc.driver.quiescence() == (True, START + 1)
        assert cc.activity.parked_calls["a"] == 0 and cc.activity.requests == 0
        with anyio.fail_after(5):  # the call answered, the answer on its way
            assert await cc.driver.quiescence() == (False, None)
        tg.cancel_scope.cancel()


def test_a_request_from_outside_the_sessions_is_not_held() -> None:
    activity = Activity()
    with activity.request(), activity.parked() as wait:
        assert not wait and activity.serving == 1
    with activity.parked() as wait:  # the apiserver's own work, outside any request
        assert wait and activity.parked_total == 0


async def test_the_apiservers_own_work_holds_the_look_unless_held_on_a_timer() -> None:
    """A pass of the apiserver's own work woken by its clock (the APF ensurer's, writing a
    FlowSchema's Dangling condition) holds the clock until it ends, as a request does; while
    it waits on a timer of the clock (--etcd-latency) the clock must move for it. (Without
    it an advance past the ensurer's minute held before the pass wrote anything: found by
    test_apf_dangling_1_missing_priority_level under CI's load.)"""
    cc = _cluster_clock()
    with cc.activity.own_work():
        assert cc.activity.serving == 1 and cc.activity.outside == 0
        with cc.activity.parked() as wait:
            assert wait and cc.activity.serving == 0
            with anyio.fail_after(5):
                assert (await cc.driver.quiescence())[0]
    assert cc.activity.requests == 0 and cc.activity.parked_total == 0
    ended: list[bool] = []

    async def pass_() -> None:
        with cc.activity.own_work():
            await anyio.sleep(0.1)
            ended.append(True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(pass_)
        await anyio.wait_all_tasks_blocked()
        with anyio.fail_after(5):
            assert (await cc.driver.quiescence())[0]
        assert ended  # the look waited for the pass


async def test_own_work_woken_by_a_jump_is_counted_before_the_look() -> None:
    """The ensurer's sleep ends with the jump and its pass starts at its next step: the
    look at the apiserver lets it take that step first."""
    cc = _cluster_clock()
    woken = anyio.Event()
    ended: list[bool] = []

    async def pass_() -> None:
        await woken.wait()
        with cc.activity.own_work():
            await anyio.sleep(0.1)
            ended.append(True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(pass_)
        await anyio.wait_all_tasks_blocked()
        woken.set()  # (the jump ends its sleep; the pass has taken no step yet)
        with anyio.fail_after(5):
            assert (await cc.driver.quiescence())[0]
        assert ended


def _receive(cc: ClusterClock, identity: str, numbers: Iterable[int]) -> None:
    """The apiserver serves the calls of `identity` numbered so."""
    for number in numbers:
        with cc.activity.request(identity, number):
            pass


async def test_an_apiserver_restarted_squares_with_the_calls_it_received_only() -> None:
    """A component's calls before the apiserver restarted went to the one that is gone: the
    new one counts from the first it receives (the clock held after a restart until every
    component in session restarted too)."""
    cc = _cluster_clock()
    _receive(cc, "a", range(11, 15))
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: _answering(cc, "a", idle=True, received=0, sent=14, deadline=START + 1)
        )
        await anyio.wait_all_tasks_blocked()
        with anyio.fail_after(5):
            assert await cc.driver.quiescence() == (True, START + 1)
        _receive(cc, "a", [15])  # a call made after the answer
        with anyio.fail_after(5):
            assert await cc.driver.quiescence() == (False, None)
        tg.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("received", "quiescent"),
    [([1, 2, 3], (True, START + 1)), ([1, 2, 3, 5], (False, None))],
    ids=["it never arrived", "and one made after the answer arrived"],
)
async def test_a_call_given_up_on_does_not_hold_the_clock_and_hides_no_later_call(
    received: list[int], quiescent: tuple[bool, float | None]
) -> None:
    """A kubelet's node removed while its registration waited to be sent: its caller counted
    the call (number 4) as made and cancelled it, and the apiserver never received it. Were
    it counted as made only, the clock would hold until that kubelet's session ended (found
    by test_cloud's node-group run under load: its pod GC's quarantine never passed). The
    count alone could not tell that from a call made after the answer (number 5) beside it:
    the call's number can."""
    cc = _cluster_clock()
    _receive(cc, "a", received)
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: _answering(
                cc, "a", idle=True, received=0, sent=4, abandoned=1, deadline=START + 1
            )
        )
        await anyio.wait_all_tasks_blocked()
        with anyio.fail_after(5):
            assert await cc.driver.quiescence() == quiescent
        tg.cancel_scope.cancel()


async def test_a_call_from_outside_the_sessions_during_the_probe_is_no_quiescence() -> None:
    cc = _cluster_clock()

    def kemuctl_call() -> None:
        with cc.activity.request():  # untagged: kemuctl, kubectl, a driver's client
            pass

    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: _answering(
                cc, "a", idle=True, received=0, deadline=START + 1, on_probe=kemuctl_call
            )
        )
        await anyio.wait_all_tasks_blocked()
        with anyio.fail_after(5):
            assert await cc.driver.quiescence() == (False, None)
        tg.cancel_scope.cancel()


async def test_a_dead_session_is_no_quiescence_and_the_check_yields_meanwhile() -> None:
    cc = _cluster_clock()
    send, receive = anyio.create_memory_object_stream[clock_pb2.ClockUpdate](1)
    receive.close()  # its component went away
    cc.sessions.live[0] = Session(send, identity="gone")
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        with anyio.fail_after(5):
            for _ in range(3):  # as the driver calls it again and again
                assert await cc.driver.quiescence() == (False, None)
        assert ticks >= 3  # the driver never starves the event loop
        tg.cancel_scope.cancel()


async def test_a_session_that_does_not_answer_is_left_out_until_it_answers_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("apiserver.clock.sessions.PROBE_TIMEOUT", 0.2)
    cc = _cluster_clock()
    frozen_send, frozen_receive = anyio.create_memory_object_stream[clock_pb2.ClockUpdate](64)
    frozen = cc.sessions.live[99] = Session(frozen_send, identity="frozen")
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: _answering(cc, "a", idle=True, received=0, deadline=START + 5))
        await anyio.wait_all_tasks_blocked()
        with anyio.fail_after(5):
            assert await cc.driver.quiescence() == (True, START + 5)  # after the probe timeout
        assert not frozen.responsive
        started = time.monotonic()
        with anyio.fail_after(5):
            assert await cc.driver.quiescence() == (True, START + 5)
        assert time.monotonic() - started < 0.2  # not waited for again
        tg.cancel_scope.cancel()
    frozen_receive.close()


async def test_an_announced_component_holds_the_clock_until_its_session_answers_idle() -> None:
    """Clock.ExpectClockSession: a component being started is pending work until a session
    reporting its boot token answers a probe idle; an announcement whose component never
    comes expires after its ttl (wall time)."""
    wall = [1000.0]
    cc = _cluster_clock(wall=lambda: wall[0])
    cc.expect("kubelet-n2-abc", ttl=30)
    cc.expect("gone-def", ttl=10)
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: _answering(cc, "a", idle=True, received=0, deadline=START + 5))
        await anyio.wait_all_tasks_blocked()
        with anyio.fail_after(5):
            assert await cc.driver.quiescence() == (False, None)  # two still booting
        send, receive = anyio.create_memory_object_stream[clock_pb2.ClockUpdate](8)
        booted = cc.sessions.live[len(cc.sessions.live)] = Session(send, identity="n2")

        async def answer_with_token() -> None:
            async with receive:
                async for update in receive:
                    if update.probe:
                        report = clock_pb2.ClockReport(
                            identity="n2",
                            probe=update.probe,
                            idle=True,
                            ready=True,
                            boot_token="kubelet-n2-abc",
                        )
                        cc.sessions.answer(booted, report)

        tg.start_soon(answer_with_token)
        await anyio.wait_all_tasks_blocked()
        with anyio.fail_after(5):
            assert await cc.driver.quiescence() == (False, None)  # n2 booted, "gone" not yet
        cc.expect("failed-ghi", ttl=30)
        cc.expect("failed-ghi", ttl=0)  # its launcher saw it fail: withdrawn
        wall[0] += 11  # "gone" never came: its announcement expires
        with anyio.fail_after(5):
            assert await cc.driver.quiescence() == (True, START + 5)
        tg.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("token", "ttl", "field"),
    [("", 10.0, "bootToken"), ("t", -1.0, "ttlSeconds"), ("t", float("nan"), "ttlSeconds")],
)
def test_an_announcement_without_a_token_or_with_a_bad_ttl_is_refused(
    token: str, ttl: float, field: str
) -> None:
    with pytest.raises(Invalid, match=field):
        _cluster_clock().expect(token, ttl)


async def test_the_event_driven_clock_is_refused_while_other_apiservers_serve_the_cluster() -> None:
    cc = _cluster_clock()
    cc.peers.identity = "127.0.0.1:1"

    async def one_other() -> int:
        return 1

    cc.peers.count_others = one_other  # type: ignore[method-assign]  # (the read of PEERS)
    with pytest.raises(BadRequest, match="needs a cluster served by one apiserver: 1 other"):
        await cc.set_rate(math.inf)
    with pytest.raises(BadRequest, match="rate max, advance"):
        await cc.advance(10)


async def test_loading_the_clock_waits_for_etcd_rather_than_failing() -> None:
    """All of etcd restarting while the apiserver reloads the segment (chaos CI, CI AD: the
    apiserver exited, and the components waiting on it timed out): it tries again."""
    segment = ClockSegment(base_wall=time.time(), base_virtual=START, rate=1.0)

    class Flaky:
        calls = 0

        async def get(self, key: str) -> KeyValue:
            self.calls += 1
            if self.calls == 1:
                raise Unavailable("etcd is unavailable: Stream removed (Socket closed)")
            if self.calls == 2:  # (a call gRPC itself broke)
                raise InternalError("etcd get failed: INTERNAL: Internal error from Core")
            return KeyValue(key, encode(segment), 7, 1)

    store = Flaky()
    cc = ClusterClock(store, VirtualClock())  # type: ignore[arg-type]
    with anyio.fail_after(5):
        assert await cc.segments.load_until_done() == 7
    assert store.calls == 3 and cc.clock.segment == segment


@pytest.mark.parametrize(
    "broken",
    [
        InternalError("etcd watch failed: INTERNAL: Internal error from Core"),
        Gone("watch from revision 8 is too old: compacted at 9"),
    ],
    ids=["grpc-broke-the-stream", "compacted"],
)
async def test_a_broken_watch_of_the_clock_is_watched_again(broken: Exception) -> None:
    """The follower's watch ended by gRPC (CI run of 8eb3744: the apiserver exited on it
    while an etcd member lost its leader) or by compaction: it reloads and watches again."""
    first = ClockSegment(base_wall=time.time(), base_virtual=START, rate=1.0)
    second = ClockSegment(base_wall=time.time(), base_virtual=START, rate=2.0, generation=2)

    class Store:
        watches: list[int] = []

        async def get(self, key: str) -> KeyValue:
            return KeyValue(key, encode(first), 7, 1)

        async def watch(self, key: str, start: int) -> AsyncIterator[list[StorageEvent]]:
            self.watches.append(start)
            if len(self.watches) == 1:
                raise broken
            yield [StorageEvent("PUT", key, encode(second), None, 9)]
            await anyio.sleep_forever()

    store = Store()
    cc = ClusterClock(store, VirtualClock())  # type: ignore[arg-type]
    async with anyio.create_task_group() as tg:
        await tg.start(cc.run)
        with anyio.fail_after(5):
            while cc.clock.segment != second:
                await cc.clock.next_change().wait()
        tg.cancel_scope.cancel()
    assert store.watches == [8, 8]


async def test_a_jump_etcd_does_not_take_is_tried_again_at_the_next_quiescence() -> None:
    """At rate max with etcd away for a moment (its write Unavailable): the apiserver keeps
    serving and its clock moves once etcd takes the write (the apiserver exited before)."""
    cc = _cluster_clock()
    segment = cc.clock.segment
    assert segment is not None
    target = START + 10
    segment = segment.advancing(target, time.time())
    cc.clock.set_segment(segment)
    cc.segments.remember(segment, 7)

    class Store:
        updates = 0

        async def update(self, key: str, value: bytes, revision: int) -> int:
            self.updates += 1
            if self.updates == 1:
                raise Unavailable("etcd is unavailable: Stream removed (Socket closed)")
            return revision + 1

    store = Store()
    cc.segments._store = store  # type: ignore[assignment]
    async with anyio.create_task_group() as tg:
        tg.start_soon(cc.driver.drive)
        with anyio.fail_after(5):
            # until it holds at the advance's end
            while cc.clock.segment is None or cc.clock.segment.event_driven:
                await cc.clock.next_change().wait()
        tg.cancel_scope.cancel()
    assert cc.clock.now() == target
    assert store.updates == 3  # the refused jump, the jump, the hold


async def test_steps_are_released_one_at_a_time_in_the_order_of_component_and_identity() -> None:
    """docs/virtual-time.md, the order rule at one instant: the cluster quiescent, the driver
    lets one waiting step go (a scheduling cycle), whichever process asked first."""
    cc = _cluster_clock()
    sessions = []
    for identity, component in (("b", "scheduler"), ("a", "scheduler"), ("c", "kubelet")):
        send, receive = anyio.create_memory_object_stream[clock_pb2.ClockUpdate](8)
        session = Session(send, identity=identity, component=component)
        session.report = clock_pb2.ClockReport(identity=identity, component=component, step=5)
        cc.sessions.live[len(cc.sessions.live)] = session
        sessions.append((session, receive))
    released = []
    for _ in range(3):
        assert await cc.driver._release_step()
        for session, receive in sessions:
            with contextlib.suppress(anyio.WouldBlock):
                update = receive.receive_nowait()
                released.append((session.component, session.identity, update.release))
    assert released == [("kubelet", "c", 5), ("scheduler", "a", 5), ("scheduler", "b", 5)]
    assert not await cc.driver._release_step()  # none waits: the clock may jump

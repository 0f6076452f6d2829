"""The network and time faults of a chaos run (schedule.py's partition, delay, latency,
skew-clock and drop), fired by the injector's thread on the cluster's fault proxy, clock files and signals.
Each notes in the run's timeline what it did and what the cluster showed:

- partition scheduler-leader: the leader's links to every apiserver cut for `down` seconds
  (longer than its lease): it stops leading, the other scheduler takes the lease;
- partition kubelet: a kubelet's links cut until its node is seen Unknown (the node
  lifecycle controller's grace period passed; at least `down`), then healed until the node
  is Ready again;
- partition apiserver-one: an apiserver's links to every etcd member cut (its clients still
  reach it; its /readyz fails, its calls fail as upstream's do without etcd);
- partition etcd-member: one member's links to and from its peers cut;
- delay etcd: `size` seconds more on every apiserver-to-etcd round trip;
- latency apiserver / latency etcd: a draw of the fault's distribution more on every round
  trip from every component to the apiservers / from the apiservers to etcd (half of it each
  way: the proxy's DELAY rules with a latency, each seeded from the fault's pick);
- skew-clock ROLE: the process's wall clock `size` seconds off (leader election and node
  health measure on the local monotonic clock, so nothing should change hands);
- drop watches: SIGUSR1 to the apiserver with more watchers: it ends every watch stream,
  its clients watch again.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from typing import Final

import anyio.from_thread

from kemu.api.v1 import types_pb2
from kemu.chaos.recorder import LeaseRecorder
from kemu.chaos.schedule import Action, Fault
from kemu.client.interface import ApiClient
from kemu.machinery.errors import ApiError
from kemu.testing.cluster import Cluster, Component
from kemu.testing.faultproxy import FaultProxy, Mode, Rule
from kemu.testing.processes import url_ok

KUBELET_PREFIX: Final = "kubelet-"
NODE_WAIT: Final = 30.0
"""How long a kubelet's partition waits for its node to go Unknown, and then Ready again."""
POLL: Final = 0.25
LEADER_METRIC: Final = 'leader_election_master_status{name="kube-scheduler"} 1.0'


class NetworkFaults:
    def __init__(
        self,
        cluster: Cluster,
        note: Callable[[str], None],
        lease: LeaseRecorder,
        client: ApiClient,
    ) -> None:
        if cluster.proxy is None:
            raise ValueError("cluster: network faults need a cluster with a fault proxy")
        self.cluster = cluster
        self.proxy: FaultProxy = cluster.proxy
        self.note = note
        self.lease = lease
        self.client = client

    def inject(self, fault: Fault, targets: list[str]) -> None:
        if fault.action is Action.PARTITION:
            self._partition(fault, targets)
        elif fault.action is Action.DELAY:
            self._delay(fault, targets)
        elif fault.action is Action.LATENCY:
            self._latency(fault, targets)
        elif fault.action is Action.SKEW_CLOCK:
            self._skew(fault, targets)
        elif fault.action is Action.DROP:
            self._drop(targets)
        else:
            raise ValueError(f"{fault.action.value}: not a network or time fault")

    # ------------------------------------------------------------ partitions

    def _partition(self, fault: Fault, targets: list[str]) -> None:
        (target,) = targets
        rules = self._cut_rules(fault.role, target)
        started = time.monotonic()
        holder = self.lease.holder
        for rule in rules:
            self.proxy.add(rule)
        self.note(f"partition {target} ({fault.role}): {len(rules)} rules, links cut")
        try:
            if fault.role == "kubelet":
                node = target.removeprefix(KUBELET_PREFIX)
                self._sleep_until(started + fault.down)
                took = self._wait(lambda: self._node_ready(node), "Unknown", started)
                self.note(f"node {node} Ready={took} of the cut; {self._pods_ready(node)}")
            elif fault.role == "apiserver-one":
                readyz = self.cluster.component(target).readyz_url
                took = self._wait(lambda: _status(readyz), "failing", started, fault.down)
                self.note(f"{target} /readyz {took} of the cut")
                self._sleep_until(started + fault.down)
            else:
                self._sleep_until(started + fault.down)
        finally:
            for rule in rules:
                self.proxy.remove(rule)
        healed = time.monotonic()
        self.note(f"partition {target} healed after {healed - started:.1f}s")
        if fault.role == "scheduler-leader" and holder:
            changed = self.lease.first_change_after(started, holder)
            self.note(
                f"lease kube-scheduler held by {holder} at the cut: "
                + (
                    f"passed on {changed - started:.1f}s after it"
                    if changed is not None
                    else "not passed on"
                )
            )
        if fault.role == "kubelet":
            node = target.removeprefix(KUBELET_PREFIX)
            took = self._wait(lambda: self._node_ready(node), "True", healed)
            self.note(f"node {node} Ready={took} of the heal")
        if fault.role == "apiserver-one":
            readyz = self.cluster.component(target).readyz_url
            took = self._wait(lambda: _status(readyz), "ok", healed)
            self.note(f"{target} /readyz {took} of the heal")

    def _cut_rules(self, role: str, target: str) -> list[Rule]:
        if role == "etcd-member":
            # Only the peer links, both ways: the apiservers still reach the member.
            peers = [m.name for m in self.cluster.etcd_members if m.name != target]
            return [Rule(Mode.CUT, src=target, dst=p) for p in peers] + [
                Rule(Mode.CUT, src=p, dst=target) for p in peers
            ]
        # A component's links are the ones it dials: its apiservers; an apiserver's, etcd.
        return [Rule(Mode.CUT, src=target)]

    # ------------------------------------------------------------ delay, skew, drop

    def _delay(self, fault: Fault, targets: list[str]) -> None:
        apiservers = self._apiservers()
        rules = [
            Rule(Mode.DELAY, src=a, dst=m, delay=fault.size / 2)
            for a in apiservers
            for m in targets
        ]
        self._hold(
            rules,
            fault.down,
            f"delay etcd: +{fault.size * 1000:.0f} ms per round trip from "
            f"{', '.join(apiservers)} for {fault.down:g}s",
        )
        self.note("delay etcd over")

    def _latency(self, fault: Fault, targets: list[str]) -> None:
        """`targets`: the apiservers ("latency apiserver": every link to them) or the etcd
        members ("latency etcd": every apiserver's link to them)."""
        half = fault.latency.scaled(0.5)  # (each direction of a round trip)
        links: list[tuple[str | None, str]]
        if fault.role == "etcd":
            links = [(a, m) for a in self._apiservers() for m in targets]
        else:
            links = [(None, a) for a in targets]
        rules = [
            Rule(Mode.DELAY, src=src, dst=dst, latency=half, seed=fault.pick + i)
            for i, (src, dst) in enumerate(links)
        ]
        self._hold(
            rules,
            fault.down,
            f"latency {fault.role}: +{fault.latency} per round trip on {len(rules)} links to "
            f"{', '.join(targets)} for {fault.down:g}s",
        )
        self.note(f"latency {fault.role} over")

    def _hold(self, rules: list[Rule], down: float, note: str) -> None:
        """The proxy applies `rules` for `down` seconds (noted once they apply), then not."""
        for rule in rules:
            self.proxy.add(rule)
        self.note(note)
        try:
            time.sleep(down)
        finally:
            for rule in rules:
                self.proxy.remove(rule)

    def _apiservers(self) -> list[str]:
        return [
            n
            for n, p in self.cluster.processes.items()
            if isinstance(p, Component) and p.module == "apiserver"
        ]

    def _skew(self, fault: Fault, targets: list[str]) -> None:
        (target,) = targets
        self.cluster.skew_clock(target, fault.size)
        self.note(f"skew-clock {target}: wall clock {fault.size:+g}s for {fault.down:g}s")
        try:
            time.sleep(fault.down)
        finally:
            self.cluster.skew_clock(target, 0.0)
        if fault.role == "scheduler-leader":
            still = leads(self.cluster.component(target))
            self.note(f"skew-clock over; {target} {'still leads' if still else 'no longer leads'}")
        elif fault.role == "kubelet":
            node = target.removeprefix(KUBELET_PREFIX)
            self.note(f"skew-clock over; node {node} Ready={self._node_ready(node)}")
        else:
            self.note("skew-clock over")

    def _drop(self, targets: list[str]) -> None:
        (target,) = targets
        apiserver = self.cluster.component(target)
        before = registered_watchers(apiserver)
        apiserver.send_signal(signal.SIGUSR1)
        self.note(f"SIGUSR1 {target}: every watch stream ended ({before:g} open)")
        time.sleep(1.0)
        self.note(
            f"{target} {_status(apiserver.readyz_url)} after the drop, "
            f"{registered_watchers(apiserver):g} watches open again"
        )

    # ------------------------------------------------------------ observing

    def _node_ready(self, node: str) -> str:
        """The status of the node's Ready condition ("" when it cannot be read)."""

        async def get() -> str:
            try:
                obj = await self.client.get(types_pb2.Node, node)
            except ApiError:
                return ""
            return next((c.status for c in obj.status.conditions if c.type == "Ready"), "")

        return anyio.from_thread.run(get)

    def _pods_ready(self, node: str) -> str:
        """How many of the node's pods are Ready=False now, for the timeline."""

        async def count() -> str:
            try:
                listed = await self.client.list(
                    types_pb2.Pod, field_selector=f"spec.nodeName={node}"
                )
            except ApiError as e:
                return f"its pods unreadable ({e})"
            ready = [
                next((c.status for c in p.status.conditions if c.type == "Ready"), "")
                for p in listed.items
            ]
            return f"{ready.count('False')} of its {len(ready)} pods Ready=False"

        return anyio.from_thread.run(count)

    def _wait(
        self,
        read: Callable[[], str],
        want: str,
        since: float,
        limit: float = NODE_WAIT,
    ) -> str:
        """Polls `read` until it gives `want` (at most `limit` seconds); a phrase for the
        timeline."""
        deadline = time.monotonic() + limit
        while (got := read()) != want and time.monotonic() < deadline:
            time.sleep(POLL)
        if got == want:
            return f"{want} within {time.monotonic() - since:.1f}s"
        return f"still {got or 'unreadable'} (not {want}) after {time.monotonic() - since:.1f}s"

    @staticmethod
    def _sleep_until(t: float) -> None:
        wait = t - time.monotonic()
        if wait > 0:
            time.sleep(wait)


def leads(scheduler: Component) -> bool:
    """Whether the scheduler says (its leader-election metric) it holds the lease now."""
    try:
        return LEADER_METRIC in scheduler.scrape()
    except (OSError, RuntimeError):
        return False


def registered_watchers(apiserver: Component) -> float:
    """The apiserver's apiserver_registered_watchers summed over resources (0: no answer)."""
    try:
        text = apiserver.scrape()
    except (OSError, RuntimeError):
        return 0.0
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("apiserver_registered_watchers{")
    )


def _status(url: str) -> str:
    try:
        return "ok" if url_ok(url) else "failing"
    except OSError:
        return "unreachable"

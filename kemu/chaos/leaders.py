"""Writes made as leader by a holder that had already lost the lease: stale leader writes.

Upstream's leader election does not fence: client-go's tools/leaderelection package says it
does not guarantee that only one client acts as leader ("a.k.a. fencing"). A leader frozen or
cut off past its lease can bind or preempt once more before its renew loop finds the lease
gone (leaderelection.go's renew stops leading only after RenewDeadline). So in the default
mode a chaos run counts such writes (a figure) and checks what upstream does guarantee around
them: the apiserver never binds a bound pod, the kubelet never admits past allocatable,
nothing acknowledged is lost (checks.py). With --leader-elect-fencing the apiserver refuses
them (docs/controller-manager.md, "Leader election and fencing"): any one seen is a violation.

The schedulers' bindings are judged here from outside: a scheduler logs "bound ns/name to
node" after its Bind succeeded (at -v=2, as upstream; kemu.chaos runs them so), the pod history says at which revision the binding was
committed, and the lease history who held the lease at that revision. Only one binding of a
pod can succeed, so the revision is exact. Every other leader write (preemption PATCH and
DELETE, evictions, the autoscaler's deletions) is counted by the apiserver, which reads the
lease's holder in the same etcd transaction as the write (`apiserver_writes`).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from kemu.chaos import checks
from kemu.machinery.keys import object_key


class Election(enum.Enum):
    """How the run's schedulers elect their leader."""

    UPSTREAM = "upstream"
    """As upstream: a stale leader's write lands; counted, not a violation."""
    FENCED = "fenced"
    """--leader-elect-fencing: the apiserver refuses it; any stale write is a violation."""

    @property
    def args(self) -> list[str]:
        return ["--leader-elect-fencing"] if self is Election.FENCED else []


ACQUIRED: Final = re.compile(r"successfully acquired lease \S+ as (\S+)")
BOUND: Final = re.compile(r"bound (\S+)/(\S+) to (\S+)")
STALE_WRITE: Final = re.compile(r"stale leader write: (.*)$")
"""The apiserver's log line for a write whose fencing token names a holder that no longer
holds the lease (apiserver/registry/fencing.py)."""
_STALE_POD: Final = re.compile(r"^\S+ pods (\S+) at revision (\d+) ")
FENCED: Final = re.compile(r"fenced: (.*) refused: ")
"""The apiserver's log line for a write it refused by its enforced fencing token."""


@dataclass(frozen=True)
class LeaderWrite:
    """A binding a scheduler logged as done, with the identity it led under and the revision
    at which the binding was committed."""

    process: str
    identity: str
    pod: str
    uid: str
    revision: int

    def describe(self, holder: str) -> str:
        held = f"{holder} held the lease" if holder else "nobody held the lease"
        return (
            f"{self.process} ({self.identity}) bound {self.pod} at resourceVersion "
            f"{self.revision} while {held}"
        )


def bindings(process: str, log: str, histories: checks.Histories) -> list[LeaderWrite]:
    """The bindings `process` logged (over all its lives: a restarted process appends to its
    log), each under the identity of its latest "acquired" line before it."""
    first_bound: dict[str, tuple[str, int]] = {}  # namespace/name -> (uid, revision)
    for uid, versions in histories.items():
        pod = versions[0].pod
        rv = checks.write_revision(versions, "bound")
        if rv is not None:
            first_bound[object_key(pod)] = (uid, rv)
    out = []
    identity = ""
    for line in log.splitlines():
        m = ACQUIRED.search(line)
        if m is not None:
            identity = m.group(1)
            continue
        m = BOUND.search(line)
        if m is None or not identity:
            continue
        key = f"{m.group(1)}/{m.group(2)}"
        if key in first_bound:
            uid, rv = first_bound[key]
            out.append(LeaderWrite(process, identity, key, uid, rv))
    return out


def stale(
    writes: Iterable[LeaderWrite], holder_at: Callable[[int], str | None]
) -> list[tuple[LeaderWrite, str]]:
    """The writes committed while the lease named another holder (or none), with that holder.
    A write before the first recorded lease version is not judged."""
    out = []
    for w in writes:
        holder = holder_at(w.revision)
        if holder is not None and holder != w.identity:
            out.append((w, holder))
    return out


def apiserver_lines(logs: Mapping[str, str], pattern: re.Pattern[str]) -> list[str]:
    """What the apiservers logged matching `pattern` (STALE_WRITE, FENCED), over every life of
    each (name -> its log), as "name: <the pattern's group>"."""
    out = []
    for name, text in sorted(logs.items()):
        for line in text.splitlines():
            m = pattern.search(line)
            if m is not None:
                out.append(f"{name}: {m.group(1)}")
    return out


def all_stale(bindings: Iterable[tuple[LeaderWrite, str]], logged: Iterable[str]) -> list[str]:
    """Every stale leader write: those the apiservers logged (every kind of write), and the
    stale bindings found from outside that no apiserver line names (its process may have been
    killed before it logged)."""
    out = list(logged)
    named = set()
    for line in out:
        m = _STALE_POD.match(line.partition(": ")[2])
        if m is not None:
            named.add((m.group(1), int(m.group(2))))
    out += [w.describe(h) for w, h in bindings if (w.pod, w.revision) not in named]
    return out

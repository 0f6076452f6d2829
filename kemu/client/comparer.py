"""Caches compared with the truth: upstream's scheduler cache debugger
(pkg/scheduler/backend/cache/debugger: debugger.go listens for SIGUSR2, comparer.go compares the
cache's nodes and pods with the informers' listers and logs "Cache mismatch" with the missed and
redundant ones), made generic so that every component can check its informers too
(kubernetes/kubernetes#94437: "Missing a single update message will cause the scheduler never
able to schedule pods").

A cache is seen as a *view*: object key -> the resourceVersion it holds. A `Source` names a
cache, what it mirrors (`against`: the apiserver, or the process's own informers) and how to
read both: `view()` (synchronous, re-read at will) and `truth()` (the mirrored objects' keys and
resourceVersions, and the resourceVersion of the whole list). `informer_sources` makes one per
informer, against a fresh list from the apiserver with the informer's own selectors; the
scheduler adds its cache and queue (scheduler/cache/debugger.py).

Per key, the view and a truth differ as:
- missing: the truth has the object, the view does not;
- redundant: the view has it, the truth does not (unless the view's copy is newer than the
  whole list: created after it);
- stale: both have it and the view's resourceVersion is older than the truth's.
A view's copy newer than the truth's agrees (the view moved on since the list). A view may hold a
key with the version None: present in a state the comparison does not judge (the scheduler's
assumed pods), never a difference.

Timing. A fresh list is newer than any watch-fed cache, so a difference may be a race, not a
missed update. One is reported only when it survives both rounds:
1. compare the view with a fresh list; re-read the view every `interval` until each differing
   key agrees with that list, for up to `catch_up` seconds (the watch delivers what the list
   already has: a stale or missing copy catches up, a redundant one is deleted);
2. take a second fresh list and do the same for the keys still differing.
A missed update never agrees (the cache keeps the older version however long it waits); an
object that changed again after the first list (deleted, say) agrees with the second. Keys that
differ only in the second round are new races and are not reported.

`informers_report` serves what each informer holds now, without comparing (GET
/debug/informers?resource=R[&key=NAMESPACE/NAME]): its name, whether it synced, the last
resourceVersion its reflector saw (a bookmark's included), how many objects it holds and, with
`key`, the resourceVersion of its copy of that object ("" when it holds none). A test waits on it
where upstream's integration tests wait on the scheduler's informer (waitCachedPDBsStable in
test/integration/scheduler/preemption): the component has seen an object before it must act on it.

`CacheComparer` runs the comparison when `trigger()`ed (the component wires SIGUSR2 to it,
kemu.component.runner), logs every difference and a one-line summary, and keeps the last result
for GET /debug/caches (`report()`), so that the chaos harness reads it without parsing logs.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

import anyio
from anyio.abc import TaskStatus

from kemu.client.informer import Informer, InformerFactory
from kemu.client.interface import M
from kemu.component.clock import Clock
from kemu.component.health import DebugRequestError
from kemu.component.runner import ComponentContext
from kemu.machinery.errors import ApiError
from kemu.machinery.jsonvalue import JSONArray, JSONObject
from kemu.machinery.keys import object_key, object_meta

logger = logging.getLogger(__name__)

DEBUG_HANDLER: Final = "caches"
"""The name of the comparison's debug handler: GET /debug/caches."""
INFORMERS_HANDLER: Final = "informers"
"""The name of the informers' debug handler: GET /debug/informers."""
MISSING: Final = "missing"
REDUNDANT: Final = "redundant"
STALE: Final = "stale"
APISERVER: Final = "apiserver"
"""`against` for a cache compared with a fresh list from the apiserver."""
INFORMERS: Final = "informers"
"""`against` for a cache compared with the process's own informers (upstream's comparison)."""
DEFAULT_CATCH_UP: Final = 5.0
DEFAULT_INTERVAL: Final = 0.1

View = Mapping[str, str | None]
"""Object key -> resourceVersion held; None: held in a state the comparison does not judge."""


@dataclass(frozen=True)
class Truth:
    """What a cache mirrors: key -> resourceVersion, and the whole list's resourceVersion."""

    objects: Mapping[str, str]
    resource_version: str


@dataclass(frozen=True)
class Source:
    """One cache and what it mirrors (see the module docstring)."""

    cache: str
    against: str
    view: Callable[[], View]
    truth: Callable[[], Awaitable[Truth]]


@dataclass(frozen=True)
class Difference:
    cache: str
    against: str
    key: str
    kind: str
    """MISSING, REDUNDANT or STALE."""
    cached: str
    """The view's resourceVersion ("" when missing)."""
    actual: str
    """The truth's resourceVersion ("" when redundant)."""

    def line(self) -> str:
        """A stable sentence naming the cache, the object and what differs."""
        whose = f"the {self.against}'" if self.against.endswith("s") else f"the {self.against}'s"
        if self.kind == MISSING:
            what = f"missing ({whose} is at resourceVersion {self.actual})"
        elif self.kind == REDUNDANT:
            what = f"redundant (at resourceVersion {self.cached}, {whose} has none)"
        else:
            what = f"stale (resourceVersion {self.cached}, {whose} {self.actual})"
        return f"{self.cache}: {self.key} is {what}"

    def to_dict(self) -> dict[str, str]:
        return {
            "cache": self.cache,
            "against": self.against,
            "key": self.key,
            "difference": self.kind,
            "cachedResourceVersion": self.cached,
            "actualResourceVersion": self.actual,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, str]) -> Difference:
        """The inverse of `to_dict` (a reader of GET /debug/caches)."""
        return cls(
            d["cache"],
            d["against"],
            d["key"],
            d["difference"],
            d["cachedResourceVersion"],
            d["actualResourceVersion"],
        )


def _revision(rv: str) -> int | None:
    try:
        return int(rv)
    except ValueError:
        return None


def older(a: str, b: str) -> bool:
    """Whether resourceVersion `a` is older than `b` (kemu's are etcd revisions; ones that do
    not parse are compared for equality only)."""
    ra, rb = _revision(a), _revision(b)
    if ra is None or rb is None:
        return a != b
    return ra < rb


def difference(view: View, truth: Truth, key: str) -> tuple[str, str, str] | None:
    """(kind, cached, actual) of `key`, or None when the view agrees with the truth."""
    actual = truth.objects.get(key)
    if key not in view:
        return None if actual is None else (MISSING, "", actual)
    cached = view[key]
    if cached is None:
        return None
    if actual is None:
        # Newer than the whole list: created after it.
        return (REDUNDANT, cached, "") if not older(truth.resource_version, cached) else None
    return (STALE, cached, actual) if older(cached, actual) else None


def differences(view: View, truth: Truth, keys: Iterable[str] | None = None) -> set[str]:
    """The keys (all of both sides', or `keys`) on which `view` and `truth` differ."""
    if keys is None:
        keys = set(view) | set(truth.objects)
    return {k for k in keys if difference(view, truth, k) is not None}


@dataclass(frozen=True)
class Comparison:
    """One source compared: `objects` in the first truth, the keys that `raced` (differed at
    first, then agreed), and the `differences` that survived both rounds."""

    objects: int
    raced: int
    differences: list[Difference]


async def compare(
    source: Source,
    *,
    clock: Clock,
    catch_up: float = DEFAULT_CATCH_UP,
    interval: float = DEFAULT_INTERVAL,
) -> Comparison:
    """Compares `source`'s view with its truth in two rounds (see the module docstring)."""
    truth = await source.truth()
    count = len(truth.objects)
    first = differences(source.view(), truth)
    keys = await _catch_up(source.view, truth, first, clock, catch_up, interval)
    if keys:
        truth = await source.truth()
        keys = await _catch_up(source.view, truth, keys, clock, catch_up, interval)
    view = source.view()
    out = []
    for key in sorted(keys):
        found = difference(view, truth, key)
        if found is not None:
            out.append(Difference(source.cache, source.against, key, *found))
    return Comparison(count, len(first) - len(out), out)


async def _catch_up(
    view: Callable[[], View],
    truth: Truth,
    keys: set[str],
    clock: Clock,
    catch_up: float,
    interval: float,
) -> set[str]:
    """The `keys` still differing from `truth` after the view had up to `catch_up` seconds to
    agree."""
    deadline = clock.monotonic() + catch_up
    while keys and clock.monotonic() < deadline:
        await clock.sleep(interval)
        keys = differences(view(), truth, keys)
    return keys


# ---------------------------------------------------------------- informers


def informer_view(informer: Informer[M]) -> View:
    return {object_key(o): object_meta(o).resource_version for o in informer.lister.list()}


async def informer_truth(informer: Informer[M]) -> Truth:
    items, resource_version = await informer.list_fresh()
    return Truth({object_key(o): object_meta(o).resource_version for o in items}, resource_version)


def informer_sources(factory: InformerFactory | None) -> list[Source]:
    """One source per synced informer of `factory` (none for None: not built yet, e.g. a
    standby's), against a fresh list from the apiserver."""
    if factory is None:
        return []
    return [
        Source(
            f"informer {inf.name}",
            APISERVER,
            functools.partial(informer_view, inf),
            functools.partial(informer_truth, inf),
        )
        for inf in factory.informers()
        if inf.has_synced()
    ]


def informers_report(
    factory: Callable[[], InformerFactory | None], query: Mapping[str, str]
) -> JSONObject:
    """GET /debug/informers (see the module docstring): every informer of the factory, or
    those of `resource`; `key` adds each one's copy of that object."""
    resource = query.get("resource", "")
    key = query.get("key")
    built = factory()
    informers = [] if built is None else built.informers()
    if resource and not any(inf.resource == resource for inf in informers):
        served = sorted({inf.resource for inf in informers})
        raise DebugRequestError(
            f"resource: no informer of {resource!r} here (informers of: {', '.join(served)})"
        )
    rows: JSONArray = []
    for inf in informers:
        if resource and inf.resource != resource:
            continue
        row: JSONObject = {
            "name": inf.name,
            "resource": inf.resource,
            "synced": inf.has_synced(),
            "resourceVersion": inf.last_resource_version,
            "objects": len(inf.lister),
        }
        if key is not None:
            namespace, _, name = key.rpartition("/")
            held = inf.lister.get(name, namespace)
            row["cached"] = "" if held is None else object_meta(held).resource_version
        rows.append(row)
    return {"informers": rows}


def serve_informers(ctx: ComponentContext, factory: Callable[[], InformerFactory | None]) -> None:
    """Serves `informers_report` of the component's factory (None while it has none: a
    standby's) at GET /debug/informers."""
    ctx.add_debug_handler(INFORMERS_HANDLER, functools.partial(informers_report, factory))


# ---------------------------------------------------------------- the comparer


@dataclass
class _Result:
    trigger: int
    started: float
    finished: float = 0.0
    caches: JSONArray = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> JSONObject:
        return {
            "trigger": self.trigger,
            "started": self.started,
            "finished": self.finished,
            "caches": self.caches,
            "differences": [dict(d.to_dict()) for d in self.differences],
            "errors": list(self.errors),
        }


class CacheComparer:
    """Compares the caches of `sources()` with their truth whenever triggered; see the module
    docstring. `sources` is asked at each comparison (a component's informers may come and go
    with its leadership)."""

    def __init__(
        self,
        component: str,
        sources: Callable[[], Iterable[Source]],
        *,
        clock: Clock,
        catch_up: float = DEFAULT_CATCH_UP,
        interval: float = DEFAULT_INTERVAL,
    ) -> None:
        self._component = component
        self._sources = sources
        self._clock = clock
        self._catch_up = catch_up
        self._interval = interval
        self._triggers = 0
        self._wanted = anyio.Event()
        self._running = False
        self._last: _Result | None = None

    @classmethod
    def wired(
        cls, ctx: ComponentContext, component: str, sources: Callable[[], Iterable[Source]]
    ) -> CacheComparer:
        """A comparer on the component's clock, run by its debug signal (SIGUSR2) and served
        at /debug/caches; the component still runs `run` in its task group."""
        comparer = cls(component, sources, clock=ctx.clock)
        ctx.add_debug_handler(DEBUG_HANDLER, comparer.report)
        ctx.on_debug_signal(comparer.trigger)
        return comparer

    def trigger(self) -> None:
        """Asks `run` for a comparison (SIGUSR2). Triggers while one runs make one more."""
        self._triggers += 1
        self._wanted.set()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Runs a comparison after each trigger, until cancelled."""
        task_status.started()
        while True:
            await self._wanted.wait()
            self._wanted = anyio.Event()
            await self.compare_all()

    async def compare_all(self) -> list[Difference]:
        """Compares every source now, concurrently; logs and keeps the result (in the sources'
        order); returns the differences. A source that fails is an error of the result, never
        of the component."""
        result = _Result(self._triggers, self._clock.now())
        sources = list(self._sources())
        outcomes: list[Comparison | str] = ["not compared"] * len(sources)
        compared: list[Comparison] = []

        async def one(i: int, source: Source) -> None:
            try:
                outcomes[i] = await compare(
                    source, clock=self._clock, catch_up=self._catch_up, interval=self._interval
                )
            except ApiError as e:
                outcomes[i] = f"{e.reason}: {e}"
            except Exception as e:  # a bug: logged, and the component goes on
                logger.exception("cache comparison of %s failed", source.cache)
                outcomes[i] = f"{type(e).__name__}: {e}"

        self._running = True
        try:
            async with anyio.create_task_group() as tg:
                for i, source in enumerate(sources):
                    tg.start_soon(one, i, source)
        finally:
            self._running = False
        for source, outcome in zip(sources, outcomes, strict=True):
            if isinstance(outcome, str):
                result.errors.append(f"{source.cache}: {outcome}")
                logger.warning("Cache comparison of %s failed: %s", source.cache, outcome)
                continue
            compared.append(outcome)
            result.caches.append(
                {
                    "cache": source.cache,
                    "against": source.against,
                    "objects": outcome.objects,
                    "raced": outcome.raced,
                }
            )
            for d in outcome.differences:
                logger.warning("Cache mismatch: %s", d.line())
            result.differences += outcome.differences
        result.finished = self._clock.now()
        self._last = result
        kinds = {
            k: sum(d.kind == k for d in result.differences) for k in (MISSING, REDUNDANT, STALE)
        }
        logger.info(
            "Cache comparison: %d caches, %d objects, %d differences "
            "(%d missing, %d redundant, %d stale), %d errors; %d raced and caught up",
            len(result.caches),
            sum(c.objects for c in compared),
            len(result.differences),
            kinds[MISSING],
            kinds[REDUNDANT],
            kinds[STALE],
            len(result.errors),
            sum(c.raced for c in compared),
        )
        return result.differences

    def report(self, _query: Mapping[str, str] | None = None) -> JSONObject:
        """The JSON of GET /debug/caches: `triggers` received so far, whether a comparison is
        `running`, and the `last` result (None before the first), whose `trigger` is the
        number of triggers received when it started: a reader that saw `triggers` N, sent
        SIGUSR2 and then reads a `last.trigger` > N has a comparison made after its signal."""
        return {
            "component": self._component,
            "triggers": self._triggers,
            "running": self._running,
            "last": None if self._last is None else self._last.to_dict(),
        }

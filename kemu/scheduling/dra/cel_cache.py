"""Device selectors (CEL) as the allocator evaluates them, and kemu's cache of their results.

Upstream (structured/allocator*.go `selectorsMatch`, `isSelectable`) compiles expressions through
a 10-entry LRU (`cel.NewCache`) and caches each (device, request) result only within one
Allocate call. kemu keeps each (expression, driver, device) result across calls: a selector's
result depends on nothing but the expression and the device's content (its driver, attributes,
capacity and allowMultipleAllocations), so a result stays valid until the slice changes, and a
changed slice is a new object whose devices are looked up again. Errors are cached too: a
runtime error on a device is as deterministic as a result.

The evaluator is a protocol; `CelEvaluator` is the real one, on kemu's CEL module
(kemu/machinery/dra_cel.py: upstream's DRA environment on cel-expr-python). Tests may plug in a
table of Python functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Protocol

from kemu.api.v1 import types_pb2
from kemu.machinery import dra_cel
from kemu.machinery.errors import Invalid
from kemu.scheduling.dra.fit_columns import DeviceMask
from kemu.scheduling.dra.pools import PoolCache


class CelCompileError(Exception):
    """The expression does not compile in the DRA environment."""


class CelRuntimeError(Exception):
    """The expression failed while evaluating on a device (a missing attribute, a type error,
    the cost limit)."""


class SelectorEvaluator(Protocol):
    """Evaluates one DRA device selector on one device (upstream cel.CompilationResult
    DeviceMatches on a cel.Device{Driver, Attributes, Capacity, AllowMultipleAllocations})."""

    def evaluate(
        self, expression: str, driver: str, device: types_pb2.Device, device_key: bytes
    ) -> bool:
        """True or False; raises CelCompileError or CelRuntimeError. `device_key` identifies
        the device's content (equal keys: equal devices), for the evaluator's own caching."""
        ...


# Compiled expressions kept (upstream's scheduler keeps 10; kemu's results cache makes a
# compilation rare, a few more are cheap).
COMPILED_EXPRESSIONS: Final = 64
# Device views kept (one per distinct device content being evaluated).
DEVICE_VIEWS: Final = 10_000


class CelEvaluator:
    """SelectorEvaluator on kemu's CEL module: upstream's environment (with
    `device.allowMultipleAllocations` when DRAConsumableCapacity is on)."""

    def __init__(self, *, consumable_capacity: bool) -> None:
        self._compiled = dra_cel.SelectorCache(
            COMPILED_EXPRESSIONS, dra_cel.Features(consumable_capacity=consumable_capacity)
        )
        self._views: dict[tuple[str, bytes], dra_cel.DeviceView | str] = {}

    def evaluate(
        self, expression: str, driver: str, device: types_pb2.Device, device_key: bytes
    ) -> bool:
        try:
            selector = self._compiled.get_or_compile(expression)
        except dra_cel.SelectorCompileError as e:
            raise CelCompileError(e.detail) from None
        view = self._views.get((driver, device_key))
        if view is None:
            try:
                view = dra_cel.DeviceView.of(driver, device)
            except Invalid as e:
                view = str(e)
            if len(self._views) >= DEVICE_VIEWS:
                self._views.clear()
            self._views[(driver, device_key)] = view
        if isinstance(view, str):
            raise CelRuntimeError(view)
        try:
            return selector.matches(view)
        except dra_cel.CELRuntimeError as e:
            raise CelRuntimeError(str(e)) from None


@dataclass(frozen=True, slots=True)
class _Failed:
    compile_error: bool
    message: str


# Upper bound on cached results; past it the cache starts over (a scheduler's working set is
# (classes' and claims' expressions) × devices, far below this in practice).
MAX_RESULTS: Final = 200_000
# Slices whose device keys are remembered (by identity; the slice object is held, so its id is
# not reused while remembered).
MAX_SLICES: Final = 50_000


class CelCache:
    """What the allocator keeps across Allocate calls: results of (expression, driver, device
    content), each slice's device keys, each node's gathered pools (`pools`). One per
    scheduler (or autoscaler simulation); not thread-safe (kemu's Filter runs on one thread)."""

    def __init__(self, evaluator: SelectorEvaluator, *, max_results: int = MAX_RESULTS) -> None:
        self._evaluator = evaluator
        self._max_results = max_results
        self._results: dict[tuple[str, str, bytes], bool | _Failed] = {}
        self._slice_keys: dict[int, tuple[types_pb2.ResourceSlice, list[bytes]]] = {}
        self.pools = PoolCache()
        # The allocator's fit check (Allocator.fit_verdict): per (node, request shape), the
        # node's devices with what the request's selectors say of each, valid while the node's
        # gathered pools are the same list (PoolCache keeps it while nothing changes).
        self.fit_entries: dict[tuple[str, object], tuple[object, object]] = {}
        self.fit_keys: dict[object, object] = {}  # fit_entries' request shapes -> a token
        # The same over a node list at once (Allocator.fit_verdicts): per request shape's
        # token, its entries as columns; the device indices and the allocated mask.
        self.fit_columns: dict[object, object] = {}
        self.device_mask = DeviceMask()
        # The last Allocator's slices split by node (read-only for the Allocators sharing it).
        self.slice_partition: (
            tuple[
                list[types_pb2.ResourceSlice],
                dict[str, list[types_pb2.ResourceSlice]],
                list[types_pb2.ResourceSlice],
            ]
            | None
        ) = None
        # (class expressions, request expressions, driver, device key) → all of them match.
        self._combined: dict[tuple[tuple[str, ...], tuple[str, ...], str, bytes], bool] = {}
        self.evaluations = 0  # how many times the evaluator ran (for the benchmark)

    def device_key(self, s: types_pb2.ResourceSlice, index: int) -> bytes:
        """The content key of a slice's device (its serialized form)."""
        entry = self._slice_keys.get(id(s))
        if entry is None or entry[0] is not s:
            if len(self._slice_keys) >= MAX_SLICES:
                self._slice_keys.clear()
            keys = [d.SerializeToString(deterministic=True) for d in s.spec.devices]
            entry = (s, keys)
            self._slice_keys[id(s)] = entry
        return entry[1][index]

    def selected(
        self, class_exprs: tuple[str, ...], request_exprs: tuple[str, ...], driver: str, key: bytes
    ) -> bool | None:
        """The remembered outcome of a class's and a request's selectors on a device, or None."""
        return self._combined.get((class_exprs, request_exprs, driver, key))

    def remember_selected(
        self,
        class_exprs: tuple[str, ...],
        request_exprs: tuple[str, ...],
        driver: str,
        key: bytes,
        outcome: bool,
    ) -> None:
        if len(self._combined) >= self._max_results:
            self._combined.clear()
        self._combined[(class_exprs, request_exprs, driver, key)] = outcome

    def matches(self, expression: str, driver: str, device: types_pb2.Device, key: bytes) -> bool:
        """The selector's result on the device; raises CelCompileError or CelRuntimeError."""
        cache_key = (expression, driver, key)
        found = self._results.get(cache_key)
        if found is None:
            self.evaluations += 1
            try:
                found = self._evaluator.evaluate(expression, driver, device, key)
            except CelCompileError as e:
                found = _Failed(True, str(e))
            except CelRuntimeError as e:
                found = _Failed(False, str(e))
            if len(self._results) >= self._max_results:
                self._results.clear()
            self._results[cache_key] = found
        if isinstance(found, _Failed):
            if found.compile_error:
                raise CelCompileError(found.message)
            raise CelRuntimeError(found.message)
        return found

"""Device selectors (CEL) as the allocator evaluates them, and kemu's cache of their results.

Upstream (structured/allocator*.go `selectorsMatch`, `isSelectable`) compiles expressions through
a 10-entry LRU (`cel.NewCache`) and caches each (device, request) result only within one
Allocate call. kemu keeps each (expression, driver, device) result across calls: a selector's
result depends on nothing but the expression and the device's content (its driver, attributes,
capacity and allowMultipleAllocations), so a result stays valid until the slice changes, and a
changed slice is a new object whose devices are looked up again. Errors are cached too: a
runtime error on a device is as deterministic as a result.

The evaluator (the CEL environment) is a protocol here; the scheduler plugs in kemu's CEL
module. Tests may plug in a table of Python functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Protocol

from kemu.api.v1 import types_pb2


class CelCompileError(Exception):
    """The expression does not compile in the DRA environment."""


class CelRuntimeError(Exception):
    """The expression failed while evaluating on a device (a missing attribute, a type error,
    the cost limit)."""


class SelectorEvaluator(Protocol):
    """Evaluates one DRA device selector on one device (upstream cel.CompilationResult
    DeviceMatches on a cel.Device{Driver, Attributes, Capacity, AllowMultipleAllocations})."""

    def evaluate(self, expression: str, driver: str, device: types_pb2.Device) -> bool:
        """True or False; raises CelCompileError or CelRuntimeError."""
        ...


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
    """Results of (expression, driver, device content) across Allocate calls. One per
    scheduler (or autoscaler simulation); not thread-safe (kemu's Filter runs on one thread)."""

    def __init__(self, evaluator: SelectorEvaluator, *, max_results: int = MAX_RESULTS) -> None:
        self._evaluator = evaluator
        self._max_results = max_results
        self._results: dict[tuple[str, str, bytes], bool | _Failed] = {}
        self._slice_keys: dict[int, tuple[types_pb2.ResourceSlice, list[bytes]]] = {}
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

    def matches(self, expression: str, driver: str, device: types_pb2.Device, key: bytes) -> bool:
        """The selector's result on the device; raises CelCompileError or CelRuntimeError."""
        cache_key = (expression, driver, key)
        found = self._results.get(cache_key)
        if found is None:
            self.evaluations += 1
            try:
                found = self._evaluator.evaluate(expression, driver, device)
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

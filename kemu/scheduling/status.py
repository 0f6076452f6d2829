"""Outcomes of plugins and extension points (upstream framework.Status).

A plugin never raises to say no: it returns a Status. An exception escaping a plugin is a bug;
the runtime turns it into an Error status that names the plugin.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final


class Code(enum.IntEnum):
    SUCCESS = 0
    ERROR = 1
    # The pod does not fit now; preemption may help.
    UNSCHEDULABLE = 2
    # The pod does not fit and preemption cannot help (e.g. the node is missing a label).
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    # Permit: the pod waits for approval.
    WAIT = 4
    # The plugin has nothing to do for this pod at this extension point.
    SKIP = 5
    # PreEnqueue/Filter: the pod waits for something outside the scheduler.
    PENDING = 6


_NAMES: Final = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


@dataclass(frozen=True, slots=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""  # the plugin that produced the status (set by the runtime)
    error: BaseException | None = None

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_wait(self) -> bool:
        return self.code == Code.WAIT

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending: a 'no', not a failure."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def is_error(self) -> bool:
        return self.code == Code.ERROR

    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        if self.plugin == plugin:
            return self
        return Status(self.code, self.reasons, plugin, self.error)

    def code_name(self) -> str:
        return _NAMES[self.code]

    def __str__(self) -> str:
        text = f"{self.code_name()}"
        if self.plugin:
            text += f" ({self.plugin})"
        if self.reasons:
            text += f": {self.message()}"
        return text


SUCCESS: Final = Status()
SKIP: Final = Status(Code.SKIP)


def unschedulable(*reasons: str, plugin: str = "") -> Status:
    return Status(Code.UNSCHEDULABLE, reasons, plugin)


def unresolvable(*reasons: str, plugin: str = "") -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons, plugin)


def as_error(err: BaseException | str, *, plugin: str = "") -> Status:
    if isinstance(err, str):
        return Status(Code.ERROR, (err,), plugin, RuntimeError(err))
    return Status(Code.ERROR, (str(err) or type(err).__name__,), plugin, err)


def wait(reason: str = "", *, plugin: str = "") -> Status:
    return Status(Code.WAIT, (reason,) if reason else (), plugin)

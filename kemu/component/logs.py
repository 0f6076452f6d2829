"""Process logging: klog-style single lines on stderr.

Contract: after `setup_logging(verbosity, component)` every record goes to stderr as
    I1122 03:19:28.123456   12345 schedule_one.py:42] message
(level letter I/W/E/F, UTC month-day and time with microseconds, process id, file:line, the
message). A traceback, if any, follows on the next lines; nothing else spans lines.

Verbosity mirrors klog's `-v`: `logger.log(V(n), ...)` is emitted when the process runs with
`-v >= n`. V(0) is INFO (always shown), V(1)..V(3) lie between INFO and DEBUG, V(4) is DEBUG
(so `logger.debug` shows at -v=4) and V(5) is below DEBUG (trace).
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Final, TextIO

MAX_VERBOSITY: Final = 5
_V_LEVELS: Final = (
    logging.INFO,
    logging.INFO - 1,
    logging.INFO - 2,
    logging.INFO - 3,
    logging.DEBUG,
    logging.DEBUG - 1,
)


def V(n: int) -> int:
    """The logging level of klog's V(n); n is clamped to 0..MAX_VERBOSITY."""
    return _V_LEVELS[max(0, min(n, MAX_VERBOSITY))]


def level_for_verbosity(verbosity: int) -> int:
    """The root logger level for `-v verbosity`."""
    return V(verbosity)


def _letter(levelno: int) -> str:
    if levelno >= logging.CRITICAL:
        return "F"
    if levelno >= logging.ERROR:
        return "E"
    if levelno >= logging.WARNING:
        return "W"
    return "I"


class KlogFormatter(logging.Formatter):
    """Formats a record with the klog header; see the module docstring."""

    def format(self, record: logging.LogRecord) -> str:
        seconds = int(record.created)
        micros = int((record.created - seconds) * 1_000_000)
        stamp = time.strftime("%m%d %H:%M:%S", time.gmtime(seconds))
        header = (
            f"{_letter(record.levelno)}{stamp}.{micros:06d} {record.process:>7} "
            f"{record.filename}:{record.lineno}]"
        )
        line = f"{header} {record.getMessage()}"
        if record.exc_info:
            line = f"{line}\n{self.formatException(record.exc_info)}"
        elif record.exc_text:
            line = f"{line}\n{record.exc_text}"
        if record.stack_info:
            line = f"{line}\n{self.formatStack(record.stack_info)}"
        return line


class _ComponentFilter(logging.Filter):
    """Tags each record with the component name (record.component) for custom handlers."""

    def __init__(self, component: str) -> None:
        super().__init__()
        self.component = component

    def filter(self, record: logging.LogRecord) -> bool:
        record.component = self.component
        return True


_HANDLER_MARK: Final = "_kemu_component_handler"


def setup_logging(verbosity: int, component: str, *, stream: TextIO | None = None) -> None:
    """Send all logging to `stream` (stderr) in klog format at `-v verbosity`.

    Idempotent: a handler installed by an earlier call is replaced, other handlers (pytest's
    capture, for example) are left alone.
    """
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, _HANDLER_MARK, False):
            root.removeHandler(handler)
            handler.close()
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(KlogFormatter())
    handler.addFilter(_ComponentFilter(component))
    setattr(handler, _HANDLER_MARK, True)
    root.addHandler(handler)
    root.setLevel(level_for_verbosity(verbosity))
    logging.captureWarnings(True)

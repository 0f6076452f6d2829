from __future__ import annotations

import io
import logging
import os
import re
from collections.abc import Iterator

import pytest

from kemu.component.logs import V, level_for_verbosity, setup_logging

HEADER = re.compile(r"^([IWEF])(\d{4}) (\d\d:\d\d:\d\d\.\d{6}) +(\d+) ([\w.]+):(\d+)\] (.*)$")


@pytest.fixture
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)


def test_lines_have_the_klog_header(restore_root_logger: None) -> None:
    stream = io.StringIO()
    setup_logging(0, "scheduler", stream=stream)
    logger = logging.getLogger("kemu.test")
    logger.info("pod %s/%s scheduled", "default", "p1")
    logger.warning("careful")
    logger.error("broken")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3
    matches = [HEADER.match(line) for line in lines]
    assert all(matches), lines
    first = matches[0]
    assert first is not None
    assert first.group(1) == "I"
    assert first.group(4) == str(os.getpid())
    assert first.group(5) == "test_logs.py"
    assert first.group(7) == "pod default/p1 scheduled"
    assert [m.group(1) for m in matches if m] == ["I", "W", "E"]


def test_verbosity_filters_like_klog(restore_root_logger: None) -> None:
    assert level_for_verbosity(0) == logging.INFO
    assert V(4) == logging.DEBUG
    assert V(1) > V(2) > V(3) > V(4) > V(5)
    stream = io.StringIO()
    setup_logging(2, "kubelet", stream=stream)
    logger = logging.getLogger("kemu.test")
    logger.log(V(2), "shown at v2")
    logger.log(V(3), "hidden at v2")
    logger.debug("hidden debug")
    assert "shown at v2" in stream.getvalue()
    assert "hidden" not in stream.getvalue()


def test_setup_is_idempotent_and_keeps_foreign_handlers(restore_root_logger: None) -> None:
    first, second = io.StringIO(), io.StringIO()
    before = len(logging.getLogger().handlers)
    setup_logging(0, "a", stream=first)
    setup_logging(0, "a", stream=second)
    assert len(logging.getLogger().handlers) == before + 1
    logging.getLogger("kemu.test").info("once")
    assert first.getvalue() == ""
    assert "once" in second.getvalue()


def test_exception_traceback_follows_the_line(restore_root_logger: None) -> None:
    stream = io.StringIO()
    setup_logging(0, "a", stream=stream)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("kemu.test").exception("failed")
    lines = stream.getvalue().splitlines()
    assert HEADER.match(lines[0]) and lines[0].endswith("] failed")
    assert lines[-1] == "RuntimeError: boom"

"""The hollow kubelet's node-control lines (kemu.machinery.node_control): what the cloud
writes parses back to what it meant; anything else is refused, naming the line."""

from __future__ import annotations

import pytest

from kemu.machinery.node_control import (
    ADD,
    REMOVE,
    add_line,
    is_removed,
    parse_command,
    remove_line,
    removed_line,
)


def test_the_lines_the_cloud_writes_parse_back() -> None:
    assert parse_command(add_line("g-0", "kemu://g/g-0")) == (ADD, "g-0", "kemu://g/g-0")
    assert parse_command(add_line("g-1", "")) == (ADD, "g-1", "")
    assert parse_command(remove_line("g-0")) == (REMOVE, "g-0", "")
    assert is_removed(removed_line("g-0"), "g-0")
    assert not is_removed(removed_line("g-0"), "g-1")
    assert not is_removed("", "g-0")


@pytest.mark.parametrize(
    "line", ["", "add g-0", "add g-0 p extra", "remove", "remove a b", "start g-0 p"]
)
def test_other_lines_are_refused_naming_the_line(line: str) -> None:
    with pytest.raises(ValueError, match="empty line" if not line else repr(line.strip())):
        parse_command(line)

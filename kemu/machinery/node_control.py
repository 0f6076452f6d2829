"""The line protocol of a hollow kubelet whose nodes its parent adds and removes at run time
(`python -m kubelet --node-control stdin`, kubelet/node_control.py; the emulated cloud's
`--kubelet-processes node-group`, cloud/kubelets.py). One command a line on the kubelet's stdin:

    add NAME PROVIDER_ID    start node NAME, registered with spec.providerID PROVIDER_ID
                            ("-": none)
    remove NAME             stop node NAME; answered `removed NAME` on its stdout once stopped
"""

from __future__ import annotations

from typing import Final

ADD: Final = "add"
REMOVE: Final = "remove"
REMOVED: Final = "removed"
NO_PROVIDER_ID: Final = "-"


def add_line(name: str, provider_id: str) -> str:
    return f"{ADD} {name} {provider_id or NO_PROVIDER_ID}\n"


def remove_line(name: str) -> str:
    return f"{REMOVE} {name}\n"


def removed_line(name: str) -> str:
    return f"{REMOVED} {name}\n"


def parse_command(line: str) -> tuple[str, str, str]:
    """(command, name, providerID) of one command line; ValueError naming what is wrong."""
    words = line.split()
    if not words:
        raise ValueError("empty line")
    if words[0] == ADD and len(words) == 3:
        return ADD, words[1], "" if words[2] == NO_PROVIDER_ID else words[2]
    if words[0] == REMOVE and len(words) == 2:
        return REMOVE, words[1], ""
    raise ValueError(f"not `{ADD} NAME PROVIDER_ID` or `{REMOVE} NAME`: {line.strip()!r}")


def is_removed(answer: str, name: str) -> bool:
    """Whether `answer` (a line of the kubelet's stdout) says node `name` is stopped."""
    return answer.split() == [REMOVED, name]

"""What every kemuctl command shares: its environment, user errors, names of kinds and objects."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import TextIO

from kemu.client.interface import DEFAULT_NAMESPACE, ApiClient
from kemu.component.clock import Clock, RealClock
from kemu.machinery import kinds
from kemu.machinery.errors import ApiError


class CtlError(Exception):
    """A user error: printed as one `error: <message>` line, exit code 1."""


@dataclass
class Context:
    """A command's world: the API, its streams and the clock (ages are relative to it)."""

    client: ApiClient
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    stdin: TextIO = field(default_factory=lambda: sys.stdin)
    clock: Clock = field(default_factory=RealClock)
    namespace: str = DEFAULT_NAMESPACE
    # True when -n was given: a manifest in another namespace is then an error, as in kubectl.
    namespace_explicit: bool = False

    def print(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def warn(self, text: str) -> None:
        self.err.write(text + "\n")
        self.err.flush()


def lookup_kind(name: str) -> kinds.Kind:
    try:
        return kinds.lookup(name)
    except ApiError:
        raise CtlError(f'the server doesn\'t have a resource type "{name}"') from None


def group_of(kind: kinds.Kind) -> str:
    return kind.api_version.rpartition("/")[0]


def qualified(kind: kinds.Kind) -> str:
    """The name kubectl prints for a kind: pod, priorityclass.scheduling.k8s.io."""
    group = group_of(kind)
    return f"{kind.kind.lower()}.{group}" if group else kind.kind.lower()


def ref(kind: kinds.Kind, name: str) -> str:
    """pod/x, priorityclass.scheduling.k8s.io/high, as `-o name` and apply print them."""
    return f"{qualified(kind)}/{name}"


def namespace_for(ctx: Context, kind: kinds.Kind, given: str = "") -> str:
    if not kind.namespaced:
        return ""
    return given or ctx.namespace


def split_targets(args: list[str], *, require_name: bool) -> list[tuple[kinds.Kind, str | None]]:
    """Reads `KIND [NAME...]` or `KIND/NAME [KIND/NAME...]` into (kind, name) pairs.

    A bare KIND yields one (kind, None) pair, meaning every object of the kind.
    """
    if not args:
        raise CtlError("you must specify the type of resource")
    if "/" in args[0]:
        out: list[tuple[kinds.Kind, str | None]] = []
        for arg in args:
            kind_name, sep, name = arg.partition("/")
            if not sep or not kind_name or not name:
                raise CtlError(
                    f"there is no need to specify a resource type as a separate argument when "
                    f'passing arguments in resource/name form (e.g. "pod/x"), got "{arg}"'
                )
            out.append((lookup_kind(kind_name), name))
        return out
    kinds_given = [lookup_kind(k) for k in args[0].split(",") if k]  # kubectl's deploy,rs
    if not kinds_given:
        raise CtlError("you must specify the type of resource")
    names = args[1:]
    for name in names:
        if "/" in name:
            raise CtlError(
                "there is no need to specify a resource type as a separate argument when "
                f'passing arguments in resource/name form, got "{name}"'
            )
    if not names:
        if require_name:
            raise CtlError(f"resource name may not be empty: {qualified(kinds_given[0])}")
        return [(kind, None) for kind in kinds_given]
    return [(kind, name) for kind in kinds_given for name in names]


def plain(value: object) -> str:
    """A JSON value as kubectl's jsonpath prints it: strings bare, true/false, JSON otherwise."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"))


def format_api_error(e: ApiError) -> str:
    """The server's message, with the field causes it does not already spell out."""
    message = e.message
    missing = [c for c in e.causes if c.field and c.field not in message]
    if missing:
        message += "; " + "; ".join(f"{c.field}: {c.message}" for c in missing)
    return message

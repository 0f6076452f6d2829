"""What the cloud keeps under --state-dir: its instances and counters, in state.json.

The file is the cloud's truth across restarts: every change is written before the call that
made it returns, atomically (a temporary file, fsync, rename), so a crash leaves the old or the
new state, never a torn one. Instance names are `<group>-<n>` with n from a per-group counter
that only grows, so a restarted cloud never reuses (or duplicates) a name.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final

from cloud.config import Failures
from kemu.machinery.jsonvalue import JSONObject

STATE_FILE: Final = "state.json"
_VERSION: Final = 1

CREATING: Final = "creating"
DELETING: Final = "deleting"


def provider_id(group: str, name: str) -> str:
    return f"kemu://{group}/{name}"


def parse_provider_id(pid: str) -> tuple[str, str] | None:
    """(group, instance) of a kemu providerID, None for anything else."""
    rest = pid.removeprefix("kemu://")
    if rest == pid:
        return None
    group, sep, name = rest.partition("/")
    if not sep or not group or not name or "/" in name:
        return None
    return group, name


@dataclass
class InstanceRecord:
    name: str
    group: str
    created_at: float
    """Wall-clock seconds; the kubelet starts --provision-delay later."""
    phase: str = CREATING
    """CREATING (up or coming up: whether it runs is read from its Node) or DELETING."""
    never_ready: bool = False
    """Injected: no kubelet ever starts."""
    error_code: str = ""
    error_message: str = ""
    error_class: int = 0
    pid: int = 0
    """The kubelet's process id while a cloud runs it (a leftover is killed on start)."""

    @property
    def provider_id(self) -> str:
        return provider_id(self.group, self.name)

    @property
    def runs_kubelet(self) -> bool:
        return self.phase == CREATING and not self.never_ready and not self.error_code


@dataclass
class GroupRecord:
    next_index: int = 0
    never_ready: int = 0
    """Injected failures left: the next never_ready instances never come up."""
    out_of_capacity: bool = False
    config_failures: dict[str, object] = field(default_factory=dict)
    """The config's failures when last applied: a config edit re-applies them."""

    def apply_config(self, failures: Failures) -> None:
        if self.config_failures != asdict(failures):
            self.config_failures = asdict(failures)
            self.set_failures(failures)

    def set_failures(self, failures: Failures) -> None:
        self.never_ready = failures.never_ready
        self.out_of_capacity = failures.out_of_capacity


@dataclass
class CloudState:
    groups: dict[str, GroupRecord] = field(default_factory=dict)
    instances: dict[str, InstanceRecord] = field(default_factory=dict)

    def of_group(self, group: str) -> list[InstanceRecord]:
        return [i for i in self.instances.values() if i.group == group]

    def to_json(self) -> JSONObject:
        return {
            "version": _VERSION,
            "groups": {name: asdict(g) for name, g in sorted(self.groups.items())},
            "instances": [asdict(i) for _, i in sorted(self.instances.items())],
        }

    @classmethod
    def from_json(cls, data: object) -> CloudState:
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            raise ValueError(f"not a version {_VERSION} cloud state")
        groups = {name: GroupRecord(**g) for name, g in data.get("groups", {}).items()}
        instances = {i["name"]: InstanceRecord(**i) for i in data.get("instances", [])}
        return cls(groups=groups, instances=instances)


class StateStore:
    """state.json in a directory; `save` is atomic."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / STATE_FILE

    def load(self) -> CloudState:
        """The saved state, an empty one when there is none; ValueError when unreadable."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return CloudState()
        try:
            return CloudState.from_json(json.loads(text))
        except (ValueError, TypeError, KeyError) as e:
            raise ValueError(f"{self.path}: {e}") from None

    def save(self, state: CloudState) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with tmp.open("w") as f:
            json.dump(state.to_json(), f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        dir_fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

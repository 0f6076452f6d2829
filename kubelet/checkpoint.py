"""The per-node checkpoint: which pods the kubelet admitted, with their allocation and the
state of their (simulated) containers, so that a kubelet killed and restarted neither re-admits
them nor loses track of a termination (upstream's allocation checkpoint plus the runtime's own
memory of its containers).

One JSON file per node, `<root-dir>/checkpoints/<node>.json`, replaced atomically (written to a
temporary file in the same directory, then renamed over the old one): a reader sees the old or
the new file, never a torn one. It is not fsynced: the crash to survive is the kubelet's
(SIGKILL), not the machine's.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from kubelet.runtime import PodRuntime

logger = logging.getLogger(__name__)

VERSION: Final = 1


class Checkpoint:
    """The checkpoint file of one node."""

    def __init__(self, root_dir: Path | None, node_name: str) -> None:
        self.path = (
            None if root_dir is None else Path(root_dir) / "checkpoints" / f"{node_name}.json"
        )
        self.writes = 0

    def load(self) -> list[PodRuntime]:
        """The pods of the last save; none when there is no file (or it is unreadable: logged,
        and the kubelet starts afresh as upstream does with a corrupt checkpoint)."""
        if self.path is None:
            return []
        try:
            data = json.loads(self.path.read_text())
            if data.get("version") != VERSION:
                raise ValueError(f"unknown checkpoint version {data.get('version')!r}")
            return [PodRuntime.from_json(p) for p in data["pods"]]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, KeyError, TypeError) as e:
            logger.error("ignoring the unreadable checkpoint %s: %s", self.path, e)
            return []

    def save(self, pods: Iterable[PodRuntime]) -> None:
        if self.path is None:
            return
        data = {"version": VERSION, "pods": [p.to_json() for p in pods]}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, separators=(",", ":"))
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        self.writes += 1

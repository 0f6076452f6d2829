"""Reading a trace file of any format kemu reads (told by its first bytes), and writing
SimKube's."""

from __future__ import annotations

from pathlib import Path

from kemu.trace import kss, simkube
from kemu.trace.model import Trace


class TraceFileError(ValueError):
    """The file cannot be read as a trace; the message names it."""


def load(path: Path) -> tuple[Trace, str]:
    """The trace in `path` and its format ("simkube" or "kss")."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise TraceFileError(f"{path}: {e.strerror}") from None
    try:
        if simkube.looks_like(data):
            return simkube.read(data), "simkube"
        if kss.looks_like(data):
            return kss.read(data.decode()), "kss"
    except (simkube.TraceFormatError, kss.KssFormatError, UnicodeDecodeError) as e:
        raise TraceFileError(f"{path}: {e}") from None
    raise TraceFileError(
        f"{path}: neither a SimKube trace (msgpack) nor a kube-scheduler-simulator record "
        "(JSON lines)"
    )


def save(path: Path, trace: Trace) -> None:
    """Writes SimKube's format, atomically (a reader never sees half a file)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(simkube.write(trace))
    tmp.replace(path)

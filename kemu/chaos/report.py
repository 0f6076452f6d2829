"""The result of a chaos run: the summary table, the JSON, and the replay hint."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from kemu.chaos.checks import percentile
from kemu.machinery.jsonvalue import JSONObject


@dataclass(frozen=True)
class TimelineEntry:
    at: float
    """Seconds after the workload started."""
    what: str


@dataclass
class Report:
    seed: int
    profile: str
    faults: int
    timeline: list[TimelineEntry]
    violations: list[str]
    pods_created: int
    pods_expected: int
    pods_bound: int
    """Pods that exist at the end and are bound."""
    failed_writes: int
    acknowledged_writes: int
    recorded_versions: int
    recovery_s: list[float] = field(default_factory=list)
    failover_s: list[float] = field(default_factory=list)
    settle_s: float | None = None
    settle_timeout: float = 0.0
    faults_by_kind: dict[str, int] = field(default_factory=dict)
    scaling: dict[str, int] | None = None
    """The scaling phase's figures (waves, scale-ups, ...); None without one."""
    stale_leader_writes: list[str] = field(default_factory=list)
    """Writes made as leader while another held the lease (kemu.chaos.leaders): upstream's
    window, a figure in the default mode; with fencing each is also a violation."""
    fenced_writes: int = 0
    """Writes the apiservers refused by their fencing token (with fencing: the stale leader
    writes that did not land)."""
    fencing: bool = False
    clock: str = "real"
    """The cluster's clock mode (`--clock`)."""
    pods_ever_bound: int = 0
    """Pods bound at some time in the run (also those deleted since: the churn's, the
    preemptions' victims)."""

    @property
    def ok(self) -> bool:
        return not self.violations

    def stats(self, values: list[float]) -> dict[str, float | None]:
        return {"p50": _round(percentile(values, 50)), "p99": _round(percentile(values, 99))}

    def to_json(self) -> JSONObject:
        return {
            "seed": self.seed,
            "profile": self.profile,
            "fencing": self.fencing,
            "clock": self.clock,
            "faults": self.faults,
            "violations": [*self.violations],
            "pods_created": self.pods_created,
            "pods_expected": self.pods_expected,
            "pods_bound": self.pods_bound,
            "pods_ever_bound": self.pods_ever_bound,
            "acknowledged_writes": self.acknowledged_writes,
            "failed_writes": self.failed_writes,
            "recorded_versions": self.recorded_versions,
            "recovery_s": {**self.stats(self.recovery_s), "count": len(self.recovery_s)},
            "leader_failover_s": {**self.stats(self.failover_s), "count": len(self.failover_s)},
            "settle_s": _round(self.settle_s),
            "stale_leader_writes": len(self.stale_leader_writes),
            "stale_leader_write_details": [*self.stale_leader_writes],
            "fenced_writes": self.fenced_writes,
            "faults_by_kind": {**self.faults_by_kind},
            "scaling": None if self.scaling is None else {**self.scaling},
            "timeline": [{"at": round(e.at, 3), "what": e.what} for e in self.timeline],
        }

    def write_json(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(self.to_json(), f, indent=2)
            f.write("\n")

    def table(self) -> str:
        rec, fail = self.stats(self.recovery_s), self.stats(self.failover_s)
        settle = (
            f"{self.settle_s:.1f}s" if self.settle_s is not None else f"> {self.settle_timeout:g}s"
        )
        rows = [
            ("seed", str(self.seed)),
            ("profile", self.profile + (" (fencing)" if self.fencing else "")),
            ("clock", self.clock),
            ("faults injected", str(self.faults)),
            *((f"  {kind}", str(n)) for kind, n in self.faults_by_kind.items()),
            ("pods created", str(self.pods_created)),
            ("pods expected bound / bound", f"{self.pods_expected} / {self.pods_bound}"),
            ("pods ever bound", str(self.pods_ever_bound)),
            ("writes acknowledged / failed", f"{self.acknowledged_writes} / {self.failed_writes}"),
            ("pod versions recorded", str(self.recorded_versions)),
            (
                "recovery after restart p50 / p99",
                f"{_fmt(rec['p50'])} / {_fmt(rec['p99'])} (n={len(self.recovery_s)})",
            ),
            (
                "leader failover p50 / p99",
                f"{_fmt(fail['p50'])} / {_fmt(fail['p99'])} (n={len(self.failover_s)})",
            ),
            ("all fitting pods bound after last fault", settle),
            (
                "stale leader writes / fenced",
                f"{len(self.stale_leader_writes)} / {self.fenced_writes}",
            ),
            *(
                [("scaling (waves, ups, downs, nodes deleted)", _scaling(self.scaling))]
                if self.scaling is not None
                else []
            ),
            ("violations", str(len(self.violations))),
            ("result", "PASS" if self.ok else "FAIL"),
        ]
        width = max(len(k) for k, _ in rows)
        lines = [f"{k:<{width}}  {v}" for k, v in rows]
        if self.stale_leader_writes:
            lines.append("")
            lines.append(
                "stale leader writes (made as leader while another held the lease):"
                if self.fencing
                else "stale leader writes (upstream's unfenced window, not a violation):"
            )
            lines += [f"  - {w}" for w in self.stale_leader_writes[:20]]
        if self.violations:
            lines.append("")
            lines.append("violations:")
            lines += [f"  - {v}" for v in self.violations[:50]]
            if len(self.violations) > 50:
                lines.append(f"  ... and {len(self.violations) - 50} more (see --json)")
            lines.append("")
            lines.append("fault timeline:")
            lines += [f"  t+{e.at:7.2f}s  {e.what}" for e in self.timeline]
            lines.append("")
            lines.append(
                f"replay: python -m kemu.chaos --profile {self.profile} --seed {self.seed}"
                + (" --fencing" if self.fencing else "")
                + (f" --clock {self.clock}" if self.clock != "real" else "")
            )
        return "\n".join(lines)


def _scaling(s: dict[str, int]) -> str:
    return (
        f"{s['waves']}, {s['scale_ups']}, {s['scale_downs']}, {s['nodes_deleted']} "
        f"(max target {s['max_target']})"
    )


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}s"

"""bench/tls.py's summary: per-edge CPU a call and the TLS/plain, RBAC/TLS ratios."""

from __future__ import annotations

from bench.tls import Round, summary


def test_a_ratio_over_an_edge_that_measured_no_cpu_is_nan_not_a_crash() -> None:
    """A short run can measure 0 CPU for an edge (the process CPU clock counts 10 ms ticks): a
    landing's CI got `tls get ... apiserver 0 us/call` and the summary divided by it."""
    rounds = [
        Round("plain", "get", 30, 0.04, 0.02, 0.01),
        Round("tls", "get", 30, 0.02, 0.0, 0.01),
        Round("rbac", "get", 30, 0.05, 0.02, 0.01),
    ]
    lines = summary(rounds, ("get",))
    assert "tls   get      apiserver 0 us/call, client 333 us/call, 1500 calls/s" in lines
    assert (
        "tls/plain get      apiserver x0.00 (-667 us), client x1.00 (+0 us), calls/s x2.00" in lines
    )
    assert (
        "rbac/tls get      apiserver xnan (+667 us), client x1.00 (+0 us), calls/s x0.40" in lines
    )

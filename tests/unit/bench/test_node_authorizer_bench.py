"""`python -m bench node_authorizer` at a small size: every row is measured and each decision
is the one expected (the benchmark asserts them)."""

from __future__ import annotations

from bench.node_authorizer import run


def test_the_node_authorizer_benchmark_measures_every_row() -> None:
    rows = run(nodes=20, pods=200, decisions=50, seed=3)
    labels = [label for label, _, _ in rows]
    assert labels[0] == "graph build, per event"
    assert sum(label.startswith("decision:") for label in labels) == 6
    assert labels[-3:] == [
        "update: a pod bound (ADDED)",
        "update: a pod's status (MODIFIED, edges kept)",
        "update: a pod deleted (DELETED)",
    ]
    assert all(us >= 0 for _, us, _ in rows)

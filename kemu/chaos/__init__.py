"""The chaos harness: a running kemu cluster broken on a seeded schedule while a workload
runs, every pod version recorded through watches, and invariants checked afterwards.

    python -m kemu.chaos [--profile ci|full] [--seed N] [--json FILE] [--workload FILE]

`schedule` makes the fault timeline from a seed (pure), `workload` reads the workload format,
`checks` holds the pure checkers over recorded histories, `runner` drives real processes
(kemu.testing.Cluster) and `report` prints the table and the JSON.
"""

"""The version-skew matrix: cells of component versions generated from upstream's skew policy
(matrix.yaml, policy.py), a scenario pack run per cell with expectations computed from the
cell's versions and gates (expect.py, scenarios.py, runner.py) and the CLI (cli.py)."""

"""Integration tests of the controller-manager's controllers and workloads."""

"""Integration tests of the scheduler (filters, preemption, nominated nodes, decisions, plugins)."""

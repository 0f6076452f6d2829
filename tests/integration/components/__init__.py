"""Integration tests of what every component shares: flags, leader election, the cluster clock, determinism."""

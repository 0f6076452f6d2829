"""Integration tests of the test harness: fork server, pytest plugin, fake client's contract, fault proxy."""

"""Integration tests of the drivers: traces, what-if, chaos, version skew, timelines, benches."""

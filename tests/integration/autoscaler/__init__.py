"""Integration tests of the cluster autoscaler and the emulated cloud."""

"""Integration tests of the kubelet (pod states, resize, node status)."""

"""Integration tests of the command lines: kemuctl, the real kubectl, the Python kubernetes client."""

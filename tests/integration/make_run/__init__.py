"""Integration tests of the local cluster as `make run` starts it (the Procfile under honcho)."""

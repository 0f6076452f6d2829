"""Malformed requests thrown at every listening edge: the catalog (cases), how one is sent and
judged (send), and the `python -m bench fuzz` driver (driver)."""

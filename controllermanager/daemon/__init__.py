"""The DaemonSet controller (upstream pkg/controller/daemon), split as upstream's files:
daemon_controller.py (handlers, manage, syncNodes, status) and update.py (the rolling update)."""

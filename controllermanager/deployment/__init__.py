"""The Deployment controller (upstream pkg/controller/deployment), split as upstream's files:
deployment_controller.py, sync.py, rolling.py, recreate.py, progress.py."""

"""The Job controller (upstream pkg/controller/job), split as upstream's files:
job_controller.py, tracking_utils.py, backoff_utils.py, utils.py."""

"""API Priority and Fairness (issue #58 item 3): upstream's k8s.io/apiserver
pkg/util/flowcontrol and pkg/server/filters/priority-and-fairness.go.

- `match.py`: a request's FlowSchema, priority level and flow (match.go);
- `shufflesharding.py`: the dealer that picks a flow's hand of queues (shufflesharding.go);
- `queueset.py`: a limited level's queues, seats and fair queuing (fairqueuing/queueset);
- `apf_filter.py`: the levels' concurrency limits from the server's total (apf_controller.go),
  the list work estimator's seats, Retry-After (dropped_requests_tracker.go), the metrics, and
  the limiter both edges call (the filter), in place of the max-in-flight one.
"""

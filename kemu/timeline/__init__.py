"""Pictures of a run (issue #32 item 5): what the cluster did to its pods and nodes over time,
recorded from the API and drawn as one self-contained HTML page.

`model` is the record (pure: fed with API objects, times from an injected clock), `record`
fills one through informers of pods, nodes and Events, `render` draws it (pure). The drivers
(`python -m kemu.chaos`, `python -m bench scheduler_perf` and `scale`) take `--html FILE`.
Test and driver support, as kemu.testing: no process imports it. Nothing is re-exported here.
"""

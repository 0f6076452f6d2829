"""Traces (issue #33): what a cluster did, as SimKube records it, read, written, recorded from
a running kemu cluster and replayed on a fresh one in virtual time; `python -m kemu.trace`.

The readers and writers (`model`, `simkube`, `kss`), the conversion of a trace's objects into
kemu's (`objects`), the cluster description (`cluster_config`) and the metrics and differences
(`report`, `diff`) are pure; `recorder` and `replay` talk to a cluster. docs/traces.md.
"""

"""The base every kemu process builds on.

version (emulated versions), featuregate (the versioned gate table), options (common flags),
logs (klog-style lines), clock (real and fake time), health and metrics (the HTTP endpoint and
per-component registry), runner (lifecycle: signals, drain, grace period, retry helper).
Import the submodules directly; this package re-exports nothing.
"""

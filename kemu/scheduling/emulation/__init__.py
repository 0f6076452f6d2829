"""kemu's emulation plugins: out-of-tree plugins (not upstream's in-tree set) that make the
scenarios upstream reaches with its integration tests' plugins or with real volume
provisioning reproducible in a cluster of emulated processes.

- SlowPreBind (slow_pre_bind): a PreBind that takes time or fails, by pod annotation (the
  binding-cycle scenarios of KEP-5278).
- WaitingPermit (waiting_permit): a Permit that makes pods wait, allowed or rejected later.
- TokenFilter (token_filter): a PreFilter/Filter by node tokens, with AddPod/RemovePod (the
  preemption scenarios S-PRE-2/3).
- NodePoolPlacement (node_pool_placement): upstream's test PlacementGenerate plugin, a
  placement of the nodes of one `pool` (scheduler_perf podgroup/tas/, KEP-5732).

None runs unless a profile enables it. Like upstream's out-of-tree plugins (cmd/kube-scheduler
app.WithPlugin, merged with the in-tree registry by framework/runtime Registry.Merge), they are
merged explicitly where a registry is built: `registry()` here, `merge` in
kemu.scheduling.plugins.registry, and kemu.scheduling.config.scheduler_registry.
"""

from __future__ import annotations

from kemu.scheduling.emulation import (
    node_pool_placement,
    slow_pre_bind,
    token_filter,
    waiting_permit,
)
from kemu.scheduling.plugins.registry import Registry

__all__ = ["registry"]


def registry() -> Registry:
    """The emulation plugins, by name."""
    return {
        slow_pre_bind.NAME: slow_pre_bind.new,  # SlowPreBind (KEP-5278 scenarios)
        waiting_permit.NAME: waiting_permit.new,  # WaitingPermit
        token_filter.NAME: token_filter.new,  # TokenFilter (S-PRE-2/3)
        node_pool_placement.NAME: node_pool_placement.new,  # NodePoolPlacement (KEP-5732)
    }

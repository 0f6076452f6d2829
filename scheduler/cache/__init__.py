"""The scheduler cache (nodes, assigned and assumed pods) and the per-cycle snapshot."""

from scheduler.cache.cache import DEFAULT_ASSUMED_POD_TTL, Cache, CacheDump, CacheError
from scheduler.cache.node_tree import NodeTree, zone_key
from scheduler.cache.snapshot import Snapshot

__all__ = [
    "DEFAULT_ASSUMED_POD_TTL",
    "Cache",
    "CacheDump",
    "CacheError",
    "NodeTree",
    "Snapshot",
    "zone_key",
]

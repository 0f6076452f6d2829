"""The scheduler cache (nodes, assigned and assumed pods); the per-cycle snapshot it fills is
kemu.scheduling.snapshot."""

from scheduler.cache.cache import DEFAULT_ASSUMED_POD_TTL, Cache, CacheDump, CacheError

__all__ = [
    "DEFAULT_ASSUMED_POD_TTL",
    "Cache",
    "CacheDump",
    "CacheError",
]

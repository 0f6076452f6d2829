"""kemu's client side: the typed gRPC client, informers, leader election, identity leases.

The fake client for unit tests is kemu.client.fake.FakeClient (not imported here).
"""

from kemu.client.client import Client
from kemu.client.identity import run_identity_heartbeat
from kemu.client.informer import (
    FuncHandler,
    Informer,
    InformerFactory,
    Lister,
    ResourceEventHandler,
    object_key,
)
from kemu.client.interface import ApiClient, ListResult, WatchEvent
from kemu.client.leaderelection import LeaderElectionConfig, LeaderElector, LeadershipLost

__all__ = [
    "ApiClient",
    "Client",
    "FuncHandler",
    "Informer",
    "InformerFactory",
    "LeaderElectionConfig",
    "LeaderElector",
    "LeadershipLost",
    "ListResult",
    "Lister",
    "ResourceEventHandler",
    "WatchEvent",
    "object_key",
    "run_identity_heartbeat",
]

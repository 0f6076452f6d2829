"""The autoscaler's taints on nodes (upstream utils/taints): ToBeDeletedByClusterAutoscaler
(NoSchedule) on a node being removed, DeletionCandidateOfClusterAutoscaler (PreferNoSchedule)
on an unneeded node; both carry the unix time they were added as their value. Written with
read-modify-update, retried on a Conflict."""

from __future__ import annotations

import logging
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.client.interface import ApiClient
from kemu.machinery.errors import Conflict, NotFound

logger = logging.getLogger(__name__)

TO_BE_DELETED_TAINT: Final = "ToBeDeletedByClusterAutoscaler"
DELETION_CANDIDATE_TAINT: Final = "DeletionCandidateOfClusterAutoscaler"
EFFECTS: Final = {TO_BE_DELETED_TAINT: "NoSchedule", DELETION_CANDIDATE_TAINT: "PreferNoSchedule"}
_RETRIES: Final = 5


def has_taint(node: types_pb2.Node, key: str) -> bool:
    return any(t.key == key for t in node.spec.taints)


async def add_taint(client: ApiClient, node_name: str, key: str, now: float) -> bool:
    """Adds the taint (value: unix seconds) unless there; False if the node is gone."""
    for _ in range(_RETRIES):
        try:
            node = await client.get(types_pb2.Node, node_name)
            if has_taint(node, key):
                return True
            node.spec.taints.add(key=key, value=str(int(now)), effect=EFFECTS[key])
            await client.update(node)
            return True
        except NotFound:
            return False
        except Conflict:
            continue
    raise Conflict(f"node {node_name}: could not add taint {key}: too many conflicts")


async def remove_taint(client: ApiClient, node_name: str, key: str) -> bool:
    """Removes the taint if there; False if the node is gone or had none."""
    for _ in range(_RETRIES):
        try:
            node = await client.get(types_pb2.Node, node_name)
            if not has_taint(node, key):
                return False
            kept = [t for t in node.spec.taints if t.key != key]
            del node.spec.taints[:]
            node.spec.taints.extend(kept)
            await client.update(node)
            return True
        except NotFound:
            return False
        except Conflict:
            continue
    raise Conflict(f"node {node_name}: could not remove taint {key}: too many conflicts")

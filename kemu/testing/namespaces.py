"""Namespaces for tests: the apiserver refuses objects in a namespace that does not exist
(NamespaceLifecycle), so every test, scenario and benchmark that wants a namespace of its own
gets it here.

    async with Client(cluster.server) as c:
        ns = await create_namespace(c, "pdb")     # pdb-<session>-<n>, Active
        await c.create(make_pod("p").namespace(ns).obj())
"""

from __future__ import annotations

from collections.abc import Mapping

from kemu.client.interface import ApiClient
from kemu.machinery.errors import AlreadyExists
from kemu.machinery.namespaces import new_namespace
from kemu.testing.names import unique_name


async def create_namespace(
    client: ApiClient, prefix: str = "t", *, labels: Mapping[str, str] | None = None
) -> str:
    """Creates a fresh namespace named `unique_name(prefix)`; returns its name."""
    name = unique_name(prefix)
    await client.create(new_namespace(name, labels))
    return name


async def ensure_namespace(
    client: ApiClient, name: str, *, labels: Mapping[str, str] | None = None
) -> str:
    """Creates namespace `name` unless it exists (for fixed names shared by a module)."""
    try:
        await client.create(new_namespace(name, labels))
    except AlreadyExists:
        pass
    return name

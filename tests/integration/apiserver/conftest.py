"""Fixtures of the apiserver's in-process tests on a real etcd."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from apiserver.storage.etcd import EtcdStore
from kemu.testing.cluster import Cluster


@pytest.fixture
async def store(kemu_cluster_factory: Callable[[], Cluster]) -> AsyncIterator[EtcdStore]:
    """The apiserver's store on a fresh etcd of its own."""
    cluster = kemu_cluster_factory()
    cluster.start_etcd()
    s = EtcdStore([cluster.etcd.url])
    try:
        yield s
    finally:
        await s.close()

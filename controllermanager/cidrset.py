"""The pod CIDRs of one cluster CIDR (upstream's pkg/controller/nodeipam/ipam/cidrset/cidr_set.go):
the nodeipam controller allocates from it, and --node-cidr-mask-size is checked against it."""

from __future__ import annotations

import ipaddress
from typing import Final

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

CLUSTER_SUBNET_MAX_DIFF: Final = 16
"""cidrset's clusterSubnetMaxDiff: at most 2^16 ranges per cluster CIDR."""


class CIDRSetFull(Exception):
    """Every range of the cluster CIDR is in use (cidrset's ErrCIDRRangeNoCIDRsRemaining)."""


class CIDRSet:
    """The ranges of one cluster CIDR and which are in use (upstream's cidrset.CidrSet)."""

    def __init__(self, cluster: IPNetwork, mask_size: int) -> None:
        if mask_size < cluster.prefixlen:
            raise ValueError(
                f"the node CIDR mask size /{mask_size} is shorter than the cluster CIDR's "
                f"/{cluster.prefixlen}"
            )
        if mask_size > cluster.max_prefixlen:
            raise ValueError(f"the node CIDR mask size /{mask_size} is too long")
        if mask_size - cluster.prefixlen > CLUSTER_SUBNET_MAX_DIFF:
            raise ValueError(
                f"/{mask_size} ranges of {cluster} are too many (at most 2^"
                f"{CLUSTER_SUBNET_MAX_DIFF})"
            )
        self.cluster = cluster
        self.mask_size = mask_size
        self.max_cidrs = 1 << (mask_size - cluster.prefixlen)
        self._size = 1 << (cluster.max_prefixlen - mask_size)
        self._used: set[int] = set()
        self._next_candidate = 0

    def _cidr(self, index: int) -> IPNetwork:
        base = self.cluster.network_address + index * self._size
        return ipaddress.ip_network(f"{base}/{self.mask_size}")

    def _indices(self, cidr: IPNetwork) -> range:
        """The indices of the ranges `cidr` covers (getBeginningAndEndIndices); ValueError when
        it is not within the cluster CIDR."""
        offset = int(cidr.network_address) - int(self.cluster.network_address)
        if (
            cidr.version != self.cluster.version
            or offset < 0
            or offset + cidr.num_addresses > self.cluster.num_addresses
        ):
            raise ValueError(f"{cidr} is not within the cluster CIDR {self.cluster}")
        begin = offset // self._size
        end = (offset + cidr.num_addresses - 1) // self._size
        return range(begin, end + 1)

    def allocate_next(self) -> IPNetwork:
        """The first free range from the one after the last handed out, round the set."""
        for i in range(self.max_cidrs):
            index = (self._next_candidate + i) % self.max_cidrs
            if index not in self._used:
                self._used.add(index)
                self._next_candidate = (index + 1) % self.max_cidrs
                return self._cidr(index)
        raise CIDRSetFull(f"no free /{self.mask_size} range left in {self.cluster}")

    def occupy(self, cidr: IPNetwork) -> None:
        self._used.update(self._indices(cidr))

    def release(self, cidr: IPNetwork) -> None:
        self._used.difference_update(self._indices(cidr))

    def in_use(self) -> int:
        return len(self._used)

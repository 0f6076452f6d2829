"""The simulated pod network of a node: the node's IP and its pods' IPs.

No packet flows. What is modelled is what the API shows of the network, as upstream's kubelet
reports it:

- The node's IP (`--node-ip`, as upstream's flag; kemu takes one address, no dual-stack) is
  its InternalIP address (pkg/kubelet/nodestatus/setters.go NodeAddress) and every pod's
  hostIP/hostIPs (generateAPIPodStatus, pkg/kubelet/kubelet_pods.go). Without the flag a node
  gets an address derived from its name (`default_node_ip`): upstream looks the host's address
  up, and kemu's simulated nodes share one host.
- A pod's IP comes from the node's spec.podCIDR, which the controller-manager's node IPAM
  controller sets (`PodAddresses`, what a CNI plugin's host-local IPAM does for a real
  kubelet): given when the pod's sandbox is created (admission), kept for the pod's life and
  in its status after it ends (kubernetes/kubernetes#125404), and free for another pod once
  the pod's containers have stopped. A hostNetwork pod's IP is the node's.

Two differences from a real node, both kemu's choice: a node without a podCIDR runs its pods
without an IP (a real CNI plugin would keep their sandboxes from starting; kemu's clusters
without node IPAM keep working) and gives a pod that has none its IP once the podCIDR comes;
and the IP handed out is the lowest free one (host-local goes round the range from the last
one it gave), so that the choice depends only on which IPs are in use, which a restarted
kubelet rebuilds from its checkpoint.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
from collections.abc import Iterator
from typing import Final

logger = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

DEFAULT_NODE_IP_RANGE: Final = ipaddress.IPv4Network("172.16.0.0/12")
"""Where a node without --node-ip takes its address (the private range docker's and kind's
node networks use, outside the usual cluster CIDRs 10.x)."""


def default_node_ip(name: str, count: int = 1) -> IPAddress:
    """The first of `count` consecutive addresses in DEFAULT_NODE_IP_RANGE, chosen by a hash
    of `name` (a node's name, or the name prefix of hollow nodes): the same on every start.
    Different names may collide (a 1-in-a-million chance per pair of single nodes)."""
    span = DEFAULT_NODE_IP_RANGE.num_addresses - 2 - count  # not the range's first or last
    if span <= 0:
        raise ValueError(f"{count} nodes do not fit in {DEFAULT_NODE_IP_RANGE}")
    digest = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big")
    return DEFAULT_NODE_IP_RANGE.network_address + 1 + digest % span


def parse_node_ip(text: str) -> IPAddress:
    """--node-ip: one IPv4 or IPv6 address; ValueError naming the problem."""
    if "," in text:
        raise ValueError(f"{text!r}: kemu takes one address (no dual-stack node IPs)")
    try:
        ip = ipaddress.ip_address(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not an IP address") from None
    if ip.is_unspecified:
        raise ValueError(f"{text!r}: the unspecified address is not a node IP")
    return ip


def _pod_range(cidr: IPNetwork) -> Iterator[IPAddress]:
    """The addresses pods get: the network's own address, the first one (the bridge's
    gateway, as the bridge CNI plugin sets it) and an IPv4 broadcast address excluded."""
    base = cidr.network_address
    last = cidr.num_addresses - (2 if cidr.version == 4 else 1)
    for offset in range(2, last + 1):
        yield base + offset


class PodAddresses:
    """The pod IPs of one node: which are in use, by which pod (uid), and the next free one."""

    def __init__(self, node_name: str) -> None:
        self.node_name = node_name
        self.pod_cidr: IPNetwork | None = None
        self._by_ip: dict[str, str] = {}
        self._by_uid: dict[str, str] = {}

    def set_pod_cidr(self, text: str) -> bool:
        """The node's spec.podCIDR as the kubelet sees it; True when it is new. Upstream's
        kubelet hands it to the runtime each time it changes (updatePodCIDR); the apiserver
        lets it be set once, so kemu takes the first and logs any other."""
        if not text:
            return False
        try:
            cidr = ipaddress.ip_network(text, strict=False)
        except ValueError:
            logger.error("node %s: ignoring podCIDR %r: not a CIDR", self.node_name, text)
            return False
        if self.pod_cidr is not None:
            if cidr != self.pod_cidr:
                logger.error(
                    "node %s: ignoring podCIDR %s: already using %s",
                    self.node_name,
                    cidr,
                    self.pod_cidr,
                )
            return False
        self.pod_cidr = cidr
        logger.info("node %s: using pod CIDR %s", self.node_name, cidr)
        return True

    def in_use(self, ip: str) -> bool:
        return ip in self._by_ip

    def occupy(self, uid: str, ip: str) -> None:
        """Records that pod `uid` holds `ip` (a restored pod)."""
        self._by_ip[ip] = uid
        self._by_uid[uid] = ip

    def assign(self, uid: str, preferred: str = "") -> str:
        """The IP of pod `uid`: the one it holds, else `preferred` (the IP the pod's status
        already shows) if it is free and in the pod CIDR, else the lowest free one; "" when
        the node has no pod CIDR yet or every address is taken."""
        held = self._by_uid.get(uid)
        if held is not None:
            return held
        cidr = self.pod_cidr
        if cidr is None:
            return ""
        ip = ""
        if preferred and preferred not in self._by_ip:
            try:
                if ipaddress.ip_address(preferred) in cidr:
                    ip = preferred
            except ValueError:
                pass
        if not ip:
            ip = next((str(a) for a in _pod_range(cidr) if str(a) not in self._by_ip), "")
        if not ip:
            logger.error("node %s: pod CIDR %s has no free address", self.node_name, cidr)
            return ""
        self.occupy(uid, ip)
        return ip

    def release(self, uid: str) -> None:
        """Pod `uid` no longer holds an IP (its containers stopped, or it is gone)."""
        ip = self._by_uid.pop(uid, None)
        if ip is not None:
            del self._by_ip[ip]

    def __len__(self) -> int:
        return len(self._by_ip)

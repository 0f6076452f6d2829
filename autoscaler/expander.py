"""Which node group a scale-up grows (upstream expander/): each strategy narrows the options
to its best ones and `random` picks among what is left, as upstream chains its filters with a
random fallback.

- least-waste (the default): the smallest share of the new nodes' cpu and memory left unused
  (sum of both fractions);
- most-pods: the most pods helped;
- priority: the highest priority whose regular expressions match the group's name, from the
  `priorities` key of the ConfigMap kube-system/cluster-autoscaler-priority-expander (YAML: a
  map of integer priority to a list of regexes); without a readable config every option stays;
- random.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import yaml

from kemu.api.v1 import types_pb2
from kemu.scheduling.types import NodeInfo, Resource

logger = logging.getLogger(__name__)

LEAST_WASTE: Final = "least-waste"
MOST_PODS: Final = "most-pods"
PRIORITY: Final = "priority"
RANDOM: Final = "random"
EXPANDERS: Final = (LEAST_WASTE, MOST_PODS, PRIORITY, RANDOM)

PRIORITY_CONFIGMAP: Final = "cluster-autoscaler-priority-expander"
PRIORITY_KEY: Final = "priorities"


@dataclass(frozen=True)
class Option:
    """Growing `group` by `node_count` nodes like `template` would help `pods`."""

    group: str
    node_count: int
    pods: list[types_pb2.Pod]
    template: NodeInfo
    requests: Resource
    """What `pods` request together."""


Strategy = Callable[[Sequence[Option]], list[Option]]


def least_waste(options: Sequence[Option]) -> list[Option]:
    best: list[Option] = []
    best_waste = float("inf")
    for o in options:
        waste = 0.0
        for name in ("cpu", "memory"):
            available = o.template.allocatable.get(name) * o.node_count
            if available > 0:
                waste += (available - o.requests.get(name)) / available
        if waste < best_waste:
            best, best_waste = [o], waste
        elif waste == best_waste:
            best.append(o)
    return best


def most_pods(options: Sequence[Option]) -> list[Option]:
    most = max((len(o.pods) for o in options), default=0)
    return [o for o in options if len(o.pods) == most]


def parse_priorities(text: str) -> list[tuple[int, list[re.Pattern[str]]]]:
    """The ConfigMap's `priorities` value; ValueError naming what is wrong."""
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ValueError("priorities: expected a map of priority to a list of regexes")
    out: list[tuple[int, list[re.Pattern[str]]]] = []
    for key, patterns in data.items():
        try:
            prio = int(key)
        except (TypeError, ValueError):
            raise ValueError(f"priorities: {key!r} is not an integer") from None
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            raise ValueError(f"priorities[{prio}]: expected a list of regexes")
        try:
            # Upstream matches the whole id against each expression.
            out.append((prio, [re.compile(p) for p in patterns]))
        except re.error as e:
            raise ValueError(f"priorities[{prio}]: {e}") from None
    return sorted(out, key=lambda t: -t[0])


def priority_strategy(config: Callable[[], str | None]) -> Strategy:
    def choose(options: Sequence[Option]) -> list[Option]:
        text = config()
        if text is None:
            logger.warning(
                "priority expander: no %s in ConfigMap kube-system/%s",
                PRIORITY_KEY,
                PRIORITY_CONFIGMAP,
            )
            return list(options)
        try:
            priorities = parse_priorities(text)
        except ValueError as e:
            logger.warning("priority expander: ConfigMap kube-system/%s: %s", PRIORITY_CONFIGMAP, e)
            return list(options)
        for _, patterns in priorities:
            chosen = [o for o in options if any(p.fullmatch(o.group) for p in patterns)]
            if chosen:
                return chosen
        return list(options)

    return choose


class Expander:
    def __init__(
        self,
        name: str,
        *,
        rng: random.Random | None = None,
        priority_config: Callable[[], str | None] = lambda: None,
    ) -> None:
        strategies: dict[str, Strategy] = {
            LEAST_WASTE: least_waste,
            MOST_PODS: most_pods,
            PRIORITY: priority_strategy(priority_config),
            RANDOM: list,
        }
        if name not in strategies:
            raise ValueError(f"unknown expander {name!r}: one of {', '.join(EXPANDERS)}")
        self.name = name
        self._strategy = strategies[name]
        self._rng = rng or random.Random()

    def best_option(self, options: Sequence[Option]) -> Option | None:
        if not options:
            return None
        best = self._strategy(options) or list(options)
        return best[0] if len(best) == 1 else self._rng.choice(best)

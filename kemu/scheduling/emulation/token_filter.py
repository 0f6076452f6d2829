"""TokenFilter: an emulation plugin that lets a node hold only so many pods of a kind, for the
preemption scenarios upstream tests with its "tokenFilter" test plugin (S-PRE-2, S-PRE-3 of
the reference: preemption through a Filter plugin, through a PreFilter rejection, and not at
all when the rejection is unresolvable).

- A node offers tokens through its label `scheduling.kemu.io/tokens: "N"` (N a non-negative
  integer); a node without the label has unlimited tokens. A label value that does not parse
  is an Error status naming the label and the node (at Filter, or at PreFilter when it checks).
- A pod takes part when it has the label `scheduling.kemu.io/token: "true"`: it needs one
  token, and holds it while it is on (or nominated to) a node. Every other pod is left alone:
  PreFilter answers Skip, so its Filter and PreFilter extensions do not run for it.
- Filter rejects a labelled node whose tokens are all held: "node(s) had no free token",
  Unschedulable (preemption may free one), or UnschedulableAndUnresolvable when the pod has
  the annotation `scheduling.kemu.io/token-unresolvable: "true"`.
- With the annotation `scheduling.kemu.io/token-check: prefilter`, PreFilter itself rejects
  the pod ("no node has a free token", same code rule) when no node has a free token; the
  nodes then all get that status and preemption still runs Filter on its what-if copies.
  "filter" (the default) leaves the decision to Filter. Any other value of either annotation
  is an Error at PreFilter.

PreFilter counts, per node, the taking-part pods on it; the AddPod/RemovePod extensions keep
that count in step when preemption removes victims or nominated pods are added, on cloned
CycleState, so the plugin is stateless between cycles. No args.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.scheduling import status as st
from kemu.scheduling.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from kemu.scheduling.interface import (
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PluginArgs,
    PreFilterExtensions,
    PreFilterPlugin,
)
from kemu.scheduling.plugins.helpers import check_arg_keys
from kemu.scheduling.status import Code, Status
from kemu.scheduling.types import NodeInfo, PodInfo, PreFilterResult

NAME: Final = "TokenFilter"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME

LABEL_TOKENS: Final = "scheduling.kemu.io/tokens"
LABEL_TOKEN: Final = "scheduling.kemu.io/token"
ANNOTATION_CHECK: Final = "scheduling.kemu.io/token-check"
ANNOTATION_UNRESOLVABLE: Final = "scheduling.kemu.io/token-unresolvable"

CHECK_FILTER: Final = "filter"
CHECK_PRE_FILTER: Final = "prefilter"

ERR_REASON_NO_FREE_TOKEN: Final = "node(s) had no free token"
ERR_REASON_PRE_FILTER: Final = "no node has a free token"


def takes_part(pod: types_pb2.Pod) -> bool:
    """Whether the pod needs (or, on a node, holds) a token."""
    return pod.metadata.labels.get(LABEL_TOKEN) == "true"


def node_tokens(labels: Mapping[str, str], node_name: str) -> int | None:
    """The tokens a node with `labels` offers; None: unlimited (no label). ValueError naming
    the label and the node when the value is not a non-negative integer."""
    text = labels.get(LABEL_TOKENS)
    if text is None:
        return None
    # Digits only: int() would also take " 2", "+2" and "1_0".
    if not (text.isascii() and text.isdigit()):
        raise ValueError(
            f'label {LABEL_TOKENS} of node "{node_name}": "{text}" is not a non-negative integer'
        )
    return int(text)


def _count(node: NodeInfo) -> int:
    return sum(1 for pi in node.pods if takes_part(pi.pod))


class TokenState:
    """Taking-part pods per node name, and the incoming pod's rejection code. `used` is what
    add_pod/remove_pod change, so `clone` copies it."""

    __slots__ = ("code", "used")

    def __init__(self, used: dict[str, int], code: Code = Code.UNSCHEDULABLE) -> None:
        self.used = used
        self.code = code

    def clone(self) -> TokenState:
        return TokenState(dict(self.used), self.code)


def _rejection_code(pod: types_pb2.Pod) -> Code:
    """From the token-unresolvable annotation; ValueError when it is not "true"/"false"."""
    text = pod.metadata.annotations.get(ANNOTATION_UNRESOLVABLE, "false")
    if text == "true":
        return Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    if text == "false":
        return Code.UNSCHEDULABLE
    raise ValueError(f'annotation {ANNOTATION_UNRESOLVABLE}: "{text}" is not "true" or "false"')


def _check_at_pre_filter(pod: types_pb2.Pod) -> bool:
    """From the token-check annotation; ValueError when it is not "filter"/"prefilter"."""
    text = pod.metadata.annotations.get(ANNOTATION_CHECK, CHECK_FILTER)
    if text == CHECK_PRE_FILTER:
        return True
    if text == CHECK_FILTER:
        return False
    raise ValueError(
        f'annotation {ANNOTATION_CHECK}: "{text}" is not "{CHECK_FILTER}" or "{CHECK_PRE_FILTER}"'
    )


class TokenFilter(PreFilterPlugin, FilterPlugin, PreFilterExtensions, EnqueueExtensions):
    NAME = NAME

    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ PreFilter

    def pre_filter(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if not takes_part(pod):
            return None, st.SKIP
        try:
            code = _rejection_code(pod)
            check = _check_at_pre_filter(pod)
        except ValueError as e:
            return None, st.as_error(e)
        used = {node.name: _count(node) for node in nodes}
        # Written before any rejection: preemption runs Filter on clones of this state even
        # when PreFilter said Unschedulable.
        state.write(PRE_FILTER_STATE_KEY, TokenState(used, code))
        if not check:
            return None, st.SUCCESS
        for node in nodes:
            try:
                tokens = node_tokens(node.labels, node.name)
            except ValueError as e:
                return None, st.as_error(e)
            if tokens is None or used[node.name] < tokens:
                return None, st.SUCCESS
        return None, Status(code, (ERR_REASON_PRE_FILTER,))

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status:
        return _update(state, pod_to_add, node, 1)

    def remove_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status:
        return _update(state, pod_to_remove, node, -1)

    # ------------------------------------------------------------ Filter

    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        if not takes_part(pod):
            # The runtime skips us after PreFilter's Skip; callers that do not are safe too.
            return st.SUCCESS
        try:
            tokens = node_tokens(node.labels, node.name)
        except ValueError as e:
            return st.as_error(e)
        if tokens is None:
            return st.SUCCESS
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, TokenState):
            return st.as_error(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
        used = s.used.get(node.name)
        if used is None:
            # A node PreFilter was not shown: count it now.
            used = _count(node)
        if used < tokens:
            return st.SUCCESS
        return Status(s.code, (ERR_REASON_NO_FREE_TOKEN,))

    # ------------------------------------------------------------ queueing hints

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A deleted pod (bound, or nominated: the queue reports a withdrawn nomination as an
        # assigned pod delete) may free a token; a new node or a changed label may offer more.
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE),
                self.is_schedulable_after_pod_delete,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_pod_delete(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        if not takes_part(pod):
            return QueueingHint.SKIP
        if not isinstance(old, types_pb2.Pod):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE if takes_part(old) else QueueingHint.SKIP

    def is_schedulable_after_node_change(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        if not takes_part(pod):
            return QueueingHint.SKIP
        if not isinstance(new, types_pb2.Node):
            return QueueingHint.QUEUE
        after = _offered(new)
        if after == 0:
            # No token (or a label that does not parse: Filter would fail on it anyway).
            return QueueingHint.SKIP
        if not isinstance(old, types_pb2.Node):
            return QueueingHint.QUEUE
        before = _offered(old)
        if after is None:
            return QueueingHint.QUEUE if before is not None else QueueingHint.SKIP
        return QueueingHint.QUEUE if before is not None and after > before else QueueingHint.SKIP


def _offered(node: types_pb2.Node) -> int | None:
    """Tokens a node offers for hints: None unlimited, 0 for a label that does not parse."""
    try:
        return node_tokens(node.metadata.labels, node.metadata.name)
    except ValueError:
        return 0


def _update(state: CycleState, other: PodInfo, node: NodeInfo, delta: int) -> Status:
    s = state.read(PRE_FILTER_STATE_KEY)
    if not isinstance(s, TokenState):
        return st.as_error(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
    if not takes_part(other.pod):
        return st.SUCCESS
    used = s.used.get(node.name)
    if used is None:
        # A node PreFilter was not shown. Callers change `node` before telling the extensions
        # (as upstream's preemption and nominated-pods filter do), so its pods are the count.
        s.used[node.name] = _count(node)
    else:
        s.used[node.name] = used + delta
    return st.SUCCESS


def new(args: PluginArgs, handle: Handle) -> TokenFilter:
    check_arg_keys(args, (), NAME)
    return TokenFilter()

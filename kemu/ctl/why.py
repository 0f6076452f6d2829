"""`kemuctl why pod/NAME` and `kemuctl why node/NAME` (kemu only; issue #32): the story of a
decision, from the decision records the scheduler and the autoscaler keep with
`--record-decisions` (GET /debug/decisions on their metrics ports) and the API's objects and
events.

`why pod/NAME` prints, in order: the pod's creation; each scheduling attempt with its outcome in
upstream's words (`0/5000 nodes are available: 4990 Insufficient cpu, ...`), the nodes
evaluated, the chosen node's and the runners-up's scores per plugin, Reserve/Permit/PreBind/Bind
with their durations, preemption's node (and the criterion that chose it) and victims (and the
budgets they break), the lower-priority nominations it cleared; nominatedNodeName set and cleared, and by whom (the
scheduler's preemption, the scheduler at binding start under KEP-5278, the apiserver at
binding); the binding; the pod's events (scheduled, preempted, resized, killed, ...); its
deletion. `why node/NAME` prints the autoscaler's verdicts on the node as they changed (unneeded
since when, or upstream's unremovable reason and why, deletion started) and the node's events.

`-o json` gives the same as one document. For a pod: `pod`, `uid`, `created`, `node` (bound to,
or null), `nominatedNodeName` (now), `deleted` (or null), `attempts` (the scheduler's records,
oldest first: `time`, `result`, `node` or null, `reasons` (reason -> node count), `victims`
(pod names), `exampleNodes` (reason -> the first few nodes that gave it), `rejectedBy` (Filter
plugin -> nodes it rejected), `message`, `nodes`,
`preFilterNodes`, `evaluatedNodes`, `feasibleNodes`, `candidates` (the chosen node first, then
the best others: `node`, `total`, `scores` plugin -> weighted score), `phases` (`point`,
`code`, `plugin`, `seconds`, `throttledSeconds`: of them, the wait for the scheduler's
client-side rate limiter), `preemption` (`nominatedNodeName`, `victims` with `pod`,
`priority`, `pdbs`; `pdbViolations`, `candidates`, `criterion`, `clearedNominations`), `bound`,
`expectedNodeName`: scheduler/decisions.py), `nominations` (each `action` "set" or "cleared", `node`, `by`, `time`),
`claims` (the pod's ResourceClaims now: `name`, `claim`, `allocated`, `devices`, `nodeSelector`,
`reservedFor`, `allocationTime`, `requests`, `problem`) and `events` (each `time`, `type`, `reason`, `from`, `message`), all in order. For a node: `node`,
`gone` (true once deleted: its verdicts and events outlive it), `verdicts` (`time`,
`verdict`, `message`) and `events`. Times are RFC 3339.

Where the records are: `--scheduler URL` and `--autoscaler URL` (the components' metrics
endpoints; defaults: $KEMU_SCHEDULER_URL or http://127.0.0.1:10259, $KEMU_AUTOSCALER_URL or
http://127.0.0.1:8085, `make run`'s). A component that does not answer, or keeps no record, is
a one-line warning on stderr: the story is then told from the API alone.
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypedDict

import anyio.to_thread

from kemu.api.v1 import types_pb2
from kemu.ctl.common import Context, CtlError, format_api_error, split_targets
from kemu.ctl.connect import (
    AUTOSCALER_ENV,
    DEFAULT_AUTOSCALER,
    DEFAULT_SCHEDULER,
    SCHEDULER_ENV,
)
from kemu.ctl.describe import events_for
from kemu.ctl.printers import dump_json
from kemu.machinery import printers
from kemu.machinery.convert import format_time, timestamp
from kemu.machinery.errors import ApiError, NotFound
from kemu.machinery.jsonvalue import JSON
from kemu.machinery.keys import object_key
from kemu.machinery.kinds import Kind
from kemu.machinery.resourceclaim import ClaimNameError, pod_claim_name

_TIMEOUT: Final = 5.0

BY_PREEMPTION: Final = "scheduler (preemption)"
BY_BINDING_START: Final = "scheduler (binding: the expected placement, KEP-5278)"
BY_APISERVER: Final = "apiserver (binding, KEP-5278)"

Record = Mapping[str, Any]
"""A record of another process's decision log as it serves it (an attempt of
scheduler/decisions.py, a verdict of autoscaler/decisions.py): JSON of a known shape, read as
written (a malformed one is that process's bug, not the user's)."""


class Nomination(TypedDict):
    action: str
    node: str
    by: str
    time: str | None


EventEntry = TypedDict(
    "EventEntry", {"time": str, "type": str, "reason": str, "from": str, "message": str}
)


class PodStory(TypedDict):
    """`why pod/NAME -o json` (see the module docstring)."""

    pod: str
    uid: str
    created: str
    node: str | None
    nominatedNodeName: str | None
    deleted: str | None
    attempts: list[Record]
    gated: Record | None
    """Held at PreEnqueue now: since (a time), plugin, message; None when not."""
    nominations: list[Nomination]
    claims: list[ClaimEntry]
    """The pod's ResourceClaims (DRA) as the API has them now."""
    events: list[EventEntry]


class ClaimEntry(TypedDict):
    """One of the pod's ResourceClaims: `name` (the pod's entry), `claim` (NAMESPACE/NAME or
    null when not created yet), `allocated`, `devices` (REQUEST: DRIVER/POOL/DEVICE),
    `nodeSelector` (the allocation's, as text, or null), `reservedFor` (pod names),
    `allocationTime` (with binding conditions), `requests` (what the claim asks for, one
    text per request: `REQUEST: class CLASS, COUNT[, where SELECTOR && ...]`, a firstAvailable
    request as `REQUEST: first of SUB (...) | SUB (...)`; printed while it is not allocated, so
    that an unschedulable pod's story names the class and the request no device satisfied) and
    `problem` (why it cannot be read)."""

    name: str
    claim: str | None
    allocated: bool
    devices: list[str]
    nodeSelector: str | None
    reservedFor: list[str]
    allocationTime: str | None
    requests: list[str]
    problem: str | None


class NodeStory(TypedDict):
    """`why node/NAME`: the autoscaler's verdicts as it serves them (times in epoch seconds)."""

    node: str
    gone: bool
    verdicts: list[Record]
    events: list[EventEntry]


def _time(seconds: float) -> str:
    return format_time(timestamp(seconds), "milli")


def _get_json(url: str) -> JSON:
    with urllib.request.urlopen(url, timeout=_TIMEOUT) as resp:
        value: JSON = json.loads(resp.read())
        return value


async def _record(ctx: Context, base: str, query: Mapping[str, str], what: str) -> Record | None:
    url = f"{base.rstrip('/')}/debug/decisions?{urllib.parse.urlencode(query)}"
    try:
        document = await anyio.to_thread.run_sync(_get_json, url)
        return document if isinstance(document, dict) else None
    except urllib.error.HTTPError as e:
        why = "no record kept (start it with --record-decisions)" if e.code == 404 else str(e)
        ctx.warn(f"warning: {what} at {base}: {why}")
    except (OSError, ValueError) as e:
        ctx.warn(f"warning: {what} at {base} does not answer: {e}")
    return None


def _events_json(events: Sequence[types_pb2.Event]) -> list[EventEntry]:
    return [
        {
            "time": _time(printers.seconds_of(printers.event_last_seen(e))),
            "type": e.type,
            "reason": e.reason,
            "from": e.source.component or e.reporting_component,
            "message": e.message,
        }
        for e in events
    ]


def nominations(pod: types_pb2.Pod, attempts: Sequence[Record]) -> list[Nomination]:
    """Who set and cleared the pod's nominatedNodeName, from the scheduler's attempts and the
    pod as it is now: preemption's nomination (or its clearing when preemption cannot help),
    the expected placement at binding start (KEP-5278), and the apiserver's clearing at
    binding (a bound pod whose nomination is gone)."""
    out: list[Nomination] = []
    current = ""
    for a in attempts:
        preemption = a.get("preemption")
        if preemption is not None:
            node = preemption.get("nominatedNodeName")
            if node:
                out.append(_nomination("set", node, BY_PREEMPTION, a["time"]))
            elif current:
                out.append(_nomination("cleared", current, BY_PREEMPTION, a["time"]))
            current = node or ""
        expected = a.get("expectedNodeName")
        if expected and expected != current:
            out.append(_nomination("set", expected, BY_BINDING_START, a["time"]))
            current = expected
    if pod.spec.node_name and current and not pod.status.nominated_node_name:
        out.append(_nomination("cleared", current, BY_APISERVER, None))
    return out


def _nomination(action: str, node: str, by: str, time: float | None) -> Nomination:
    return {"action": action, "node": node, "by": by, "time": None if time is None else _time(time)}


def claim_entry(
    ref: types_pb2.PodResourceClaim,
    namespace: str,
    name: str | None,
    claim: types_pb2.ResourceClaim | None,
    problem: str | None = None,
) -> ClaimEntry:
    """What `why` says of one of the pod's claims (its allocation, written by the scheduler's
    DynamicResources in PreBind)."""
    allocation = claim.status.allocation if claim is not None else None
    allocated = claim is not None and claim.status.HasField("allocation")
    devices = (
        [f"{r.request}: {r.driver}/{r.pool}/{r.device}" for r in allocation.devices.results]
        if allocation is not None and allocated
        else []
    )
    selector = None
    if allocation is not None and allocated and allocation.HasField("node_selector"):
        selector = _selector_text(allocation.node_selector)
    when = None
    if allocation is not None and allocated and allocation.HasField("allocation_timestamp"):
        when = format_time(allocation.allocation_timestamp, "second")
    return {
        "name": ref.name,
        "claim": None if name is None else f"{namespace}/{name}",
        "allocated": allocated,
        "devices": devices,
        "nodeSelector": selector,
        "reservedFor": [r.name for r in claim.status.reserved_for] if claim is not None else [],
        "allocationTime": when,
        "requests": [] if claim is None else claim_requests(claim.spec),
        "problem": problem,
    }


def claim_requests(spec: types_pb2.ResourceClaimSpec) -> list[str]:
    """What each request of a claim asks for, as text (see ClaimEntry.requests)."""
    out = []
    for r in spec.devices.requests:
        if r.first_available:
            subs = " | ".join(
                f"{s.name} ({_request_text(s.device_class_name, s.allocation_mode, s.count, s.selectors)})"
                for s in r.first_available
            )
            out.append(f"{r.name}: first of {subs}")
            continue
        e = r.exactly
        out.append(
            f"{r.name}: {_request_text(e.device_class_name, e.allocation_mode, e.count, e.selectors)}"
        )
    return out


def _request_text(
    device_class: str, mode: str, count: int, selectors: Sequence[types_pb2.DeviceSelector]
) -> str:
    if mode == "All":
        how_many = "all devices"
    else:
        n = count or 1
        how_many = f"{n} device{'s' if n != 1 else ''}"
    text = f"class {device_class}, {how_many}"
    exprs = [s.cel.expression.strip() for s in selectors if s.HasField("cel")]
    if exprs:
        text += ", where " + " && ".join(exprs)
    return text


def _selector_text(sel: types_pb2.NodeSelector) -> str:
    terms = []
    for t in sel.node_selector_terms:
        parts = [f"{e.key} {e.operator} {list(e.values)}" for e in t.match_expressions]
        parts += [f"{e.key} {e.operator} {list(e.values)}" for e in t.match_fields]
        terms.append(" && ".join(parts))
    return " || ".join(terms)


async def pod_claims(ctx: Context, pod: types_pb2.Pod) -> list[ClaimEntry]:
    """The pod's claims from the API (a template's claim through status.resourceClaimStatuses)."""
    out: list[ClaimEntry] = []
    ns = pod.metadata.namespace
    for ref in pod.spec.resource_claims:
        try:
            name, _ = pod_claim_name(pod, ref)
        except ClaimNameError as e:
            out.append(claim_entry(ref, ns, None, None, str(e)))
            continue
        if name is None:
            out.append(claim_entry(ref, ns, None, None, "no claim needed"))
            continue
        try:
            claim = await ctx.client.get(types_pb2.ResourceClaim, name, ns)
        except NotFound:
            out.append(claim_entry(ref, ns, name, None, "not found"))
            continue
        out.append(claim_entry(ref, ns, name, claim))
    return out


def pod_story(
    pod: types_pb2.Pod,
    attempts: Sequence[Record],
    events: Sequence[types_pb2.Event],
    gated: Record | None = None,
    claims: Sequence[ClaimEntry] = (),
) -> PodStory:
    meta = pod.metadata
    return {
        "pod": object_key(pod),
        "uid": meta.uid,
        "created": format_time(meta.creation_timestamp, "second"),
        "node": pod.spec.node_name or None,
        "nominatedNodeName": pod.status.nominated_node_name or None,
        "deleted": format_time(meta.deletion_timestamp, "second")
        if meta.HasField("deletion_timestamp")
        else None,
        "attempts": [{**a, "time": _time(a["time"])} for a in attempts],
        "gated": None if gated is None else {**gated, "since": _time(gated["since"])},
        "nominations": nominations(pod, attempts),
        "claims": list(claims),
        "events": _events_json(events),
    }


def attempt_lines(i: int, a: Record) -> list[str]:
    head = f"attempt {i} ({a['cycle']}, profile {a['profile']})"
    result = a["result"]
    if result == "scheduled":
        bound = {True: ", bound", False: ", binding failed", None: ""}[a.get("bound")]
        line = (
            f"{head}: scheduled on {a['node']} ({a['evaluatedNodes']} of {a['nodes']} nodes "
            f"evaluated, {a['feasibleNodes']} feasible){bound}"
        )
    elif result == "parked":
        line = f"{head}: its resize fits on {a['node']}: parked until its kubelet resizes it"
    elif result == "running":
        line = f"{head}: in progress"
    else:
        line = f"{head}: {result}: {a['message']}"
    lines = [line]
    group = a.get("podGroup")
    if group is not None:
        lines.append(
            f"  one of {group['members']} members tried together in the pod-group cycle of "
            f"{group['group']}: the group {group['result']}"
            + (f": {group['message']}" if group.get("message") else "")
        )
    if a.get("rejectedBy"):
        by = ", ".join(f"{plugin} {n}" for plugin, n in a["rejectedBy"].items())
        lines.append(f"  nodes rejected by: {by}")
    if a.get("preFilterNodes") is not None:
        lines.append(f"  PreFilter left {a['preFilterNodes']} of {a['nodes']} nodes")
    for j, c in enumerate(a.get("candidates", [])):
        scores = ", ".join(f"{plugin} {score}" for plugin, score in c["scores"].items())
        label = "chosen" if j == 0 else "next"
        lines.append(f"  {label}: {c['node']} score {c['total']} ({scores})")
    phases = a.get("phases", [])
    if phases:
        lines.append("  " + ", ".join(_phase_text(p) for p in phases))
    preemption = a.get("preemption")
    if group is not None and preemption is not None and preemption.get("nominatedNodeName"):
        lines.append(
            f"  workload-aware preemption (KEP-5710): nominated to {preemption['nominatedNodeName']}"
            " while the victims go"
        )
    elif preemption is not None and preemption.get("nominatedNodeName"):
        lines.append(
            f"  preemption: node {preemption['nominatedNodeName']} "
            f"({_criterion_text(preemption)}), victims: "
            + (", ".join(_victim_text(v) for v in preemption["victims"]) or "none")
            + (
                f", {preemption['pdbViolations']} PDB violation(s)"
                if preemption["pdbViolations"]
                else ""
            )
        )
        if preemption.get("clearedNominations"):
            cleared = ", ".join(preemption["clearedNominations"])
            lines.append(f"  nominations of lower priority to that node cleared: {cleared}")
    return lines


CRITERION_WORDS: Final = {
    "onlyCandidate": "the only candidate",
    "fewestPDBViolations": "fewest PDB violations",
    "lowestHighestPriorityVictim": "lowest highest-priority victim",
    "lowestPrioritySum": "smallest sum of victim priorities",
    "fewestVictims": "fewest victims",
    "latestStartTime": "latest start of its highest-priority victims",
    "firstCandidate": "first of the tied candidates",
}
"""pickOneNodeForPreemption's criteria (kemu.scheduling.preemption.CRITERIA) in words."""


def _criterion_text(preemption: Record) -> str:
    criterion = preemption.get("criterion")
    if not criterion:
        return "chosen by preemption"
    n = preemption.get("candidates", 0)
    return f"{CRITERION_WORDS.get(criterion, criterion)}, of {n} candidate node(s)"


def _victim_text(v: Record) -> str:
    pdbs = v.get("pdbs") or []
    broken = f", breaks PDB {', '.join(pdbs)}" if pdbs else ""
    return f"{v['pod']} (priority {v['priority']}{broken})"


def _phase_text(p: Record) -> str:
    plugin = f" by {p['plugin']}" if p.get("plugin") else ""
    text = f"{p['point']} {p['code']}{plugin} in {p['seconds'] * 1000:.1f} ms"
    if throttled := p.get("throttledSeconds"):
        # (its API calls waited on the scheduler's client-side rate limiter: clientConnection)
        text += f" ({throttled * 1000:.1f} ms of it throttled by the client's rate limiter)"
    return text


def _sortable(when: str) -> str:
    """A time of the story as text that sorts as the time does: the API's times are to the
    second ("...:22Z"), the records' to the millisecond ("...:22.137Z"); "" (undated) last."""
    if not when:
        return "~"
    if when.endswith("Z") and "." not in when:
        return when[:-1] + ".000Z"
    return when


def print_pod_story(ctx: Context, story: PodStory) -> None:
    """The story in order of time, the creation first: nothing of a pod happens before it
    exists, though the times come from several clocks (the creation's and the events' from the
    apiserver, the attempts' from the scheduler, which on the virtual clock follows the
    apiserver's a moment behind and could date its first attempt before the creation); on a
    tie, the creation, then attempts, nominations, events, the deletion."""
    entries: list[tuple[str, int, list[str]]] = []
    for i, a in enumerate(story["attempts"], 1):
        entries.append((a["time"], 1, attempt_lines(i, a)))
    for n in story["nominations"]:
        text = f"nominatedNodeName {n['action']} ({n['node']}) by the {n['by']}"
        entries.append((n["time"] or "", 2, [text]))
    for e in story["events"]:
        entries.append((e["time"], 3, [f"event {e['type']} {e['reason']}: {e['message']}"]))
    gated = story["gated"]
    if gated is not None:
        text = f"held at PreEnqueue by {gated['plugin']}: {gated['message']}"
        entries.append((gated["since"], 1, [text]))
    if story["deleted"]:
        entries.append((story["deleted"], 4, ["deleted"]))
    # Undated entries (the apiserver's clearing at binding) go after the rest of their kind.
    entries.sort(key=lambda t: (_sortable(t[0]), t[1]))
    entries.insert(0, (story["created"], 0, ["created"]))
    ctx.print(f"Pod {story['pod']} (uid {story['uid']})")
    for when, _, lines in entries:
        ctx.print(f"  {when or '(at binding)':<24} {lines[0]}")
        for more in lines[1:]:
            ctx.print(f"  {'':<24} {more}")
    ctx.print(f"  now: {'bound to ' + story['node'] if story['node'] else 'not bound'}")
    for c in story["claims"]:
        ctx.print(f"  claim {c['name']}: {_claim_text(c)}")


def _claim_text(c: ClaimEntry) -> str:
    where = c["claim"] or "(none)"
    if c["problem"]:
        return f"{where}: {c['problem']}"
    if not c["allocated"]:
        asks = "".join(f"; request {r}" for r in c["requests"])
        return f"ResourceClaim {where} not allocated{asks}"
    text = f"ResourceClaim {where} allocated: {', '.join(c['devices'])}"
    if c["nodeSelector"]:
        text += f" (nodes: {c['nodeSelector']})"
    if c["allocationTime"]:
        text += f" at {c['allocationTime']}"
    reserved = ", ".join(c["reservedFor"]) or "nobody"
    return f"{text}; reserved for {reserved}"


def print_node_story(ctx: Context, story: NodeStory) -> None:
    ctx.print(f"Node {story['node']}" + (" (deleted)" if story["gone"] else ""))
    entries = [
        (_time(v["time"]), f"{v['verdict']}: {v['message']}".rstrip(": "))
        for v in story["verdicts"]
    ]
    entries += [
        (e["time"], f"event {e['type']} {e['reason']}: {e['message']}") for e in story["events"]
    ]
    for when, text in sorted(entries):
        ctx.print(f"  {when:<24} {text}")
    if not entries:
        ctx.print("  nothing recorded")


async def cmd_why(ctx: Context, args: argparse.Namespace) -> int:
    if args.output not in (None, "json"):
        raise CtlError(f"--output must be 'json', got {args.output!r}")
    kind, name = _one_target(args.targets)
    try:
        if kind.message is types_pb2.Pod:
            pod = await ctx.client.get(types_pb2.Pod, name, ctx.namespace)
            base = args.scheduler or os.environ.get(SCHEDULER_ENV) or DEFAULT_SCHEDULER
            record = await _record(ctx, base, {"pod": object_key(pod)}, "the scheduler")
            attempts = []
            gated = None
            if record is not None and record.get("uid") in (None, pod.metadata.uid):
                attempts = record.get("attempts", [])
                gated = record.get("gated")
            listed = await ctx.client.list_all(types_pb2.Event, pod.metadata.namespace)
            claims = await pod_claims(ctx, pod)
            story = pod_story(pod, attempts, events_for(listed.items, pod), gated, claims)
            if args.output == "json":
                ctx.print(dump_json(story))
            else:
                print_pod_story(ctx, story)
            return 0
    except ApiError as e:
        raise CtlError(format_api_error(e)) from None
    try:
        node = await ctx.client.get(types_pb2.Node, name)
        gone = False
    except NotFound:
        # A node the autoscaler removed: its verdicts and events outlive it.
        node, gone = types_pb2.Node(), True
        node.metadata.name = name
    except ApiError as e:
        raise CtlError(format_api_error(e)) from None
    base = args.autoscaler or os.environ.get(AUTOSCALER_ENV) or DEFAULT_AUTOSCALER
    record = await _record(ctx, base, {"node": name}, "the autoscaler")
    listed = await ctx.client.list_all(types_pb2.Event, "")
    node_story: NodeStory = {
        "node": name,
        "gone": gone,
        "verdicts": [] if record is None else record.get("verdicts", []),
        "events": _events_json(events_for(listed.items, node)),
    }
    if args.output == "json":
        ctx.print(
            dump_json(
                {
                    **node_story,
                    "verdicts": [{**v, "time": _time(v["time"])} for v in node_story["verdicts"]],
                }
            )
        )
    else:
        print_node_story(ctx, node_story)
    return 0


def _one_target(targets: list[str]) -> tuple[Kind, str]:
    pairs = split_targets(targets, require_name=True)
    if len(pairs) != 1:
        raise CtlError("why: exactly one pod/NAME or node/NAME")
    kind, name = pairs[0]
    if kind.message not in (types_pb2.Pod, types_pb2.Node) or name is None:
        raise CtlError(f"why: only pods and nodes have a story, not {kind.kind.lower()}s")
    return kind, name

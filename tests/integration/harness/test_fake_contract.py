"""The fake client's contract: the same calls against FakeClient and a real apiserver give the
same outcomes, so that unit tests written against the fake stay true of the server.

`scenario` makes every call and records a normalised outcome per step: the exception class
with its message (uids and resourceVersions replaced by placeholders), or the fields of the
result that the step is about. The test runs it once per client factory and compares the
record with EXPECTED, which is what the apiserver does (the server is the truth; where the
fake differed, the fake was fixed). Known, deliberate gaps of the fake are listed in
kemu/client/fake.py's docstring (no admission or defaulting on create, no validation).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.fake import FakeClient
from kemu.client.interface import ApiClient, WatchEvent
from kemu.component.featuregate import CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING, FeatureGates
from kemu.component.version import DEFAULT_VERSION
from kemu.machinery.errors import ApiError
from kemu.machinery.namespaces import new_namespace
from kemu.testing import Cluster, make_pdb, make_pod
from kemu.testing.builders import make_lease, owned
from kemu.testing.names import unique_name
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

Pod = types_pb2.Pod
Namespace = types_pb2.Namespace
Factory = Callable[[], AbstractAsyncContextManager[ApiClient]]
WATCH_TIMEOUT = 10.0

_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_NUMBER = re.compile(r"\b\d+\b")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("contract")) as c:
        c.start_etcd()
        c.start_apiserver()
        yield c


def _fake_factory(gates: dict[str, bool] | None = None) -> Factory:
    @asynccontextmanager
    async def make() -> AsyncIterator[ApiClient]:
        async with FakeClient(gates=FeatureGates.for_version(DEFAULT_VERSION, gates)) as c:
            yield c

    return make


def _server_factory(server: str) -> Factory:
    @asynccontextmanager
    async def make() -> AsyncIterator[ApiClient]:
        async with Client(server, timeout=10.0) as c:
            yield c

    return make


@pytest.fixture(params=["fake", "apiserver"])
def factory(request: pytest.FixtureRequest) -> Factory:
    if request.param == "fake":
        return _fake_factory()
    cluster: Cluster = request.getfixturevalue("cluster")
    return _server_factory(cluster.server)


# ---------------------------------------------------------------- normalising


def _error(e: ApiError) -> tuple[str, str]:
    message = _UID.sub("<uid>", e.message)
    return type(e).__name__, _NUMBER.sub("<n>", message)


def _condition(pod: Pod, ctype: str) -> str:
    found = [c.status for c in pod.status.conditions if c.type == ctype]
    return ",".join(found) or "-"


def _pod(pod: Pod) -> dict[str, Any]:
    """The fields of a pod the scenario is about."""
    m = pod.metadata
    return {
        "name": m.name,
        "labels": dict(m.labels),
        "generation": m.generation,
        "has_uid": bool(m.uid),
        "created": m.HasField("creation_timestamp"),
        "deleting": m.HasField("deletion_timestamp"),
        "grace": m.deletion_grace_period_seconds if m.HasField("deletion_timestamp") else None,
        "node": pod.spec.node_name,
        "nominated": pod.status.nominated_node_name,
        "scheduled": _condition(pod, "PodScheduled"),
    }


def rv(obj: Pod) -> int:
    return int(obj.metadata.resource_version)


def _names(pods: list[Pod]) -> list[str]:
    return sorted(p.metadata.name for p in pods)


class Record:
    """Step name -> normalised outcome, in order."""

    def __init__(self) -> None:
        self.steps: dict[str, Any] = {}

    async def step(self, name: str, call: Any, shape: Callable[[Any], Any] = lambda r: "ok") -> Any:
        """Awaits `call`, records shape(result) or the normalised error; returns the result."""
        assert name not in self.steps, name
        try:
            result = await call
        except ApiError as e:
            self.steps[name] = _error(e)
            return None
        self.steps[name] = shape(result)
        return result


async def _events(
    stream: AsyncIterator[WatchEvent[Pod]], count: int
) -> list[tuple[str, str, dict[str, str]]]:
    out: list[tuple[str, str, dict[str, str]]] = []
    with anyio.fail_after(WATCH_TIMEOUT):
        async for ev in stream:
            out.append((ev.type, ev.object.metadata.name, dict(ev.object.metadata.labels)))
            if len(out) == count:
                break
    return out


# ---------------------------------------------------------------- the scenario


async def scenario(c: ApiClient, ns: str) -> dict[str, Any]:
    r = Record()

    # create, AlreadyExists, NotFound
    a = await r.step(
        "create a", c.create(make_pod("a").namespace(ns).labels(app="web").obj()), _pod
    )
    await r.step("create a again", c.create(make_pod("a").namespace(ns).obj()))
    await r.step("get missing", c.get(Pod, "missing", ns))
    await r.step("create b", c.create(make_pod("b").namespace(ns).labels(app="db").obj()))
    await r.step("create c", c.create(make_pod("c").namespace(ns).obj()))

    # label and field selectors, valid and not
    for selector in ("app=web", "app in (db,x)", "app", "!app", "app!=web", "app in (", "a b"):
        await r.step(
            f"list -l {selector}",
            c.list(Pod, ns, label_selector=selector),
            lambda res: _names(res.items),
        )
    for selector in (
        "metadata.name=b",
        "metadata.name!=b",
        "spec.nodeName=",
        "status.phase!=Running,metadata.name==c",
        "spec.priority=0",  # a field, not a field label: the apiserver refuses it
        "metadata.name",
        "metadata.name=a=b",
    ):
        await r.step(
            f"list --field-selector {selector}",
            c.list(Pod, ns, field_selector=selector),
            lambda res: _names(res.items),
        )

    # update: a stale resourceVersion is a Conflict; a label change keeps the generation
    assert a is not None
    current = await c.get(Pod, "a", ns)
    changed = Pod()
    changed.CopyFrom(current)
    changed.metadata.labels["tier"] = "front"
    updated = await r.step("update a", c.update(changed), _pod)
    stale = Pod()
    stale.CopyFrom(current)
    stale.metadata.labels["tier"] = "back"
    await r.step("update a with a stale resourceVersion", c.update(stale))
    r.steps["update bumps the resourceVersion"] = rv(updated) > rv(current)
    same = await c.get(Pod, "a", ns)
    again = await c.update(same)
    r.steps["a no-op update keeps the resourceVersion"] = rv(again) == rv(same)

    # status patches, with and without a resourceVersion precondition
    await r.step(
        "status patch sets nominatedNodeName",
        c.patch(Pod, "a", {"status": {"nominatedNodeName": "n2"}}, ns, subresource="status"),
        _pod,
    )
    await r.step(
        "status patch changes labels, not the spec",
        c.patch(
            Pod,
            "a",
            {
                "metadata": {"labels": {"x": "y"}},
                "spec": {"nodeName": "n9"},
                "status": {"nominatedNodeName": "n3"},
            },
            ns,
            subresource="status",
        ),
        _pod,
    )
    other = await c.get(Pod, "a", ns)
    other.metadata.uid = "other"
    await r.step("update with another object's uid", c.update(other))
    await r.step("status update with another object's uid", c.update_status(other))
    await r.step(
        "patch with a stale resourceVersion",
        c.patch(
            Pod, "a", {"metadata": {"resourceVersion": str(rv(current)), "labels": {"p": "1"}}}, ns
        ),
    )
    fresh = await c.get(Pod, "a", ns)
    await r.step(
        "patch with the current resourceVersion",
        c.patch(
            Pod,
            "a",
            {
                "metadata": {
                    "resourceVersion": fresh.metadata.resource_version,
                    "labels": {"p": "1"},
                }
            },
            ns,
        ),
        _pod,
    )
    await r.step("patch that is not an object", c.patch(Pod, "a", "[1]", ns))
    await r.step("patch of a missing pod", c.patch(Pod, "missing", {"metadata": {}}, ns))
    await r.step(
        "status patch of a kind without status",
        c.patch(
            types_pb2.PriorityClass,
            "system-node-critical",
            {"status": {}},
            subresource="status",
        ),
    )

    # binding
    a_before = await c.get(Pod, "a", ns)
    await r.step("bind a with another uid", c.bind(ns, "a", "node-1", uid="other"))
    await r.step(
        "bind a with a stale resourceVersion",
        c.bind(ns, "a", "node-1", resource_version=str(rv(a_before) - 1)),
    )
    await r.step(
        "bind a",
        c.bind(
            ns,
            "a",
            "node-1",
            uid=a_before.metadata.uid,
            resource_version=a_before.metadata.resource_version,
        ),
    )
    await r.step("a after binding", c.get(Pod, "a", ns), _pod)
    await r.step("bind a again", c.bind(ns, "a", "node-2"))
    await r.step("bind missing", c.bind(ns, "missing", "node-1"))
    await c.create(make_pod("gated").namespace(ns).gate("example.com/wait").obj())
    await r.step("bind a gated pod", c.bind(ns, "gated", "node-1"))

    # deletion: graceful for a bound pod, immediate for an unbound one; preconditions
    await r.step("delete bound a", c.delete(Pod, "a", ns, grace_period_seconds=20), _pod)
    await r.step("a while terminating", c.get(Pod, "a", ns), _pod)
    await r.step(
        "delete a with a longer grace", c.delete(Pod, "a", ns, grace_period_seconds=60), _pod
    )
    await r.step(
        "delete a with a shorter grace", c.delete(Pod, "a", ns, grace_period_seconds=5), _pod
    )
    await r.step("bind a terminating pod", c.bind(ns, "a", "node-1"))
    uid = (
        await r.step("a has its uid", c.get(Pod, "a", ns), lambda p: bool(p.metadata.uid)) or Pod()
    ).metadata.uid
    await r.step(
        "delete a with a wrong uid", c.delete(Pod, "a", ns, grace_period_seconds=0, uid="other")
    )
    await r.step(
        "delete a with a stale resourceVersion",
        c.delete(Pod, "a", ns, grace_period_seconds=0, resource_version=str(rv(current))),
    )
    await r.step(
        "delete a with grace 0 and its uid",
        c.delete(Pod, "a", ns, grace_period_seconds=0, uid=uid),
        lambda p: _pod(p)["deleting"],
    )
    await r.step("get a after deletion", c.get(Pod, "a", ns))
    await r.step("delete unbound b", c.delete(Pod, "b", ns), _pod)
    await r.step("get b after deletion", c.get(Pod, "b", ns))
    await r.step("delete missing", c.delete(Pod, "missing", ns))
    await r.step(
        "delete with a negative grace", c.delete(Pod, "c", ns, grace_period_seconds=-1), _pod
    )

    # watch: create, update, delete; with a label selector an object leaving it is DELETED
    start = (await c.list(Pod, ns)).resource_version
    async with (
        c.watch(Pod, ns, resource_version=start) as every,
        c.watch(Pod, ns, resource_version=start, label_selector="app=w") as selected,
    ):
        w = await c.create(make_pod("w").namespace(ns).labels(app="w").obj())
        w.metadata.labels["v"] = "2"
        w = await c.update(w)
        w.metadata.labels["app"] = "x"
        w = await c.update(w)
        await c.delete(Pod, "w", ns)
        r.steps["watch"] = await _events(every, 5)
        r.steps["watch -l app=w"] = await _events(selected, 3)

    # namespaces: the first delete marks one Terminating, the finalize subresource lets it go
    gone = f"{ns}-gone"
    await c.create(new_namespace(gone, finalizers=["kubernetes"]))
    await r.step("delete namespace", c.delete(Namespace, gone), _namespace)
    await r.step("delete namespace again", c.delete(Namespace, gone), _namespace)
    await r.step(
        "finalize namespace",
        c.patch(Namespace, gone, {"spec": {"finalizers": []}}, subresource="finalize"),
        _namespace,
    )
    await r.step("get namespace after finalize", c.get(Namespace, gone))
    r.steps["get namespace after finalize"] = tuple(
        part.replace(_NUMBER.sub("<n>", gone), "<ns>")
        for part in r.steps["get namespace after finalize"]
    )
    await r.step("finalize a pod", c.patch(Pod, "c", {}, ns, subresource="finalize"))
    # the subresource table (kemu.machinery.subresources) answers for both
    await r.step("patch pods/binding", c.patch(Pod, "c", {}, ns, subresource="binding"))
    await r.step("patch pods/widget", c.patch(Pod, "c", {}, ns, subresource="widget"))
    return r.steps


def _namespace(ns: Namespace) -> dict[str, Any]:
    return {
        "phase": ns.status.phase,
        "deleting": ns.metadata.HasField("deletion_timestamp"),
        "finalizers": list(ns.spec.finalizers),
    }


# ---------------------------------------------------------------- what the apiserver does


def _want(
    name: str,
    labels: dict[str, str],
    *,
    deleting: bool = False,
    grace: int | None = None,
    node: str = "",
    nominated: str = "",
    scheduled: str = "-",
    generation: int = 1,
) -> dict[str, Any]:
    return {
        "name": name,
        "labels": labels,
        "generation": generation,
        "has_uid": True,
        "created": True,
        "deleting": deleting,
        "grace": grace,
        "node": node,
        "nominated": nominated,
        "scheduled": scheduled,
    }


_A = {"app": "web", "tier": "front"}
_A_STATUS = {**_A, "x": "y"}  # a pods/status write may change labels
_A_PATCHED = {**_A_STATUS, "p": "1"}


def _bound_a(*, deleting: bool = False, grace: int | None = None) -> dict[str, Any]:
    """Pod a once bound to node-1 (its nominatedNodeName cleared: the gate is on at 1.37);
    the start of its graceful deletion bumped its generation."""
    return _want(
        "a",
        _A_PATCHED,
        deleting=deleting,
        grace=grace,
        node="node-1",
        scheduled="True",
        generation=2 if deleting else 1,
    )


_STALE = (
    "Conflict",
    'Operation cannot be fulfilled on pods "a": the object has been modified; please apply '
    "your changes to the latest version and try again",
)

EXPECTED: dict[str, Any] = {
    "create a": _want("a", {"app": "web"}),
    "create a again": ("AlreadyExists", 'pods "a" already exists'),
    "get missing": ("NotFound", 'pods "missing" not found'),
    "create b": "ok",
    "create c": "ok",
    "list -l app=web": ["a"],
    "list -l app in (db,x)": ["b"],
    "list -l app": ["a", "b"],
    "list -l !app": ["c"],
    "list -l app!=web": ["b", "c"],
    "list -l app in (": (
        "BadRequest",
        "unable to parse requirement: found '', expected: ',', ')' or identifier",
    ),
    "list -l a b": (
        "BadRequest",
        "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
    ),
    "list --field-selector metadata.name=b": ["b"],
    "list --field-selector metadata.name!=b": ["a", "c"],
    "list --field-selector spec.nodeName=": ["a", "b", "c"],
    "list --field-selector status.phase!=Running,metadata.name==c": ["c"],
    "list --field-selector spec.priority=0": (
        "BadRequest",
        "field label not supported: spec.priority",
    ),
    "list --field-selector metadata.name": (
        "BadRequest",
        "invalid field selector: 'metadata.name': can't understand 'metadata.name'",
    ),
    "list --field-selector metadata.name=a=b": (
        "BadRequest",
        "invalid field selector: 'metadata.name=a=b': unescaped '=' in value 'a=b'",
    ),
    "update a": _want("a", _A),
    "update a with a stale resourceVersion": _STALE,
    "update bumps the resourceVersion": True,
    "a no-op update keeps the resourceVersion": True,
    "status patch sets nominatedNodeName": _want("a", _A, nominated="n2"),
    "status patch changes labels, not the spec": _want("a", _A_STATUS, nominated="n3"),
    "update with another object's uid": (
        "Conflict",
        'Operation cannot be fulfilled on pods "a": Precondition failed: UID in precondition: '
        "other, UID in object meta: <uid>",
    ),
    "status update with another object's uid": (
        "Conflict",
        'Operation cannot be fulfilled on pods "a": Precondition failed: UID in precondition: '
        "other, UID in object meta: <uid>",
    ),
    "patch with a stale resourceVersion": _STALE,
    "patch with the current resourceVersion": _want("a", _A_PATCHED, nominated="n3"),
    "patch that is not an object": ("BadRequest", "a merge patch must be a JSON object"),
    "patch of a missing pod": ("NotFound", 'pods "missing" not found'),
    "status patch of a kind without status": (
        "NotFound",
        "the server could not find the requested resource (priorityclasses/status)",
    ),
    "bind a with another uid": (
        "Conflict",
        'Operation cannot be fulfilled on pods "a": Precondition failed: '
        "UID in precondition: other, UID in object meta: <uid>",
    ),
    "bind a with a stale resourceVersion": (
        "Conflict",
        'Operation cannot be fulfilled on pods "a": Precondition failed: '
        "ResourceVersion in precondition: <n>, ResourceVersion in object meta: <n>",
    ),
    "bind a": "ok",
    "a after binding": _bound_a(),
    "bind a again": (
        "Conflict",
        'Operation cannot be fulfilled on pods/binding "a": '
        'pod a is already assigned to node "node-<n>"',
    ),
    "bind missing": ("NotFound", 'pods "missing" not found'),
    "bind a gated pod": (
        "Conflict",
        'Operation cannot be fulfilled on pods/binding "gated": '
        "pod gated has non-empty .spec.schedulingGates",
    ),
    "delete bound a": _bound_a(deleting=True, grace=20),
    "a while terminating": _bound_a(deleting=True, grace=20),
    "delete a with a longer grace": _bound_a(deleting=True, grace=20),
    "delete a with a shorter grace": _bound_a(deleting=True, grace=5),
    "bind a terminating pod": (
        "Conflict",
        'Operation cannot be fulfilled on pods/binding "a": '
        "pod a is being deleted, cannot be assigned to a host",
    ),
    "a has its uid": True,
    "delete a with a wrong uid": (
        "Conflict",
        'Operation cannot be fulfilled on Pod "a": the UID in the precondition (other) does '
        "not match the UID in record (<uid>). The object might have been deleted and then "
        "recreated",
    ),
    "delete a with a stale resourceVersion": (
        "Conflict",
        'Operation cannot be fulfilled on Pod "a": the ResourceVersion in the precondition '
        "(<n>) does not match the ResourceVersion in record (<n>). The object might have "
        "been modified",
    ),
    "delete a with grace 0 and its uid": True,  # the last state, still marked
    "get a after deletion": ("NotFound", 'pods "a" not found'),
    # every pod delete is graceful: an unbound pod is marked with grace 0, then removed
    "delete unbound b": _want("b", {"app": "db"}, deleting=True, grace=0, generation=2),
    "get b after deletion": ("NotFound", 'pods "b" not found'),
    "delete missing": ("NotFound", 'pods "missing" not found'),
    "delete with a negative grace": _want("c", {}, deleting=True, grace=0, generation=2),
    "watch": [
        ("ADDED", "w", {"app": "w"}),
        ("MODIFIED", "w", {"app": "w", "v": "2"}),
        ("MODIFIED", "w", {"app": "x", "v": "2"}),
        ("MODIFIED", "w", {"app": "x", "v": "2"}),  # marked for deletion (grace 0)
        ("DELETED", "w", {"app": "x", "v": "2"}),
    ],
    "watch -l app=w": [
        ("ADDED", "w", {"app": "w"}),
        ("MODIFIED", "w", {"app": "w", "v": "2"}),
        ("DELETED", "w", {"app": "x", "v": "2"}),  # left the selection
    ],
    "delete namespace": {"phase": "Terminating", "deleting": True, "finalizers": ["kubernetes"]},
    "delete namespace again": {
        "phase": "Terminating",
        "deleting": True,
        "finalizers": ["kubernetes"],
    },
    "finalize namespace": {"phase": "Terminating", "deleting": True, "finalizers": []},
    "get namespace after finalize": ("NotFound", 'namespaces "<ns>" not found'),
    "finalize a pod": (
        "NotFound",
        "the server could not find the requested resource (pods/finalize)",
    ),
    "patch pods/binding": ("BadRequest", "pods/binding does not serve patch (it serves create)"),
    "patch pods/widget": ("BadRequest", 'unknown subresource "widget"'),
}


async def test_fake_and_apiserver_give_the_same_outcomes(factory: Factory) -> None:
    async with factory() as c:
        got = await scenario(c, await create_namespace(c, "contract"))
    differ = {
        step: (got.get(step), want) for step, want in EXPECTED.items() if got.get(step) != want
    }
    assert not differ, "steps (got, want):\n" + "\n".join(f"{k}: {v}" for k, v in differ.items())
    assert list(got) == list(EXPECTED)


@pytest.mark.parametrize("backend", ["fake", "apiserver"])
async def test_binding_keeps_the_nomination_when_the_clearing_gate_is_off(
    backend: str, kemu_cluster_factory: Callable[[], Cluster]
) -> None:
    gates = {CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING: False}
    if backend == "fake":
        factory = _fake_factory(gates)
    else:
        cl = kemu_cluster_factory()
        cl.start_etcd()
        cl.start_apiserver(feature_gates=gates)
        factory = _server_factory(cl.server)
    async with factory() as c:
        await c.create(make_pod("p").obj())
        await c.patch(Pod, "p", {"status": {"nominatedNodeName": "n2"}}, subresource="status")
        await c.bind("default", "p", "n1")
        assert _pod(await c.get(Pod, "p")) == _want(
            "p", {}, node="n1", nominated="n2", scheduled="True"
        )


# ---------------------------------------------------------------- finalizers and propagation

HOLD = "example.com/hold"


def _deleting(obj: Any) -> dict[str, Any]:
    """The deletion fields of any object."""
    m = obj.metadata
    return {
        "deleting": m.HasField("deletion_timestamp"),
        "grace": m.deletion_grace_period_seconds if m.HasField("deletion_timestamp") else None,
        "generation": m.generation,
        "finalizers": list(m.finalizers),
    }


def _gone(deleting: bool, finalizers: list[str], generation: int = 2, grace: int | None = 0):
    return {
        "deleting": deleting,
        "grace": grace if deleting else None,
        "generation": generation,
        "finalizers": finalizers,
    }


async def finalizer_scenario(c: ApiClient, ns: str) -> dict[str, Any]:
    r = Record()
    Lease, Pdb = types_pb2.Lease, types_pb2.PodDisruptionBudget

    # finalizers hold a deleted object of a kind without graceful deletion
    await c.create(owned(make_lease("l", ns), finalizers=[HOLD]))
    await r.step("delete l", c.delete(Lease, "l", ns), _deleting)
    await r.step("l is kept", c.get(Lease, "l", ns), _deleting)
    first = await c.get(Lease, "l", ns)
    await r.step("delete l again", c.delete(Lease, "l", ns), _deleting)
    again = await c.get(Lease, "l", ns)
    r.steps["a second delete keeps the resourceVersion"] = (
        again.metadata.resource_version == first.metadata.resource_version
    )
    held = await c.get(Lease, "l", ns)
    held.metadata.finalizers.append("example.com/other")
    await r.step("add a finalizer to l", c.update(held))
    await r.step(
        "patch l's labels", c.patch(Lease, "l", {"metadata": {"labels": {"x": "1"}}}, ns), _deleting
    )
    await r.step(
        "remove l's last finalizer",
        c.patch(Lease, "l", {"metadata": {"finalizers": []}}, ns),
        _deleting,
    )
    await r.step("l is gone", c.get(Lease, "l", ns))

    # propagation policies: Foreground and Orphan add their finalizer, Background none
    await c.create(make_pdb("p").namespace(ns).min_available(1).obj())
    await r.step(
        "delete p in foreground",
        c.delete(Pdb, "p", ns, propagation_policy="Foreground"),
        _deleting,
    )
    await r.step(
        "delete p again to orphan", c.delete(Pdb, "p", ns, propagation_policy="Orphan"), _deleting
    )
    await r.step("delete p sideways", c.delete(Pdb, "p", ns, propagation_policy="Sideways"))
    await r.step(
        "delete p with both policies",
        c.delete(Pdb, "p", ns, propagation_policy="Orphan", orphan_dependents=True),
    )
    await r.step(
        "remove p's finalizer", c.patch(Pdb, "p", {"metadata": {"finalizers": None}}, ns), _deleting
    )
    await r.step("p is gone", c.get(Pdb, "p", ns))
    await c.create(make_pdb("q").namespace(ns).min_available(1).obj())
    await r.step(
        "delete q in background",
        c.delete(Pdb, "q", ns, propagation_policy="Background"),
        _deleting,
    )
    await r.step("q is gone", c.get(Pdb, "q", ns))
    await c.create(make_pdb("o").namespace(ns).min_available(1).obj())
    await r.step(
        "delete o with orphanDependents", c.delete(Pdb, "o", ns, orphan_dependents=True), _deleting
    )
    o = await c.get(Pdb, "o", ns)
    del o.metadata.finalizers[:]
    await r.step("update o without finalizers", c.update(o), _deleting)
    await r.step("o is gone", c.get(Pdb, "o", ns))

    # pods: graceful deletion and finalizers together
    await c.create(owned(make_pod("f").namespace(ns).obj(), finalizers=[HOLD]))
    await c.bind(ns, "f", "node-1")
    f = await r.step("delete bound f", c.delete(Pod, "f", ns, grace_period_seconds=30), _deleting)
    uid = (await c.get(Pod, "f", ns)).metadata.uid
    await r.step(
        "the kubelet deletes f", c.delete(Pod, "f", ns, grace_period_seconds=0, uid=uid), _deleting
    )
    await r.step("f is kept", c.get(Pod, "f", ns), _deleting)
    await r.step(
        "remove f's finalizer", c.patch(Pod, "f", {"metadata": {"finalizers": []}}, ns), _deleting
    )
    await r.step("f is gone", c.get(Pod, "f", ns))
    await c.create(owned(make_pod("g").namespace(ns).obj(), finalizers=[HOLD]))
    await c.bind(ns, "g", "node-1")
    await c.delete(Pod, "g", ns, grace_period_seconds=30)
    await r.step(
        "remove g's finalizer while it terminates",
        c.patch(Pod, "g", {"metadata": {"finalizers": []}}, ns),
        _deleting,
    )
    await r.step("the kubelet deletes g", c.delete(Pod, "g", ns, grace_period_seconds=0), _deleting)
    await r.step("g is gone", c.get(Pod, "g", ns))
    await c.create(owned(make_pod("u").namespace(ns).obj(), finalizers=[HOLD]))
    await r.step("delete unbound u", c.delete(Pod, "u", ns), _deleting)

    # watch: the last finalizer's removal is a DELETED event
    start = (await c.list(Lease, ns)).resource_version
    async with c.watch(Lease, ns, resource_version=start) as stream:
        await c.create(owned(make_lease("w", ns), finalizers=[HOLD]))
        await c.delete(Lease, "w", ns)
        await c.patch(Lease, "w", {"metadata": {"finalizers": []}}, ns)
        seen: list[tuple[str, bool, list[str]]] = []
        with anyio.fail_after(WATCH_TIMEOUT):
            async for ev in stream:
                m = ev.object.metadata
                seen.append((ev.type, m.HasField("deletion_timestamp"), list(m.finalizers)))
                if len(seen) == 3:
                    break
        r.steps["watch"] = seen
    assert f is not None
    return r.steps


FINALIZER_EXPECTED: dict[str, Any] = {
    "delete l": _gone(True, [HOLD], generation=0),  # a Lease has no generation
    "l is kept": _gone(True, [HOLD], generation=0),  # a Lease has no generation
    "delete l again": _gone(True, [HOLD], generation=0),  # a Lease has no generation
    "a second delete keeps the resourceVersion": True,
    "add a finalizer to l": (
        "Invalid",
        'Lease.coordination.k8s.io "l" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added '
        'if the object is being deleted, found new finalizers []string{"example.com/other"}',
    ),
    "patch l's labels": _gone(True, [HOLD], generation=0),  # a Lease has no generation
    "remove l's last finalizer": _gone(True, [], generation=0),  # a Lease has no generation
    "l is gone": ("NotFound", 'leases.coordination.k8s.io "l" not found'),
    "delete p in foreground": _gone(True, ["foregroundDeletion"]),
    "delete p again to orphan": _gone(True, ["orphan"]),
    "delete p sideways": (
        "Invalid",
        'DeleteOptions is invalid: propagationPolicy: Unsupported value: "Sideways": supported '
        'values: "Foreground", "Background", "Orphan", "nil"',
    ),
    "delete p with both policies": (
        "Invalid",
        'DeleteOptions is invalid: propagationPolicy: Invalid value: "Orphan": '
        "orphanDependents and deletionPropagation cannot be both set",
    ),
    "remove p's finalizer": _gone(True, []),
    "p is gone": ("NotFound", 'poddisruptionbudgets.policy "p" not found'),
    "delete q in background": _gone(False, [], generation=1),
    "q is gone": ("NotFound", 'poddisruptionbudgets.policy "q" not found'),
    "delete o with orphanDependents": _gone(True, ["orphan"]),
    "update o without finalizers": _gone(True, []),
    "o is gone": ("NotFound", 'poddisruptionbudgets.policy "o" not found'),
    "delete bound f": _gone(True, [HOLD], grace=30),
    "the kubelet deletes f": _gone(True, [HOLD]),
    "f is kept": _gone(True, [HOLD]),
    "remove f's finalizer": _gone(True, []),
    "f is gone": ("NotFound", 'pods "f" not found'),
    "remove g's finalizer while it terminates": _gone(True, [], grace=30),
    "the kubelet deletes g": _gone(True, [], grace=0),  # its last state: marked with grace 0
    "g is gone": ("NotFound", 'pods "g" not found'),
    "delete unbound u": _gone(True, [HOLD]),
    "watch": [("ADDED", False, [HOLD]), ("MODIFIED", True, [HOLD]), ("DELETED", True, [HOLD])],
}


async def test_finalizers_and_propagation_give_the_same_outcomes(factory: Factory) -> None:
    async with factory() as c:
        got = await finalizer_scenario(c, await create_namespace(c, "finalizers"))
    differ = {
        step: (got.get(step), want)
        for step, want in FINALIZER_EXPECTED.items()
        if got.get(step) != want
    }
    assert not differ, "steps (got, want):\n" + "\n".join(f"{k}: {v}" for k, v in differ.items())
    assert list(got) == list(FINALIZER_EXPECTED)


async def test_workload_generation_and_status_annotations_match(factory: Factory) -> None:
    """apps/v1: a Deployment's generation follows its spec and annotations, a ReplicaSet's its
    spec only; their status updates write annotations (the controller's revision), not spec."""
    from kemu.api.v1.types_pb2 import Deployment, ReplicaSet
    from kemu.testing import make_deployment, make_replica_set

    name = unique_name("gen")
    async with factory() as c:
        d = await c.create(make_deployment(name).obj())
        assert d.metadata.generation == 1
        d.metadata.labels["tier"] = "web"
        d = await c.update(d)
        assert d.metadata.generation == 1  # labels are not the spec
        d.metadata.annotations["note"] = "x"
        d = await c.update(d)
        assert d.metadata.generation == 2  # a Deployment's annotations count
        d.spec.replicas = 3
        d = await c.update(d)
        assert d.metadata.generation == 3
        d.metadata.annotations["deployment.kubernetes.io/revision"] = "1"
        d.status.observed_generation = 3
        d.spec.replicas = 9  # ignored by a status update
        d = await c.update_status(d)
        got = await c.get(Deployment, name)
        assert got.metadata.annotations["deployment.kubernetes.io/revision"] == "1"
        assert (got.spec.replicas, got.metadata.generation) == (3, 3)
        assert got.status.observed_generation == 3
        rs = await c.create(make_replica_set(name).obj())
        rs.metadata.annotations["note"] = "x"
        rs = await c.update(rs)
        assert rs.metadata.generation == 1
        rs.spec.replicas = 0
        rs = await c.update(rs)
        assert (await c.get(ReplicaSet, name)).metadata.generation == 2

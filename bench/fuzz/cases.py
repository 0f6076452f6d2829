"""The catalog of malformed requests, per edge: each family is a function of a seeded
random.Random that builds one request every correct server refuses (4xx, or a gRPC status
other than OK, INTERNAL and UNKNOWN) without changing what it stores.

The objects a cluster under fuzz holds (`seed_objects`) are named here so that requests aim at
them: a DELETE with malformed options on a pod that exists must leave the pod where it is.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

from google.protobuf.message import Message

from kemu.api.cloud.v1 import cloud_pb2
from kemu.api.v1 import api_pb2
from kemu.machinery import convert
from kemu.machinery.jsonvalue import JSON
from kemu.testing import make_node, make_pod

NS: Final = "fuzz"
PODS: Final = ("fuzz-0", "fuzz-1", "fuzz-2")
NODE: Final = "fuzz-node"
GROUP: Final = "fuzz-group"  # the cloud's node group
NEW: Final = "fuzz-new"  # the name a refused create would have made

MiB: Final = 1024 * 1024
BODY_LIMIT: Final = 3 * MiB  # upstream's MaxRequestBodyBytes

API: Final = "/kemu.api.v1.Api/"
CLOUD: Final = "/kemu.api.cloud.v1.CloudProvider/"

REST_JSON: Final = "rest-json"
REST_PROTOBUF: Final = "rest-protobuf"
GRPC_API: Final = "grpc-api"
CLOUD_GRPC: Final = "cloud-grpc"
HEALTH: Final = "health-http"
EDGES: Final = (REST_JSON, REST_PROTOBUF, GRPC_API, CLOUD_GRPC, HEALTH)

JSON_TYPE: Final = "application/json"
PROTOBUF_TYPE: Final = "application/vnd.kubernetes.protobuf"
MERGE: Final = "application/merge-patch+json"
JSON_PATCH: Final = "application/json-patch+json"
STRATEGIC: Final = "application/strategic-merge-patch+json"


@dataclass(frozen=True)
class Http:
    """One HTTP request to the REST edge."""

    method: str
    path: str
    body: bytes = b""
    content_type: str | None = None
    chunked: bool = False  # sent in chunks without a Content-Length
    accept: str | None = None


@dataclass(frozen=True)
class Raw:
    """Bytes written as they are to an HTTP socket: the health edge's own parser, or with
    `rest` the REST edge's (aiohttp's)."""

    data: bytes
    rest: bool = False


@dataclass(frozen=True)
class Grpc:
    """One call with a raw request body: `method` is the full path, `stream` a server stream."""

    method: str
    body: bytes
    stream: bool = False


Request = Http | Raw | Grpc


@dataclass(frozen=True)
class Case:
    edge: str
    family: str
    request: Request

    def describe(self) -> str:
        r = self.request
        if isinstance(r, Http):
            return f"{self.family}: {r.method} {r.path[:200]} ({r.content_type}, {len(r.body)} bytes: {r.body[:120]!r})"
        if isinstance(r, Grpc):
            return f"{self.family}: {r.method} ({len(r.body)} bytes: {r.body[:120]!r})"
        return f"{self.family}: {len(r.data)} bytes: {r.data[:200]!r}"


Family = Callable[[random.Random], Request]


# ------------------------------------------------------------------ helpers


def seed_objects() -> list[Message]:
    """What the fuzzed cluster stores in namespace NS (created before, compared after)."""
    pods: list[Message] = [
        make_pod(name).namespace(NS).req(cpu="100m", memory="64Mi").label("app", "fuzz").obj()
        for name in PODS
    ]
    return [*pods, make_node(NODE).capacity(cpu="4", memory="8Gi").obj()]


def _pod_dict(name: str = NEW) -> dict[str, Any]:
    pod = make_pod(name).namespace(NS).req(cpu="100m", memory="64Mi").label("app", "x").obj()
    return convert.to_dict(pod, wire=True)


def _dumps(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _pods(rng: random.Random, sub: str = "") -> str:
    name = rng.choice(PODS)
    return f"/api/v1/namespaces/{NS}/pods/{name}" + (f"/{sub}" if sub else "")


_COLLECTION: Final = f"/api/v1/namespaces/{NS}/pods"

# values of the wrong JSON type for a field of each type
_NOT_STRING: Final[tuple[JSON, ...]] = (5, 1.5, True, [], {}, ["a"], {"a": 1})
_NOT_INT: Final[tuple[JSON, ...]] = (
    "5",
    "abc",
    1.5,
    True,
    [],
    {},
    1e400,
    2**63,
    -(2**63) - 1,
    2**100,
)
_NOT_OBJECT: Final[tuple[JSON, ...]] = (5, "x", True, [], ["a"], 1.5)
_NOT_LIST: Final[tuple[JSON, ...]] = (5, "x", True, {}, {"a": 1})
_NOT_BOOL: Final[tuple[JSON, ...]] = ("true", "x", 1, 0, [], {})

# (path in a pod, wrong values)
_WRONG_TYPES: Final[tuple[tuple[tuple[str | int, ...], tuple[JSON, ...]], ...]] = (
    (("metadata",), _NOT_OBJECT),
    (("metadata", "name"), _NOT_STRING),
    (("metadata", "labels"), _NOT_OBJECT),
    (("metadata", "labels", "app"), _NOT_STRING),
    (("metadata", "annotations"), _NOT_OBJECT),
    (("metadata", "finalizers"), _NOT_LIST),
    (("metadata", "ownerReferences"), _NOT_LIST),
    (("metadata", "generation"), _NOT_INT),
    (("spec",), _NOT_OBJECT),
    (("spec", "containers"), _NOT_LIST),
    (("spec", "containers", 0), _NOT_OBJECT),
    (("spec", "containers", 0, "name"), _NOT_STRING),
    (("spec", "containers", 0, "resources"), _NOT_OBJECT),
    (("spec", "containers", 0, "resources", "requests"), _NOT_OBJECT),
    (("spec", "containers", 0, "resources", "requests", "cpu"), (True, [], {}, 1e400, -1)),
    (("spec", "priority"), _NOT_INT),
    (("spec", "terminationGracePeriodSeconds"), _NOT_INT),
    (("spec", "nodeSelector"), _NOT_OBJECT),
    (("spec", "tolerations"), _NOT_LIST),
    (("spec", "hostNetwork"), _NOT_BOOL),
    (("spec", "affinity"), _NOT_OBJECT),
)

# quantities upstream refuses (malformed, negative, or a number JSON turns into infinity)
ABSURD_QUANTITIES: Final = (
    "abc",
    "1.2.3",
    "",
    " 1",
    "1 ",
    "0x10",
    "1Qi",
    "1e",
    "++1",
    "--1",
    "-1",
    "-" + "9" * 40,
    "-1Ei",
    "1e99999999999999999999",
    "∞",
    "NaN",
    "1\x00",
)


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


# names no object may have (a DNS-1123 subdomain: lower case, at most 253 characters)
_BAD_NAMES: Final = (
    "",
    "x" * 300,
    "x" * 70_000,
    "UPPER",
    "a/b/c",
    "..",
    "ünï",
    "\x00",
    "-leading",
    "trailing-",
    "a" * 254,
    "Bad_Name",
)


def _nested(depth: int, kind: str = "list") -> bytes:
    if kind == "list":
        return b"[" * depth + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


def _invalid_utf8(rng: random.Random) -> bytes:
    return rng.choice([b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80"])


# ------------------------------------------------------------------ REST, JSON bodies


def create_wrong_type(rng: random.Random) -> Request:
    doc = _pod_dict()
    path, values = rng.choice(_WRONG_TYPES)
    _set(doc, path, rng.choice(values))
    return Http("POST", _COLLECTION, _dumps(doc), JSON_TYPE)


def create_absurd_quantity(rng: random.Random) -> Request:
    doc = _pod_dict()
    res = doc["spec"]["containers"][0]["resources"]
    which = rng.choice(["requests", "limits"])
    res.setdefault(which, {})[rng.choice(["cpu", "memory", "pods"])] = rng.choice(ABSURD_QUANTITIES)
    return Http("POST", _COLLECTION, _dumps(doc), JSON_TYPE)


def create_unknown_field_strict(rng: random.Random) -> Request:
    doc = _pod_dict()
    where = rng.choice([doc, doc["metadata"], doc["spec"], doc["spec"]["containers"][0]])
    where[rng.choice(["bogus", "Name", "x" * 300, "spec2", "\u00fc"])] = rng.choice([1, "x", {}])
    return Http("POST", _COLLECTION + "?fieldValidation=Strict", _dumps(doc), JSON_TYPE)


def create_duplicate_field_strict(rng: random.Random) -> Request:
    text = _dumps(_pod_dict()).decode()
    dup = rng.choice(['"metadata":{"name":"a"},', '"kind":"Pod",', '"spec":{},'])
    return Http(
        "POST", _COLLECTION + "?fieldValidation=Strict", ("{" + dup + text[1:]).encode(), JSON_TYPE
    )


def create_truncated(rng: random.Random) -> Request:
    body = _dumps(_pod_dict())
    return Http("POST", _COLLECTION, body[: rng.randrange(0, len(body))], JSON_TYPE)


def create_deeply_nested(rng: random.Random) -> Request:
    depth = rng.choice([200, 1_000, 5_000, 100_000, 1_000_000])
    inner = _nested(depth, rng.choice(["list", "object"]))
    if rng.random() < 0.5:
        body = inner
    else:
        body = b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"' + NEW.encode()
        body += b'","labels":' + inner + b"}}"
    return Http("POST", _COLLECTION, body, JSON_TYPE)


def create_invalid_utf8(rng: random.Random) -> Request:
    body = _dumps(_pod_dict())
    marker = rng.choice([NEW.encode(), b"100m", b"app"])
    i = body.index(marker)
    return Http("POST", _COLLECTION, body[:i] + _invalid_utf8(rng) + body[i:], JSON_TYPE)


def create_oversized(rng: random.Random) -> Request:
    """A pod of 1 to 4 MiB: Invalid below the 3 MiB body limit (annotations are at most
    256 KiB, an object at most 1.5 MiB), 413 above it."""
    doc = _pod_dict()
    size = rng.choice([MiB + 1, 2 * MiB, BODY_LIMIT - 200, BODY_LIMIT + 1, 4 * MiB])
    if rng.random() < 0.5:
        doc["metadata"]["annotations"] = {"big": "x" * size}
    else:  # valid but for its size: more than etcd takes (1.5 MiB), or than the body limit
        doc["spec"]["containers"][0]["command"] = ["x" * max(size, 2 * MiB)]
    return Http("POST", _COLLECTION, _dumps(doc), JSON_TYPE)


def create_not_an_object(rng: random.Random) -> Request:
    body = rng.choice([b"[]", b"5", b'"pod"', b"null", b"true", b"[{}]", b"", b" "])
    return Http("POST", _COLLECTION, body, JSON_TYPE)


def create_wrong_content_type(rng: random.Random) -> Request:
    ctype = rng.choice(
        ["text/plain", "application/xml", "multipart/form-data", "a/b/c;;", "\u00e9/x", "image/png"]
    )
    return Http("POST", _COLLECTION, _dumps(_pod_dict()), ctype)


def create_in_a_bad_namespace(rng: random.Random) -> Request:
    """A pod in a namespace no object may have (or that does not exist)."""
    ns = rng.choice(["Bad_NS", "x" * 300, "%2e%2e", "no-such-namespace", "-x"])
    doc = _pod_dict()
    doc["metadata"]["namespace"] = ns.replace("%2e", ".")
    return Http("POST", f"/api/v1/namespaces/{ns}/pods", _dumps(doc), JSON_TYPE)


def create_wrong_namespace_or_kind(rng: random.Random) -> Request:
    doc = _pod_dict()
    choice = rng.randrange(4)
    if choice == 0:
        doc["metadata"]["namespace"] = "other"
    elif choice == 1:
        doc["kind"] = rng.choice(["Node", "Bogus", ""])
    elif choice == 2:
        doc["apiVersion"] = rng.choice(["v2", "apps/v1", "x/y/z"])
    else:
        doc["metadata"]["name"] = rng.choice(_BAD_NAMES)
    return Http("POST", _COLLECTION, _dumps(doc), JSON_TYPE)


def update_mismatched(rng: random.Random) -> Request:
    name = rng.choice(PODS)
    doc = _pod_dict(rng.choice([NEW, name + "x", ""]))
    return Http("PUT", f"{_COLLECTION}/{name}", _dumps(doc), JSON_TYPE)


def _token(rv: int, start: str) -> str:
    """A continue token in kemu's shape (for a revision no etcd can have)."""
    return base64.urlsafe_b64encode(json.dumps({"rv": rv, "start": start}).encode()).decode()


def update_bad_resource_version(rng: random.Random) -> Request:
    """A PUT of a pod that exists whose resourceVersion no stored object can have."""
    name = rng.choice(PODS)
    doc = _pod_dict(name)
    doc["metadata"]["resourceVersion"] = rng.choice(
        ["abc", "-1", "0", str(2**64), "9" * 400, "1", " 5", rng.choice(_NOT_STRING)]
    )
    sub = rng.choice(["", "/status"])
    return Http("PUT", f"{_COLLECTION}/{name}{sub}", _dumps(doc), JSON_TYPE)


def bad_list_query(rng: random.Random) -> Request:
    param, value = rng.choice(
        [
            ("limit", str(2**63)),
            ("limit", str(2**64 + rng.randrange(1000))),
            ("limit", "9" * rng.choice([25, 400])),
            ("limit", "-1"),
            ("limit", "abc"),
            ("limit", "1.5"),
            ("resourceVersion", str(2**64 + rng.randrange(1000))),
            ("resourceVersion", "9" * rng.choice([21, 40, 5000])),
            ("resourceVersion", "-5"),
            ("resourceVersion", "abc"),
            ("resourceVersion", "1e3"),
            ("resourceVersionMatch", "Bogus"),
            ("resourceVersionMatch", "Exact"),  # without a resourceVersion
            ("continue", "not-a-token"),
            ("continue", "eyJydiI6ICJ4In0="),
            ("continue", base64.urlsafe_b64encode(b"[" * 5000 + b"]" * 5000).decode()),
            ("continue", base64.urlsafe_b64encode(b'{"rv":1e400,"start":"x"}').decode()),
            ("continue", _token(rng.choice([0, -1, 2**63, 10**300]), "/registry/pods/")),
            ("labelSelector", "a in ("),
            ("labelSelector", "!!"),
            ("labelSelector", "a=b=c"),
            ("labelSelector", "=x"),
            ("labelSelector", "x" * 400 + "=y"),
            ("labelSelector", "a notin b"),
            ("fieldSelector", "spec.bogus=x"),
            ("fieldSelector", "metadata.name"),
            ("fieldSelector", "a==b==c"),
            ("timeoutSeconds", "abc"),
        ]
    )
    path = rng.choice([_COLLECTION, "/api/v1/pods", "/api/v1/nodes"])
    return Http("GET", f"{path}?{param}={quote(value)}")


TABLE: Final = "application/json;as=Table;v=v1;g=meta.k8s.io"


def bad_table_options(rng: random.Random) -> Request:
    value = rng.choice(["Bogus", "object", "x" * 500, "Metadata,Object"])
    path = rng.choice([_COLLECTION, "/api/v1/nodes"])
    return Http("GET", f"{path}?includeObject={quote(value)}", accept=TABLE)


def bad_watch_query(rng: random.Random) -> Request:
    param, value = rng.choice(
        [
            ("resourceVersion", str(2**64 + rng.randrange(1000))),
            ("resourceVersion", "-1"),
            ("resourceVersion", "abc"),
            ("labelSelector", "a in ("),
            ("fieldSelector", "spec.bogus=x"),
            ("timeoutSeconds", "x"),
            ("timeoutSeconds", str(2**70)),
            ("resourceVersionMatch", "NotOlderThan"),
            ("sendInitialEvents", "true"),
        ]
    )
    return Http("GET", f"{_COLLECTION}?watch=true&{param}={quote(value)}")


def bad_delete(rng: random.Random) -> Request:
    """A DELETE of a pod that exists, with malformed options: the pod must stay."""
    path = _pods(rng)
    choice = rng.randrange(3)
    if choice == 0:
        param, value = rng.choice(
            [
                ("gracePeriodSeconds", "99999999999999999999999"),
                ("gracePeriodSeconds", "abc"),
                ("gracePeriodSeconds", "1.5"),
                ("orphanDependents", "x"),
                ("orphanDependents", "2"),
                ("propagationPolicy", "Bogus"),
                ("dryRun", "Bogus"),
                ("dryRun", ""),
            ]
        )
        return Http("DELETE", f"{path}?{param}={quote(value)}")
    if choice == 1:
        options = rng.choice(
            [
                {"gracePeriodSeconds": rng.choice(_NOT_INT)},
                {"preconditions": rng.choice(_NOT_OBJECT)},
                {"preconditions": {"uid": rng.choice(_NOT_STRING)}},
                {"preconditions": {"resourceVersion": rng.choice(_NOT_STRING)}},
                {"preconditions": {"uid": "not-the-uid"}},
                {"preconditions": {"resourceVersion": "1"}},
                {"orphanDependents": rng.choice(_NOT_BOOL)},
                {"propagationPolicy": rng.choice([5, [], "Bogus", ""])},
                {"propagationPolicy": "Orphan", "orphanDependents": True},
                {"dryRun": rng.choice(["All", 5, {}, ["Bogus"], [5]])},
                {"kind": rng.choice(["Pod", "Status", "Bogus"]), "apiVersion": "v1"},
                {"kind": rng.choice([5, ["DeleteOptions"], "deleteoptions"])},
            ]
        )
        return Http("DELETE", path, _dumps(options), JSON_TYPE)
    body = rng.choice([b"[]", b"5", b'"x"', b"{", b'{"gracePeriodSeconds":', b"\xff\xfe", b"{}}"])
    return Http("DELETE", path, body, JSON_TYPE)


def bad_delete_collection(rng: random.Random) -> Request:
    param, value = rng.choice(
        [
            ("labelSelector", "a in ("),
            ("gracePeriodSeconds", "99999999999999999999999"),
            ("orphanDependents", "x"),
            ("propagationPolicy", "Bogus"),
            ("dryRun", "Bogus"),
            ("fieldSelector", "spec.bogus=x"),
        ]
    )
    selector = "" if param == "labelSelector" else "labelSelector=app%3Dfuzz&"
    return Http("DELETE", f"{_COLLECTION}?{selector}{param}={quote(value)}")


def bad_patch(rng: random.Random) -> Request:
    path = _pods(rng, rng.choice(["", "", "status"]))
    ctype = rng.choice([MERGE, STRATEGIC, JSON_PATCH])
    choice = rng.randrange(7)
    if choice == 0:
        body = b'{"metadata":{"labels":{"a":"' + _invalid_utf8(rng) + b'"}}}'
    elif choice == 1:
        body = _nested(rng.choice([200, 1_000, 50_000]), rng.choice(["list", "object"]))
        if ctype != JSON_PATCH and rng.random() < 0.5:
            body = b'{"metadata":{"annotations":' + body + b"}}"
    elif choice == 2:
        body = b'{"spec":{"containers":' + rng.choice([b"5", b'"x"', b"{}"]) + b"}}"
        ctype = rng.choice([MERGE, STRATEGIC])
    elif choice == 3:
        ops = rng.choice(
            [
                [{"op": "bogus", "path": "/metadata"}],
                [{"op": "add"}],
                [{"op": "replace", "path": "/spec/containers/99/name", "value": "x"}],
                [{"op": "test", "path": "/metadata/name", "value": "not-it"}],
                [{"op": "remove", "path": "/nope/nope"}],
                [{"op": "add", "path": "metadata", "value": 1}],
                {"op": "add"},
                [5],
            ]
        )
        body, ctype = _dumps(ops), JSON_PATCH
    elif choice == 4:
        body = rng.choice([b"[]", b"5", b"null", b"{", b""])
        ctype = rng.choice([MERGE, STRATEGIC])
    elif choice == 5:
        body = _dumps({"metadata": {"resourceVersion": rng.choice(["abc", "1", str(2**70)])}})
        ctype = MERGE
    else:
        body = b'{"metadata":{"labels":{"a":"b"}}}'
        ctype = rng.choice([JSON_TYPE, "text/plain", "", "application/apply-patch+yaml+x"])
    return Http("PATCH", path, body, ctype)


def bad_patch_quantity(rng: random.Random) -> Request:
    patch = {
        "spec": {
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": rng.choice(ABSURD_QUANTITIES)}}}
            ]
        }
    }
    return Http("PATCH", _pods(rng, "resize"), _dumps(patch), STRATEGIC)


def bad_path_or_method(rng: random.Random) -> Request:
    method, path = rng.choice(
        [
            ("GET", f"{_COLLECTION}/%ff%fe"),
            ("GET", "/api/v1/bogus"),
            ("GET", "/apis/x/y/z"),
            ("GET", f"{_COLLECTION}/{PODS[0]}/bogus"),
            ("PUT", _COLLECTION),
            ("PATCH", _COLLECTION),
            ("POST", f"{_COLLECTION}/{PODS[0]}"),
            ("GET", "/api/v1/nodes/" + NODE + "/binding"),
            ("DELETE", f"{_COLLECTION}/{PODS[0]}/status"),
            ("OPTIONS", _COLLECTION),
            ("GET", "/api/v1/namespaces/%00/pods/x"),
            ("GET", "/api/v1/namespaces/..%2F..%2Fetc/pods/x"),
            ("GET", f"{_COLLECTION}/..%2F..%2Fnodes%2F{NODE}"),
            ("DELETE", f"{_COLLECTION}/%2E%2E"),
            ("DELETE", f"{_COLLECTION}/.."),
            ("DELETE", f"/api/v1/namespaces/{NS}%2Fpods%2F{PODS[0]}"),
            ("GET", f"{_COLLECTION}/{PODS[0]}%2Fstatus"),
            ("GET", "/api/v1/namespaces/" + "x" * 5000 + "/pods/x"),
            ("GET", "/api/v1/nodes/" + "x" * 70_000),
        ]
    )
    return Http(method, path)


def bad_subresource_body(rng: random.Random) -> Request:
    sub = rng.choice(["binding", "eviction"])
    body = rng.choice(
        [
            {"target": rng.choice(_NOT_OBJECT)},
            {"target": {"name": rng.choice(_NOT_STRING)}},
            {"metadata": rng.choice(_NOT_OBJECT)},
            {"deleteOptions": rng.choice(_NOT_OBJECT)},
            {"deleteOptions": {"gracePeriodSeconds": rng.choice(_NOT_INT)}},
            {"deleteOptions": {"dryRun": rng.choice(["All", 5, ["Bogus"]])}},
            {"deleteOptions": {"preconditions": {"uid": "not-the-uid"}}},
            {"target": {"name": "no-such-node"}, "metadata": {"name": "other"}},
        ]
    )
    return Http("POST", _pods(rng, sub), _dumps(body), JSON_TYPE)


def chunked_body(rng: random.Random) -> Request:
    """Bodies without a Content-Length: over the limit (413 once read that far), or malformed."""
    if rng.random() < 0.5:
        body = b" " * (BODY_LIMIT + rng.choice([1, MiB])) + _dumps(_pod_dict())
    else:
        body = rng.choice([b"[" * 10_000, b'{"metadata":', b"\xff" * 100])
    return Http("POST", _COLLECTION, body, JSON_TYPE, chunked=True)


def rest_framing(rng: random.Random) -> Request:
    """Requests the REST edge's HTTP parser must refuse (or answer) without a drop."""
    data = rng.choice(
        [
            b"GET /api/v1/pods HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
            b"POST /api/v1/namespaces/fuzz/pods HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
            # (over upstream's MaxHeaderBytes, 1 MiB, the REST edge's too)
            b"GET /api/v1/pods HTTP/1.1\r\nX: " + b"a" * (MiB + 1) + b"\r\n\r\n",
            b"GET /" + b"a" * (MiB + 1) + b" HTTP/1.1\r\n\r\n",
            b"\xff\xfe /api HTTP/1.1\r\n\r\n",
            b"GET /api/v1/pods HTTP/1.1\r\nno-colon\r\n\r\n",
            b"GET /api/v1/pods HTTP/9.9\r\n\r\n",
            b"POST /api/v1/namespaces/fuzz/pods HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"POST /api/v1/namespaces/fuzz/pods HTTP/1.1\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ]
    )
    return Raw(data, rest=True)


def bad_field_validation(rng: random.Random) -> Request:
    value = rng.choice(["bogus", "strict", "Strict,Warn", "warn"])
    return Http(
        "POST", f"{_COLLECTION}?fieldValidation={quote(value)}", _dumps(_pod_dict()), JSON_TYPE
    )


# ------------------------------------------------------------------ REST, protobuf bodies


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number: int, value: bytes | int, wire: int | None = None) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3 | (0 if wire is None else wire)) + _varint(value)
    return _varint(number << 3 | (2 if wire is None else wire)) + _varint(len(value)) + value


def _truncated(rng: random.Random, body: bytes, raw: bytes) -> bytes:
    """`body`, the envelope of `raw`, cut inside `raw`'s field: its length then says more than
    is there (a cut between two fields would leave a shorter message that is valid)."""
    return body[: rng.randrange(len(body) - len(raw), len(body))]


def envelope(api_version: bytes, kind: bytes, raw: bytes) -> bytes:
    type_meta = field(1, api_version) + field(2, kind)
    return b"k8s\x00" + field(1, type_meta) + field(2, raw)


def _pb_pod(name: bytes = NEW.encode(), cpu: bytes = b"100m") -> bytes:
    meta = field(1, name) + field(3, NS.encode())
    quantity = field(1, cpu)
    requests = field(1, field(1, b"cpu") + field(2, quantity))  # map entry
    container = field(1, b"c") + field(2, b"img") + field(8, requests)
    spec = field(2, container)
    return field(1, meta) + field(2, spec)


def pb_create_invalid_utf8(rng: random.Random) -> Request:
    bad = _invalid_utf8(rng)
    raw = rng.choice([_pb_pod(name=b"fuzz" + bad), _pb_pod(cpu=b"1" + bad)])
    if rng.random() < 0.3:
        return Http("POST", _COLLECTION, envelope(b"v1", b"Po" + bad, raw), PROTOBUF_TYPE)
    return Http("POST", _COLLECTION, envelope(b"v1", b"Pod", raw), PROTOBUF_TYPE)


def pb_create_type_confused(rng: random.Random) -> Request:
    """Fields of the right number and the wrong wire type (a varint where a message or a
    string belongs, fixed64 where a varint does)."""
    choice = rng.randrange(6)
    if choice == 0:  # metadata as a varint
        raw = field(1, 5) + _pb_pod()[0:0]
    elif choice == 1:  # name as a varint
        raw = field(1, field(1, 7))
    elif choice == 2:  # containers as fixed32
        raw = field(1, field(1, NEW.encode())) + field(2, _varint(2 << 3 | 5) + b"\x01\x02\x03\x04")
    elif choice == 3:  # the typeMeta as a varint
        return Http(
            "POST", _COLLECTION, b"k8s\x00" + field(1, 3) + field(2, _pb_pod()), PROTOBUF_TYPE
        )
    elif choice == 4:  # raw as a varint
        type_meta = field(1, b"v1") + field(2, b"Pod")
        return Http(
            "POST", _COLLECTION, b"k8s\x00" + field(1, type_meta) + field(2, 9), PROTOBUF_TYPE
        )
    else:  # a quantity as a string instead of a message; a time as a varint
        meta = field(1, NEW.encode()) + field(8, 12345)
        raw = field(1, meta)
    return Http("POST", _COLLECTION, envelope(b"v1", b"Pod", raw), PROTOBUF_TYPE)


def pb_create_truncated(rng: random.Random) -> Request:
    raw = _pb_pod()
    return Http(
        "POST", _COLLECTION, _truncated(rng, envelope(b"v1", b"Pod", raw), raw), PROTOBUF_TYPE
    )


def pb_create_garbage(rng: random.Random) -> Request:
    choice = rng.randrange(5)
    if choice == 0:
        body = rng.randbytes(rng.randrange(1, 300))
    elif choice == 1:
        body = b"k8s\x00" + rng.randbytes(rng.randrange(1, 300))
    elif choice == 2:  # a wire type that does not exist (6, 7) or a group
        body = b"k8s\x00" + _varint(1 << 3 | rng.choice([3, 4, 6, 7])) + b"\x00"
    elif choice == 3:  # a length beyond the end
        body = b"k8s\x00" + _varint(2 << 3 | 2) + _varint(2**40) + b"abc"
    else:  # a varint that never ends
        body = b"k8s\x00" + b"\x08" + b"\xff" * rng.choice([5, 11, 100])
    return Http("POST", _COLLECTION, body, PROTOBUF_TYPE)


def pb_create_unknown_type(rng: random.Random) -> Request:
    api_version, kind = rng.choice(
        [(b"v1", b"Bogus"), (b"v9", b"Pod"), (b"", b""), (b"apps/v1", b"Pod")]
    )
    return Http("POST", _COLLECTION, envelope(api_version, kind, _pb_pod()), PROTOBUF_TYPE)


def pb_create_absurd_quantity(rng: random.Random) -> Request:
    cpu = rng.choice(ABSURD_QUANTITIES).encode()
    return Http("POST", _COLLECTION, envelope(b"v1", b"Pod", _pb_pod(cpu=cpu)), PROTOBUF_TYPE)


def pb_bad_delete(rng: random.Random) -> Request:
    """A DELETE of a pod that exists with protobuf DeleteOptions that are truncated, of another
    type, or of the wrong wire types: the pod must stay."""
    good = field(1, 0) + field(4, b"Background")
    choice = rng.randrange(5)
    if choice == 0:
        raw = good + field(5, b"All")
        body = _truncated(rng, envelope(b"meta.k8s.io/v1", b"DeleteOptions", raw), raw)
    elif choice == 1:
        body = envelope(b"v1", b"Pod", _pb_pod())
    elif choice == 2:
        body = envelope(b"meta.k8s.io/v1", b"DeleteOptions", field(2, 7) + field(3, b"x"))
    elif choice == 3:
        body = envelope(b"meta.k8s.io/v1", b"DeleteOptions", field(4, b"Bog" + _invalid_utf8(rng)))
    else:
        body = envelope(
            b"meta.k8s.io/v1", b"DeleteOptions", field(1, 2**64 - 1) + field(4, b"Bogus")
        )
    return Http("DELETE", _pods(rng), body, PROTOBUF_TYPE)


def pb_bad_eviction(rng: random.Random) -> Request:
    meta = field(1, rng.choice(PODS).encode())
    options = rng.choice(
        [field(5, b"Bogus"), field(2, field(1, b"not-the-uid")), field(4, 5), field(1, b"x")]
    )
    raw = field(1, meta) + field(2, options)
    body = envelope(b"policy/v1", b"Eviction", raw)
    if rng.random() < 0.3:
        body = _truncated(rng, body, field(2, options))
    return Http("POST", _pods(rng, "eviction"), body, PROTOBUF_TYPE)


# ------------------------------------------------------------------ gRPC Api


def _req(msg: Message) -> bytes:
    return bytes(msg.SerializeToString())


def grpc_garbage(rng: random.Random) -> Request:
    method = rng.choice(
        [
            "Create",
            "Get",
            "List",
            "Update",
            "UpdateStatus",
            "Patch",
            "Delete",
            "Bind",
            "Resize",
            "Evict",
        ]
    )
    choice = rng.randrange(4)
    if choice == 0:
        body = rng.randbytes(rng.randrange(1, 200))
    elif choice == 1:  # a wire type that does not exist
        body = _varint(1 << 3 | rng.choice([6, 7])) + b"\x00"
    elif choice == 2:  # a length beyond the end
        body = _varint(1 << 3 | 2) + _varint(rng.choice([10, 2**20])) + b"abc"
    else:  # a truncated valid request
        full = _req(
            api_pb2.CreateRequest(object=api_pb2.Object(pod=make_pod(NEW).namespace(NS).obj()))
        )
        body = full[: rng.randrange(1, len(full))]
    return Grpc(API + method, body)


def grpc_invalid_utf8(rng: random.Random) -> Request:
    bad = _invalid_utf8(rng)
    method, body = rng.choice(
        [
            ("Get", field(1, b"pods") + field(2, NS.encode()) + field(3, b"x" + bad)),
            ("List", field(1, b"pods") + field(3, b"a=" + bad)),
            (
                "Patch",
                field(1, b"pods")
                + field(2, NS.encode())
                + field(3, PODS[0].encode())
                + field(4, b'{"a":"' + bad + b'"}'),
            ),
            (
                "Delete",
                field(1, b"pods")
                + field(2, NS.encode())
                + field(3, PODS[0].encode())
                + field(6, b"Orph" + bad),
            ),
            ("Create", field(1, field(1, _pb_pod(name=b"x" + bad)))),
        ]
    )
    return Grpc(API + method, body)


def grpc_type_confused(rng: random.Random) -> Request:
    method, body = rng.choice(
        [
            ("Get", field(1, 5)),  # resource as a varint
            ("List", field(7, b"ten")),  # limit as bytes
            ("Create", field(1, 3)),  # object as a varint
            ("Delete", field(1, b"pods") + field(5, 1)),  # preconditions as a varint
            ("Bind", field(2, 9)),
        ]
    )
    return Grpc(API + method, body)


def _with_continue(req: api_pb2.ListRequest, token: str) -> api_pb2.ListRequest:
    setattr(req, "continue", token)  # (a Python keyword)
    return req


def grpc_bad_values(rng: random.Random) -> Request:
    """Requests that decode, with values the apiserver refuses."""
    L = api_pb2.ListRequest
    choice = rng.randrange(12)
    if choice == 0:
        return Grpc(
            API + "Get",
            _req(api_pb2.GetRequest(resource=rng.choice(["bogus", "", "Pods"]), name="x")),
        )
    if choice == 1:
        return Grpc(API + "Get", _req(api_pb2.GetRequest(resource="pods", namespace=NS)))
    if choice == 2:
        req = rng.choice(
            [
                L(resource="pods", limit=-1),
                L(resource="pods", resource_version=str(2**64 + 5)),
                L(resource="pods", resource_version="9" * 5000),
                L(resource="pods", resource_version="-1"),
                L(resource="pods", resource_version_match="Bogus"),
                L(resource="pods", label_selector="a in ("),
                L(resource="pods", field_selector="spec.bogus=x"),
                _with_continue(L(resource="pods"), "garbage"),
                L(resource="bogus"),
            ]
        )
        return Grpc(API + "List", _req(req))
    if choice == 3:
        w = api_pb2.WatchRequest
        req2 = rng.choice(
            [
                w(resource="pods", resource_version=str(2**64 + 1)),
                w(resource="pods", resource_version="abc"),
                w(resource="pods", label_selector="!!"),
                w(resource="pods", resource_version_match="NotOlderThan"),
                w(resource="pods", send_initial_events=True),
                w(resource="bogus"),
            ]
        )
        return Grpc(API + "Watch", _req(req2), stream=True)
    if choice == 4:
        return Grpc(API + "Create", _req(api_pb2.CreateRequest()))
    if choice == 5:
        pod = make_pod(NEW).namespace(NS).obj()
        pod.spec.containers[0].resources.requests["cpu"] = rng.choice(ABSURD_QUANTITIES)
        return Grpc(API + "Create", _req(api_pb2.CreateRequest(object=api_pb2.Object(pod=pod))))
    if choice == 6:
        text = rng.choice(
            [
                "{",
                "[]",
                "5",
                "\x00",
                '{"spec":{"containers":5}}',
                "[" * 5000 + "]" * 5000,
                '{"metadata":' * 3000 + "1" + "}" * 3000,
            ]
        )
        sub = rng.choice(["", "status", "bogus"])
        return Grpc(
            API + "Patch",
            _req(
                api_pb2.PatchRequest(
                    resource="pods",
                    namespace=NS,
                    name=rng.choice(PODS),
                    patch=text,
                    subresource=sub,
                )
            ),
        )
    if choice == 7:
        d = api_pb2.DeleteRequest(resource="pods", namespace=NS, name=rng.choice(PODS))
        pick = rng.randrange(4)
        if pick == 0:
            d.propagation_policy = "Bogus"
        elif pick == 1:
            d.propagation_policy, d.orphan_dependents = "Orphan", True
        elif pick == 2:
            d.preconditions.uid = "not-the-uid"
        else:
            d.preconditions.resource_version = rng.choice(["1", "abc", str(2**70)])
        return Grpc(API + "Delete", _req(d))
    if choice == 8:
        b = api_pb2.Binding()
        b.metadata.namespace, b.metadata.name = NS, rng.choice([PODS[0], "no-such-pod", ""])
        b.metadata.uid = rng.choice(["", "not-the-uid"])
        if b.metadata.name == PODS[0] and not b.metadata.uid:
            b.metadata.uid = "not-the-uid"
        return Grpc(API + "Bind", _req(b))
    if choice == 9:
        e = api_pb2.Eviction()
        e.metadata.namespace, e.metadata.name = NS, rng.choice(PODS)
        if rng.random() < 0.5:
            e.dry_run.append(rng.choice(["Bogus", ""]))
        else:
            e.preconditions.uid = "not-the-uid"
        return Grpc(API + "Evict", _req(e))
    if choice == 10:  # an echo of a large input: details must stay within metadata limits
        big = "x" * rng.choice([10_000, 100_000, 1_000_000])
        return Grpc(
            API + rng.choice(["Get", "List"]),
            _req(api_pb2.GetRequest(resource=big, name=big))
            if rng.random() < 0.5
            else _req(L(resource="pods", label_selector=big + " in (")),
        )
    return Grpc(
        API + "Update",
        _req(
            api_pb2.UpdateRequest(
                object=api_pb2.Object(pod=make_pod(rng.choice(PODS)).namespace(NS).obj())
            )
        ),
    )


def grpc_unknown_method(rng: random.Random) -> Request:
    return Grpc(API + rng.choice(["Bogus", "create", ""]), b"")


# ------------------------------------------------------------------ cloud gRPC

_CLOUD_METHODS: Final = (
    "NodeGroupForNode",
    "NodeGroupTargetSize",
    "NodeGroupIncreaseSize",
    "NodeGroupDeleteNodes",
    "NodeGroupDecreaseTargetSize",
    "NodeGroupNodes",
    "NodeGroupTemplateNodeInfo",
    "KemuSetFailures",
)


_CLOUD_ID_FIRST: Final = frozenset(
    {
        "NodeGroupForNode",
        "NodeGroupTargetSize",
        "NodeGroupNodes",
        "NodeGroupTemplateNodeInfo",
        "KemuSetFailures",
    }
)


def cloud_garbage(rng: random.Random) -> Request:
    method = rng.choice(_CLOUD_METHODS)
    choice = rng.randrange(4)
    if choice == 0:
        body = rng.randbytes(rng.randrange(1, 100))
    elif choice == 1:  # the id (or the node's providerID) not UTF-8
        bad = field(1 if method in _CLOUD_ID_FIRST else 2, b"x" + _invalid_utf8(rng))
        body = field(1, bad) if method == "NodeGroupForNode" else bad
    elif choice == 2:
        body = _varint(2 << 3 | 2) + _varint(1000) + b"ab"
    else:
        body = _varint(1 << 3 | 7)
    return Grpc(CLOUD + method, body)


def cloud_bad_values(rng: random.Random) -> Request:
    method, msg = rng.choice(
        [
            (
                "NodeGroupTargetSize",
                cloud_pb2.NodeGroupTargetSizeRequest(id=rng.choice(["bogus", "", "x" * 100_000])),
            ),
            (
                "NodeGroupIncreaseSize",
                cloud_pb2.NodeGroupIncreaseSizeRequest(
                    id=GROUP, delta=rng.choice([0, -1, -(2**31), 2**31 - 1, 1000])
                ),
            ),
            ("NodeGroupIncreaseSize", cloud_pb2.NodeGroupIncreaseSizeRequest(id="bogus", delta=1)),
            (
                "NodeGroupDecreaseTargetSize",
                cloud_pb2.NodeGroupDecreaseTargetSizeRequest(
                    id=GROUP, delta=rng.choice([0, 1, 2**31 - 1, -(2**31)])
                ),
            ),
            (
                "NodeGroupDeleteNodes",
                cloud_pb2.NodeGroupDeleteNodesRequest(
                    id=GROUP,
                    nodes=[cloud_pb2.ExternalGrpcNode(provider_id="kemu://nope", name="nope")],
                ),
            ),
            ("NodeGroupDeleteNodes", cloud_pb2.NodeGroupDeleteNodesRequest(id="bogus")),
            ("NodeGroupNodes", cloud_pb2.NodeGroupNodesRequest(id="bogus")),
            ("NodeGroupTemplateNodeInfo", cloud_pb2.NodeGroupTemplateNodeInfoRequest(id="bogus")),
            (
                "KemuSetFailures",
                cloud_pb2.KemuSetFailuresRequest(
                    id=GROUP, failures=cloud_pb2.KemuFailures(never_ready=-1)
                ),
            ),
            ("KemuSetFailures", cloud_pb2.KemuSetFailuresRequest(id="bogus")),
            ("NodeGroupGetOptions", cloud_pb2.NodeGroupAutoscalingOptionsRequest(id=GROUP)),
        ]
    )
    return Grpc(CLOUD + method, _req(msg))


# ------------------------------------------------------------------ health/metrics HTTP


def health_garbage(rng: random.Random) -> Request:
    choice = rng.randrange(10)
    if choice == 0:
        data = rng.randbytes(rng.randrange(1, 300)) + b"\r\n\r\n"
    elif choice == 1:
        data = (
            b"GET /healthz HTTP/1.1\r\n"
            + b"X: "
            + b"a" * rng.choice([20_000, 100_000])
            + b"\r\n\r\n"
        )
    elif choice == 2:
        data = b"GET /" + b"a" * rng.choice([20_000, 70_000]) + b" HTTP/1.1\r\n\r\n"
    elif choice == 3:
        data = (
            rng.choice([b"POST", b"PUT", b"DELETE", b"BREW", b"\xff\xfe"])
            + b" /healthz HTTP/1.1\r\n\r\n"
        )
    elif choice == 4:
        data = rng.choice(
            [
                b"GET /healthz\r\n\r\n",
                b"GET\r\n\r\n",
                b"\r\n\r\n",
                b"GET /healthz HTTP/1.1 extra\r\n\r\n",
            ]
        )
    elif choice == 5:
        data = (
            b"GET /"
            + rng.choice(
                [
                    b"bogus",
                    b"readyz/bogus",
                    b"%ff%fe",
                    b"\xff\xfe",
                    b"metrics/../x",
                    b"healthz/" + b"x" * 3000,
                ]
            )
            + b" HTTP/1.1\r\n\r\n"
        )
    elif choice == 6:
        data = (
            b"GET /healthz?"
            + rng.choice([b"verbose=%zz", b"\xff", b"a=" + b"b" * 10_000])
            + b" HTTP/1.1\r\nHost: x\r\n\r\n"
        )
    elif choice == 7:
        data = b"GET /healthz HTTP/1.1\r\nno-colon-header\r\n\x00\x01\r\n\r\n"
    elif choice == 8:
        data = b"GET /healthz HTTP/1.1\r\n"  # the head never ends: the client closes its side
    else:
        data = b"GET /healthz HTTP/9.9\r\n\r\n"
    return Raw(data)


# ------------------------------------------------------------------ the catalog

FAMILIES: Final[dict[str, tuple[str, Family]]] = {
    f.__name__: (edge, f)
    for edge, fs in (
        (
            REST_JSON,
            (
                create_wrong_type,
                create_absurd_quantity,
                create_unknown_field_strict,
                create_duplicate_field_strict,
                create_truncated,
                create_deeply_nested,
                create_invalid_utf8,
                create_oversized,
                create_not_an_object,
                create_wrong_content_type,
                create_wrong_namespace_or_kind,
                create_in_a_bad_namespace,
                update_mismatched,
                update_bad_resource_version,
                bad_list_query,
                bad_watch_query,
                bad_table_options,
                bad_delete,
                bad_delete_collection,
                bad_patch,
                bad_patch_quantity,
                bad_path_or_method,
                bad_subresource_body,
                bad_field_validation,
                chunked_body,
                rest_framing,
            ),
        ),
        (
            REST_PROTOBUF,
            (
                pb_create_invalid_utf8,
                pb_create_type_confused,
                pb_create_truncated,
                pb_create_garbage,
                pb_create_unknown_type,
                pb_create_absurd_quantity,
                pb_bad_delete,
                pb_bad_eviction,
            ),
        ),
        (
            GRPC_API,
            (
                grpc_garbage,
                grpc_invalid_utf8,
                grpc_type_confused,
                grpc_bad_values,
                grpc_unknown_method,
            ),
        ),
        (CLOUD_GRPC, (cloud_garbage, cloud_bad_values)),
        (HEALTH, (health_garbage,)),
    )
    for f in fs
}


def make(family: str, rng: random.Random) -> Case:
    edge, build = FAMILIES[family]
    return Case(edge, family, build(rng))

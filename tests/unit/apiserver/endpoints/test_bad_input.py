"""The apiserver's edges read malformed input as a 4xx naming the problem (issue #28, "bad
input never hurts"): protobuf bodies of the wrong wire types, truncated or not UTF-8; query
parameters beyond int64; resourceVersions beyond uint64; DeleteOptions of the wrong types; deep
patches. Each of these was a 500 (or, for DeleteOptions, a delete without the options) before.
The live checks are in tests/integration/apiserver/test_apiserver_fuzz.py."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from multidict import MultiDict

from apiserver.endpoints.lists import _decode_continue, parse_rv
from apiserver.endpoints.rest import options, protobuf
from apiserver.endpoints.rest.protobuf_schema import SCHEMA
from apiserver.endpoints.rest.request import bool_param, int_param
from apiserver.endpoints.rest.server import clean_path
from apiserver.endpoints.rest.table import include_object
from apiserver.registry.patch import parse_patch
from apiserver.storage.encoding import field_bytes, varint
from kemu.machinery.errors import BadRequest, Invalid


def _envelope(api_version: bytes, kind: bytes, raw: bytes) -> bytes:
    type_meta = field_bytes(1, api_version) + field_bytes(2, kind)
    return b"k8s\x00" + field_bytes(1, type_meta) + field_bytes(2, raw)


def _pod(name: bytes = b"p") -> bytes:
    meta = field_bytes(1, name) + field_bytes(3, b"ns")
    return field_bytes(1, meta)


def test_a_well_formed_protobuf_pod_still_decodes() -> None:
    assert protobuf.decode(_envelope(b"v1", b"Pod", _pod())) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
    }


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        # invalid UTF-8 in a string, in the kind
        (_envelope(b"v1", b"Pod", _pod(b"p\xff")), "ObjectMeta.name that is not valid UTF-8"),
        (_envelope(b"v1", b"Po\xc3\x28", _pod()), "typeMeta.kind that is not valid UTF-8"),
        # the wrong wire types: metadata, name, typeMeta and raw as varints
        (_envelope(b"v1", b"Pod", varint(1 << 3) + varint(5)), "Pod.metadata of the wrong wire"),
        (
            _envelope(b"v1", b"Pod", field_bytes(1, varint(1 << 3) + varint(7))),
            "ObjectMeta.name of the wrong wire type",
        ),
        (b"k8s\x00" + varint(1 << 3) + varint(3), "typeMeta of the wrong wire type"),
        (
            b"k8s\x00"
            + field_bytes(1, field_bytes(1, b"v1") + field_bytes(2, b"Pod"))
            + b"\x10\x09",
            "raw of the wrong wire type",
        ),
        # a time as a varint; a fixed32 where a message belongs
        (
            _envelope(
                b"v1", b"Pod", field_bytes(1, field_bytes(1, b"p") + varint(8 << 3) + b"\x05")
            ),
            "ObjectMeta.creationTimestamp of the wrong wire type",
        ),
        (_envelope(b"v1", b"Pod", varint(2 << 3 | 5) + b"\x01\x02\x03\x04"), "wrong wire type"),
        # truncated: a length beyond the end (was read as the shorter rest), a cut varint
        (_envelope(b"v1", b"Pod", _pod())[:-1], "truncated"),
        (b"k8s\x00" + varint(2 << 3 | 2) + varint(2**40) + b"abc", "truncated"),
        (b"k8s\x00\x08" + b"\xff" * 11, "longer than 64 bits"),
        (b"k8s\x00" + varint(1 << 3 | 7), "unsupported wire type 7"),
    ],
)
def test_malformed_protobuf_bodies_are_bad_requests(body: bytes, problem: str) -> None:
    with pytest.raises(BadRequest) as e:
        protobuf.decode(body)
    assert problem in e.value.message


def test_protobuf_repeated_ints_packed_or_not() -> None:
    name, entry = next(
        (n, (num, f)) for n, fs in SCHEMA.items() for num, f in fs.items() if f[1] == "[]int"
    )
    number, (json_name, _) = entry
    packed = field_bytes(number, varint(3) + varint(5))
    plain = varint(number << 3) + varint(7)
    assert protobuf.message(name, packed + plain) == {json_name: [3, 5, 7]}


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (str(2**63), "out of range"),
        (str(-(2**63) - 1), "out of range"),
        ("9" * 400, "out of range"),
        ("abc", "not an integer"),
        ("1.5", "not an integer"),
        ("99999999999999999999999", "out of range"),
    ],
)
def test_integer_query_parameters_are_int64(value: str, problem: str) -> None:
    with pytest.raises(BadRequest, match=f"invalid value for limit: .*{problem}"):
        int_param(MultiDict(limit=value), "limit")


def test_integer_and_boolean_query_parameters_that_parse() -> None:
    assert int_param(MultiDict(limit=str(2**63 - 1)), "limit") == 2**63 - 1
    assert int_param(MultiDict(), "limit") is None
    assert bool_param(MultiDict(o="T"), "o") is True
    assert bool_param(MultiDict(o="0"), "o") is False
    with pytest.raises(BadRequest, match='orphanDependents: "x": not a boolean'):
        bool_param(MultiDict(orphanDependents="x"), "orphanDependents")


@pytest.mark.parametrize("rv", [str(2**64), "9" * 5000, "-1", "abc", "1e3", " 5", "+5", "٣"])
def test_resource_versions_beyond_uint64_or_not_numbers_are_bad_requests(rv: str) -> None:
    """Before #28 a resourceVersion beyond uint64 was waited for 3 s, then 504."""
    with pytest.raises(BadRequest, match="invalid resourceVersion"):
        parse_rv(rv)
    assert parse_rv(str(2**64 - 1)) == 2**64 - 1


@pytest.mark.parametrize(
    ("query", "body", "error", "problem"),
    [
        ({"gracePeriodSeconds": "99999999999999999999999"}, None, BadRequest, "out of range"),
        ({"orphanDependents": "x"}, None, BadRequest, "not a boolean"),
        ({"propagationPolicy": "Bogus"}, None, Invalid, "Unsupported value"),
        ({"dryRun": "Bogus"}, None, Invalid, "dryRun"),
        ({}, {"gracePeriodSeconds": "30"}, BadRequest, "gracePeriodSeconds: expected an integer"),
        ({}, {"gracePeriodSeconds": True}, BadRequest, "expected an integer, got a boolean"),
        ({}, {"gracePeriodSeconds": 2**70}, BadRequest, "out of range"),
        ({}, {"orphanDependents": "x"}, BadRequest, "orphanDependents: expected a boolean"),
        ({}, {"preconditions": "x"}, BadRequest, "preconditions: expected an object"),
        ({}, {"preconditions": {"uid": 5}}, BadRequest, "preconditions.uid: expected a string"),
        ({}, {"dryRun": "All"}, BadRequest, "dryRun: expected an array of strings"),
        ({}, {"dryRun": [5]}, BadRequest, "dryRun: expected an array of strings"),
        ({}, {"propagationPolicy": 5}, BadRequest, "propagationPolicy: expected a string"),
        ({}, {"propagationPolicy": "Orphan", "orphanDependents": True}, Invalid, "both"),
        (
            {},
            {"kind": "Pod", "apiVersion": "v1"},
            BadRequest,
            'must be a DeleteOptions, not a "Pod"',
        ),
        ({}, {"kind": 5}, BadRequest, "kind: expected a string, got a number"),
        ({}, [], BadRequest, "expected a DeleteOptions object"),
    ],
)
def test_malformed_delete_options_are_refused_before_anything_is_deleted(
    query: dict[str, str], body: Any, error: type[Exception], problem: str
) -> None:
    """Before #28 each of these deleted the object (the option was ignored) or failed with a
    500 after reading half of them."""
    with pytest.raises(error) as e:
        options.delete_options(MultiDict(query), body)
    assert problem in str(e.value)


def test_delete_options_that_parse() -> None:
    o = options.delete_options(
        MultiDict(gracePeriodSeconds="0", dryRun="All"),
        {
            "kind": "DeleteOptions",
            "apiVersion": "meta.k8s.io/v1",
            "gracePeriodSeconds": 30,
            "preconditions": {"uid": "u", "resourceVersion": "5"},
            "propagationPolicy": "Foreground",
        },
    )
    assert o == options.DeleteOptions(
        grace_period=0,
        uid="u",
        resource_version="5",
        propagation_policy="Foreground",
        dry_run=["All"],
    )
    assert options.delete_options(MultiDict(), None) == options.DeleteOptions()
    # DeleteOptions is registered in every group version upstream
    apps = {"kind": "DeleteOptions", "apiVersion": "apps/v1", "propagationPolicy": "Orphan"}
    assert options.delete_options(MultiDict(), apps).propagation_policy == "Orphan"


def test_deep_merge_patches_are_bad_requests() -> None:
    """Before #28 a deep merge patch raised RecursionError: a 500 on REST, INTERNAL on gRPC."""
    with pytest.raises(BadRequest, match="nested too deeply"):
        parse_patch('{"metadata":' * 3000 + "1" + "}" * 3000)


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 5000 + b"]" * 5000,
        b'{"rv":1e400,"start":"/registry/pods/"}',
        b"\xff",
        b"[]",
        b'{"rv":-1,"start":"/registry/pods/"}',
        b'{"rv":0,"start":"/registry/pods/"}',
        b'{"rv":9223372036854775808,"start":"/registry/pods/"}',
    ],
)
def test_continue_tokens_that_are_not_ours_are_bad_requests(raw: bytes) -> None:
    """Before #28 a deeply nested token was a RecursionError: INTERNAL, or a 500."""
    with pytest.raises(BadRequest, match="^continue key is not valid"):
        _decode_continue(base64.urlsafe_b64encode(raw).decode(), "/registry/pods/")


def test_paths_are_decoded_segment_by_segment() -> None:
    assert clean_path("/api/v1/namespaces/ns/pods/p/?watch=1") == "/api/v1/namespaces/ns/pods/p"
    assert clean_path("//api//v1/nodes/n%C3%BC") == "/api/v1/nodes/nü"
    assert clean_path("/") == "/"


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("/api/v1/namespaces/ns/pods/..", 'may not be ".."'),
        ("/api/v1/namespaces/ns/pods/%2E", 'may not be "."'),
        ("/api/v1/namespaces/ns%2Fpods%2Fp", 'may not contain "/"'),
        ("/api/v1/namespaces/ns/pods/p%2525", 'may not contain "%"'),
        ("/api/v1/namespaces/ns/pods/%ff", "not valid UTF-8"),
    ],
)
def test_path_segments_upstream_refuses_as_names_are_bad_requests(raw: str, problem: str) -> None:
    with pytest.raises(BadRequest, match=problem):
        clean_path(raw)


def test_table_options_are_checked() -> None:
    assert [include_object(v) for v in ("", "None", "Object")] == ["Metadata", "None", "Object"]
    with pytest.raises(Invalid, match='includeObject: Invalid value: "Bogus": must be'):
        include_object("Bogus")

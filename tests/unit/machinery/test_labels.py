"""Label selector strings and LabelSelector messages."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import BadRequest, Invalid
from kemu.machinery.labels import (
    EVERYTHING,
    NOTHING,
    parse_selector,
    selector_from_label_selector,
    selector_from_set,
    selector_of,
)

WEB = {"app": "web", "tier": "front", "n": "7"}


@pytest.mark.parametrize(
    ("text", "canonical", "matches_web"),
    [
        ("", "", True),
        ("app=web", "app=web", True),
        ("app==web", "app==web", True),
        ("app!=web", "app!=web", False),
        ("app!=db", "app!=db", True),
        ("missing!=x", "missing!=x", True),  # absent keys satisfy != and notin
        ("app in (web,db)", "app in (db,web)", True),
        ("app notin (web)", "app notin (web)", False),
        ("missing notin (x)", "missing notin (x)", True),
        ("app", "app", True),
        ("!app", "!app", False),
        ("!missing", "!missing", True),
        ("  app = web ,tier in ( front ) , !canary ", "app=web,!canary,tier in (front)", True),
        ("tier=front,app=db", "app=db,tier=front", False),
        ("n>5", "n>5", True),
        ("n<5", "n<5", False),
        ("app>5", "app>5", False),  # a non-integer label never satisfies gt/lt
        ("value in (in,notin)", "value in (in,notin)", False),
        ("example.com/role=web", "example.com/role=web", False),
        ("app=", "app=", False),
        ("x in (a,,b)", "x in (,a,b)", False),
        ("x notin ()", "x notin ()", True),
    ],
)
def test_parse_selector(text: str, canonical: str, matches_web: bool) -> None:
    s = parse_selector(text)
    assert str(s) == canonical
    assert s.matches(WEB) is matches_web
    assert parse_selector(str(s)) == s


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a in", "found '' expected: '('"),
        ("a in (b", "found '', expected: ',' or ')'"),
        ("a=b=c", "found '=', expected: ',' or 'end of string'"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        ("a b", "found 'b', expected: in, notin"),
        (",a", "found ',', expected: !, identifier, or 'end of string'"),
        ("a,", "found '', expected: identifier after ','"),
        ("=b", "found '=', expected: !, identifier"),
        ("!!a", "found '!', expected: identifier"),
        ("a>x", "for 'Gt', 'Lt' operators, the value must be an integer"),
        ("-a=b", 'Invalid value: "-a"'),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a=$", 'Invalid value: "$": a valid label must be an empty string'),
        ("a/b/c=d", "a qualified name must consist of"),
    ],
)
def test_malformed_selectors_are_bad_requests(text: str, message: str) -> None:
    with pytest.raises(BadRequest) as err:
        parse_selector(text)
    assert message in str(err.value)
    assert str(err.value).startswith("unable to parse requirement: ")


def test_everything_and_nothing() -> None:
    assert EVERYTHING.empty and EVERYTHING.matches({})
    assert not NOTHING.empty and not NOTHING.matches({}) and not NOTHING.matches(WEB)
    assert parse_selector("").empty


def test_exact_value_for_indexes() -> None:
    s = parse_selector("app=web,tier in (front),env in (a,b),x!=y")
    assert s.exact_value("app") == "web"
    assert s.exact_value("tier") == "front"
    assert s.exact_value("env") is None
    assert s.exact_value("x") is None


def test_selector_from_set() -> None:
    s = selector_from_set({"b": "2", "a": "1"})
    assert str(s) == "a=1,b=2"
    assert s.matches({"a": "1", "b": "2", "c": "3"})
    assert not s.matches({"a": "1"})
    assert selector_from_set({}).empty


def _msg(match_labels=None, exprs=()) -> types_pb2.LabelSelector:
    msg = types_pb2.LabelSelector(match_labels=match_labels or {})
    for key, op, values in exprs:
        msg.match_expressions.add(key=key, operator=op, values=values)
    return msg


def test_nil_selector_matches_nothing_and_empty_matches_everything() -> None:
    assert selector_from_label_selector(None) is NOTHING
    assert selector_from_label_selector(None, if_nil=EVERYTHING) is EVERYTHING
    assert selector_from_label_selector(_msg()).empty
    assert selector_from_label_selector(_msg()).matches(WEB)


def test_selector_of_honours_field_presence() -> None:
    pdb = types_pb2.PodDisruptionBudget()
    assert not selector_of(pdb.spec, "selector").matches(WEB)
    pdb.spec.selector.SetInParent()  # present and empty: policy/v1 selects every pod
    assert selector_of(pdb.spec, "selector").matches(WEB)
    pdb.spec.selector.match_labels["app"] = "db"
    assert not selector_of(pdb.spec, "selector").matches(WEB)


def test_label_selector_message_semantics() -> None:
    s = selector_from_label_selector(
        _msg(
            {"app": "web"},
            [
                ("tier", "In", ["front", "back"]),
                ("canary", "DoesNotExist", []),
                ("n", "Exists", []),
            ],
        )
    )
    assert str(s) == "app=web,!canary,n,tier in (back,front)"
    assert s.matches(WEB)
    assert not s.matches({**WEB, "canary": "1"})
    assert not s.matches({"app": "web", "tier": "front"})
    notin = selector_from_label_selector(_msg(exprs=[("tier", "NotIn", ["db"])]))
    assert notin.matches({}) and not notin.matches({"tier": "db"})


@pytest.mark.parametrize(
    ("msg", "field", "message"),
    [
        (
            _msg(exprs=[("a", "Gt", ["1"])]),
            "spec.selector.matchExpressions[0].operator",
            '"Gt" is not a valid label selector operator',
        ),
        (
            _msg(exprs=[("a", "In", [])]),
            "spec.selector",
            "values set can't be empty",
        ),
        (
            _msg(exprs=[("a", "Exists", ["x"])]),
            "spec.selector",
            "values set must be empty",
        ),
        (_msg({"bad key": "x"}), "spec.selector", 'Invalid value: "bad key"'),
    ],
)
def test_invalid_label_selector_messages(msg, field: str, message: str) -> None:
    with pytest.raises(Invalid) as err:
        selector_from_label_selector(msg, path="spec.selector")
    (cause,) = err.value.causes
    assert cause.field == field
    assert message in cause.message

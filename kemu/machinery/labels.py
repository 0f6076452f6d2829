"""Label selectors, as k8s.io/apimachinery/pkg/labels.

Two sources:
- a selector string from a list or watch request (`app=web,tier!=db,env in (a,b),!canary`):
  `parse_selector`, which raises BadRequest for a malformed string, as the apiserver answers;
- a `LabelSelector` message inside an object (PDB spec.selector, pod affinity terms):
  `selector_from_label_selector`, which raises Invalid naming the field.

Nil versus empty (metav1.LabelSelectorAsSelector): an absent LabelSelector matches nothing
and a present but empty one matches everything. Kubernetes relies on that in the disruption
controller (policy/v1 PDB: an empty selector selects every pod of the namespace, a null one none)
and in inter-pod affinity terms (a term without labelSelector matches no pod). Proto3 keeps the
difference as field presence, so pass `msg.selector if msg.HasField("selector") else None`, or
use `selector_of(msg, "selector")`. Where a nil selector must mean "everything" instead, pass
`if_nil=EVERYTHING`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import BadRequest, Cause, Invalid
from kemu.machinery.validation.names import is_qualified_name, is_valid_label_value

Operator = Literal["=", "==", "!=", "in", "notin", "exists", "!", "gt", "lt"]

_SET_OPERATORS: Final = frozenset({"in", "notin"})
_EXACT_OPERATORS: Final = frozenset({"=", "==", "!="})
_NUMERIC_OPERATORS: Final = frozenset({"gt", "lt"})


class SelectorError(ValueError):
    """A requirement that cannot be built; the callers turn it into BadRequest or Invalid."""


@dataclass(frozen=True)
class Requirement:
    """One `key op values` term. Build it with `requirement()` to have it validated."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op in ("=", "==", "in"):
            return self.key in labels and labels[self.key] in self.values
        if op in ("!=", "notin"):
            return self.key not in labels or labels[self.key] not in self.values
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        # gt / lt: the label must be an integer (upstream parses it as int64).
        if self.key not in labels:
            return False
        try:
            have = int(labels[self.key], 10)
            want = int(self.values[0], 10)
        except ValueError:
            return False
        return have > want if op == "gt" else have < want

    def __str__(self) -> str:
        op = self.operator
        if op == "exists":
            return self.key
        if op == "!":
            return f"!{self.key}"
        if op in _SET_OPERATORS:
            return f"{self.key} {op} ({','.join(self.values)})"
        if op == "gt":
            return f"{self.key}>{self.values[0]}"
        if op == "lt":
            return f"{self.key}<{self.values[0]}"
        return f"{self.key}{op}{self.values[0]}"


def requirement(key: str, operator: Operator, values: Iterable[str] = ()) -> Requirement:
    """A validated requirement (upstream NewRequirement); SelectorError when it is not valid."""
    vals = tuple(sorted(set(values)))
    errs = is_qualified_name(key)
    if errs:
        raise SelectorError(f'key: Invalid value: "{key}": {"; ".join(errs)}')
    if operator in _SET_OPERATORS:
        if not vals:
            raise SelectorError("for 'in', 'notin' operators, values set can't be empty")
    elif operator in _EXACT_OPERATORS:
        if len(vals) != 1:
            raise SelectorError("exact-match compatibility requires one single value")
    elif operator in ("exists", "!"):
        if vals:
            raise SelectorError("values set must be empty for exists and does not exist")
    elif operator in _NUMERIC_OPERATORS:
        if len(vals) != 1:
            raise SelectorError("for 'Gt', 'Lt' operators, exactly one value is required")
        try:
            int(vals[0], 10)
        except ValueError:
            raise SelectorError("for 'Gt', 'Lt' operators, the value must be an integer") from None
    else:
        raise SelectorError(f"operator '{operator}' is not recognized")
    if operator not in _NUMERIC_OPERATORS:
        for v in vals:
            errs = is_valid_label_value(v)
            if errs:
                raise SelectorError(f'values[{key}]: Invalid value: "{v}": {"; ".join(errs)}')
    return Requirement(key, operator, vals)


@dataclass(frozen=True)
class Selector:
    """A conjunction of requirements, sorted by key. `nothing` marks labels.Nothing()."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        """True for the selector that matches everything (upstream Selector.Empty)."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    def exact_value(self, key: str) -> str | None:
        """The value `key` must equal (`key=v`, `key==v`, `key in (v)`), if the selector says one."""
        for r in self.requirements:
            if r.key == key and r.operator in ("=", "==", "in") and len(r.values) == 1:
                return r.values[0]
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


EVERYTHING: Final = Selector()
NOTHING: Final = Selector(nothing=True)


def _selector(requirements: Iterable[Requirement]) -> Selector:
    return Selector(tuple(sorted(requirements, key=lambda r: r.key)))


def selector_from_set(labels: Mapping[str, str]) -> Selector:
    """Matches exactly these labels (an empty map matches everything). Not validated."""
    return _selector(Requirement(k, "=", (v,)) for k, v in labels.items())


# ---------------------------------------------------------------- the string syntax

_SPECIAL: Final = frozenset("=!(),<>")
_WHITESPACE: Final = frozenset(" \t\r\n")
_SYMBOLS: Final = frozenset({"=", "==", "!=", "!", "(", ")", ",", ">", "<"})
_KEYWORDS: Final = frozenset({"in", "notin"})

_TOKEN_OPERATORS: Final[dict[str, Operator]] = {
    "in": "in",
    "notin": "notin",
    "=": "=",
    "==": "==",
    "!=": "!=",
    ">": "gt",
    "<": "lt",
}

# Token kinds: "id", "end", "error", or the symbol/keyword itself.
_Token = tuple[str, str]


def _lex(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _WHITESPACE:
            i += 1
        if i >= n:
            tokens.append(("end", ""))
            return tokens
        if text[i] in _SPECIAL:
            # Longest run of special characters that is still a known symbol.
            j = i
            best = ""
            while j < n and text[j] in _SPECIAL:
                j += 1
                if text[i:j] in _SYMBOLS:
                    best = text[i:j]
                elif best:
                    break
            if not best:
                tokens.append(("error", f"error expected: keyword found '{text[i:j]}'"))
                tokens.append(("end", ""))
                return tokens
            tokens.append((best, best))
            i += len(best)
            continue
        j = i
        while j < n and text[j] not in _SPECIAL and text[j] not in _WHITESPACE:
            j += 1
        word = text[i:j]
        tokens.append((word if word in _KEYWORDS else "id", word))
        i = j


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _lex(text)
        self.pos = 0

    def peek(self, values: bool = False) -> _Token:
        kind, lit = self.tokens[self.pos]
        if values and kind in _KEYWORDS:
            kind = "id"  # `x in (in)`: keywords are values inside a value context
        return kind, lit

    def take(self, values: bool = False) -> _Token:
        tok = self.peek(values)
        self.pos = min(self.pos + 1, len(self.tokens) - 1)
        return tok

    def parse(self) -> list[Requirement]:
        out: list[Requirement] = []
        while True:
            kind, lit = self.peek(values=True)
            if kind == "end":
                return out
            if kind not in ("id", "!"):
                raise SelectorError(self._found(lit, "!, identifier, or 'end of string'"))
            out.append(self.requirement())
            kind, lit = self.take(values=True)
            if kind == "end":
                return out
            if kind != ",":
                raise SelectorError(self._found(lit, "',' or 'end of string'"))
            kind, lit = self.peek(values=True)
            if kind not in ("id", "!"):
                raise SelectorError(self._found(lit, "identifier after ','"))

    def _found(self, lit: str, expected: str) -> str:
        kind = self.tokens[self.pos][0]
        if kind == "error":
            return lit
        return f"found '{lit}', expected: {expected}"

    def requirement(self) -> Requirement:
        negated = False
        kind, lit = self.take(values=True)
        if kind == "!":
            negated = True
            kind, lit = self.take(values=True)
        if kind != "id":
            raise SelectorError(f"found '{lit}', expected: identifier")
        key = lit
        errs = is_qualified_name(key)
        if errs:
            raise SelectorError(f'Invalid value: "{key}": {"; ".join(errs)}')
        nxt, _ = self.peek(values=True)
        if nxt in ("end", ","):
            return requirement(key, "!" if negated else "exists")
        if negated:
            raise SelectorError(f"found '{self.peek()[1]}', expected: ',' or 'end of string'")
        kind, lit = self.take()
        op = _TOKEN_OPERATORS.get(kind)
        if op is None:
            raise SelectorError(f"found '{lit}', expected: in, notin, =, ==, !=, gt, lt")
        values = self.set_values() if op in _SET_OPERATORS else self.exact_value()
        return requirement(key, op, values)

    def set_values(self) -> list[str]:
        kind, lit = self.take(values=True)
        if kind != "(":
            raise SelectorError(f"found '{lit}' expected: '('")
        kind, lit = self.peek(values=True)
        if kind == ")":
            self.take()
            return [""]
        if kind not in ("id", ","):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        values: list[str] = []
        expect_value = True
        while True:
            kind, lit = self.take(values=True)
            if kind == "id" and expect_value:
                values.append(lit)
                expect_value = False
            elif kind == ",":
                if expect_value:
                    values.append("")  # `(,a)` or `(a,,b)`: the empty value
                expect_value = True
            elif kind == ")":
                if expect_value:
                    values.append("")  # `(a,)`
                return values
            else:
                raise SelectorError(f"found '{lit}', expected: ',' or ')'")

    def exact_value(self) -> list[str]:
        kind, _ = self.peek(values=True)
        if kind in ("end", ","):
            return [""]
        kind, lit = self.take(values=True)
        if kind != "id":
            raise SelectorError(f"found '{lit}', expected: identifier")
        return [lit]


def parse_selector(text: str) -> Selector:
    """Parses a label selector string; BadRequest when it is malformed. "" matches everything."""
    try:
        return _selector(_Parser(text).parse())
    except SelectorError as e:
        raise BadRequest(f"unable to parse requirement: {e}") from None


# ---------------------------------------------------------------- LabelSelector messages

_MESSAGE_OPERATORS: Final[dict[str, Operator]] = {
    "In": "in",
    "NotIn": "notin",
    "Exists": "exists",
    "DoesNotExist": "!",
}


def selector_from_label_selector(
    msg: types_pb2.LabelSelector | None,
    *,
    if_nil: Selector = NOTHING,
    path: str = "selector",
) -> Selector:
    """metav1.LabelSelectorAsSelector: nil -> `if_nil` (NOTHING), empty -> EVERYTHING.

    Raises Invalid naming `path` for a selector validation would have rejected.
    """
    if msg is None:
        return if_nil
    reqs: list[Requirement] = []
    try:
        for key, value in sorted(msg.match_labels.items()):
            reqs.append(requirement(key, "=", (value,)))
        for i, expr in enumerate(msg.match_expressions):
            op = _MESSAGE_OPERATORS.get(expr.operator)
            if op is None:
                cause_path = f"{path}.matchExpressions[{i}].operator"
                detail = f'"{expr.operator}" is not a valid label selector operator'
                raise Invalid(f"{cause_path}: {detail}", [Cause(cause_path, detail)])
            reqs.append(requirement(expr.key, op, expr.values))
    except SelectorError as e:
        raise Invalid(f"{path}: {e}", [Cause(path, str(e))]) from None
    return _selector(reqs)


def selector_of(parent: Message, field: str, *, if_nil: Selector = NOTHING) -> Selector:
    """The selector in `parent.<field>` (a LabelSelector), honouring its presence."""
    if not parent.HasField(field):
        return selector_from_label_selector(None, if_nil=if_nil, path=field)
    msg = getattr(parent, field)
    assert isinstance(msg, types_pb2.LabelSelector)
    return selector_from_label_selector(msg, if_nil=if_nil, path=field)


def matches_label_selector(
    msg: types_pb2.LabelSelector | None,
    labels: Mapping[str, str],
    *,
    if_nil: Selector = NOTHING,
) -> bool:
    """Convenience: selector_from_label_selector(msg).matches(labels)."""
    return selector_from_label_selector(msg, if_nil=if_nil).matches(labels)

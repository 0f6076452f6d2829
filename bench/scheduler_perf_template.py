"""Go text/template as upstream's scheduler_perf templates use it: kemu's renderer of the
object templates of performance-config files (pods, nodes, and the objects createAny,
createPodGroups and updateAny make), given `.Index`, `.Count` and the op's templateParams.

upstream (test/integration/scheduler_perf/operations.go getSpecFromTextTemplateFile and
getTemplateFuncs, util.go for the pod and node templates) parses each file with Go's template
package and the functions AddInt, SubtractInt, MultiplyInt, DivideInt, Mod, AddFloat,
SubtractFloat, MultiplyFloat and DivideFloat; the templates of gangscheduling/, podgroup/,
workload_preemption/ and cpg/ also use `if`/`else`/`with`/`end`, parenthesised calls, Go's
built-in `and`, `or`, `not`, `eq`, `ne`, `lt`, `le`, `gt`, `ge`, and `{{-`/`-}}` trim markers;
dra/'s templates variables (`{{$n := or .numDevices 10}}`, `$`), `range` over an integer (Go
1.22's range over int) or a list, with `$i :=` / `$i, $v :=`, and the functions Int, JSON and
`mod` (as Mod).
This module renders that subset: the data is a map, so a param the op does not give is Go's
nil (falsy), as upstream's map[string]any. upstream executes the templates with Go's
html/template (operations.go imports "html/template", from the commit that added
getTemplateFuncs), whose escaper runs on every printed value in HTML text context: the value
is HTML-escaped (`&`, `<`, `>`, `"`, `'`, `+`) and nil prints as nothing (golang/go#25875),
where text/template would print `<no value>`; JSON's text is printed as it is (upstream's
returns it unescaped: its YAML would not parse otherwise). `define`, `template`, `block`,
`break`, `continue` and assignments to a declared variable (`=`) are refused with the action
named.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Final, cast


class TemplateError(ValueError):
    """A template that does not parse or render; the message names the action."""


# ---------------------------------------------------------------------- functions


def _to_float(value: object) -> float:
    """upstream's toFloat64: numbers and numeric strings; anything else fails."""
    if isinstance(value, bool) or value is None:
        raise TemplateError(f"cannot cast {_show(value)} to float64")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise TemplateError(f"cannot cast {_show(value)} to float64")


def _floats(args: Sequence[object]) -> list[float]:
    return [_to_float(a) for a in args]


def _divide(a: float, b: float) -> float:
    if b == 0:
        raise TemplateError("division by zero")
    return a / b


def _mod(a: object, b: object) -> int:
    x, y = int(_to_float(a)), int(_to_float(b))
    if y == 0:
        raise TemplateError("integer divide by zero")
    return int(math.fmod(x, y))  # Go's %: truncated toward zero


def _arity(name: str, args: Sequence[object], n: int) -> None:
    if len(args) != n:
        raise TemplateError(f"wrong number of args for {name}: want {n} got {len(args)}")


def _fixed(n: int, f: Callable[..., object]) -> Callable[[str, Sequence[object]], object]:
    def call(name: str, args: Sequence[object]) -> object:
        _arity(name, args, n)
        return f(*args)

    return call


def _variadic(f: Callable[[list[float]], object]) -> Callable[[str, Sequence[object]], object]:
    return lambda _name, args: f(_floats(args))


# upstream's getTemplateFuncs: the Int forms truncate the float result (Go's int()).
FUNCS: Final[Mapping[str, Callable[[str, Sequence[object]], object]]] = {
    "AddFloat": _variadic(lambda xs: float(sum(xs))),
    "AddInt": _variadic(lambda xs: int(sum(xs))),
    "SubtractFloat": _fixed(2, lambda a, b: _to_float(a) - _to_float(b)),
    "SubtractInt": _fixed(2, lambda a, b: int(_to_float(a) - _to_float(b))),
    "MultiplyFloat": _variadic(lambda xs: float(math.prod(xs))),
    "MultiplyInt": _variadic(lambda xs: int(math.prod(xs))),
    "DivideFloat": _fixed(2, lambda a, b: _divide(_to_float(a), _to_float(b))),
    "DivideInt": _fixed(2, lambda a, b: int(_divide(_to_float(a), _to_float(b)))),
    "Mod": _fixed(2, _mod),
    # dra/'s templates: `(or .numRequests 1) | Int` (an integer for `range`), `... | JSON`
    # (a param's list or map as YAML flow text), `mod` (pod-with-extended-resource-mod25.yaml).
    "Int": _fixed(1, lambda a: int(_to_float(a))),
    "JSON": _fixed(1, lambda a: Unescaped(json.dumps(a, separators=(",", ":")))),
    "mod": _fixed(2, _mod),
}


class Unescaped(str):
    """Text printed as it is (html/template's template.HTML): JSON's result."""


def truth(value: object) -> bool:
    """Go template truth: false, 0, nil and the empty string, slice and map are false."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float | str | list | tuple | dict):
        return bool(value)
    return True


def _comparable(name: str, a: object, b: object) -> tuple[object, object]:
    if a is None or b is None:
        raise TemplateError(f"error calling {name}: invalid type for comparison")
    numbers = (int, float)
    if isinstance(a, bool) != isinstance(b, bool) or (
        isinstance(a, numbers) != isinstance(b, numbers) and not isinstance(a, bool)
    ):
        raise TemplateError(f"error calling {name}: incompatible types for comparison")
    if isinstance(a, str) != isinstance(b, str):
        raise TemplateError(f"error calling {name}: incompatible types for comparison")
    return a, b


def _eq(name: str, args: Sequence[object]) -> object:
    if len(args) < 2:
        raise TemplateError(f"wrong number of args for {name}: want at least 2")
    first = args[0]
    return any(_equal(name, first, other) for other in args[1:])


def _equal(name: str, a: object, b: object) -> bool:
    a, b = _comparable(name, a, b)
    return a == b


def _order(op: Callable[[object, object], bool]) -> Callable[[str, Sequence[object]], object]:
    def call(name: str, args: Sequence[object]) -> object:
        _arity(name, args, 2)
        a, b = _comparable(name, args[0], args[1])
        if isinstance(a, bool):
            raise TemplateError(f"error calling {name}: invalid type for comparison")
        return op(a, b)

    return call


BUILTINS: Final[Mapping[str, Callable[[str, Sequence[object]], object]]] = {
    "not": _fixed(1, lambda a: not truth(a)),
    "eq": _eq,
    "ne": _fixed(2, lambda a, b: not _equal("ne", a, b)),
    "lt": _order(lambda a, b: a < b),  # type: ignore[operator]
    "le": _order(lambda a, b: a <= b),  # type: ignore[operator]
    "gt": _order(lambda a, b: a > b),  # type: ignore[operator]
    "ge": _order(lambda a, b: a >= b),  # type: ignore[operator]
}
_SHORT_CIRCUIT: Final = ("and", "or")  # evaluated lazily, as Go 1.18+


# ---------------------------------------------------------------------- printing


def go_format(value: object) -> str:
    """A value as text/template prints it (fmt.Sprint): bools lower-case, nil `<no value>`,
    a float64 as strconv.FormatFloat(f, 'g', -1, 64)."""
    if value is None:
        return "<no value>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _format_float(value)
    return str(value)


def _format_float(f: float) -> str:
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1, f) < 0 else "0"
    sign, digits, exponent = Decimal(repr(f)).normalize().as_tuple()
    assert isinstance(exponent, int)
    ds = "".join(map(str, digits))
    dp = len(ds) + exponent  # position of the decimal point
    exp = dp - 1
    out = "-" if sign else ""
    # fmt's %v of a float64 is %g at the shortest precision: the exponent form from 1e+06.
    if exp < -4 or exp >= 6:
        mantissa = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return f"{out}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if dp <= 0:
        return f"{out}0.{'0' * -dp}{ds}"
    if dp >= len(ds):
        return f"{out}{ds}{'0' * (dp - len(ds))}"
    return f"{out}{ds[:dp]}.{ds[dp:]}"


# html/template's htmlEscaper in text context (html/template/html.go htmlReplacementTable).
_HTML_ESCAPES: Final = str.maketrans(
    {"\0": "\ufffd", '"': "&#34;", "&": "&amp;", "'": "&#39;", "+": "&#43;", "<": "&lt;",
     ">": "&gt;"}
)  # fmt: skip


def printed(value: object) -> str:
    """A value as an action of upstream's templates prints it: html/template's escaper over
    fmt's text, nil as nothing, JSON's text as it is."""
    if isinstance(value, Unescaped):
        return str(value)
    return "" if value is None else go_format(value).translate(_HTML_ESCAPES)


def _show(value: object) -> str:
    return "<nil>" if value is None else repr(value)


# ---------------------------------------------------------------------- parsing

_DELIMS: Final = re.compile(r"{{(-\s)?(.*?)(\s-)?}}", re.S)
_TOKEN: Final = re.compile(
    r"""\s*(?:
        (?P<lparen>\() | (?P<rparen>\)) | (?P<pipe>\|)
      | (?P<string>"(?:[^"\\]|\\.)*") | (?P<raw>`[^`]*`)
      | (?P<number>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?))
      | (?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+|\.)
      | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<variable>\$[A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
    )""",
    re.X,
)
_UNSUPPORTED: Final = ("define", "template", "block", "break", "continue")
# `$x := pipeline` (a declaration) and `$i :=` / `$i, $v :=` after range.
_DECLARATION: Final = re.compile(
    r"^(\$[A-Za-z0-9_]*)(?:\s*,\s*(\$[A-Za-z0-9_]*))?\s*(:?=)(?!=)\s*(.*)$", re.S
)


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str


Expr = tuple[
    object, ...
]  # ("field", path) | ("lit", value) | ("call", name, args) | ("pipe", cmds) | ("var", name, path)


@dataclass
class _Node:
    kind: str  # text | print | if | with | range
    text: str = ""  # the text, or the action's source (for errors)
    expr: Expr = ()
    then: list[_Node] = field(default_factory=list)
    otherwise: list[_Node] = field(default_factory=list)
    # The variables the action declares: a print's `$x :=` (nothing printed), range's
    # element (one) or index and element (two).
    names: tuple[str, ...] = ()


def _tokens(source: str) -> list[_Token]:
    out: list[_Token] = []
    pos = 0
    source = source.rstrip()
    while pos < len(source):
        m = _TOKEN.match(source, pos)
        if m is None or m.end() == pos:
            raise TemplateError(f"unexpected {source[pos:].strip()!r}")
        kind = m.lastgroup
        assert kind is not None
        out.append(_Token(kind, m.group(kind)))
        pos = m.end()
    return out


class _ExprParser:
    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def pipeline(self) -> Expr:
        commands = [self.command()]
        while (t := self.peek()) is not None and t.kind == "pipe":
            self.pos += 1
            commands.append(self.command())
        return commands[0] if len(commands) == 1 else ("pipe", tuple(commands))

    def command(self) -> Expr:
        operands: list[Expr] = []
        while (t := self.peek()) is not None and t.kind not in ("rparen", "pipe"):
            operands.append(self.operand())
        if not operands:
            raise TemplateError("missing value for command")
        head = operands[0]
        if head[0] == "ident":
            return ("call", head[1], tuple(operands[1:]))
        if len(operands) > 1:
            raise TemplateError(f"can't give argument to non-function {_describe(head)}")
        return head

    def operand(self) -> Expr:
        t = self.tokens[self.pos]
        self.pos += 1
        if t.kind == "lparen":
            inner = self.pipeline()
            closing = self.peek()
            if closing is None or closing.kind != "rparen":
                raise TemplateError("unclosed left paren")
            self.pos += 1
            return inner
        if t.kind == "rparen":
            raise TemplateError("unexpected right paren")
        if t.kind == "field":
            return ("field", tuple(t.text.split(".")[1:]) if t.text != "." else ())
        if t.kind == "string":
            return ("lit", bytes(t.text[1:-1], "utf-8").decode("unicode_escape"))
        if t.kind == "raw":
            return ("lit", t.text[1:-1])
        if t.kind == "number":
            text = t.text
            return ("lit", float(text) if any(c in text for c in ".eE") else int(text))
        if t.kind == "variable":
            name, *path = t.text.split(".")
            return ("var", name, tuple(path))
        if t.text in ("true", "false"):
            return ("lit", t.text == "true")
        if t.text == "nil":
            return ("lit", None)
        return ("ident", t.text)


def _describe(expr: Expr) -> str:
    if expr[0] == "field":
        return "." + ".".join(cast(tuple[str, ...], expr[1]))
    if expr[0] == "var":
        return str(expr[1])
    return repr(expr[1])


def _declaration(source: str) -> tuple[tuple[str, ...], str]:
    """An action's declared variables and the pipeline after `:=` (none: the whole source)."""
    m = _DECLARATION.match(source)
    if m is None:
        return (), source
    if m.group(3) == "=":
        raise TemplateError("assignment to a declared variable is not supported")
    return tuple(n for n in (m.group(1), m.group(2)) if n), m.group(4)


def _parse_expr(source: str) -> Expr:
    parser = _ExprParser(_tokens(source))
    expr = parser.pipeline()
    if parser.peek() is not None:
        raise TemplateError(f"unexpected {parser.peek().text!r}")  # type: ignore[union-attr]
    return expr


def parse(text: str) -> list[_Node]:
    """The template's tree; TemplateError names the action that does not parse."""
    # Split into text and actions, applying the trim markers.
    parts: list[tuple[str, str]] = []  # ("text", s) | ("action", source)
    pos = 0
    for m in _DELIMS.finditer(text):
        before = text[pos : m.start()]
        if m.group(1):
            before = before.rstrip()
        parts.append(("text", before))
        parts.append(("action", m.group(2).strip()))
        pos = m.end()
        if m.group(3):
            rest = text[pos:]
            pos += len(rest) - len(rest.lstrip())
    parts.append(("text", text[pos:]))
    if "{{" in "".join(s for kind, s in parts if kind == "text"):
        raise TemplateError("unclosed action")

    root: list[_Node] = []
    # The open blocks: (node, which branch is being filled, the action that opened it).
    stack: list[tuple[_Node, list[_Node], str]] = []
    current = root
    for kind, source in parts:
        if kind == "text":
            if source:
                current.append(_Node("text", text=source))
            continue
        if source.startswith("/*"):
            continue  # a comment
        word = source.split(None, 1)[0] if source else ""
        rest = source[len(word) :].strip()
        try:
            if word in _UNSUPPORTED:
                raise TemplateError("not supported by kemu's renderer")
            if word in ("if", "with", "range"):
                names: tuple[str, ...] = ()
                if word == "range":
                    names, rest = _declaration(rest)
                node = _Node(word, text=source, expr=_parse_expr(rest), names=names)
                current.append(node)
                stack.append((node, current, source))
                current = node.then
            elif word == "else":
                if not stack:
                    raise TemplateError("unexpected else")
                node, outer, opened = stack[-1]
                if current is node.otherwise:
                    raise TemplateError("expected end; found else")
                current = node.otherwise
                if rest:  # else if / else with: a nested block closed by the same end
                    inner_word, inner_rest = (rest.split(None, 1) + [""])[:2]
                    if inner_word not in ("if", "with"):
                        raise TemplateError(f"unexpected {rest!r} after else")
                    inner = _Node(inner_word, text=rest, expr=_parse_expr(inner_rest))
                    current.append(inner)
                    stack[-1] = (node, outer, opened)
                    stack.append((inner, current, "else " + rest))
                    current = inner.then
            elif word == "end":
                if not stack:
                    raise TemplateError("unexpected end")
                _, current, opened = stack.pop()
                # Close the blocks an `else if` opened along with their parent.
                while opened.startswith("else ") and stack:
                    _, current, opened = stack.pop()
            else:
                names, pipeline = _declaration(source)
                if len(names) > 1:
                    raise TemplateError("too many declarations")
                current.append(_Node("print", text=source, expr=_parse_expr(pipeline), names=names))
        except TemplateError as e:
            raise TemplateError(f"{{{{{source}}}}}: {e}") from e
    if stack:
        raise TemplateError(f"{{{{{stack[-1][2]}}}}}: unexpected EOF (no end)")
    return root


# ---------------------------------------------------------------------- rendering


@functools.lru_cache(maxsize=64)
def _parsed(text: str) -> tuple[_Node, ...]:
    """The tree of a template rendered once per object of an op (tens of thousands of pods):
    parsed once. The nodes are not changed after parsing."""
    return tuple(parse(text))


Vars = dict[str, object]  # the variables in scope: `$` (the data) and those declared


def _eval(expr: Expr, dot: object, env: Vars, final: tuple[object, ...] = ()) -> object:
    kind = expr[0]
    if kind == "lit":
        return expr[1]
    if kind in ("var", "field"):
        if kind == "var":
            name = str(expr[1])
            if name not in env:
                raise TemplateError(f"undefined variable: {name}")
            value, path = env[name], cast(tuple[str, ...], expr[2])
        else:
            value, path = dot, cast(tuple[str, ...], expr[1])
        for name in path:
            if value is None:
                return None
            if not isinstance(value, Mapping):
                raise TemplateError(f"can't evaluate field {name} in type {type(value).__name__}")
            value = value.get(name)  # a missing key: Go's zero value, nil
        return value
    if kind == "pipe":
        result: tuple[object, ...] = ()
        for command in cast(tuple[Expr, ...], expr[1]):
            result = (_eval(command, dot, env, result),)
        return result[0]
    if kind == "ident":
        return _call(str(expr[1]), (), dot, env, final)
    assert kind == "call"
    return _call(str(expr[1]), cast(tuple[Expr, ...], expr[2]), dot, env, final)


def _call(
    name: str, args: tuple[Expr, ...], dot: object, env: Vars, final: tuple[object, ...]
) -> object:
    if name in _SHORT_CIRCUIT:
        if not args and not final:
            raise TemplateError(f"wrong number of args for {name}: want at least 1 got 0")
        values = [lambda a=a: _eval(a, dot, env) for a in args] + [lambda v=v: v for v in final]
        value: object = None
        for get in values:
            value = get()
            if truth(value) == (name == "or"):
                return value
        return value
    fn = FUNCS.get(name) or BUILTINS.get(name)
    if fn is None:
        known = ", ".join([*FUNCS, "and", "or", *BUILTINS])
        raise TemplateError(f'function "{name}" not defined (known: {known})')
    return fn(name, [*(_eval(a, dot, env) for a in args), *final])


def _range_items(value: object) -> list[tuple[object, object]]:
    """What `range` iterates: (index or key, element) of an integer (Go 1.22: 0..n-1), a list
    or a map (sorted keys, as Go's); nil iterates nothing."""
    if value is None:
        return []
    if isinstance(value, bool):
        raise TemplateError("range can't iterate over a bool")
    if isinstance(value, int):
        return [(i, i) for i in range(value)]
    if isinstance(value, list | tuple):
        return list(enumerate(value))
    if isinstance(value, Mapping):
        return [(k, value[k]) for k in sorted(value)]
    raise TemplateError(f"range can't iterate over {_show(value)}")


def _render(nodes: Sequence[_Node], dot: object, out: list[str], env: Vars) -> None:
    """Renders `nodes`; a variable declared here lives until the end of the enclosing block
    (`env` is that block's own copy)."""
    for node in nodes:
        if node.kind == "text":
            out.append(node.text)
            continue
        try:
            value = _eval(node.expr, dot, env)
        except TemplateError as e:
            raise TemplateError(f"{{{{{node.text}}}}}: {e}") from e
        if node.kind == "print":
            if node.names:
                env[node.names[0]] = value
            else:
                out.append(printed(value))
        elif node.kind == "range":
            try:
                items = _range_items(value)
            except TemplateError as e:
                raise TemplateError(f"{{{{{node.text}}}}}: {e}") from e
            if not items:
                _render(node.otherwise, dot, out, dict(env))
            for index, element in items:
                inner = dict(env)
                if len(node.names) == 1:
                    inner[node.names[0]] = element
                elif len(node.names) == 2:
                    inner[node.names[0]], inner[node.names[1]] = index, element
                _render(node.then, element, out, inner)
        elif truth(value):
            _render(node.then, value if node.kind == "with" else dot, out, dict(env))
        else:
            _render(node.otherwise, dot, out, dict(env))


def render(text: str, env: Mapping[str, object]) -> str:
    """`text` executed with the data `env` (upstream's template env: the op's templateParams
    with Index and Count); TemplateError names the failing action."""
    tree = _parsed(text)
    out: list[str] = []
    _render(tree, env, out, {"$": env})
    return "".join(out)

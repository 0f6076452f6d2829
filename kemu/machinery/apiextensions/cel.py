"""x-kubernetes-validations: a CRD schema's CEL rules (upstream apiextensions-apiserver
pkg/apiserver/schema/cel/validation.go and compilation.go), on cel-expr-python as
kemu.machinery.dra_cel is.

A rule sees `self`, the value at its schema node, and, on an update where the old object has
a value there, `oldSelf` (a transition rule, one that names oldSelf, is evaluated only then,
unless optionalOldSelf). A rule that is false is an Invalid error at the node's path (plus its
fieldPath) with the rule's message, its messageExpression's string when that evaluates, or
"failed rule: <rule>"; its reason picks the error type (FieldValueInvalid, Forbidden,
Required, Duplicate). Old values are matched by object keys and, in
x-kubernetes-list-type=map lists, by the list's keys."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Final

from cel_expr_python import cel
from cel_expr_python.ext import ext_strings

from kemu.machinery.errors import Cause
from kemu.machinery.jsonvalue import JSON, JSONObject
from kemu.machinery.validation import field

VALIDATIONS: Final = "x-kubernetes-validations"
_OLD_SELF: Final = re.compile(r"\boldSelf\b")
_ENV: Final = cel.NewEnv(
    variables={"self": cel.Type.DYN, "oldSelf": cel.Type.DYN},
    extensions=[ext_strings.ExtStrings()],
)


class RuleCompileError(Exception):
    pass


@dataclass(frozen=True, eq=False)
class _Compiled:
    program: Any
    transition: bool


@functools.lru_cache(maxsize=1024)
def compile_rule(expression: str) -> _Compiled:
    """A rule compiled (cached by text); RuleCompileError with upstream's detail."""
    try:
        program = _ENV.compile(expression)
    except Exception as exc:
        raise RuleCompileError(f"compilation failed: {_issues(exc)}") from exc
    return _Compiled(program, _OLD_SELF.search(expression) is not None)


def _issues(exc: Exception) -> str:
    text = str(exc)
    text = re.sub(r"^[A-Z_]+: ", "", text)
    return re.sub(r" \[[A-Z_]+\]$", "", text.strip())


def _eval(program: Any, self_value: JSON, old: JSON, has_old: bool) -> tuple[str, Any]:
    activation: dict[str, Any] = {"self": self_value}
    if has_old:
        activation["oldSelf"] = old
    result = program.eval(_ENV.Activation(activation))
    return result.type().name(), result.value()


def validate_rules(schema: JSONObject, path: str) -> list[Cause]:
    """The CRD's check of its rules: each compiles (upstream's CRD validation)."""
    causes: list[Cause] = []
    rules = schema.get(VALIDATIONS)
    if isinstance(rules, list):
        for i, rule in enumerate(rules):
            rpath = f"{path}.{VALIDATIONS}[{i}]"
            if not isinstance(rule, dict) or not isinstance(rule.get("rule"), str):
                causes.append(field.required(f"{rpath}.rule"))
                continue
            try:
                compile_rule(str(rule["rule"]))
            except RuleCompileError as e:
                causes.append(field.invalid(f"{rpath}.rule", rule["rule"], str(e)))
            expr = rule.get("messageExpression")
            if isinstance(expr, str) and expr:
                try:
                    compile_rule(expr)
                except RuleCompileError as e:
                    causes.append(field.invalid(f"{rpath}.messageExpression", expr, str(e)))
    for key in ("properties",):
        props = schema.get(key)
        if isinstance(props, dict):
            for name, sub in props.items():
                if isinstance(sub, dict):
                    causes.extend(validate_rules(sub, f"{path}.properties[{name}]"))
    for key in ("items", "additionalProperties"):
        sub = schema.get(key)
        if isinstance(sub, dict):
            causes.extend(validate_rules(sub, f"{path}.{key}"))
    return causes


_MISSING: Final = object()


def validate(obj: JSONObject, old: JSONObject | None, schema: JSONObject) -> list[Cause]:
    """Every failed rule of `schema` over the custom resource `obj` (`old`: the stored one,
    on an update)."""
    causes: list[Cause] = []
    _walk(obj, old if old is not None else _MISSING, schema, "", causes)
    return causes


def _walk(value: JSON, old: object, schema: JSONObject, path: str, causes: list[Cause]) -> None:
    rules = schema.get(VALIDATIONS)
    if isinstance(rules, list):
        for rule in rules:
            if isinstance(rule, dict):
                _check(rule, value, old, schema, path, causes)
    if isinstance(value, dict):
        props = schema.get("properties")
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key) if isinstance(props, dict) else None
            if not isinstance(sub, dict):
                sub = additional if isinstance(additional, dict) else None
            if sub is None:
                continue
            old_value = old.get(key, _MISSING) if isinstance(old, dict) else _MISSING
            _walk(item, old_value, sub, f"{path}.{key}" if path else key, causes)
    elif isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, dict):
            return
        keys = schema.get("x-kubernetes-list-map-keys")
        by_key: dict[tuple[str, ...], JSON] = {}
        if schema.get("x-kubernetes-list-type") == "map" and isinstance(keys, list):
            for o in old if isinstance(old, list) else []:
                if isinstance(o, dict):
                    by_key[tuple(str(o.get(str(k))) for k in keys)] = o
        for i, item in enumerate(value):
            old_item: object = _MISSING
            if by_key and isinstance(item, dict) and isinstance(keys, list):
                old_item = by_key.get(tuple(str(item.get(str(k))) for k in keys), _MISSING)
            _walk(item, old_item, items, f"{path}[{i}]", causes)


def _check(
    rule: JSONObject, value: JSON, old: object, schema: JSONObject, path: str, causes: list[Cause]
) -> None:
    text = rule.get("rule")
    if not isinstance(text, str):
        return
    try:
        compiled = compile_rule(text)
    except RuleCompileError:
        return  # (the CRD's validation refused it)
    has_old = old is not _MISSING
    old_json: JSON = old if has_old else None  # type: ignore[assignment]
    if compiled.transition and not has_old and rule.get("optionalOldSelf") is not True:
        return
    kind, result = _eval(compiled.program, value, old_json, has_old)
    if kind == "BOOL" and result:
        return
    fpath = path
    sub = rule.get("fieldPath")
    if isinstance(sub, str) and sub:
        fpath = f"{path}{sub}" if path else sub.lstrip(".")
    if kind == "ERROR":
        causes.append(field.invalid(fpath or "<root>", _type(schema), str(result)))
        return
    message = _message(rule, value, old_json, has_old, text)
    reason = rule.get("reason")
    where = fpath or "<root>"
    if reason == "FieldValueForbidden":
        causes.append(field.forbidden(where, message))
    elif reason == "FieldValueRequired":
        causes.append(field.required(where, message))
    elif reason == "FieldValueDuplicate":
        causes.append(field.duplicate(where, _type(schema), message))
    else:
        causes.append(field.invalid(where, _type(schema), message))


def _message(rule: JSONObject, value: JSON, old: JSON, has_old: bool, text: str) -> str:
    expr = rule.get("messageExpression")
    if isinstance(expr, str) and expr:
        try:
            kind, result = _eval(compile_rule(expr).program, value, old, has_old)
            if kind == "STRING" and isinstance(result, str) and result.strip():
                return result
        except RuleCompileError:
            pass
    message = rule.get("message")
    if isinstance(message, str) and message:
        return message
    return f"failed rule: {text}"


def _type(schema: JSONObject) -> str:
    """The value an error shows: the node's type, as upstream's (field.Invalid(path,
    schema type, ...))."""
    t = schema.get("type")
    return t if isinstance(t, str) and t else "object"

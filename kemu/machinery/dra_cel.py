"""DRA's CEL device selectors: upstream's environment on the `cel-expr-python` library (Google's
C++ CEL), compiled at admission and evaluated by the structured allocator.

Upstream: staging/src/k8s.io/dynamic-resource-allocation/cel/compile.go (the `device` variable of
type `kubernetes.DRADevice`, `cel.bind`, domain defaulting, "compilation failed: ..."),
staging/src/k8s.io/dynamic-resource-allocation/cel/cache.go (the compile cache) and the Kubernetes
CEL base environment (staging/src/k8s.io/apiserver/pkg/cel/environment/base.go) for the quantity
and semver libraries (.../cel/library/quantity.go, semverlib.go).

The surface:
- `compile_selector(expression, features)` -> `CompiledSelector`, or raises `SelectorCompileError`
  whose `detail` is upstream's text ("compilation failed: ...", "must evaluate to bool or the
  unknown type, not ...").
- `DeviceView.of(driver, device)` builds a device's CEL input once (attributes and capacity grouped
  by domain; a name without a domain belongs to the driver's); reuse it for every selector.
- `CompiledSelector.matches(view)` -> bool, or raises `CELRuntimeError` (upstream's allocator
  aborts with "CEL runtime error: ...").
- `SelectorCache` memoizes compilations (errors included), as upstream's `cel.Cache`.

Differences from upstream, all for want of support in the library:
- no cost estimation ("too complex, exceeds cost limit" is never returned) and no runtime cost
  limit;
- of the base environment, the string extensions, optionals, bindings, math, regex `matches`,
  quantity and semver are present; the Kubernetes `lists`, `regex` (find/findAll), `url`, `ip`,
  `cidr`, `format` and `sets` libraries are not;
- upstream's lookup of an absent attribute domain yields an empty map; kemu supplies an empty map
  for each domain the expression names as a string literal (`device.attributes["x"]`), so
  `"x" in device.attributes` is true for such a domain where upstream says false.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from threading import Lock
from typing import Any, Final

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_math, ext_optional, ext_strings
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, struct_pb2

from kemu.api.v1 import types_pb2 as pb
from kemu.machinery.errors import Invalid
from kemu.machinery.quantity import Quantity, parse_quantity
from kemu.machinery.semver import Semver, SemverError, parse_semver, parse_semver_normalized

# Upstream k8s.io/api/resource/v1 constants.
CEL_SELECTOR_EXPRESSION_MAX_LENGTH: Final = 10 * 1024
CEL_SELECTOR_EXPRESSION_MAX_COST: Final = 1_000_000

DEVICE_VAR: Final = "device"
AttributeValue = int | bool | str | Semver


@dataclass(frozen=True)
class Features:
    """The gates that change the environment (upstream cel.Features)."""

    # DRAConsumableCapacity: `device.allowMultipleAllocations` exists.
    consumable_capacity: bool = False


class SelectorCompileError(Exception):
    """The expression does not compile; `detail` is upstream's field error detail."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class CELRuntimeError(Exception):
    """Evaluating a selector failed (upstream's allocator: "CEL runtime error: ...")."""


# ---------------------------------------------------------------- the types


def _build_pool() -> descriptor_pool.DescriptorPool:
    fd = descriptor_pb2.FieldDescriptorProto
    pool = descriptor_pool.DescriptorPool()
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(struct_pb2.DESCRIPTOR.serialized_pb))
    proto = descriptor_pb2.FileDescriptorProto(
        name="kemu_dra_cel.proto",
        package="kubernetes",
        syntax="proto3",
        dependency=["google/protobuf/struct.proto"],
    )
    for name in ("Quantity", "Semver"):
        msg = proto.message_type.add(name=name)
        msg.field.add(name="value", number=1, type=fd.TYPE_STRING, label=fd.LABEL_OPTIONAL)
    for type_name, multi in (("DRADevice", False), ("DRADeviceConsumableCapacity", True)):
        dev = proto.message_type.add(name=type_name)
        dev.field.add(name="driver", number=1, type=fd.TYPE_STRING, label=fd.LABEL_OPTIONAL)
        if multi:
            dev.field.add(
                name="allowMultipleAllocations",
                json_name="allowMultipleAllocations",
                number=2,
                type=fd.TYPE_BOOL,
                label=fd.LABEL_OPTIONAL,
            )
        for number, fname in ((3, "attributes"), (4, "capacity")):
            entry = dev.nested_type.add(name=fname.capitalize() + "Entry")
            entry.options.map_entry = True
            entry.field.add(name="key", number=1, type=fd.TYPE_STRING, label=fd.LABEL_OPTIONAL)
            entry.field.add(
                name="value",
                number=2,
                type=fd.TYPE_MESSAGE,
                type_name=".google.protobuf.Struct",
                label=fd.LABEL_OPTIONAL,
            )
            dev.field.add(
                name=fname,
                number=number,
                type=fd.TYPE_MESSAGE,
                type_name=f".kubernetes.{type_name}.{entry.name}",
                label=fd.LABEL_REPEATED,
            )
    pool.Add(proto)
    return pool


_POOL: Final = _build_pool()
_QuantityMsg: Any = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName("kubernetes.Quantity")
)
_SemverMsg: Any = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("kubernetes.Semver"))
_Q: Final = cel.Type("kubernetes.Quantity")
_S: Final = cel.Type("kubernetes.Semver")
_T = cel.Type


def quantity_value(q: Quantity) -> Any:
    """The CEL value of a quantity: its exact amount as a fraction's text, so that `==` compares
    amounts ("1" == "1000m") whatever the format."""
    return _QuantityMsg(value=str(q.amount))


def semver_value(v: Semver) -> Any:
    """The CEL value of a version; build metadata is dropped, as it has no precedence."""
    return _SemverMsg(value=str(Semver(v.major, v.minor, v.patch, v.pre)))


def _q(msg: Any) -> Quantity:
    return Quantity(Fraction(msg.value))


def _v(msg: Any) -> Semver:
    return parse_semver(msg.value)


def _new_quantity(text: str) -> Any:
    return quantity_value(parse_quantity(text))


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except Invalid:
        return False
    return True


def _as_integer(msg: Any) -> int:
    q = _q(msg)
    if q.amount.denominator != 1 or not -(2**63) <= q.amount.numerator < 2**63:
        raise ValueError("cannot convert value to integer")
    return q.amount.numerator


def _add(a: Any, b: Any) -> Any:
    other = Quantity(Fraction(b)) if isinstance(b, int) else _q(b)
    return quantity_value(_q(a) + other)


def _sub(a: Any, b: Any) -> Any:
    other = Quantity(Fraction(b)) if isinstance(b, int) else _q(b)
    return quantity_value(_q(a) - other)


def _cmp_q(a: Any, b: Any) -> int:
    x, y = _q(a), _q(b)
    return (x > y) - (x < y)


def _new_semver(text: str) -> Any:
    return semver_value(parse_semver(text))


def _new_semver_normalized(text: str, normalize: bool) -> Any:
    return semver_value(parse_semver_normalized(text) if normalize else parse_semver(text))


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        parse_semver_normalized(text) if normalize else parse_semver(text)
    except SemverError:
        return False
    return True


def _is_q(msg: Any) -> bool:
    return bool(msg.DESCRIPTOR.full_name == "kubernetes.Quantity")


def _compare(a: Any, b: Any) -> int:
    if _is_q(a) != _is_q(b):
        raise TypeError(f"no such overload: {a.DESCRIPTOR.full_name}, {b.DESCRIPTOR.full_name}")
    if _is_q(a):
        return _cmp_q(a, b)
    return _v(a).compare(_v(b))


# (name, member, result, arguments, implementation): typed for checking. Quantity and Semver are
# both protobuf messages to the runtime, which dispatches on kinds only, so the evaluation env
# declares one overload per (name, arity) with dyn arguments and the implementation dispatches.
_Sig = tuple[str, bool, Any, list[Any], Callable[..., Any]]


def _signatures() -> list[_Sig]:
    B, N, D, S = _T.BOOL, _T.INT, _T.DOUBLE, _T.STRING
    return [
        ("quantity", False, _Q, [S], _new_quantity),
        ("isQuantity", False, B, [S], _is_quantity),
        ("sign", True, N, [_Q], lambda a: _q(a).sign()),
        ("isInteger", True, B, [_Q], lambda a: _q(a).amount.denominator == 1),
        ("asInteger", True, N, [_Q], _as_integer),
        ("asApproximateFloat", True, D, [_Q], lambda a: float(_q(a).amount)),
        ("add", True, _Q, [_Q, _Q], _add),
        ("add", True, _Q, [_Q, N], _add),
        ("sub", True, _Q, [_Q, _Q], _sub),
        ("sub", True, _Q, [_Q, N], _sub),
        ("isLessThan", True, B, [_Q, _Q], lambda a, b: _compare(a, b) < 0),
        ("isLessThan", True, B, [_S, _S], lambda a, b: _compare(a, b) < 0),
        ("isGreaterThan", True, B, [_Q, _Q], lambda a, b: _compare(a, b) > 0),
        ("isGreaterThan", True, B, [_S, _S], lambda a, b: _compare(a, b) > 0),
        ("compareTo", True, N, [_Q, _Q], _compare),
        ("compareTo", True, N, [_S, _S], _compare),
        ("semver", False, _S, [S], _new_semver),
        ("semver", False, _S, [S, B], _new_semver_normalized),
        ("isSemver", False, B, [S], _is_semver),
        ("isSemver", False, B, [S, B], _is_semver),
        ("major", True, N, [_S], lambda a: _v(a).major),
        ("minor", True, N, [_S], lambda a: _v(a).minor),
        ("patch", True, N, [_S], lambda a: _v(a).patch),
    ]


def _k8s_library(typed: bool) -> Any:
    """The quantity and semver functions of upstream's CEL library (quantity.go, semverlib.go)."""
    by_name: dict[str, list[Any]] = {}
    seen: set[tuple[str, int]] = set()
    for name, member, result, args, impl in _signatures():
        if typed:
            arg_ids = "_".join(a.name().lower().replace("kubernetes.", "") for a in args)
            overload_id = f"{name}_{arg_ids}"
        else:
            if (name, len(args)) in seen:
                continue
            seen.add((name, len(args)))
            overload_id = f"{name}_dyn{len(args)}"
            result = result if result in (_T.BOOL, _T.INT, _T.DOUBLE) else _T.DYN
            args = [_T.DYN for _ in args]
        by_name.setdefault(name, []).append(
            cel.Overload(overload_id, result, args, is_member=member, impl=impl)
        )
    return cel.CelExtension(
        "kubernetes.quantity_semver",
        [cel.FunctionDecl(name, overloads) for name, overloads in by_name.items()],
    )


def _extensions(typed: bool) -> list[Any]:
    return [
        _k8s_library(typed),
        ext_bindings.ExtBindings(),
        ext_strings.ExtStrings(),
        ext_optional.ExtOptional(),
        ext_math.ExtMath(),
    ]


def _env(device_type: Any, typed: bool) -> Any:
    return cel.NewEnv(
        descriptor_pool=_POOL, variables={DEVICE_VAR: device_type}, extensions=_extensions(typed)
    )


# The check environments declare `device` as a message, so that `device.foo` and
# `device.driver` as a result are refused as upstream's typed `kubernetes.DRADevice` does; the
# evaluation environment declares it as a map fed plain dicts (Quantity/Semver leaves).
_CHECK_ENVS: Final = {
    False: _env(cel.Type("kubernetes.DRADevice"), typed=True),
    True: _env(cel.Type("kubernetes.DRADeviceConsumableCapacity"), typed=True),
}
_EVAL_ENV: Final = _env(cel.Type.Map(cel.Type.STRING, cel.Type.DYN), typed=False)
_ACCEPTED_RESULTS: Final = frozenset({"BOOL", "DYN"})
_STATUS_PREFIX: Final = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX: Final = re.compile(r" \[[A-Z_]+\]$")
_DOMAIN_LITERAL: Final = re.compile(
    r"""(?:attributes|capacity)\s*\[\s*(?:"([^"\\]*)"|'([^'\\]*)')"""
)


def _issues(error: Exception) -> str:
    text = _STATUS_PREFIX.sub("", str(error).strip(), count=1)
    return _STATUS_SUFFIX.sub("", text)


# ---------------------------------------------------------------- devices


def split_qualified_name(name: str, driver: str) -> tuple[str, str]:
    """(domain, id) of an attribute or capacity name; no domain means the driver's (upstream
    parseQualifiedName)."""
    domain, sep, ident = name.rpartition("/")
    return (domain, ident) if sep else (driver, name)


def attribute_value(attr: pb.DeviceAttribute) -> AttributeValue:
    """The one value of a device attribute; Invalid when it holds none or a bad version."""
    which = attr.WhichOneof("_int_value")
    if which is not None:
        return attr.int_value
    if attr.HasField("bool_value"):
        return attr.bool_value
    if attr.HasField("string_value"):
        return attr.string_value
    if attr.HasField("version_value"):
        try:
            return parse_semver(attr.version_value)
        except SemverError as exc:
            raise Invalid(f"parse semantic version: {exc}") from exc
    raise Invalid("unsupported attribute value")


def _cel_leaf(value: AttributeValue) -> Any:
    return semver_value(value) if isinstance(value, Semver) else value


@dataclass(frozen=True)
class DeviceView:
    """One device as a selector sees it (upstream cel.Device), prepared once for every selector."""

    driver: str
    attributes: Mapping[str, Mapping[str, AttributeValue]]
    capacity: Mapping[str, Mapping[str, Quantity]]
    allow_multiple_allocations: bool = False
    _input: dict[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "_input",
            {
                "driver": self.driver,
                "allowMultipleAllocations": self.allow_multiple_allocations,
                "attributes": {
                    d: {k: _cel_leaf(v) for k, v in ids.items()}
                    for d, ids in self.attributes.items()
                },
                "capacity": {
                    d: {k: quantity_value(v) for k, v in ids.items()}
                    for d, ids in self.capacity.items()
                },
            },
        )

    @classmethod
    def of(cls, driver: str, device: pb.Device) -> DeviceView:
        """The view of a ResourceSlice device; Invalid on a bad attribute or capacity value."""
        attributes: dict[str, dict[str, AttributeValue]] = {}
        for name, attr in device.attributes.items():
            domain, ident = split_qualified_name(name, driver)
            try:
                attributes.setdefault(domain, {})[ident] = attribute_value(attr)
            except Invalid as exc:
                raise Invalid(f"attribute {name}: {exc}") from exc
        capacity: dict[str, dict[str, Quantity]] = {}
        for name, cap in device.capacity.items():
            domain, ident = split_qualified_name(name, driver)
            capacity.setdefault(domain, {})[ident] = parse_quantity(cap.value)
        return cls(
            driver=driver,
            attributes=attributes,
            capacity=capacity,
            allow_multiple_allocations=device.allow_multiple_allocations,
        )

    def cel_input(self, domains: Iterable[str]) -> dict[str, Any]:
        """The `device` variable, with an empty map for each of `domains` the device lacks."""
        base = self._input
        attrs, caps = base["attributes"], base["capacity"]
        missing = [d for d in domains if d not in attrs or d not in caps]
        if not missing:
            return base
        attrs, caps = dict(attrs), dict(caps)
        for d in missing:
            attrs.setdefault(d, {})
            caps.setdefault(d, {})
        return {**base, "attributes": attrs, "capacity": caps}


# ---------------------------------------------------------------- compiling and matching


@dataclass(frozen=True, eq=False)
class CompiledSelector:
    """A selector that compiled; `matches` evaluates it against one device."""

    expression: str
    _program: Any = field(repr=False)
    _domains: tuple[str, ...] = field(repr=False)

    def matches(self, device: DeviceView) -> bool:
        """Whether the device is selected; CELRuntimeError when evaluation fails (an absent
        attribute, a non-bool result, an error in a function)."""
        try:
            result = self._program.eval(data={DEVICE_VAR: device.cel_input(self._domains)})
        except Exception as exc:  # the library raises for inputs it cannot convert
            raise CELRuntimeError(_issues(exc)) from exc
        kind = result.type().name()
        if kind == "BOOL":
            return bool(result.value())
        if kind == "ERROR":
            raise CELRuntimeError(_issues(Exception(result.value())))
        raise CELRuntimeError(f"CEL result of type {kind.lower()} could not be converted to bool")


def compile_selector(expression: str, features: Features = Features()) -> CompiledSelector:
    """Compiles a device selector as upstream's CompileCELExpression; SelectorCompileError with
    "compilation failed: <issues>" or "must evaluate to bool or the unknown type, not <type>".
    The length limit (CEL_SELECTOR_EXPRESSION_MAX_LENGTH) is validation's to check."""
    try:
        checked = _CHECK_ENVS[features.consumable_capacity].compile(expression)
    except Exception as exc:
        raise SelectorCompileError("compilation failed: " + _issues(exc)) from exc
    result_type = checked.return_type().name()
    if result_type not in _ACCEPTED_RESULTS:
        raise SelectorCompileError(
            f"must evaluate to bool or the unknown type, not {result_type.lower()}"
        )
    try:
        program = _EVAL_ENV.compile(expression)
    except Exception as exc:  # accepted by the typed env, so not expected
        raise SelectorCompileError("compilation failed: " + _issues(exc)) from exc
    domains = tuple(sorted({a or b for a, b in _DOMAIN_LITERAL.findall(expression) if (a or b)}))
    return CompiledSelector(expression, program, domains)


class SelectorCache:
    """A bounded LRU of compilations keyed by expression, errors included (upstream cel.Cache;
    the scheduler's holds 10 entries). Safe to share between threads."""

    def __init__(self, max_size: int, features: Features = Features()) -> None:
        self._max = max_size
        self._features = features
        self._entries: OrderedDict[str, CompiledSelector | SelectorCompileError] = OrderedDict()
        self._lock = Lock()

    def get_or_compile(self, expression: str) -> CompiledSelector:
        """The compiled selector; raises the (cached) SelectorCompileError."""
        with self._lock:
            entry = self._entries.get(expression)
            if entry is not None:
                self._entries.move_to_end(expression)
        if entry is None:
            try:
                entry = compile_selector(expression, self._features)
            except SelectorCompileError as exc:
                entry = exc
            with self._lock:
                self._entries[expression] = entry
                self._entries.move_to_end(expression)
                while len(self._entries) > self._max:
                    self._entries.popitem(last=False)
        if isinstance(entry, SelectorCompileError):
            raise entry
        return entry

"""DRA's CEL selectors (S-DRA-CEL-*): upstream staging/src/k8s.io/dynamic-resource-allocation/cel/
compile.go and compile_test.go, the quantity and semver libraries of apiserver/pkg/cel/library."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2 as pb
from kemu.machinery.dra_cel import (
    CELRuntimeError,
    DeviceView,
    Features,
    SelectorCache,
    SelectorCompileError,
    compile_selector,
)
from kemu.machinery.errors import Invalid
from kemu.machinery.semver import parse_semver, parse_semver_normalized

DRIVER = "gpu.example.com"


def _device() -> pb.Device:
    return pb.Device(
        name="gpu-0",
        attributes={
            "model": pb.DeviceAttribute(string_value="A100"),
            "index": pb.DeviceAttribute(int_value=0),
            "mig": pb.DeviceAttribute(bool_value=True),
            "driverVersion": pb.DeviceAttribute(version_value="1.2.3"),
            "numa.example.com/node": pb.DeviceAttribute(int_value=1),
        },
        capacity={"memory": pb.DeviceCapacity(value="80Gi")},
        allow_multiple_allocations=True,
    )


VIEW = DeviceView.of(DRIVER, _device())


def _matches(expression: str, features: Features | None = None) -> bool:
    return compile_selector(expression, features or Features()).matches(VIEW)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.driver == "gpu.example.com"', True),
        # A name without a domain belongs to the driver's domain.
        ('device.attributes["gpu.example.com"].model == "A100"', True),
        ('device.attributes["numa.example.com"].node == 1', True),
        ('device.attributes["gpu.example.com"].mig', True),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0', True),
        ('device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("100Gi"))', False),
        ('device.capacity["gpu.example.com"].memory.isLessThan(quantity("100Gi"))', True),
        ('device.capacity["gpu.example.com"].memory.add(1).sub(1) == quantity("80Gi")', True),
        ('quantity("1") == quantity("1000m")', True),
        ('quantity("1.5").isInteger()', False),
        ('quantity("2k").asInteger() == 2000', True),
        ('quantity("-1").sign() == -1', True),
        ('isQuantity("1Gi") && !isQuantity("abc")', True),
        ('device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))', True),
        ('device.attributes["gpu.example.com"].driverVersion == semver("1.2.3")', True),
        ('device.attributes["gpu.example.com"].driverVersion.compareTo(semver("2.0.0")) < 0', True),
        ('semver("v1.2", true).minor() == 2 && semver("1.2.3").patch() == 3', True),
        ('isSemver("1.2.3") && !isSemver("1.2")', True),
        # Upstream's idioms: optionals, cel.bind, string extensions, comprehensions.
        ('device.attributes["other.example.com"].?x.orValue(5) == 5', True),
        ('"x" in device.attributes["other.example.com"]', False),
        (
            'cel.bind(g, device.attributes["gpu.example.com"], '
            'g.index == 0 && g.model.lowerAscii() == "a100")',
            True,
        ),
        ('device.attributes.exists(d, d == "numa.example.com")', True),
        ('device.attributes["gpu.example.com"].model.matches("^A1")', True),
    ],
)
def test_s_dra_cel_1_selector_evaluates_like_upstream(expression: str, expected: bool) -> None:
    assert _matches(expression) is expected


def test_s_dra_cel_2_compile_errors_carry_upstream_messages() -> None:
    with pytest.raises(SelectorCompileError) as err:
        compile_selector("device.foo == 1")
    assert err.value.detail.startswith("compilation failed: ERROR: <input>:1:7: undefined field")
    with pytest.raises(SelectorCompileError) as err:
        compile_selector("device.driver")
    assert err.value.detail == "must evaluate to bool or the unknown type, not string"
    with pytest.raises(SelectorCompileError) as err:
        compile_selector("x +")
    assert "Syntax error" in err.value.detail
    with pytest.raises(SelectorCompileError):
        compile_selector('quantity("1").compareTo(semver("1.0.0")) == 0')
    # An attribute is of the unknown type, which upstream accepts (checked at runtime).
    compile_selector('device.attributes["gpu.example.com"].mig')


def test_s_dra_cel_3_allow_multiple_allocations_only_with_consumable_capacity() -> None:
    with pytest.raises(SelectorCompileError) as err:
        compile_selector("device.allowMultipleAllocations")
    assert "undefined field 'allowMultipleAllocations'" in err.value.detail
    assert _matches("device.allowMultipleAllocations", Features(consumable_capacity=True))


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ('device.attributes["gpu.example.com"].missing == 1', "missing"),
        ('device.attributes["gpu.example.com"].model', "could not be converted to bool"),
        ('quantity("abc").sign() == 1', "quantities must match"),
        (
            'device.attributes["gpu.example.com"].driverVersion.isLessThan(quantity("1"))',
            "overload",
        ),
    ],
)
def test_s_dra_cel_4_runtime_errors_raise(expression: str, message: str) -> None:
    selector = compile_selector(expression)
    with pytest.raises(CELRuntimeError, match=message):
        selector.matches(VIEW)


def test_s_dra_cel_5_bad_version_attribute_is_refused() -> None:
    device = pb.Device(name="d", attributes={"v": pb.DeviceAttribute(version_value="1.2")})
    with pytest.raises(Invalid, match="attribute v: parse semantic version"):
        DeviceView.of(DRIVER, device)


def test_s_dra_cel_6_cache_memoizes_results_and_errors() -> None:
    cache = SelectorCache(2)
    first = cache.get_or_compile('device.driver == "a"')
    assert cache.get_or_compile('device.driver == "a"') is first
    with pytest.raises(SelectorCompileError) as one:
        cache.get_or_compile("device.nope")
    with pytest.raises(SelectorCompileError) as two:
        cache.get_or_compile("device.nope")
    assert one.value is two.value
    cache.get_or_compile('device.driver == "b"')  # evicts the oldest
    assert cache.get_or_compile('device.driver == "a"') is not first


def test_semver_precedence_as_semver_org() -> None:
    ordered = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.1",
    ]
    versions = [parse_semver(v) for v in ordered]
    assert versions == sorted(reversed(versions))
    assert parse_semver("1.0.0+build") == parse_semver("1.0.0")
    assert str(parse_semver_normalized("v01.2")) == "1.2.0"

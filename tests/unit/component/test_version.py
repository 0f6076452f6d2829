from __future__ import annotations

import pytest

from kemu.component.version import (
    DEFAULT_VERSION,
    MIN_VERSION,
    Version,
    parse_emulated_version,
)


def test_parse_prints_and_orders_versions() -> None:
    assert Version.parse("1.37") == Version(1, 37)
    assert Version.parse("v1.9") == Version(1, 9)
    assert str(Version(1, 21)) == "1.21"
    assert Version(1, 9) < Version(1, 21) < Version(1, 37)
    assert sorted([Version(1, 30), Version(1, 4)]) == [Version(1, 4), Version(1, 30)]


@pytest.mark.parametrize("text", ["", "1", "1.37.0", "one.two", "1.x", "1.-3"])
def test_parse_rejects_malformed_text(text: str) -> None:
    with pytest.raises(ValueError, match="invalid version"):
        Version.parse(text)


def test_supported_range_is_1_21_to_1_37_with_1_37_by_default() -> None:
    assert MIN_VERSION == Version(1, 21)
    assert DEFAULT_VERSION == Version(1, 37)
    assert parse_emulated_version("1.21") == MIN_VERSION
    for text in ("1.20", "1.38", "2.0"):
        with pytest.raises(ValueError, match=rf"emulated version {text} is not supported"):
            parse_emulated_version(text)

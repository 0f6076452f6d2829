"""The names made up for generateName (apiserver/registry/names.py)."""

from __future__ import annotations

import re

from apiserver.registry.names import MAX_GENERATED_NAME_LENGTH, RANDOM_NAMES, SeededNames

SAFE = "[bcdfghjklmnpqrstvwxz2456789]{5}"


def _free(name: str) -> bool:
    del name
    return False


def test_seeded_names_are_the_same_for_two_generators_and_differ_in_turn() -> None:
    a, b = SeededNames(), SeededNames()
    first = [a.generate("pods", "default", "web-", _free) for _ in range(50)]
    assert first == [b.generate("pods", "default", "web-", _free) for _ in range(50)]
    assert len(set(first)) == 50
    assert all(re.fullmatch("web-" + SAFE, n) for n in first)


def test_seeded_names_count_per_resource_namespace_and_base() -> None:
    a = SeededNames()
    a.generate("pods", "default", "web-", _free)
    b = SeededNames()
    # another base, namespace or resource in between does not move web-'s sequence
    b.generate("pods", "default", "db-", _free)
    b.generate("pods", "other", "web-", _free)
    b.generate("jobs", "default", "web-", _free)
    assert b.generate("pods", "default", "web-", _free) == SeededNames().generate(
        "pods", "default", "web-", _free
    )
    assert a.generate("pods", "default", "web-", _free) != SeededNames().generate(
        "pods", "default", "web-", _free
    )


def test_seeded_names_pass_over_names_that_are_taken() -> None:
    """A restarted apiserver (a fresh generator) passes over its cache's objects."""
    before = SeededNames()
    made = {before.generate("pods", "default", "web-", _free) for _ in range(5)}
    after = SeededNames()
    name = after.generate("pods", "default", "web-", made.__contains__)
    assert name not in made
    assert name == before.generate("pods", "default", "web-", _free)


def test_random_names_cut_the_base_and_use_the_safe_alphabet() -> None:
    name = RANDOM_NAMES.generate("pods", "default", "x" * 80, _free)
    assert re.fullmatch("x" * MAX_GENERATED_NAME_LENGTH + SAFE, name)

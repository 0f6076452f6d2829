import re

import pytest

from kemu.testing.names import unique_name
from kemu.testing.rand import SEED_ENV, SeededRandom, session_seed


def test_a_seed_from_the_environment_replays_the_same_sequence(monkeypatch):
    monkeypatch.setenv(SEED_ENV, "1234")
    a, b = SeededRandom(), SeededRandom()
    assert a.initial_seed == 1234
    assert [a.random() for _ in range(5)] == [b.random() for _ in range(5)]
    assert a.replay_hint() == "KEMU_TEST_SEED=1234"


def test_without_the_environment_seeds_differ(monkeypatch):
    monkeypatch.delenv(SEED_ENV, raising=False)
    assert len({session_seed() for _ in range(5)}) > 1


def test_a_bad_seed_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(SEED_ENV, "abc")
    with pytest.raises(ValueError, match=SEED_ENV):
        session_seed()


def test_unique_names_are_distinct_dns_labels():
    names = [unique_name("My_Test.NS") for _ in range(50)] + [unique_name("x" * 100)]
    assert len(set(names)) == len(names)
    for name in names:
        assert re.fullmatch(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?", name) and len(name) <= 63
    assert names[0].startswith("my-test-ns-")

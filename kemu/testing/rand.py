"""Seeded randomness for tests: a failing test prints its seed, `KEMU_TEST_SEED` replays it.

The `rng` fixture of kemu.testing.pytest_plugin hands each test a `SeededRandom` and adds
"KEMU_TEST_SEED=<seed>" to the report of a test that fails; run it again with
`KEMU_TEST_SEED=<seed> pytest ...` to get the same sequence.
"""

from __future__ import annotations

import os
import random
from typing import Final

SEED_ENV: Final = "KEMU_TEST_SEED"


def session_seed() -> int:
    """The seed from $KEMU_TEST_SEED, or a fresh random one."""
    value = os.environ.get(SEED_ENV, "").strip()
    if value:
        try:
            return int(value, 0)
        except ValueError:
            raise ValueError(f"{SEED_ENV} must be an integer, got {value!r}") from None
    return random.SystemRandom().randrange(2**32)


class SeededRandom(random.Random):
    """random.Random that remembers the seed it started from."""

    def __init__(self, seed: int | None = None) -> None:
        self.initial_seed = session_seed() if seed is None else seed
        super().__init__(self.initial_seed)

    def replay_hint(self) -> str:
        return f"{SEED_ENV}={self.initial_seed}"

    def __repr__(self) -> str:
        return f"SeededRandom({self.initial_seed})"

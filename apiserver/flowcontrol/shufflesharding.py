"""Shuffle sharding: a flow's hand of queues, dealt from its hash (upstream's
k8s.io/apiserver/pkg/util/shufflesharding/shufflesharding.go, Dealer.Deal): `hand_size`
distinct cards of a deck of `deck_size`, a mixed-radix reading of the hash, so two flows share
their whole hand rarely."""

from __future__ import annotations

import math
from typing import Final

MAX_HASH_BITS: Final = 60
"""A hand may use at most this many bits of the 64-bit hash (upstream's MaxHashBits)."""


def required_entropy_bits(deck_size: int, hand_size: int) -> int:
    """ceil(log2(deck_size ** hand_size)) (RequiredEntropyBits)."""
    return math.ceil(math.log2(deck_size) * hand_size)


class Dealer:
    def __init__(self, deck_size: int, hand_size: int) -> None:
        """NewDealer's checks: both positive, the hand no bigger than the deck, and the deal
        within MAX_HASH_BITS of entropy."""
        if deck_size <= 0 or hand_size <= 0:
            raise ValueError(f"deckSize {deck_size} or handSize {hand_size} is not positive")
        if hand_size > deck_size:
            raise ValueError(f"handSize {hand_size} is greater than deckSize {deck_size}")
        if required_entropy_bits(deck_size, hand_size) > MAX_HASH_BITS:
            raise ValueError(
                f"required entropy bits of deckSize {deck_size} and handSize {hand_size} "
                f"is greater than {MAX_HASH_BITS}"
            )
        self.deck_size = deck_size
        self.hand_size = hand_size

    def deal(self, hash_value: int) -> list[int]:
        """The hand for `hash_value`: remainders of successive divisions by deck_size,
        deck_size-1, ..., each then shifted past the cards dealt before it."""
        remainders: list[int] = []
        for i in range(self.hand_size):
            hash_value, r = divmod(hash_value, self.deck_size - i)
            remainders.append(r)
        hand: list[int] = []
        for i, card in enumerate(remainders):
            for j in range(i, 0, -1):
                if card >= remainders[j - 1]:
                    card += 1
            hand.append(card)
        return hand

"""Shuffle sharding's dealer (shufflesharding.go; issue #58 item 3)."""

from __future__ import annotations

import itertools

import pytest

from apiserver.flowcontrol.shufflesharding import Dealer


def test_small_deals_by_hand() -> None:
    dealer = Dealer(4, 2)
    assert dealer.deal(0) == [0, 1]
    assert dealer.deal(5) == [1, 2]  # 5 = 1 + 4*1: remainders 1 (of 4) and 1 (of 3)


def test_every_hand_is_dealt_once_over_the_hash_range() -> None:
    """Over deck*(deck-1)*...*(deck-hand+1) consecutive hashes every ordered hand of distinct
    cards appears exactly once."""
    dealer = Dealer(8, 3)
    hands = [tuple(dealer.deal(h)) for h in range(8 * 7 * 6)]
    assert sorted(hands) == sorted(itertools.permutations(range(8), 3))


def test_a_large_hash_deals_distinct_cards_in_the_deck() -> None:
    dealer = Dealer(128, 6)
    for h in (2**63 + 12345, 2**64 - 1, 987654321987654321):
        hand = dealer.deal(h)
        assert len(set(hand)) == 6 and all(0 <= c < 128 for c in hand)


@pytest.mark.parametrize(
    ("deck", "hand", "message"),
    [
        (0, 1, "not positive"),
        (4, 5, "greater than deckSize"),
        (1 << 20, 4, "entropy"),
    ],
)
def test_new_dealer_refuses_what_upstream_refuses(deck: int, hand: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Dealer(deck, hand)

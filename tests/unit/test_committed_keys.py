"""The bounded set of committed notification keys (docs/decisions/0064; seed 004, "Notification
Deduplication"): what it holds, for how long, and what it never holds."""

from __future__ import annotations

import pytest

from gateway.notifications.committed_keys import CommittedKeys


def test_a_key_is_held_only_once_its_commit_was_reported_and_only_for_its_account() -> None:
    keys = CommittedKeys(10)
    assert not keys.holds("acct_a", "evt_1")
    keys.committed("acct_a", "evt_1")
    assert keys.holds("acct_a", "evt_1")
    assert not keys.holds("acct_b", "evt_1")


def test_an_unkeyed_delivery_is_never_held() -> None:
    """Seed 004: every unkeyed delivery is its own notification, never a duplicate."""
    keys = CommittedKeys(10)
    keys.committed("acct_a", None)
    assert not keys.holds("acct_a", None)
    assert len(keys) == 0


def test_the_bound_holds_and_the_least_recently_used_key_leaves_first() -> None:
    keys = CommittedKeys(3)
    for n in range(3):
        keys.committed("acct", f"evt_{n}")
    assert keys.holds("acct", "evt_0")  # used: evt_1 is now the least recently used
    keys.committed("acct", "evt_3")
    assert len(keys) == 3
    assert [("acct", f"evt_{n}") in keys for n in range(4)] == [True, False, True, True]
    for n in range(100):
        keys.committed("acct", f"more_{n}")
    assert len(keys) == 3


def test_checking_membership_does_not_mark_a_key_used() -> None:
    keys = CommittedKeys(2)
    keys.committed("acct", "evt_0")
    keys.committed("acct", "evt_1")
    assert ("acct", "evt_0") in keys
    keys.committed("acct", "evt_2")
    assert ("acct", "evt_0") not in keys


def test_size_zero_holds_nothing_and_a_negative_size_is_refused() -> None:
    keys = CommittedKeys(0)
    keys.committed("acct", "evt_0")
    assert not keys.holds("acct", "evt_0")
    with pytest.raises(ValueError):
        CommittedKeys(-1)

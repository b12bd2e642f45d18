"""A reconciler round's lookups shared among provider accounts (seed 004, "The
Recovery Loop": "pause the sweep ... other providers and accounts continue";
gateway/domain/lookup_shares.py)."""

from __future__ import annotations

import pytest

from gateway.domain.lookup_shares import shares


@pytest.mark.parametrize(("due", "batch", "given"), [
    ([50, 1], 50, [49, 1]),          # a backlog leaves the other account its one check
    ([1, 50], 50, [1, 49]),
    ([3, 4], 50, [3, 4]),            # room for everything due
    ([50, 50, 50], 50, [17, 17, 16]),  # an even split; what is left over goes to the first listed
    ([50, 2, 50], 50, [24, 2, 24]),
    ([], 50, []),
    ([5, 5], 0, [0, 0]),
])
def test_no_account_backlog_takes_another_accounts_turn(due: list[int], batch: int, given: list[int]) -> None:
    assert shares(due, batch) == given


@pytest.mark.parametrize("due", [[7, 80, 3, 12], [1] * 60, [200], [0, 9]])
def test_a_round_never_looks_up_more_than_its_batch_or_an_account_more_than_it_has_due(due: list[int]) -> None:
    given = shares(due, 50)
    assert sum(given) == min(sum(due), 50)
    assert all(0 <= g <= d for g, d in zip(given, due, strict=True))

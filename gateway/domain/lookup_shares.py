"""How one reconciler round shares its lookups among provider accounts (seed 004,
"The Recovery Loop": on a 429 "pause the sweep ... other providers and accounts continue";
docs/decisions/0058).

A round looks up at most a batch of due checks. Each account's lookups are paced by its own
bucket (docs/decisions/0042), so no account's backlog may take another's turn: the batch is split
max-min fairly among the accounts with due checks. An account that needs less than an equal share
gets what it needs and the rest is split among the others; what an uneven split leaves over goes
to the accounts listed first (the reconciler lists them by their oldest due check).
"""

from __future__ import annotations

from collections.abc import Sequence


def shares(due: Sequence[int], batch: int) -> list[int]:
    """How many of its ``due`` checks each account may look up this round, in ``due``'s order;
    never more than it has due, never more than ``batch`` together, and no account gets less than
    another that has more due while the batch could give it more."""
    given = [0] * len(due)
    left = batch
    # Smallest need first; among equal needs the last listed first, so the first listed get what a
    # floor division carries over to the accounts after it.
    by_need = sorted(range(len(due)), key=lambda index: (due[index], -index))
    for position, index in enumerate(by_need):
        given[index] = min(due[index], left // (len(by_need) - position))
        left -= given[index]
    return given

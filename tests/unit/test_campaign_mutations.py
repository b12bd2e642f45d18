"""The campaign's mutation list ("Prove it bites: mutations"): every mutation still
applies to the tree exactly once and changes exactly one line, the list is spread over the
product's safety rules, and a mutation whose text is missing or repeated is refused."""

from __future__ import annotations

import pytest

from paygate_local.campaign import mutations
from paygate_local.campaign.mutations import EQUIVALENT, MUTATIONS, Mutation

AREAS = {"checkout", "notifications", "recovery", "payouts", "recalls", "refunds", "outbox"}


@pytest.mark.parametrize("mutation", MUTATIONS + EQUIVALENT, ids=[m.name for m in MUTATIONS + EQUIVALENT])
def test_every_mutation_applies_to_the_tree_exactly_once_and_changes_one_line(mutation: Mutation) -> None:
    text = (mutations.ROOT / mutation.path).read_text()
    mutated = mutations.apply(text, mutation)
    changed = [(a, b) for a, b in zip(text.splitlines(), mutated.splitlines(), strict=True) if a != b]
    assert len(changed) == 1
    assert mutations.changed_line(text, mutation) == text.splitlines().index(changed[0][0]) + 1


def test_at_least_twelve_mutations_spread_over_every_area_of_the_safety_rules() -> None:
    assert len(MUTATIONS) >= 12 and {m.area for m in MUTATIONS} == AREAS
    assert len({m.name for m in MUTATIONS}) == len(MUTATIONS)


def test_the_list_that_runs_holds_no_equivalent_mutant_and_each_one_kept_apart_says_why() -> None:
    """"Every mutation of the list is caught" is literal: an equivalent mutant is kept apart with
    the guards that hold its rule, printed under its own heading, and not run by default."""
    assert not any(m.equivalent for m in MUTATIONS)
    assert EQUIVALENT and all(m.equivalent for m in EQUIVALENT)
    assert not {m.name for m in MUTATIONS} & {m.name for m in EQUIVALENT}
    listing = mutations.listing()
    apart = listing.index(next(line for line in listing if line.startswith("Equivalent mutants")))
    assert all(f"`{m.name}`" in "\n".join(listing[:apart]) for m in MUTATIONS)
    assert all(f"`{m.name}`" in "\n".join(listing[apart:]) for m in EQUIVALENT)


def test_a_mutation_whose_text_is_missing_or_repeated_is_refused() -> None:
    mutation = Mutation("m", "outbox", "x.py", "a = 1\n", "a = 2\n", "rule")
    assert mutations.apply("a = 1\nb = 1\n", mutation) == "a = 2\nb = 1\n"
    with pytest.raises(ValueError, match="0 times"):
        mutations.apply("b = 1\n", mutation)
    with pytest.raises(ValueError, match="2 times"):
        mutations.apply("a = 1\na = 1\n", mutation)

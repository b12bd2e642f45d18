"""Which API versions a Stripe account may pin (gateway.providers.stripe.versions; Stripe's API
reference, "Versioning": a version is its release date, and from ``2024-09-30.acacia`` on it
carries its major release's name). The official ``stripe`` package is the reference for a version
Stripe issued: the one it pins is accepted."""

from __future__ import annotations

import pytest
import stripe

from gateway.providers.stripe.versions import version_problem


@pytest.mark.parametrize("version", ["2025-09-30.clover", "2024-09-30.acacia", "2025-03-31.basil", "2024-06-20",
                                     "2020-08-27", stripe.api_version])
def test_a_version_stripe_issues_is_accepted(version: str) -> None:
    assert version_problem(version) is None


def test_the_official_packages_pinned_version_is_a_named_release() -> None:
    assert "." in stripe.api_version and version_problem(stripe.api_version.split(".")[0]) is not None


@pytest.mark.parametrize("version, problem", [
    (None, "is required"),
    ("", "is not a Stripe API version"),
    ("2026-11-01", "lacks its release name"),
    ("2024-09-30", "lacks its release name"),
    ("2024-06-20.acacia", "names a release"),
    ("2025-13-01.basil", "does not name a calendar date"),
    ("2025-09-30.Clover", "is not a Stripe API version"),
    ("2025-09-30.clover ", "is not a Stripe API version"),
    ("v1", "is not a Stripe API version"),
])
def test_a_version_stripe_never_issued_is_refused_with_where_to_find_the_right_one(version: str | None,
                                                                                    problem: str) -> None:
    found = version_problem(version)
    assert found is not None and problem in found
    assert "Developers -> API version" in found and "https://dashboard.stripe.com/workbench" in found

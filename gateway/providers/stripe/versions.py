"""Stripe's API versions: which ones a Stripe account may pin (Stripe's API reference,
"Versioning"; docs/decisions/0070). Pure: no I/O.

A version is its release date, ``YYYY-MM-DD``, a real calendar date; from ``2024-09-30.acacia`` on,
Stripe names every version after its major release, ``<date>.<name>`` (``2025-09-30.clover``), and
a version of that era without its name, or an older one with a name, is not a version Stripe
issued. There is no safe default: a version Stripe does not know is answered with 400 "Invalid
Stripe API version" on every call, and without ``Stripe-Version`` a request takes the account's
default, which changes when someone upgrades it in the Dashboard. Webhook events are rendered in
the version of their endpoint (set when the endpoint is created), not in the request's, so the
endpoint must be created with the version the account pins; an event carrying another
``api_version`` was rendered for another reader (gateway.notifications.handler escalates it).
"""

from __future__ import annotations

import re
from datetime import date

VERSION = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2})(?:\.(?P<name>[a-z]+))?")
# The first version Stripe released with a name (Stripe's API reference, "Versioning": "Starting
# with the 2024-09-30.acacia release, Stripe follows a new API release process").
NAMED_SINCE = date(2024, 9, 30)
# The first version the Search API answers (Stripe's Search guide, "Limitations": "The minimum
# supported API Version to use search is 2020-08-27").
SEARCH_SINCE = date(2020, 8, 27)
WHERE_TO_FIND = ("the version your integration was tested with is shown in the Stripe Dashboard under "
                 "Developers -> API version (Workbench, https://dashboard.stripe.com/workbench), "
                 "e.g. '2025-09-30.clover'")


def version_problem(value: str | None) -> str | None:
    """Why ``value`` cannot be a Stripe account's pinned ``api_version``, or None when it can."""
    if value is None:
        return f"api_version is required for a Stripe account: {WHERE_TO_FIND}"
    match = VERSION.fullmatch(value)
    if match is None:
        return f"api_version {value!r} is not a Stripe API version (YYYY-MM-DD, and .<release> since 2024-09-30): " \
               f"{WHERE_TO_FIND}"
    try:
        released = date.fromisoformat(match["date"])
    except ValueError:
        return f"api_version {value!r} does not name a calendar date: {WHERE_TO_FIND}"
    if released >= NAMED_SINCE and match["name"] is None:
        return f"api_version {value!r} lacks its release name (every version since 2024-09-30.acacia " \
               f"has one): {WHERE_TO_FIND}"
    if released < NAMED_SINCE and match["name"] is not None:
        return f"api_version {value!r} names a release, which no version before 2024-09-30.acacia has: " \
               f"{WHERE_TO_FIND}"
    return None


def search_problem(value: str) -> str | None:
    """Why an account pinning ``value`` (a version :func:`version_problem` accepts) cannot look
    payments up through the Search API, or None."""
    match = VERSION.fullmatch(value)
    if match is not None and date.fromisoformat(match["date"]) < SEARCH_SINCE:
        return (f"api_version {value!r} predates the Search API (2020-08-27): set payment_lookup = \"list\" to look "
                "payments up by listing them")
    return None

"""Where 3-D Secure's redirect flow may send the customer's browser back (docs/decisions/0078).

A ``return_url`` is an absolute ``https`` URL, or ``http`` on a loopback host (``localhost``,
``127.0.0.0/8``, ``[::1]``: a developer's own machine), with a host and no credentials. Anything
else (``javascript:``, plain http to a real host, a relative path) is refused: the provider would
send the customer there after the challenge. Pure: no I/O.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

MAXIMUM_LENGTH = 2048


def _loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def return_url_problem(url: str) -> str | None:
    """Why ``url`` may not be a return URL, or None when it may."""
    if len(url) > MAXIMUM_LENGTH:
        return f"longer than {MAXIMUM_LENGTH} characters"
    if any(c.isspace() or ord(c) < 0x20 for c in url):
        return "contains whitespace or control characters"
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        return "not a URL"
    if not host:
        return "not an absolute URL with a host"
    if parts.username is not None or parts.password is not None:
        return "carries credentials"
    if parts.scheme == "https" or (parts.scheme == "http" and _loopback(host)):
        return None
    return "must be https (http only on a loopback host)"

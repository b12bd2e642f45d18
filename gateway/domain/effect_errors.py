"""Effect certificate errors: one class per stable problem+json code (API.md, Payouts and
"Shapes"; STYLE, example 10)."""

from __future__ import annotations

from gateway.domain.errors import NotFound


class CertificateNotFound(NotFound):
    """No certificate: the effect is not confirmed, or not certified yet."""

    code = "certificate.not_found"

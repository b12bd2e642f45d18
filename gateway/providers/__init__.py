"""Provider adapters behind one seam (gateway.providers.base): one module per provider,
chosen per provider account by its id's prefix (gateway.providers.registry)."""

from gateway.providers.base import (
    Operation,
    PaymentOperation,
    Provider,
    Request,
    UnsupportedOperation,
    checkout,
    contract,
)
from gateway.providers.registry import provider_for

__all__ = ["Operation", "PaymentOperation", "Provider", "Request", "UnsupportedOperation", "checkout", "contract",
           "provider_for"]

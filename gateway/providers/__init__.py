"""Provider adapters behind one seam (issue 16; gateway.providers.base): one module per provider,
chosen per provider account by its id's prefix (gateway.providers.registry)."""

from gateway.providers.base import Operation, Provider, Request, UnsupportedOperation
from gateway.providers.registry import provider_for

__all__ = ["Operation", "Provider", "Request", "UnsupportedOperation", "provider_for"]

"""CardCo, the bundled fictional payment provider (API.md "provider_fake: CardCo").

Standalone on purpose: it is a third party to the gateway and imports nothing from it.
"""

from provider_fake.clock import Clock
from provider_fake.config import Account, CardCoConfig
from provider_fake.fake import CardCo

__all__ = ["Account", "CardCo", "CardCoConfig", "Clock"]

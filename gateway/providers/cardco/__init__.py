"""CardCo, the bundled fictional provider (API.md, "provider_fake: CardCo"): its adapter
(``adapter``), what its answers mean (``answers``), its classification tables (``tables``), its
notification payload (``notifications``) and its signature scheme, Standard Webhooks
(``signatures``). Every module but ``adapter`` is pure (an import-linter contract)."""

from gateway.providers.cardco.adapter import CARDCO

__all__ = ["CARDCO"]

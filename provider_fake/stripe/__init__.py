"""The Stripe dialect of the bundled fake: a second mount, `/stripe/v1/...`, speaking Stripe's
API over the same store, clock, fault rules, webhooks and control API as CardCo's `/v1/...`
(extension; docs/rehearsing-incidents.md "Stripe dialect", docs/decisions/0044)."""

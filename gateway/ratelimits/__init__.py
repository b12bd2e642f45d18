"""Provider rate-limit scopes: lookup token buckets and 429 pauses (docs/decisions/0008, 0042)."""

"""What a provider account id looks like (API.md, "Configuration": ``provider:account:test|live``,
e.g. ``cardco:acct_store:live``). The one pattern settings validate a configured id with, and the
one a metric label value must match to name an account (docs/decisions/0040, 0063): an account
is configuration, a bounded set, never a customer's id."""

from __future__ import annotations

import re

ACCOUNT_ID = re.compile(r"^[a-z0-9-]+:[A-Za-z0-9_]+:(test|live)$")

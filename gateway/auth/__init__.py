"""Bearer tokens and the principals they stand for (API.md, Conventions)."""

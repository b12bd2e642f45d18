"""Pure decisions: no I/O, no psycopg, httpx, starlette or dramatiq imports (import-linter checks it)."""

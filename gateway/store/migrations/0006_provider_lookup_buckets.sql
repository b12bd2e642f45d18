-- Lookup token buckets, one per rate-limit scope, shared by every worker process (issue 15 item 4,
-- docs/decisions/0042). Backward compatible: a new table the previous release does not read; its
-- lookups are not paced until its processes are rolled.

CREATE TABLE provider_lookup_buckets (
    scope             text        PRIMARY KEY,
    tokens            numeric     NOT NULL CHECK (tokens >= 0),
    refilled_at       timestamptz NOT NULL,
    granted           integer     NOT NULL DEFAULT 0 CHECK (granted >= 0)  -- what the last take granted
);

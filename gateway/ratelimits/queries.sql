-- Provider rate-limit scopes, shared by every worker process (seed 004: lookups run "at a rate the
-- provider's limits allow"; "pause the sweep"). A scope is a provider account (docs/decisions/0008).
-- Token arithmetic is numeric, so the injected clock's microseconds and a decimal rate add up
-- exactly; :now is always the injected clock's, never the server's.

-- name: take_tokens
-- Take up to :wanted lookup tokens (docs/decisions/0042), in one statement, and return how many
-- were granted (0 .. :wanted). The bucket refills at :rate per second of the injected clock since
-- refilled_at, up to :burst; a take whose :now is not after refilled_at (a host whose clock is
-- behind, or a pause not yet over) refills nothing. The first take finds the bucket full.
-- ON CONFLICT DO UPDATE locks the row and reads its latest version, so concurrent takes from every
-- process see each other's grants: what is granted up to any time t never exceeds
-- :burst + :rate x (t - the first take). A take with a :reserve leaves that many tokens in the
-- bucket: it is granted only what lies above them (a provider-side reconciliation's listing reads
-- take so, and never spend the tokens recovery's lookups would need; recovery's reserve is 0).
INSERT INTO provider_lookup_buckets AS b (scope, tokens, refilled_at, granted)
VALUES (%(scope)s, %(burst)s::numeric - LEAST(%(wanted)s, GREATEST(0, %(burst)s - %(reserve)s)), %(now)s,
        LEAST(%(wanted)s, GREATEST(0, %(burst)s - %(reserve)s)))
ON CONFLICT (scope) DO UPDATE
   SET (tokens, refilled_at, granted) = (
       SELECT level.available - given.granted, GREATEST(b.refilled_at, %(now)s), given.granted
         FROM (SELECT LEAST(%(burst)s::numeric,
                            b.tokens + %(rate)s::numeric
                                       * GREATEST(0, extract(epoch FROM %(now)s::timestamptz - b.refilled_at)))
                      AS available) level,
              LATERAL (SELECT LEAST(%(wanted)s::int, GREATEST(0, floor(level.available - %(reserve)s))::int)
                               AS granted) given)
RETURNING granted;

-- name: return_tokens
-- Tokens a batch took and did not spend (another worker claimed the attempts first) go back, up to
-- the burst; a take counts only what is spent. Not while the scope is paused: a 429 revoked them.
UPDATE provider_lookup_buckets b
   SET tokens = LEAST(%(burst)s::numeric, b.tokens + %(count)s)
 WHERE b.scope = %(scope)s
   AND NOT EXISTS (SELECT 1 FROM provider_pauses p WHERE p.scope = b.scope AND p.paused_until > %(now)s);

-- name: pause_scope
-- A lookup answered 429 (seed 004, "pause the sweep"): the scope is paused until :paused_until for
-- every worker (the recovery claim skips it), and its bucket is emptied with refilled_at moved to
-- the end of the pause, so no take grants anything before then (the reconciler's included) and the
-- rate starts again from an empty bucket rather than a burst (docs/decisions/0042).
WITH paused AS (
    INSERT INTO provider_pauses (scope, paused_until, reason)
    VALUES (%(scope)s, %(paused_until)s, %(reason)s)
    ON CONFLICT (scope) DO UPDATE
       SET paused_until = GREATEST(provider_pauses.paused_until, EXCLUDED.paused_until), reason = EXCLUDED.reason
    RETURNING scope, paused_until
)
INSERT INTO provider_lookup_buckets AS b (scope, tokens, refilled_at)
SELECT scope, 0, paused_until FROM paused
ON CONFLICT (scope) DO UPDATE SET tokens = 0, refilled_at = GREATEST(b.refilled_at, EXCLUDED.refilled_at);

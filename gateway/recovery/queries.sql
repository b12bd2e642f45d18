-- Rate-limit scopes of the recovery loop (seed 004, "pause the sweep").

-- name: pause_scope
INSERT INTO provider_pauses (scope, paused_until, reason)
VALUES (%(scope)s, %(paused_until)s, %(reason)s)
ON CONFLICT (scope) DO UPDATE
   SET paused_until = GREATEST(provider_pauses.paused_until, EXCLUDED.paused_until), reason = EXCLUDED.reason;


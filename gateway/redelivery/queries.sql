-- Re-publishing due jobs (docs/decisions/0022). Placeholders in braces are bound
-- by gateway/redelivery/republish.py with psycopg.sql (identifiers and literals, never text from
-- outside). A kind's due SELECT returns the rows whose work is due by %(now)s and not yet taken,
-- each as subject_id, due_at and payload (the payload its outbox job row carries, so the same
-- publisher sends it).

-- name: due_grants
-- A grant-authorized job that should be running now: its grant Issued (the claim consumes it in
-- the transaction that creates the attempt, so Issued means unclaimed), inside its window by the
-- one clock, and never refused (seed 000 section 9: "A refused grant stays refused"; the
-- pipeline's executor records each refused delivery as a 'delivery' event naming the grant; a
-- postponed one records none, so it is offered again while the window is open). {grants},
-- {decisions}, {history} and {parent} are the kind's tables and parent column; {parent_key} is
-- the payload key its outbox row uses. No trailing semicolon: claim_due embeds it.
SELECT g.grant_id::text AS subject_id, g.not_before AS due_at,
       jsonb_build_object({parent_key}, g.{parent}, 'grant_id', g.grant_id::text,
                          'correlation_id', d.correlation_id, 'deliver_at', g.not_before) AS payload
  FROM {grants} g
  JOIN {decisions} d ON d.decision_id = g.decision_id
 WHERE g.state = 'Issued' AND g.not_before <= %(now)s AND g.expires_at > %(now)s
   AND NOT EXISTS (SELECT 1 FROM {history} h
                    WHERE h.{parent} = g.{parent} AND h.grant_id = g.grant_id AND h.kind = 'delivery')

-- name: claim_due
-- One statement claims this sweep's publications. A subject is eligible when it was never
-- published by a sweep, or not within %(pace)s; the least recently published go first, so a
-- batch limit never starves the rest. The upsert re-checks the pace under the row lock, so two
-- sweepers (two clocks, or a backlog of wake-ups run at once) publish each subject once: the
-- loser's ON CONFLICT ... WHERE matches nothing and returns no row. Rows of subjects no longer
-- due (claimed, expired, refused) are pruned a day after their last publication: until then an
-- expiry can still say how often its job was published.
WITH due AS ({due}),
eligible AS (
    SELECT due.subject_id, due.payload
      FROM due
      LEFT JOIN job_republications r ON r.job_kind = %(kind)s AND r.subject_id = due.subject_id
     WHERE r.published_at IS NULL OR r.published_at <= %(now)s - %(pace)s::interval
     ORDER BY r.published_at NULLS FIRST, due.due_at
     LIMIT %(limit)s),
claimed AS (
    INSERT INTO job_republications AS r (job_kind, subject_id, published_at)
    SELECT %(kind)s, subject_id, %(now)s FROM eligible
    ON CONFLICT (job_kind, subject_id) DO UPDATE
       SET published_at = EXCLUDED.published_at, publications = r.publications + 1
     WHERE r.published_at <= %(now)s - %(pace)s::interval
    RETURNING subject_id, publications),
pruned AS (
    DELETE FROM job_republications r
     WHERE r.job_kind = %(kind)s AND r.published_at <= %(now)s - interval '1 day'
       AND NOT EXISTS (SELECT 1 FROM due WHERE due.subject_id = r.subject_id))
SELECT eligible.subject_id, eligible.payload, claimed.publications
  FROM eligible JOIN claimed USING (subject_id);

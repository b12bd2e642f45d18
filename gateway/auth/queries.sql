-- Token storage: only HMAC(pepper, token) is kept; see schema.sql api_tokens.

-- name: insert_token
INSERT INTO api_tokens (token_hash, role, subject, tenant_id, approval_limit_minor, created_at)
VALUES (%(token_hash)s, %(role)s, %(subject)s, %(tenant_id)s, %(approval_limit_minor)s, %(now)s)
RETURNING token_id;

-- name: find_principal
-- A revoked token authenticates nobody from the moment of revocation on the one clock.
SELECT token_id, role, subject, tenant_id, approval_limit_minor
  FROM api_tokens
 WHERE token_hash = %(token_hash)s
   AND (revoked_at IS NULL OR revoked_at > %(now)s);

-- name: clerks_of_tenants
-- Who may act for a tenant's payouts (API.md, Authentication: acknowledge and approve are clerks'
-- acts): each clerk subject with a token valid now, at the highest approval limit among them.
SELECT tenant_id, subject, max(approval_limit_minor) AS approval_limit_minor
  FROM api_tokens
 WHERE role = 'clerk' AND tenant_id = ANY(%(tenant_ids)s)
   AND (revoked_at IS NULL OR revoked_at > %(now)s)
 GROUP BY tenant_id, subject
 ORDER BY tenant_id, subject;

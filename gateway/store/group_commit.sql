-- Group commit (gateway/store/group_commit.py, docs/decisions/0073).

-- name: batch_lock_timeout
-- Inside a batch transaction only (is_local): a unit of work that would wait longer than this for
-- a lock (another transaction's row lock, or its uncommitted insert of the same key) gives up in
-- its savepoint and is done alone after the batch commits, where it waits as long as it must. A
-- batch holds the locks of every unit done so far; waiting inside it could deadlock with another
-- batch, and PostgreSQL would find that only after deadlock_timeout (1 s).
SELECT set_config('lock_timeout', %(timeout)s, true);

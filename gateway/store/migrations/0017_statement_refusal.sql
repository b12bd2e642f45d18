-- A statement's way to refuse itself (gateway/payments/queries.sql mark_started): called from a
-- CASE branch when what the statement was computed for does not hold, it raises SQLSTATE PGR01, so
-- the statement and its transaction commit nothing and the caller, which reads the answer only
-- after COMMIT, does its work again on what is stored (gateway/store/db.py REFUSED).
-- Backward compatible: a new function, which the previous release never calls.

CREATE OR REPLACE FUNCTION paygate_refuse(reason text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION '%', reason USING ERRCODE = 'PGR01';
END;
$$;

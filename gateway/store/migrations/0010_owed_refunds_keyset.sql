-- The refund sweep's owed refunds, paged (issue 21 item 3): refunds.sql owed_refunds asks the whole
-- question in SQL and walks the cancelled-and-paid orders by (updated_at, order_id), a page after
-- the last one, instead of reading the 100 oldest and filtering them in Python (which let 100
-- refunds under way hide every newer owed one). This index gives that order among the few
-- PaidAfterCancel orders instead of a scan of every order per sweep. Backward compatible: an
-- index changes no statement's meaning.

CREATE INDEX orders_paid_after_cancel
    ON orders (updated_at, order_id)
    WHERE state = 'PaidAfterCancel';

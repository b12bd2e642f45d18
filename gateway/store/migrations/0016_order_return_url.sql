-- The redirect flow of 3-D Secure (docs/decisions/0078): an order may name where the customer's
-- browser returns after the provider's challenge; sent with the confirm, so part of each attempt's
-- stored request body. Backward compatible: a nullable column, which the previous release ignores.

ALTER TABLE orders ADD COLUMN return_url text NULL;

-- An idempotency key stores what its send did (the result and its ids, as
-- JSON), not a rendered HTTP answer: the surfaces render it. The bodies
-- stored before are JSON objects with the same field names, so they read
-- as results unchanged.
ALTER TABLE idempotency_keys DROP COLUMN status;
ALTER TABLE idempotency_keys RENAME COLUMN response TO result;

-- 002: dropping an abandoned intent deletes the idempotency key that started
-- it by blob name; without this index that delete scans the whole table.
CREATE INDEX idempotency_blob ON idempotency_keys (blob_name);

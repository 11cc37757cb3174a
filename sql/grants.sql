-- grants.sql: the two database accounts bindery runs with (least privilege).
--
-- A template, not a migration (`bindery migrate` applies NNN_name.sql only).
-- Replace the placeholders and run it as a MariaDB administrator, once per
-- host part the accounts connect from (doc/deploying.md, "Database users and grants"):
--
--   @DB_NAME@            the database, as in [database] name (created here).
--                        In a GRANT, `_` and `%` in a database name are
--                        wildcards: write bindery\_prod, not bindery_prod.
--   @HOST@               where the programs connect from: localhost for a
--                        unix socket, 127.0.0.1 or the web server's address
--                        for TCP
--   @RUNTIME_USER@       the responder's, sweep's and audit's account
--   @RUNTIME_PASSWORD@
--   @MIGRATE_USER@       the account `bindery migrate` runs as
--   @MIGRATE_PASSWORD@
--
-- Safe to run again: it resets both passwords and revokes anything else
-- either account held before granting, so an account that once had ALL
-- PRIVILEGES ends up with exactly these.
--
-- The runtime account reads and writes rows and nothing else: the responder,
-- `bindery sweep` (its --lock is a row in sweep_locks, not GET_LOCK) and
-- `bindery audit` use no DDL, no LOCK TABLES, no temporary tables.  A
-- responder that is taken over cannot drop or alter a table.
--
-- The migration account also holds the DDL sql/NNN_*.sql use: CREATE
-- (tables, and schema_migrations on its first run), ALTER (new columns,
-- indexes and keys on existing tables), INDEX (CREATE INDEX) and REFERENCES
-- (the foreign keys of uploads and upload_blocks; MariaDB does not check it,
-- MySQL 8 does).  Its DML is for the migrations that move rows (UPDATE,
-- INSERT) and for schema_migrations.  DROP is left out: no migration drops
-- a table; a release that needs it will say so in NEWS.

CREATE DATABASE IF NOT EXISTS `@DB_NAME@` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci;

CREATE USER IF NOT EXISTS '@RUNTIME_USER@'@'@HOST@' IDENTIFIED BY '@RUNTIME_PASSWORD@';
ALTER USER '@RUNTIME_USER@'@'@HOST@' IDENTIFIED BY '@RUNTIME_PASSWORD@';
REVOKE ALL PRIVILEGES, GRANT OPTION FROM '@RUNTIME_USER@'@'@HOST@';
GRANT SELECT, INSERT, UPDATE, DELETE ON `@DB_NAME@`.* TO '@RUNTIME_USER@'@'@HOST@';

CREATE USER IF NOT EXISTS '@MIGRATE_USER@'@'@HOST@' IDENTIFIED BY '@MIGRATE_PASSWORD@';
ALTER USER '@MIGRATE_USER@'@'@HOST@' IDENTIFIED BY '@MIGRATE_PASSWORD@';
REVOKE ALL PRIVILEGES, GRANT OPTION FROM '@MIGRATE_USER@'@'@HOST@';
GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, REFERENCES
	ON `@DB_NAME@`.* TO '@MIGRATE_USER@'@'@HOST@';

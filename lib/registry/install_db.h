/*
 * install_db.h - the installation's id (the installation table, sql/015):
 * 32 random hex digits every blob's metadata names, so that blobs of
 * installations sharing a container are never mixed, and a database
 * restored from a backup keeps its own.
 */
#ifndef BINDERY_INSTALL_DB_H
#define BINDERY_INSTALL_DB_H

#include "base/compat.h"
#include "registry/db.h"

#define INSTALL_ID_LEN 32

/*
 * The installation's id into out (INSTALL_ID_LEN + 1 bytes).  The first
 * caller ever draws one and inserts it (INSERT IGNORE: of two first callers
 * one wins, and both read the winner's).
 */
BINDERY_NODISCARD enum db_err install_id_get(struct db *db, char *out, size_t outlen);

#endif

/*
 * services.h - what a bindery process talks to: its configuration, one
 * database connection and one storage client, created once at start-up and
 * reused for every request (both connect lazily, so a CGI request that never
 * touches storage never opens a connection to it).
 */
#ifndef BINDERY_SERVICES_H
#define BINDERY_SERVICES_H

#include "storage/blob.h"
#include "base/compat.h"
#include "parse/config.h"
#include "registry/db.h"
#include "registry/install_db.h"
#include "protocol/events.h"

struct services {
	const struct bindery_config *cfg;	/* borrowed */
	struct db *db;
	struct blob_client *blob;
	struct events_sender *events;	/* NULL without [events] */
	char install_id[INSTALL_ID_LEN + 1];	/* "" until first read (services_install_id) */
};

/* On failure err says why (never with a secret) and *out is NULL.  The
 * CLI's handles: database waits on the registry's defaults (db.h). */
BINDERY_NODISCARD int services_open(const struct bindery_config *cfg, struct services **out,
				    char *err, size_t errlen);
/* The same for the responder: each wait on the database is bounded by
 * request_deadline (doc/design.md), so a database that stops answering costs a
 * request a 503 after that long, not a worker. */
BINDERY_NODISCARD int services_open_responder(const struct bindery_config *cfg, struct services **out,
					      char *err, size_t errlen);
void services_free(struct services *s);

/* The database connection, (re)connected now if it is not open or was
 * lost: 0, or -1 when the database does not answer.  A request that will
 * need the database asks first, so an outage costs it one quick 503. */
BINDERY_NODISCARD int services_db_ready(struct services *s);
/* Give back what the clients cache for speed (db_forget_statements):
 * before a request that will hold a large upload's buffers. */
void services_shed_caches(struct services *s);

/* The installation's id (install_db.h), read from the database once per
 * process and kept; NULL when it could not be read. */
const char *services_install_id(struct services *s);

#endif

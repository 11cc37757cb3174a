/*
 * state.h - bindery's state machine as data: one enum per kind of state,
 * with its string form and, for the blob's `state` tag, the x-ms-if-tags
 * guard that holds while the tag has that value (doc/design.md,
 * "States").  Nobody else spells a state name to compare it: the registry
 * turns the database's strings into these enums as it reads a row, and code
 * compares enums.  SQL statements keep their literal state names (they must
 * be static text); tests/unit/test_state checks that the ENUM(...) lists of
 * sql/ hold exactly these names in this order.
 *
 * The database-backed enums number their values like MariaDB numbers an
 * ENUM: 0 is the error value (here: a name this build does not know), the
 * listed values count from 1.
 */
#ifndef BINDERY_STATE_H
#define BINDERY_STATE_H

#include <stddef.h>

#include "base/compat.h"

/* documents.status */
enum doc_status {
	DOC_STATUS_UNKNOWN = 0,
	DOC_STATUS_PENDING,	/* the intent: invisible to readers */
	DOC_STATUS_READY,	/* the only status readers see */
};
#define DOC_STATUS_COUNT 3

/* blobs.state: the registry row of one blob name, claim states included. */
enum registry_state {
	REGISTRY_STATE_UNKNOWN = 0,
	REGISTRY_PENDING,	/* intent: an upload may be under way */
	REGISTRY_COMMITTED,	/* a document references it */
	REGISTRY_RETIRED,	/* the deletion outbox */
	REGISTRY_SWEEPING,	/* claimed from pending by a sweeper (a lease) */
	REGISTRY_DELETING,	/* claimed from retired by the outbox drain (a lease) */
};
#define REGISTRY_STATE_COUNT 6

/* blobs.purpose: what the intent was started for. */
enum intent_purpose {
	PURPOSE_UNKNOWN = 0,
	PURPOSE_CREATE,
	PURPOSE_REPLACE,
	PURPOSE_PARTIAL,	/* a tus partial upload (sql/019): no document until a final claims it */
};
#define PURPOSE_COUNT 4

/* blobs.route: how an intent's bytes reach storage (sql/010). */
enum upload_route {
	UPLOAD_ROUTE_UNKNOWN = 0,
	UPLOAD_VIA_SERVER,		/* through bindery: a request body or tus PATCHes */
	UPLOAD_VIA_DIRECT,		/* from the client with a create-only SAS; finalize verifies */
};
#define UPLOAD_ROUTE_COUNT 3

/* sweep_runs.result (sql/012): how a recorded `bindery sweep` ended. */
enum sweep_result {
	SWEEP_RESULT_NONE = 0,		/* NULL: under way, or died before it could say */
	SWEEP_RESULT_OK,		/* ran to the end (problems are counted, not a failure) */
	SWEEP_RESULT_PARTIAL,		/* ran to the end, deferred items after trouble */
	SWEEP_RESULT_FAILED,		/* could not start, or was cut short */
};
#define SWEEP_RESULT_COUNT 4

/* event_deliveries.state (sql/016): one event's delivery to one receiver. */
enum delivery_state {
	DELIVERY_STATE_UNKNOWN = 0,
	DELIVERY_PENDING,		/* to be sent (or being sent, under a claim) */
	DELIVERY_DELIVERED,		/* the receiver answered 2xx */
	DELIVERY_DEAD,			/* given up past the receiver's max_age */
};
#define DELIVERY_STATE_COUNT 4

/* The blob's `state` tag, as storage holds it. */
enum tag_state {
	TAG_STATE_NONE = 0,	/* no blob, or a blob without a state tag */
	TAG_STATE_PENDING,
	TAG_STATE_COMMITTED,
	TAG_STATE_RETIRED,
	TAG_STATE_UNKNOWN,	/* a state tag with a value bindery never writes */
};
#define TAG_STATE_COUNT 5

/* The tag key that carries the blob's state. */
#define TAG_STATE_KEY "state"

/*
 * The name as the database (or the tag) spells it; "" for the unknown/none
 * values and for out-of-range numbers.  Never NULL.
 */
const char *doc_status_name(enum doc_status s);
const char *registry_state_name(enum registry_state s);
const char *intent_purpose_name(enum intent_purpose p);
const char *upload_route_name(enum upload_route r);
const char *sweep_result_name(enum sweep_result r);
const char *delivery_state_name(enum delivery_state s);
const char *tag_state_name(enum tag_state t);

/*
 * The enum for a name, exact and case-sensitive; the unknown value when the
 * name is not one of ours.  tag_state_from_name(NULL) (no state tag) is
 * TAG_STATE_NONE.
 */
enum doc_status doc_status_from_name(const char *name);
enum registry_state registry_state_from_name(const char *name);
enum intent_purpose intent_purpose_from_name(const char *name);
enum upload_route upload_route_from_name(const char *name);
enum sweep_result sweep_result_from_name(const char *name);
enum delivery_state delivery_state_from_name(const char *name);
enum tag_state tag_state_from_name(const char *name);

/*
 * The x-ms-if-tags condition `"state" = 'NAME'` for one of the three tag
 * values bindery writes (a static string); a caller bug for the others.
 */
const char *tag_state_guard(enum tag_state t);

/*
 * The same condition for a tag value read back from storage, whatever it
 * is (a concurrent change then wins).  -1 when the value cannot be quoted
 * (it holds a ') or out is too small.
 */
BINDERY_NODISCARD int tag_guard_for_value(const char *value, char *out, size_t outlen);

#endif

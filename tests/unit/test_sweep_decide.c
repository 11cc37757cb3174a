/*
 * test_sweep_decide.c - sweep_decide() against doc/design.md's table "What a crash leaves", row
 * by row, and then every combination of facts against the safety rules that
 * must hold whatever the table says (I2: a committed blob is never deleted
 * directly; a referenced name is never touched).
 */
#include <string.h>

#include "protocol/sweep.h"
#include "tap.h"

#define C PURPOSE_CREATE
#define R PURPOSE_REPLACE
#define T_NONE TAG_STATE_NONE
#define T_PEND TAG_STATE_PENDING
#define T_COMM TAG_STATE_COMMITTED
#define T_RET TAG_STATE_RETIRED
#define T_OTH TAG_STATE_UNKNOWN

static const struct {
	const char *what;
	struct sweep_facts f;	/* purpose, exists, tag, uncommitted, metadata, referenced */
	enum sweep_action want;
} table[] = {
	/* crash after 1: rows, nothing in storage */
	{ "create: no blob -> drop", { C, 0, T_NONE, 0, 0, 0 }, SWEEP_DROP },
	{ "replace: no blob -> drop", { R, 0, T_NONE, 0, 0, 0 }, SWEEP_DROP },
	/* mid-2: staged blocks only */
	{ "create: staged blocks -> purge, drop", { C, 0, T_NONE, 1, 0, 0 }, SWEEP_PURGE_THEN_DROP },
	{ "replace: staged blocks -> purge, drop", { R, 0, T_NONE, 1, 0, 0 }, SWEEP_PURGE_THEN_DROP },
	/* crash after 2: blob tagged pending */
	{ "create: pending blob -> guarded delete, drop", { C, 1, T_PEND, 0, 0, 0 },
	  SWEEP_DELETE_PENDING_THEN_DROP },
	{ "create: pending blob with staged blocks -> guarded delete", { C, 1, T_PEND, 1, 0, 0 },
	  SWEEP_DELETE_PENDING_THEN_DROP },
	{ "replace: pending blob -> guarded delete, drop", { R, 1, T_PEND, 0, 0, 0 },
	  SWEEP_DELETE_PENDING_THEN_DROP },
	{ "create: pending blob, metadata present -> still delete", { C, 1, T_PEND, 0, 1, 0 },
	  SWEEP_DELETE_PENDING_THEN_DROP },
	/* crash after 3: blob tagged committed */
	{ "create: committed, metadata holds -> roll forward", { C, 1, T_COMM, 0, 1, 0 },
	  SWEEP_ROLL_FORWARD },
	{ "create: committed, metadata wrong -> leave", { C, 1, T_COMM, 0, 0, 0 }, SWEEP_LEAVE },
	{ "create: committed + staged blocks (experiment K) -> roll forward", { C, 1, T_COMM, 1, 1, 0 },
	  SWEEP_ROLL_FORWARD },
	{ "replace: committed -> roll back through the outbox", { R, 1, T_COMM, 0, 1, 0 },
	  SWEEP_ROLL_BACK },
	{ "replace: committed, metadata wrong -> roll back anyway", { R, 1, T_COMM, 0, 0, 0 },
	  SWEEP_ROLL_BACK },
	/* odd states */
	{ "replace: already tagged retired -> roll back", { R, 1, T_RET, 0, 0, 0 }, SWEEP_ROLL_BACK },
	{ "create: tagged retired -> leave", { C, 1, T_RET, 0, 1, 0 }, SWEEP_LEAVE },
	{ "create: blob without state tag -> leave", { C, 1, T_NONE, 0, 1, 0 }, SWEEP_LEAVE },
	{ "replace: blob without state tag -> leave", { R, 1, T_NONE, 0, 0, 0 }, SWEEP_LEAVE },
	{ "create: unknown tag value -> leave", { C, 1, T_OTH, 0, 1, 0 }, SWEEP_LEAVE },
	/* a corrupted intent whose name a document uses */
	{ "referenced committed blob -> leave", { C, 1, T_COMM, 0, 1, 1 }, SWEEP_LEAVE },
	{ "referenced pending blob -> leave", { R, 1, T_PEND, 0, 0, 1 }, SWEEP_LEAVE },
	{ "referenced missing blob -> leave (audit reports it)", { C, 0, T_NONE, 0, 0, 1 }, SWEEP_LEAVE },
	/* direct uploads: ..., direct, recorded, etag_matches (doc/design.md "Direct uploads") */
	{ "direct: no blob -> drop", { C, 0, T_NONE, 0, 0, 0, 1, 0, 0 }, SWEEP_DROP },
	{ "direct: recorded, no blob -> drop", { C, 0, T_NONE, 0, 0, 0, 1, 1, 0 }, SWEEP_DROP },
	{ "direct: never finalized, tagged pending -> delete with If-Match",
	  { C, 1, T_PEND, 0, 0, 0, 1, 0, 0 }, SWEEP_DELETE_IF_MATCH_THEN_DROP },
	{ "direct: never finalized, client tagged it committed -> delete with If-Match",
	  { C, 1, T_COMM, 0, 1, 0, 1, 0, 0 }, SWEEP_DELETE_IF_MATCH_THEN_DROP },
	{ "direct: recorded, same ETag, still tagged pending -> roll forward",
	  { C, 1, T_PEND, 0, 0, 0, 1, 1, 1 }, SWEEP_DIRECT_ROLL_FORWARD },
	{ "direct: recorded, same ETag, tagged committed -> roll forward",
	  { C, 1, T_COMM, 0, 0, 0, 1, 1, 1 }, SWEEP_DIRECT_ROLL_FORWARD },
	{ "direct: recorded, ETag moved -> delete with If-Match",
	  { C, 1, T_COMM, 0, 1, 0, 1, 1, 0 }, SWEEP_DELETE_IF_MATCH_THEN_DROP },
	{ "direct: referenced -> leave", { C, 1, T_PEND, 0, 0, 1, 1, 1, 1 }, SWEEP_LEAVE },
};

int main(void);

int
main(void)
{
	static const enum tag_state tags[] = { T_NONE, T_PEND, T_COMM, T_RET, T_OTH };
	struct sweep_facts f;
	size_t i, t;
	int p, ex, un, md, ref, bad_committed = 0, bad_ref = 0, bad_drop = 0, bad_spec = 0, bad_action = 0;
	enum sweep_action a;

	for (i = 0; i < ARRAY_LEN(table); i++) {
		a = sweep_decide(&table[i].f);
		if (!tap_ok(a == table[i].want, "%s", table[i].what))
			tap_diag("got %s, want %s", sweep_action_name(a), sweep_action_name(table[i].want));
	}

	/* Every combination: 2 x 2 x 5 x 2 x 2 x 2 = 160. */
	for (p = 0; p < 2; p++)
	for (ex = 0; ex < 2; ex++)
	for (t = 0; t < ARRAY_LEN(tags); t++)
	for (un = 0; un < 2; un++)
	for (md = 0; md < 2; md++)
	for (ref = 0; ref < 2; ref++) {
		memset(&f, 0, sizeof f);
		f.purpose = p ? R : C;
		f.blob_exists = ex;
		f.tag = ex ? tags[t] : T_NONE;
		f.uncommitted_blocks = un;
		f.metadata_matches = md;
		f.referenced = ref;
		a = sweep_decide(&f);
		/* The answer is one of the actions the sweeper carries out. */
		if (strcmp(sweep_action_name(a), "?") == 0)
			bad_action++;
		/* Only a blob tagged pending is deleted directly. */
		if (ex && f.tag != T_PEND && a == SWEEP_DELETE_PENDING_THEN_DROP)
			bad_committed++;
		/* Rows are dropped without a storage step only when there is no blob. */
		if (ex && (a == SWEEP_DROP || a == SWEEP_PURGE_THEN_DROP))
			bad_drop++;
		if (ref && a != SWEEP_LEAVE)
			bad_ref++;
		/* sweep_intent tries the pending-guarded delete before reading
		 * anything: that is only right if an unreferenced pending-tagged
		 * blob always decides so. */
		if (!ref && ex && f.tag == T_PEND && a != SWEEP_DELETE_PENDING_THEN_DROP)
			bad_spec++;
		/* Rolled forward only: create, committed, metadata holding. */
		if (a == SWEEP_ROLL_FORWARD && !(p == 0 && ex && f.tag == T_COMM && md))
			bad_committed++;
		if (a == SWEEP_ROLL_BACK && p == 0)
			bad_committed++;
	}
	tap_ok(bad_action == 0, "every one of the 160 combinations decides a known action (%d not)",
	       bad_action);
	tap_ok(bad_committed == 0, "no committed/retired/untagged blob is deleted directly, no create is "
	       "rolled back, only verified creates roll forward (%d violations)", bad_committed);
	tap_ok(bad_drop == 0, "rows are dropped without a storage step only when no blob exists (%d)",
	       bad_drop);
	tap_ok(bad_ref == 0, "a name another document uses is always left alone (%d)", bad_ref);
	tap_ok(bad_spec == 0, "the speculative guarded delete agrees with the decision (%d)", bad_spec);

	/* Direct intents: every tag, with and without finalize's record. */
	bad_committed = bad_spec = 0;
	for (ex = 0; ex < 2; ex++)
	for (t = 0; t < ARRAY_LEN(tags); t++)
	for (md = 0; md < 2; md++)
	for (ref = 0; ref < 2; ref++)
	for (p = 0; p < 4; p++) {	/* recorded, etag_matches */
		memset(&f, 0, sizeof f);
		f.purpose = C;
		f.blob_exists = ex;
		f.tag = ex ? tags[t] : T_NONE;
		f.metadata_matches = md;
		f.referenced = ref;
		f.direct = 1;
		f.recorded = p & 1;
		f.etag_matches = (p & 2) != 0;
		a = sweep_decide(&f);
		/* A document only from finalize's record of bytes still there. */
		if ((a == SWEEP_DIRECT_ROLL_FORWARD) != (!ref && ex && f.recorded && f.etag_matches))
			bad_committed++;
		/* The client's tags and metadata decide nothing. */
		if (a == SWEEP_ROLL_FORWARD || a == SWEEP_DELETE_PENDING_THEN_DROP || a == SWEEP_ROLL_BACK)
			bad_spec++;
		if (ref && a != SWEEP_LEAVE)
			bad_spec++;
	}
	tap_ok(bad_committed == 0, "direct: rolled forward exactly when finalize's record holds (%d)",
	       bad_committed);
	tap_ok(bad_spec == 0, "direct: tags and metadata the client set never decide (%d)", bad_spec);

	tap_ok(tag_state_from_name(NULL) == T_NONE, "no state tag");
	tap_ok(tag_state_from_name("pending") == T_PEND, "pending");
	tap_ok(tag_state_from_name("committed") == T_COMM, "committed");
	tap_ok(tag_state_from_name("retired") == T_RET, "retired");
	tap_ok(tag_state_from_name("Committed") == T_OTH, "tag values are case-sensitive");
	tap_ok(strcmp(sweep_action_name(SWEEP_ROLL_FORWARD), "roll-forward") == 0, "action names");
	return tap_done();
}

/*
 * test_create_decide.c - proto_create_decide(), the create/resume path of
 * proto_create, over every combination of its facts, each asserted against
 * an expected table written from doc/design.md (I4 and "The claim and the fence") rather than
 * from the code; then the safety rules that must hold whatever the table
 * says, and proto_create_upload_refused() over its four cases.
 */
#include <string.h>

#include "protocol/protocol.h"
#include "tap.h"

/* An unfinished key for this name whose intent's registry row is in state s. */
static const enum create_action by_row_state[REGISTRY_STATE_COUNT] = {
	[REGISTRY_STATE_UNKNOWN] = CREATE_KEY_MISMATCH,	/* nothing we know how to finish */
	[REGISTRY_PENDING] = CREATE_RESUME,		/* owner gone -> take over */
	[REGISTRY_COMMITTED] = CREATE_REPLAY_COMMITTED,	/* done, answer never recorded */
	[REGISTRY_RETIRED] = CREATE_KEY_MISMATCH,	/* a replaced/deleted document's */
	[REGISTRY_SWEEPING] = CREATE_SWEEPER_OWNS,	/* a sweeper holds it: 503 */
	[REGISTRY_DELETING] = CREATE_KEY_MISMATCH,	/* the outbox holds it */
};

static const char *const action_names[] = {
	"new-intent", "name-taken", "key-mismatch", "replay-record", "replay-committed", "resume",
	"restart", "sweeper-owns",
};

static const char *
create_action_name(enum create_action a)
{
	return (size_t)a < ARRAY_LEN(action_names) ? action_names[a] : "?";
}

static enum create_action
expected(const struct create_facts *f)
{
	if (!f->key_found)	/* no record: the name decides */
		return f->name_taken ? CREATE_NAME_TAKEN : CREATE_NEW_INTENT;
	/* the fingerprint: name, Content-Type and route (a direct intent's key
	 * is never a server create's) */
	if (!f->same_name || !f->same_type || !f->same_route)
		return CREATE_KEY_MISMATCH;
	if (f->key_finished)
		return CREATE_REPLAY_RECORD;
	if (!f->row_found)	/* the sweeper dropped the intent */
		return CREATE_RESTART;
	return by_row_state[f->row_state];
}

static const char *
yes_no(int v)
{
	return v ? "yes" : "no";
}

int main(void);

int
main(void)
{
	struct create_facts f;
	enum create_action a, want;
	int kf, nt, sn, sty, sr, fin, rf, st, n = 0, wrong = 0, bad_new = 0, bad_replay = 0, bad_touch = 0;
	int bad_ignored = 0;

	/* Every combination: 2 x 2 x 2 x 2 x 2 x 2 x 2 x 6 = 768, each asserted. */
	for (kf = 0; kf < 2; kf++)
	for (nt = 0; nt < 2; nt++)
	for (sn = 0; sn < 2; sn++)
	for (sty = 0; sty < 2; sty++)
	for (sr = 0; sr < 2; sr++)
	for (fin = 0; fin < 2; fin++)
	for (rf = 0; rf < 2; rf++)
	for (st = 0; st < REGISTRY_STATE_COUNT; st++) {
		memset(&f, 0, sizeof f);
		f.key_found = kf;
		f.name_taken = nt;
		f.same_name = sn;
		f.same_type = sty;
		f.same_route = sr;
		f.key_finished = fin;
		f.row_found = rf;
		f.row_state = (enum registry_state)st;
		a = proto_create_decide(&f);
		want = expected(&f);
		n++;
		if (!tap_ok(a == want, "key %s, name taken %s, same name %s, same type %s, same route %s,"
			    " finished %s, row %s %s -> %s", yes_no(kf), yes_no(nt), yes_no(sn), yes_no(sty),
			    yes_no(sr), yes_no(fin), yes_no(rf),
			    st ? registry_state_name((enum registry_state)st) : "(unknown)",
			    create_action_name(want))) {
			tap_diag("got %s", create_action_name(a));
			wrong++;
		}
		/* I4: a key that has a record never starts a second document,
		 * and a taken name never gets a new intent. */
		if (a == CREATE_NEW_INTENT && (kf || nt))
			bad_new++;
		/* An answer is replayed only for this name's and type's key. */
		if ((a == CREATE_REPLAY_RECORD || a == CREATE_REPLAY_COMMITTED) && !(kf && sn && sty && sr))
			bad_replay++;
		/* A direct intent's key is never resumed or replayed by a server create. */
		if (kf && !sr && a != CREATE_KEY_MISMATCH)
			bad_replay++;
		/* Another Content-Type under a recorded key is another request. */
		if (kf && !sty && a != CREATE_KEY_MISMATCH)
			bad_replay++;
		/* Only a pending intent is taken over; only a missing one restarted. */
		if ((a == CREATE_RESUME && !(rf && st == REGISTRY_PENDING && !fin)) ||
		    (a == CREATE_RESTART && (rf || fin)))
			bad_touch++;
		/* proto_create reads the row only for an unfinished key of this
		 * name and type: elsewhere the decision must not depend on it. */
		if (!(kf && sn && sty && sr && !fin)) {
			struct create_facts g = f;

			g.row_found = !rf;
			g.row_state = (enum registry_state)((st + 1) % REGISTRY_STATE_COUNT);
			bad_ignored += proto_create_decide(&g) != a;
		}
	}
	/* Each combination is its own check above; this sums them up (n is
	 * what the loops made it, so it is reported, never asserted). */
	tap_ok(wrong == 0, "all %d combinations decided as the table says (%d wrong)", n, wrong);
	tap_ok(bad_new == 0, "no second intent for a recorded key or a taken name (%d)", bad_new);
	tap_ok(bad_replay == 0, "answers replay only for the same key, name, Content-Type and route (%d)",
	       bad_replay);
	tap_ok(bad_touch == 0, "only a pending intent resumes, only a dropped one restarts (%d)",
	       bad_touch);
	tap_ok(bad_ignored == 0,
	       "the registry row matters only for an unfinished key of this name and type (%d)",
	       bad_ignored);

	/* The create-only upload refused because the name holds a blob. */
	{
		enum tag_state t;

		for (t = TAG_STATE_NONE; t < TAG_STATE_COUNT; t++)
			tap_ok(proto_tag_flip_refused(t) == (t == TAG_STATE_COMMITTED ? PROTO_OK : PROTO_UNAVAILABLE),
			       "a refused tag flip finding the tag %s is %s", t == TAG_STATE_NONE ? "absent" :
			       t == TAG_STATE_UNKNOWN ? "unreadable or foreign" : tag_state_name(t),
			       t == TAG_STATE_COMMITTED ? "done" : "a 503, never a ready document");
	}
	tap_ok(proto_create_upload_refused(0, 1) == PROTO_OK, "fresh name, our own bytes: uploaded");
	tap_ok(proto_create_upload_refused(1, 1) == PROTO_OK, "resumed intent, the same bytes: uploaded");
	tap_ok(proto_create_upload_refused(1, 0) == PROTO_IDEM_MISMATCH,
	       "resumed intent, another request's bytes: 422");
	tap_ok(proto_create_upload_refused(0, 0) == PROTO_FAILED,
	       "fresh random name holding other bytes: failed, never overwritten");
	return tap_done();
}

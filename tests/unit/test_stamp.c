/*
 * test_stamp.c - a blob's stamp (lib/protocol/stamp.c): the metadata that
 * names installation and document, encoded so that a header carries it
 * (percent-encoded UTF-8, RFC 3986 unreserved kept) and read back exactly;
 * anything short of a whole, well-formed stamp is no stamp.
 */
#include <string.h>

#include "protocol/stamp.h"
#include "storage/blob_internal.h"
#include "tap.h"

/* A literal into a field of the struct, which is larger. */
#define SET(field, lit) memcpy((field), (lit), sizeof(lit))

static const char install[] = "0123456789abcdef0123456789abcdef";

static void
sample(struct stamp *st)
{
	memset(st, 0, sizeof *st);
	memcpy(st->install, install, sizeof install);
	st->doc_id = 42;
	st->version = 3;
	SET(st->owner, "d\xc3\xa9mo user");
	SET(st->name, "r\xc3\xa9sum\xc3\xa9 100%/a+b~c.txt");
	SET(st->content_type, "text/plain; charset=utf-8");
	SET(st->created_at, "2024-05-01T10:11:12.123456Z");
	st->size = -1;
}

static const char *
value_of(const struct stamp_meta *m, const char *name)
{
	size_t i;

	for (i = 0; i < STAMP_NMETA; i++)
		if (strcmp(m->v[i].name, name) == 0)
			return m->v[i].value;
	return "(absent)";
}

static void
test_round_trip(void)
{
	struct stamp st, back;
	struct stamp_meta m;
	struct blob_meta all[STAMP_NMETA + 2];
	size_t i;

	sample(&st);
	tap_ok(stamp_encode(&st, &m) == 0, "a stamp encodes");
	TAP_EQ_STR(value_of(&m, "bindery_name"), "r%C3%A9sum%C3%A9%20100%25%2Fa%2Bb~c.txt",
		   "a name: UTF-8 bytes as %XX, unreserved kept");
	TAP_EQ_STR(value_of(&m, "bindery_owner"), "d%C3%A9mo%20user", "an owner the same way");
	TAP_EQ_STR(value_of(&m, "bindery_content_type"), "text%2Fplain%3B%20charset%3Dutf-8",
		   "the content type the same way");
	TAP_EQ_STR(value_of(&m, "bindery_document"), "42", "the id in decimal");
	TAP_EQ_STR(value_of(&m, "bindery_version"), "3", "the version in decimal");
	TAP_EQ_STR(value_of(&m, "bindery_installation"), install, "the installation");
	TAP_EQ_STR(value_of(&m, "bindery_created"), "2024-05-01T10:11:12.123456Z", "the time as is");
	tap_ok(blob_meta_ok(m.v, STAMP_NMETA), "every entry is a header the service takes");
	for (i = 0; i < STAMP_NMETA; i++)
		all[i] = m.v[i];
	all[i++] = (struct blob_meta){ "size", "17" };
	all[i++] = (struct blob_meta){ "sha256", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" };
	tap_ok(stamp_decode(all, i, &back) == 1, "it decodes");
	tap_ok(back.doc_id == 42 && back.version == 3 && back.size == 17 &&
	       strcmp(back.name, st.name) == 0 && strcmp(back.owner, st.owner) == 0 &&
	       strcmp(back.content_type, st.content_type) == 0 &&
	       strcmp(back.created_at, st.created_at) == 0 && strcmp(back.install, install) == 0 &&
	       strlen(back.sha256) == 64, "... to the very same fields");
	all[0].name = "Bindery_Installation";
	tap_ok(stamp_decode(all, i, &back) == 1, "names compare without case, as the service's do");
}

/* Each entry left out, or spoilt, makes no stamp. */
static void
test_not_a_stamp(void)
{
	static const char *const bad[][2] = {
		{ "bindery_installation", "0123456789ABCDEF0123456789ABCDEF" },
		{ "bindery_installation", "0123" },
		{ "bindery_document", "0" },
		{ "bindery_document", "042" },
		{ "bindery_document", "4x" },
		{ "bindery_document", "99999999999999999999" },
		{ "bindery_version", "" },
		{ "bindery_owner", "" },
		{ "bindery_name", "a%2" },
		{ "bindery_name", "a%zz" },
		{ "bindery_name", "a%00b" },
		{ "bindery_created", "" },
	};
	struct stamp st, back;
	struct stamp_meta m;
	struct blob_meta v[STAMP_NMETA];
	size_t i, j, k;
	int all_refused = 1, missing_refused = 1;

	sample(&st);
	if (stamp_encode(&st, &m) != 0) {
		tap_ok(0, "sample encodes");
		return;
	}
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memcpy(v, m.v, sizeof v);
		for (j = 0; j < STAMP_NMETA; j++)
			if (strcmp(v[j].name, bad[i][0]) == 0)
				v[j].value = bad[i][1];
		if (stamp_decode(v, STAMP_NMETA, &back) != 0) {
			all_refused = 0;
			tap_diag("accepted %s=%s", bad[i][0], bad[i][1]);
		}
	}
	tap_ok(all_refused, "a malformed entry is no stamp (%zu cases)", sizeof bad / sizeof bad[0]);
	for (i = 0; i < STAMP_NMETA; i++) {
		for (j = 0, k = 0; j < STAMP_NMETA; j++)
			if (j != i)
				v[k++] = m.v[j];
		if (stamp_decode(v, k, &back) != 0)
			missing_refused = 0;
	}
	tap_ok(missing_refused, "any one entry missing is no stamp");
	tap_ok(stamp_decode(NULL, 0, &back) == 0, "no metadata is no stamp");
}

static void
test_pct(void)
{
	char out[16];

	tap_ok(stamp_pct_encode("abc", 3, out, 4) == 0 && strcmp(out, "abc") == 0, "exact fit");
	tap_ok(stamp_pct_encode("abc", 3, out, 3) != 0, "one short: refused");
	tap_ok(stamp_pct_encode("\xff", 1, out, 4) == 0 && strcmp(out, "%FF") == 0, "a high byte");
	tap_ok(stamp_pct_encode("\xff", 1, out, 3) != 0, "... that does not fit: refused");
	tap_ok(stamp_pct_decode("%e2%82%AC", out, sizeof out) == 0 && strcmp(out, "\xe2\x82\xac") == 0,
	       "decode takes either case of hex");
	tap_ok(stamp_pct_decode("abcd", out, 4) != 0, "decode that does not fit: refused");
}

int
main(void)
{
	test_round_trip();
	test_not_a_stamp();
	test_pct();
	return tap_done();
}

/*
 * test_lifecycle_policy.c - the backstop policy's structure, field by field,
 * after a round trip through text (what `bindery lifecycle-policy` prints is
 * what Azure parses).
 */
#include <string.h>

#include <jansson.h>

#include "parse/lifecycle.h"
#include "tap.h"

static const char *
str_at(json_t *j, const char *path_key)
{
	return json_string_value(json_object_get(j, path_key));
}

int main(void);

int
main(void)
{
	json_t *p, *rules, *rule, *def, *filters, *types, *prefixes, *idx, *m, *del;
	json_error_t err;
	char *text;

	tap_ok(lifecycle_policy_new("documents", "", 0) == NULL, "0 days is refused");
	tap_ok(lifecycle_policy_new("", "x/", 1) == NULL, "an empty container is refused");

	p = lifecycle_policy_new("documents", "up/", 3);
	tap_ok(p != NULL, "policy built");
	text = json_dumps(p, JSON_INDENT(2));
	json_decref(p);
	p = json_loads(text, 0, &err);
	free(text);
	tap_ok(p != NULL, "its text parses back");

	rules = json_object_get(p, "rules");
	tap_ok(json_is_array(rules) && json_array_size(rules) == 1, "rules: one rule");
	rule = json_array_get(rules, 0);
	tap_ok(json_is_true(json_object_get(rule, "enabled")), "rules[0].enabled true");
	tap_ok(str_at(rule, "type") && strcmp(str_at(rule, "type"), "Lifecycle") == 0,
	       "rules[0].type Lifecycle");
	tap_ok(str_at(rule, "name") && strlen(str_at(rule, "name")) > 0, "rules[0].name set");
	def = json_object_get(rule, "definition");
	filters = json_object_get(def, "filters");
	types = json_object_get(filters, "blobTypes");
	tap_ok(json_array_size(types) == 1 &&
	       strcmp(json_string_value(json_array_get(types, 0)), "blockBlob") == 0,
	       "filters.blobTypes [blockBlob]");
	prefixes = json_object_get(filters, "prefixMatch");
	tap_ok(json_array_size(prefixes) == 1 &&
	       strcmp(json_string_value(json_array_get(prefixes, 0)), "documents/up/") == 0,
	       "filters.prefixMatch starts with the container name: documents/up/");
	idx = json_object_get(filters, "blobIndexMatch");
	tap_ok(json_is_array(idx) && json_array_size(idx) == 1, "filters.blobIndexMatch: one condition");
	m = json_array_get(idx, 0);
	tap_ok(str_at(m, "name") && strcmp(str_at(m, "name"), "state") == 0, "blobIndexMatch[0].name state");
	tap_ok(str_at(m, "op") && strcmp(str_at(m, "op"), "==") == 0, "blobIndexMatch[0].op ==");
	tap_ok(str_at(m, "value") && strcmp(str_at(m, "value"), "pending") == 0,
	       "blobIndexMatch[0].value pending");
	tap_ok(json_object_size(m) == 3, "blobIndexMatch[0] has exactly name, op, value");
	del = json_object_get(json_object_get(json_object_get(def, "actions"), "baseBlob"), "delete");
	tap_ok(json_is_integer(json_object_get(del, "daysAfterCreationGreaterThan")) &&
	       json_integer_value(json_object_get(del, "daysAfterCreationGreaterThan")) == 3,
	       "actions.baseBlob.delete.daysAfterCreationGreaterThan 3");
	tap_ok(json_object_size(json_object_get(def, "actions")) == 1 &&
	       json_object_size(json_object_get(json_object_get(def, "actions"), "baseBlob")) == 1,
	       "the only action is deleting the base blob (no snapshot/version rules)");
	json_decref(p);

	p = lifecycle_policy_new("c", "", 1);
	filters = json_object_get(json_object_get(json_array_get(json_object_get(p, "rules"), 0),
						  "definition"), "filters");
	tap_ok(strcmp(json_string_value(json_array_get(json_object_get(filters, "prefixMatch"), 0)),
		      "c/") == 0, "no configured prefix: the whole container, c/");
	json_decref(p);
	return tap_done();
}
